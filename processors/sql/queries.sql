-- The processing side's queries. Owned by processors._store.WorkStore; loaded once.

-- name: claim_batch
-- Take up to batch_size due events that no worker has an unsettled claim on, in order
-- (live work before replays, then due time), skipping rows other workers hold. The inner
-- query walks the partial index inbox_work_claim; the locks are taken on inbox_work only.
-- The scan starts after the index position (after_priority, after_run_at, after_event_id):
-- a settled row leaves a dead index entry that every scan from the start walks until vacuum
-- removes it, so a claim loop draining a big backlog resumes after its last full batch
-- (processors._store.ClaimCursor), and starts from the beginning again every second and after
-- any short batch, which finds what its resumed scans passed by.
-- traceparent is the receipt's trace context, which each handler run's span links to.
-- The last two columns are the last row's position, where the next claim may resume.
select w.event_id, w.attempts, w.replay_id, 0 as crashes,
       e.source, e.idempotency_key, e.event_type, e.received_at, e.headers, e.body,
       e.traceparent, w.priority, w.run_at
from (
    select event_id, attempts, replay_id, priority, run_at
    from inbox_work
    where state = 'pending'
      and run_at <= now()
      and (priority, run_at, event_id)
          > (%(after_priority)s::smallint, %(after_run_at)s::timestamptz, %(after_event_id)s::bigint)
      and not exists (select from inbox_claims c where c.event_id = inbox_work.event_id)
    order by priority, run_at, event_id
    limit %(batch_size)s
    for update skip locked
) as w
join inbox_events e on e.id = w.event_id
order by w.priority, w.run_at, w.event_id

-- name: claim_suspect
-- Take one due event whose earlier claim never settled (its worker died mid-batch). It runs
-- alone, so a poison pill cannot take innocent events of its batch down with it again.
select w.event_id, w.attempts, w.replay_id, c.claims as crashes,
       e.source, e.idempotency_key, e.event_type, e.received_at, e.headers, e.body,
       e.traceparent
from inbox_claims c
join inbox_work w on w.event_id = c.event_id
join inbox_events e on e.id = w.event_id
where w.state = 'pending' and w.run_at <= now()
order by c.last_claimed_at, c.event_id
limit 1
for update of w skip locked

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
insert into inbox_claims (event_id, last_worker)
select unnest(%(event_ids)s::bigint[]), %(worker)s
on conflict (event_id) do update
    set claims = inbox_claims.claims + 1,
        last_claimed_at = now(),
        last_worker = excluded.last_worker

-- name: settle_batch
-- Everything a batch decided, in one statement of the claim transaction: processed and
-- skipped events leave the work table, failures are rescheduled or dead-lettered, every
-- outcome is appended to the history, and the claim counters of settled events are reset.
-- Released events (claimed, not run) go back to the queue as they were.
with outcome as (
    select *
    from unnest(
        %(event_ids)s::bigint[],
        %(attempts)s::integer[],
        %(outcomes)s::text[],
        %(states)s::text[],
        %(delays)s::float8[],
        %(started)s::timestamptz[],
        %(finished)s::timestamptz[],
        %(handlers)s::text[],
        %(error_classes)s::text[],
        %(error_messages)s::text[],
        %(replay_ids)s::bigint[],
        %(error_tracebacks)s::text[]
    ) as o(event_id, attempt, outcome, state, delay, started_at, finished_at, handler,
           error_class, error_message, replay_id, error_traceback)
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
    (event_id, attempt, started_at, finished_at, outcome, handler, worker,
     error_class, error_message, replay_id, error_traceback)
select event_id, attempt, started_at, finished_at, outcome, handler, %(worker)s,
       error_class, error_message, replay_id, error_traceback
from outcome
where outcome <> 'released'

-- name: unsettled_of
-- After a connection was lost during COMMIT: settling deletes an event's claim counter in
-- the claim transaction, so a counter that is still there means the commit did not happen.
-- Re-read, never re-run blindly: unsettled events are simply claimable again.
select event_id
from inbox_claims
where event_id = any(%(event_ids)s::bigint[])

-- name: count_due
-- What processors.testing.run_pending waits for: nothing left that may run now. A claimed
-- row stays until its batch commits, so zero also means every started batch has settled; a
-- failed attempt's retry lies in the future and no longer counts.
select count(*) from inbox_work where state = 'pending' and run_at <= now()

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
join inbox_events e on e.id = w.event_id
group by e.source
order by e.source
