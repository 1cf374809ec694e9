-- The processing side's queries. Owned by processors._claiming.store.WorkStore; loaded once.

-- name: claim_batch
-- Take up to batch_size due events that no worker has an unsettled claim on, in order
-- (live work before replays, then due time), skipping rows other workers hold. The inner
-- query walks the partial index inbox_work_claim; the locks are taken on inbox_work only.
-- An ordered event (ordering_key not null) is taken only when it is the head of its key:
-- the first of the key's rows in key order (inbox_work_key holds only the rows that hold
-- their key, so that is one index probe, however long the key's backlog), and when no
-- event of its key has a claim counter (one in flight, or a suspect left by a crash).
-- Under READ COMMITTED the head is judged on this statement's snapshot: a head another
-- worker holds is still in it, so its followers are not heads, and SKIP LOCKED skips the
-- head itself. A head that settles meanwhile is skipped too (deleted or not due any more),
-- and its follower waits for the next claim. What a snapshot cannot see (a row committed
-- after it began, sorting before the one in flight) the claim counters' unique key slot
-- catches: count_claims releases such an event unrun.
-- The scan starts after the index position (after_priority, after_run_at, after_event_id)
-- and, when it has a window, looks at no more than `window` pending rows (bound). A settled
-- row leaves a dead index entry that every scan from the start walks until vacuum removes
-- it, so a claim loop draining a big backlog resumes after its last full batch; and an
-- ordered backlog is mostly followers of keys in flight, which a scan without a window
-- walked to the end of the queue, one probe each, while holding the heads it had locked
-- (two claims at once took 0.5-1 s each at 50,000 events on 1,000 keys). After a claim
-- short of a batch, the loops take turns between the start and a sweep through the windows
-- past it, and start from the beginning at least every second, which finds what the
-- resumed scans passed by (processors._claiming.store.ClaimCursor).
-- Work that requires a version of the code (a replay after a fix) is taken only by a
-- worker of that version.
-- traceparent and tracestate are the receipt's trace context, which each handler run's
-- span links to. The last two columns are each row's position (with event_id), where the
-- next claim may resume. The last row is no event (attempts is null): its event_id,
-- priority and run_at are the window's end, its run_at null when the window reached the
-- end of the queue.
with bound as materialized (
    -- The last index position this claim may take: the window's last pending row, or past
    -- every position when fewer rows are left or the claim has no window (0: see
    -- processors._claiming.store.ClaimCursor; finding the window's end is a walk of its own).
    (
        select priority, run_at, event_id
        from inbox_work
        where %(window)s::int > 0
          and state = 'pending'
          and run_at <= now()
          and (priority, run_at, event_id)
              > (%(after_priority)s::smallint, %(after_run_at)s::timestamptz,
                 %(after_event_id)s::bigint)
        order by priority, run_at, event_id
        offset greatest(%(window)s::int - 1, 0)
        limit 1
    )
    union all
    select 32767::smallint, 'infinity'::timestamptz, 9223372036854775807::bigint
    order by 1, 2, 3
    limit 1
)
(
select w.event_id, w.attempts, w.replay_id, 0 as crashes,
       e.source, e.idempotency_key, e.event_type, e.received_at, e.headers, e.body,
       w.ordering_key, e.traceparent, e.tracestate, w.priority, w.run_at
from (
    select event_id, received_at, attempts, replay_id, priority, run_at, ordering_key
    from inbox_work
    where state = 'pending'
      and run_at <= now()
      and (priority, run_at, event_id)
          > (%(after_priority)s::smallint, %(after_run_at)s::timestamptz, %(after_event_id)s::bigint)
      and (priority, run_at, event_id)
          <= ((select priority from bound), (select run_at from bound), (select event_id from bound))
      and (required_version is null or required_version = %(version)s::text)
      -- Probed per candidate row (OFFSET 0 keeps the planner from making it a join): the
      -- counters churn, a row in and out per event, and between two autovacuum visits the
      -- planner scales their last statistics (a dense table, vacuumed with a few live rows)
      -- to the table's size, reading tens of thousands of dead counters as live ones and
      -- nearly every pending event as claimed. As a join it then read and sorted the whole
      -- queue to lock a batch: 300-400 ms at 100,000 pending rows, and claims of 29 s in a
      -- drain, which kept a worker from stopping.
      and (
          (
              inbox_work.ordering_key is null
              and not exists (
                  select from inbox_claims c where c.event_id = inbox_work.event_id offset 0
              )
          )
          or (
              -- An ordered event's own counter holds its key's slot: the slot's probe
              -- answers for both. It comes first: a follower of a key in flight, what a
              -- walk through an ordered backlog mostly meets, is turned away by this probe
              -- of the small counters table, before the head probe walks the key's entries
              -- in inbox_work_key (and the dead ones its settled events left there).
              -- Probed per candidate row too: without OFFSET 0 the planner may instead hash
              -- the whole counters table once a claim (cheap for the few live counters its
              -- statistics saw), reading every dead counter of a bloated table each time.
              inbox_work.ordering_key is not null
              and not exists (
                  select from inbox_claims k
                  where k.source = inbox_work.source and k.ordering_key = inbox_work.ordering_key
                  offset 0
              )
              -- A boolean, not `event_id = (select ...)`: the planner would take the
              -- equality for a rare match and sort the whole table instead of walking
              -- the claim index (measured: 20 ms against 1 ms at 10,000 rows).
              and (
                  select h.event_id = inbox_work.event_id
                  from inbox_work h
                  where h.source = inbox_work.source
                    and h.ordering_key = inbox_work.ordering_key
                    and (h.state = 'pending' or h.on_dead = 'hold')
                  order by h.priority, h.order_at, h.event_id
                  limit 1
              )
          )
      )
    order by priority, run_at, event_id
    limit %(batch_size)s
    for update skip locked
) as w
cross join lateral (
    -- Each claimed event from its own partition of the log: the probe runs with the work
    -- row's receipt time (OFFSET 0 keeps it a probe), so every other partition is pruned.
    -- As a join, a planner that counted few rows in the partitions (a young log) hashed
    -- them all instead.
    select e.source, e.idempotency_key, e.event_type, e.received_at, e.headers, e.body,
           e.traceparent, e.tracestate
    from inbox_events e
    where e.id = w.event_id and e.received_at = w.received_at
    offset 0
) as e
order by w.priority, w.run_at, w.event_id
)
union all
select event_id, null, null, null, null, null, null, null, null, null, null, null, null,
       priority, nullif(run_at, 'infinity')
from bound

-- name: claim_suspect
-- Take one due event whose earlier claim never settled (its worker died mid-batch). It runs
-- alone, so a poison pill cannot take innocent events of its batch down with it again.
-- An ordered suspect keeps its key's slot (its counter) meanwhile: its followers wait.
-- The counters also hold the batches in flight, whose work rows their claims keep locked
-- (SKIP LOCKED passes them): the lock is taken before the log is joined, so only the one
-- event taken has its body read. (Joined first, every candidate's body was read and
-- sorted: 5-90 ms a call while other batches were in flight.) The claim loops look for a
-- suspect only when they scan the queue from its start (processors._claiming.store.ClaimCursor).
select s.event_id, s.attempts, s.replay_id, s.crashes,
       e.source, e.idempotency_key, e.event_type, e.received_at, e.headers, e.body,
       s.ordering_key, e.traceparent, e.tracestate
from (
    select w.event_id, w.received_at, w.attempts, w.replay_id, c.claims as crashes,
           w.ordering_key
    from inbox_claims c
    join inbox_work w on w.event_id = c.event_id
    where w.state = 'pending' and w.run_at <= now()
      and (w.required_version is null or w.required_version = %(version)s::text)
    order by c.last_claimed_at, c.event_id
    limit 1
    for update of w skip locked
) as s
cross join lateral (
    -- The event from its own partition (see claim_batch).
    select e.source, e.idempotency_key, e.event_type, e.received_at, e.headers, e.body,
           e.traceparent, e.tracestate
    from inbox_events e
    where e.id = s.event_id and e.received_at = s.received_at
    offset 0
) as e

-- name: next_due
-- Seconds until the earliest pending event that is not due yet (null: none), so an idle
-- worker wakes when a retry falls due, whoever scheduled it, rather than at its next poll.
-- The partial index inbox_work_claim leads with priority: a loose index scan finds each
-- priority in use, then one probe per priority finds its first run_at after now.
with recursive priorities(priority) as (
    (select priority from inbox_work where state = 'pending' order by priority limit 1)
    union all
    select (select w.priority from inbox_work w
            where w.state = 'pending' and w.priority > p.priority
            order by w.priority limit 1)
    from priorities p
    where p.priority is not null
)
select extract(epoch from min(next.run_at) - now())::float8
from priorities p
cross join lateral (
    select w.run_at from inbox_work w
    where w.state = 'pending' and w.priority = p.priority and w.run_at > now()
    order by w.run_at
    limit 1
) as next

-- name: count_claims
-- On the separate autocommit connection, before any handler runs: one commit per batch.
-- An ordered event's counter also takes its key's slot (the unique inbox_claims_key): the
-- events whose key is taken by another event's counter are returned, and are released
-- unrun. Counters are inserted in key order, so two batches that meet on keys wait on
-- each other in the same order instead of deadlocking.
-- Sources and keys come as NULL when no event of the batch is ordered: unnest pads a NULL
-- array with nulls.
with claimed as (
    select *
    from unnest(%(event_ids)b::bigint[], %(sources)b::text[], %(ordering_keys)b::text[])
        as t(event_id, source, ordering_key)
),
again as (
    update inbox_claims c
    set claims = c.claims + 1,
        last_claimed_at = now(),
        last_worker = %(worker)s
    from claimed
    where c.event_id = claimed.event_id
    returning c.event_id
),
fresh as (
    insert into inbox_claims (event_id, source, ordering_key, last_worker)
    select event_id,
           case when ordering_key is not null then source end,
           ordering_key,
           %(worker)s
    from claimed
    where not exists (select from inbox_claims c where c.event_id = claimed.event_id)
    order by source, ordering_key, event_id
    on conflict do nothing
    returning event_id
)
select event_id
from claimed
where event_id not in (select event_id from again)
  and event_id not in (select event_id from fresh)

-- name: settle_batch
-- Everything a batch decided, in one statement of the claim transaction: processed and
-- skipped events leave the work table, failures are rescheduled or dead-lettered, every
-- outcome is appended to the history, and the claim counters of settled events are reset.
-- Released events (claimed, not run) go back to the queue as they were. A nullable column
-- that is null for every decision comes as one NULL (unnest pads it with nulls).
with outcome as (
    select *
    from unnest(
        %(event_ids)b::bigint[],
        %(attempts)b::integer[],
        %(outcomes)b::text[],
        %(states)b::text[],
        %(delays)b::float8[],
        %(started)b::timestamptz[],
        %(finished)b::timestamptz[],
        %(handlers)b::text[],
        %(error_classes)b::text[],
        %(error_messages)b::text[],
        %(replay_ids)b::bigint[],
        %(error_tracebacks)b::text[],
        %(received_ats)b::timestamptz[]
    ) as o(event_id, attempt, outcome, state, delay, started_at, finished_at, handler,
           error_class, error_message, replay_id, error_traceback, received_at)
),
finished as (
    delete from inbox_work w
    using outcome o
    where w.event_id = o.event_id and o.state = 'done'
),
rescheduled as (
    update inbox_work w
    set state = o.state,
        attempts = o.attempt,
        run_at = now() + make_interval(secs => o.delay),
        last_error = o.error_class || ': ' || o.error_message
    from outcome o
    where w.event_id = o.event_id and o.state <> 'done' and o.outcome <> 'released'
),
unclaimed as (
    delete from inbox_claims c
    using outcome o
    where c.event_id = o.event_id
      and (o.outcome <> 'released' or c.claims <= 1)
),
-- A suspect released unrun (shutdown) takes back only this claim's count: the crashes it
-- caused before stay on record, so a poison pill cannot shed them by being released.
unclaimed_released as (
    update inbox_claims c
    set claims = c.claims - 1
    from outcome o
    where c.event_id = o.event_id and o.outcome = 'released' and c.claims > 1
)
insert into inbox_attempts
    (event_id, received_at, attempt, started_at, finished_at, outcome, handler, worker,
     error_class, error_message, replay_id, error_traceback, version)
select event_id, received_at, attempt, started_at, finished_at, outcome, handler, %(worker)s,
       error_class, error_message, replay_id, error_traceback, %(version)s::text
from outcome
where outcome <> 'released'

-- name: register_worker
-- A worker process says which code it runs and the sources its router handles, when it
-- connects (again: the same process keeps the time it started). Rows of processes that
-- stopped, or were last seen, more than a week ago go.
with gone as (
    delete from inbox_workers
    where coalesce(stopped_at, seen_at) < now() - interval '7 days'
)
insert into inbox_workers (name, version, started_at, seen_at, sources)
values (%(name)s::text, %(version)s::text, %(started_at)s::timestamptz, now(),
        %(sources)s::text[])
on conflict (name) do update
    set version = excluded.version, started_at = excluded.started_at, stopped_at = null,
        seen_at = now(), sources = excluded.sources

-- name: worker_seen
-- The heartbeat: the process still runs (operators read it where connections cannot
-- tell, behind a transaction pooler).
update inbox_workers set seen_at = now()
where name = %(name)s::text and started_at = %(started_at)s::timestamptz

-- name: worker_stopped
update inbox_workers set stopped_at = now()
where name = %(name)s::text and started_at = %(started_at)s::timestamptz

-- name: unsettled_of
-- After a connection was lost during COMMIT: settling deletes an event's claim counter in
-- the claim transaction, so a counter that is still there means the commit did not happen.
-- Re-read, never re-run blindly: unsettled events are simply claimable again. The lost
-- COMMIT may still be running on the server when the worker is back (a slow flush, a
-- synchronous standby), its deletes not yet visible: the weakest row lock waits for it (a
-- delete holds the strongest), and then sees the rows it left. Other workers' counter
-- updates do not block it. The session's statement_timeout bounds the wait; a timeout
-- leaves the outcome unresolved, to be asked again on the next connection.
select event_id
from inbox_claims
where event_id = any(%(event_ids)s::bigint[])
for key share

-- name: count_due
-- What processors.testing.run_pending waits for: nothing left that may run now. A claimed
-- row stays until its batch commits, so zero also means every started batch has settled; a
-- failed attempt's retry lies in the future and no longer counts, nor do the followers of
-- an ordered key whose head waits for its retry or is held dead.
select count(*)
from inbox_work w
where w.state = 'pending'
  and w.run_at <= now()
  and (
      w.ordering_key is null
      or not exists (
          select from inbox_work h
          where h.source = w.source
            and h.ordering_key = w.ordering_key
            and (h.state = 'pending' or h.on_dead = 'hold')
            and (h.priority, h.order_at, h.event_id) < (w.priority, w.order_at, w.event_id)
      )
  )

-- name: queue_gauges
-- The queue gauges of a worker's /metrics, read when it is scraped: per source, the work
-- rows by state (pending: not failed yet; retrying: pending after a failure, as `inbox
-- status` counts them; dead), and how long the oldest due live event has waited (replays
-- wait behind live work by design). The work table holds only what is unsettled, so this
-- reads it whole, and each row's source by the events' primary key.
select e.source,
       count(*) filter (where w.state = 'pending' and w.last_error is null) as pending,
       count(*) filter (where w.state = 'pending' and w.last_error is not null) as retrying,
       count(*) filter (where w.state = 'dead') as dead,
       coalesce(extract(epoch from now() - min(w.run_at) filter (
           where w.state = 'pending' and w.replay_id is null and w.run_at <= now()
       )), 0)::float8 as oldest_pending_seconds
from inbox_work w
cross join lateral (
    -- Each row's source from its event's own partition (see claim_batch).
    select e.source from inbox_events e
    where e.id = w.event_id and e.received_at = w.received_at
    offset 0
) as e
group by e.source
order by e.source

-- name: log_gauges
-- The log's partitions, as a worker's /metrics shows them: how many, where the oldest
-- begins (null while the first one is the table from before partitions, which holds
-- everything before it), and how big the permanent key table is.
select count(*)::integer,
       extract(epoch from min(lo) filter (where lo > '-infinity'))::float8,
       bool_or(lo = '-infinity'),
       pg_total_relation_size('inbox_keys')::bigint
from inbox_partitions

-- name: ensure_partitions
-- The log's partitions from now to a few periods ahead (inbox_ensure_partitions): a worker
-- makes sure of them when it starts and every hour. How many it made.
select inbox_ensure_partitions()

-- name: rehearsal_events
-- The stored events a rehearsal runs, read from the log alone: it takes no claim and no
-- lock on inbox_work, so live work and the rehearsal never wait for each other here.
select e.id, e.source, e.idempotency_key, e.event_type, e.received_at, e.headers, e.body
from inbox_events e
where e.id = any(%(event_ids)s::bigint[])
order by e.id

-- name: rehearsal_limits
-- A rehearsal's transaction starts with its time limits, this transaction's only: no
-- statement of it runs, nor waits for a lock held by live work, longer than these.
select set_config('statement_timeout', %(timeout_ms)s::text, true),
       set_config('lock_timeout', %(timeout_ms)s::text, true)

-- name: rehearsal_guard
-- Then its guard row, whose deferred trigger fails a COMMIT the handler might send.
insert into inbox_rehearsal_guard default values

-- name: rehearsal_writes
-- Rows written per table, from the transaction's statistics (the rehearsal's guard row is
-- its own bookkeeping, not the handler's). They include what a savepoint undid, and the
-- counts of the session's earlier transactions not yet reported: read before and after.
select s.schemaname, s.relname, s.n_tup_ins, s.n_tup_upd, s.n_tup_del
from pg_stat_xact_user_tables s
where s.n_tup_ins + s.n_tup_upd + s.n_tup_del > 0
  and s.relid <> 'inbox_rehearsal_guard'::regclass
order by s.schemaname, s.relname

-- name: rehearsal_take
-- Take the oldest rehearsal the console asked for whose events' sources this worker's
-- router handles, before its deadline. Only the requests table is locked: a rehearsal
-- never touches inbox_work, so live work never waits for it here.
update inbox_rehearsal_requests r
set state = 'running', worker = %(worker)s::text, started_at = now()
where r.replay_id = (
    select q.replay_id from inbox_rehearsal_requests q
    where q.state = 'queued' and q.deadline > now()
      and ('*' = any(%(sources)s::text[]) or q.sources <@ %(sources)s::text[])
    order by q.replay_id
    limit 1
    for update skip locked
)
returning r.replay_id, r.event_ids,
          greatest(extract(epoch from r.deadline - now()), 0)::float8 as seconds_left

-- name: rehearsal_progress
update inbox_rehearsal_requests set done = %(done)s::integer
where replay_id = %(replay_id)s::bigint and state = 'running'

-- name: rehearsal_finish
update inbox_rehearsal_requests
set state = %(state)s::text, finished_at = now(), done = %(done)s::integer,
    report = %(report)s::jsonb, error = %(error)s::text
where replay_id = %(replay_id)s::bigint and state = 'running'
