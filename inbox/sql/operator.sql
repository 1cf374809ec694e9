-- The operator's queries: status, event inspection, retention. Owned by
-- inbox._operations.store.LogStore; loaded once. None of these runs on the write path.
-- Optional filters are written `(%(x)s::t is null or ...)` and run unprepared, so each
-- execution is planned for the filters actually given.

-- name: status_sources
-- Per source: traffic of the last hour and day, the queue's states, the waiting time of
-- the oldest due live work (replays excluded: they wait behind live work by design), and
-- settled attempts of the last five minutes. Sources are those configured plus those with
-- recent traffic or work, so the scan stays on the time indexes and the small work table.
-- An event's source, where only its id is at hand, comes from the key table's event index.
with recent as (
    select source,
           count(*) filter (where received_at > now() - interval '1 hour') as received_1h,
           count(*) as received_24h
    from inbox_events
    where received_at > now() - interval '24 hours'
    group by source
),
duplicates as (
    select k.source,
           count(*) filter (where d.received_at > now() - interval '1 hour') as duplicates_1h,
           count(*) as duplicates_24h
    from inbox_deliveries d
    join inbox_keys k on k.event_id = d.event_id
    where d.received_at > now() - interval '24 hours'
    group by k.source
),
work as (
    select k.source,
           count(*) filter (where w.state = 'pending' and w.last_error is null) as pending,
           count(*) filter (where w.state = 'pending' and w.last_error is not null) as retrying,
           count(*) filter (where w.state = 'dead') as dead,
           count(*) filter (where w.state = 'pending' and w.replay_id is not null) as replay_queued,
           extract(epoch from now() - min(w.run_at) filter (
               where w.state = 'pending' and w.replay_id is null and w.run_at <= now()
           ))::float8 as oldest_pending_seconds
    from inbox_work w
    join inbox_keys k on k.event_id = w.event_id
    group by k.source
),
settled as (
    select k.source, count(*) as settled_5m
    from inbox_attempts a
    join inbox_keys k on k.event_id = a.event_id
    where a.finished_at > now() - interval '5 minutes'
      and a.outcome in ('processed', 'skipped')
    group by k.source
),
sources as (
    select source from recent
    union select source from duplicates
    union select source from work
    union select source from settled
    union select unnest(%(sources)s::text[])
)
select s.source,
       coalesce(r.received_1h, 0) as received_1h,
       coalesce(r.received_24h, 0) as received_24h,
       coalesce(d.duplicates_1h, 0) as duplicates_1h,
       coalesce(d.duplicates_24h, 0) as duplicates_24h,
       coalesce(w.pending, 0) as pending,
       coalesce(w.retrying, 0) as retrying,
       coalesce(w.dead, 0) as dead,
       coalesce(w.replay_queued, 0) as replay_queued,
       w.oldest_pending_seconds,
       coalesce(t.settled_5m, 0) / 5.0 as processed_per_minute
from sources s
left join recent r on r.source = s.source
left join duplicates d on d.source = s.source
left join work w on w.source = s.source
left join settled t on t.source = s.source
order by s.source

-- name: status_sessions
-- Who runs: worker processes, seen by a connection of their own ("pg-inbox worker
-- HOST:PID/N") or by a recent heartbeat (behind a transaction pooler, the server's
-- sessions do not show which client they serve), and their listeners ("pg-inbox listener
-- HOST:PID/...", always direct); and how full the server's notification queue is (it
-- grows when a listening session stops reading).
with seen as (
    select substring(application_name from '^pg-inbox worker (.*)/[0-9]+$') as name
    from pg_stat_activity
    where datname = current_database()
    union
    select name from inbox_workers
    where stopped_at is null and seen_at > now() - interval '30 seconds'
)
select (select count(name) from seen) as worker_processes,
       (select count(*) from pg_stat_activity
        where datname = current_database()
          and starts_with(application_name, 'pg-inbox listener ')) as listeners,
       pg_notification_queue_usage() as notification_queue_usage

-- name: running_workers
-- The worker processes running now, by the version of the code they run, newest first. A
-- process runs while a connection of its own ("pg-inbox worker NAME/N", cut to the 63
-- characters PostgreSQL keeps) is open, or its heartbeat is recent: one that was killed
-- never said it stopped.
select w.version, count(*)::integer as processes, min(w.started_at) as since
from inbox_workers w
where w.stopped_at is null
  and (w.seen_at > now() - interval '30 seconds'
       or exists (
           select from pg_stat_activity a
           where a.datname = current_database()
             and starts_with(a.application_name, left('pg-inbox worker ' || w.name || '/', 63))
       ))
group by w.version
order by min(w.started_at) desc

-- name: select_events
-- The ids of the events a filter selects, newest first, from `before` down (keyset paging
-- over the primary key, which grows with arrival; a null limit selects all). The state is
-- derived: work row dead, or pending (retrying once it has failed), else the outcome of the
-- last attempt. A filter of work states only (`work_only`) makes the work join inner, so
-- the plan starts from the small work table instead of walking the log. The replayed
-- filter reads run ids from the work row and the attempts' partial replay index.
select e.id
from inbox_events e
left join inbox_work w on w.event_id = e.id
left join lateral (
    select a.outcome, a.error_class || ': ' || a.error_message as error
    from inbox_attempts a
    where a.event_id = e.id and a.received_at = e.received_at
    order by a.id desc
    limit 1
) as last on true
cross join lateral (
    select case
        when w.state = 'dead' then 'dead'
        when w.state = 'pending' and w.last_error is not null then 'retrying'
        when w.state = 'pending' then 'pending'
        when last.outcome = 'skipped' then 'skipped'
        else 'processed'
    end as state
) as s
where (%(ids)s::bigint[] is null or e.id = any(%(ids)s::bigint[]))
  and (%(source)s::text is null or e.source = %(source)s::text)
  and (%(type_like)s::text is null or e.event_type like %(type_like)s::text)
  and (%(work_only)s::boolean is null or w.event_id is not null)
  and (%(states)s::text[] is null
       or s.state = any(%(states)s::text[])
       or ('replay-queued' = any(%(states)s::text[])
           and w.state = 'pending' and w.replay_id is not null))
  and (%(since)s::timestamptz is null or e.received_at >= %(since)s::timestamptz)
  and (%(until)s::timestamptz is null or e.received_at < %(until)s::timestamptz)
  and (%(key)s::text is null
       or e.id in (select k.event_id from inbox_keys k
                   where k.idempotency_key = %(key)s::text
                     and (%(source)s::text is null or k.source = %(source)s::text)))
  and (%(error_like)s::text is null
       or coalesce(w.last_error, last.error) ilike %(error_like)s::text)
  and (%(repeats)s::boolean is null
       or exists (
           select from inbox_deliveries d
           where d.event_id = e.id and d.received_at >= e.received_at
       ))
  and (%(replayed)s::boolean is null
       or w.replay_id is not null
       or exists (
           select from inbox_attempts r
           where r.event_id = e.id and r.received_at = e.received_at
             and r.replay_id is not null
       ))
  and (%(before)s::bigint is null or e.id < %(before)s::bigint)
order by e.id desc
limit %(limit)s::bigint

-- name: event_summaries
-- One line per event for lists, in the order of the ids given.
select e.id, e.source, e.idempotency_key, e.event_type, e.received_at, length(e.body),
       case
           when w.state = 'dead' then 'dead'
           when w.state = 'pending' and w.last_error is not null then 'retrying'
           when w.state = 'pending' then 'pending'
           when last.outcome = 'skipped' then 'skipped'
           else 'processed'
       end as state,
       (select count(*) from inbox_attempts a
        where a.event_id = e.id and a.received_at = e.received_at) as attempts,
       1 + (select count(*) from inbox_deliveries d
            where d.event_id = e.id and d.received_at >= e.received_at) as deliveries,
       coalesce(w.last_error, last.error) as last_error,
       last.finished_at as last_attempt_at,
       w.run_at as next_run_at,
       w.replay_id as queued_replay_id
from unnest(%(ids)s::bigint[]) with ordinality as wanted(id, position)
join inbox_keys k on k.event_id = wanted.id
cross join lateral (
    -- Each event in its own partition (see event_by_id).
    select e.* from inbox_events e
    where e.id = k.event_id and e.received_at = k.received_at
    offset 0
) as e
left join inbox_work w on w.event_id = e.id
left join lateral (
    select a.outcome, a.finished_at, a.error_class || ': ' || a.error_message as error
    from inbox_attempts a
    where a.event_id = e.id and a.received_at = e.received_at
    order by a.id desc
    limit 1
) as last on true
order by wanted.position

-- name: event_by_id
-- traceparent: the receipt's trace, shown so an operator can open it in a trace viewer.
-- The key table gives the event's receipt time, which takes the lookup to its partition:
-- the probe of the log is a subquery run with the key's values (OFFSET 0 keeps it so), so
-- every other partition is pruned when it runs. As a join, the planner takes the id from
-- the constant and checks the receipt time after the fact, probing every partition.
select e.*
from inbox_keys k
cross join lateral (
    select e.id, e.source, e.idempotency_key, e.event_type, e.verifier, e.received_at,
           e.headers, e.body, e.body_sha256, e.traceparent
    from inbox_events e
    where e.id = k.event_id and e.received_at = k.received_at
    offset 0
) as e
where k.event_id = %(id)s::bigint

-- name: event_by_key
-- As event_by_id, from the key.
select e.*
from inbox_keys k
cross join lateral (
    select e.id, e.source, e.idempotency_key, e.event_type, e.verifier, e.received_at,
           e.headers, e.body, e.body_sha256, e.traceparent
    from inbox_events e
    where e.id = k.event_id and e.received_at = k.received_at
    offset 0
) as e
where k.source = %(source)s::text and k.idempotency_key = %(key)s::text

-- name: search_events
-- An operator's search box: an event id, `SOURCE:KEY`, or a provider key alone (the same
-- key may exist in several sources: all are returned). Every branch is a probe of the key
-- table's unique indexes, whatever the size of the log; an event whose partition was
-- pruned is no longer found (its key stays, for dedupe). The key alone has no index of its
-- own (one more index on the write path for a rare read): the distinct sources are found
-- by skipping through the (source, key) index, one descent per source, and each source is
-- then probed for the key.
with recursive sources(source) as (
    (select source from inbox_keys
     where %(key)s::text is not null
     order by source limit 1)
    union all
    select (select k.source from inbox_keys k
            where k.source > sources.source
            order by k.source limit 1)
    from sources
    where sources.source is not null
),
found as (
    select event_id, received_at from inbox_keys where event_id = %(id)s::bigint
    union
    select event_id, received_at from inbox_keys
    where source = %(source)s::text and idempotency_key = %(source_key)s::text
    union
    select k.event_id, k.received_at
    from sources
    cross join lateral (
        -- One probe per source (OFFSET 0 keeps it a probe: as a join the planner may hash
        -- the whole key table against the few sources it cannot count beforehand).
        select k.event_id, k.received_at
        from inbox_keys k
        where k.source = sources.source and k.idempotency_key = %(key)s::text
        offset 0
    ) as k
)
select found.event_id
from found
where exists (
    -- Probed with each key's values, in its partition alone (as in event_by_id).
    select from inbox_events e
    where e.id = found.event_id and e.received_at = found.received_at
    offset 0
)
order by found.event_id desc
limit %(limit)s::bigint

-- name: event_work
select state, attempts, run_at, enqueued_at, last_error, replay_id, priority
from inbox_work
where event_id = %(id)s::bigint

-- name: event_deliveries
-- The repeats of an event's key (the first delivery is the event row itself). None comes
-- before the event: the receipt time keeps the scan to the partitions from its own on.
select id, received_at, body_sha256, body
from inbox_deliveries
where event_id = %(id)s::bigint and received_at >= %(received_at)s::timestamptz
order by id

-- name: event_attempts
-- `attempt` counts within a run (a replay starts its own at 1, with a fresh budget); the
-- sequence numbers the event's whole history, so no two attempts share a number.
select a.attempt, a.started_at, a.finished_at, a.outcome, a.handler, a.worker,
       a.error_class, a.error_message, a.replay_id, r.reason as replay_reason,
       a.error_traceback, row_number() over (order by a.id) as sequence, a.version
from inbox_attempts a
left join inbox_replays r on r.id = a.replay_id
where a.event_id = %(id)s::bigint and a.received_at = %(received_at)s::timestamptz
order by a.id

-- name: event_replays
-- The runs that included an event: those its attempts ran under, and the one its pending
-- or dead work was queued by (not attempted yet). Both lookups go by the event's id.
select r.id, r.kind, r.created_at, r.created_by, r.reason, r.filter, r.selected, r.queued,
       r.rate_per_second, r.via, r.required_version, r.outcome
from inbox_replays r
where r.id in (
    select a.replay_id from inbox_attempts a
    where a.event_id = %(id)s::bigint and a.received_at = %(received_at)s::timestamptz
      and a.replay_id is not null
    union
    select w.replay_id from inbox_work w
    where w.event_id = %(id)s::bigint and w.replay_id is not null
)
order by r.id desc

-- name: delivery_body
-- The exact bytes of one delivery: a repeat keeps its body only when it differs from the
-- event's, so an identical one is the event's own body.
select coalesce(d.body, e.body)
from inbox_keys k
cross join lateral (
    -- The event in its own partition (see event_by_id).
    select e.body from inbox_events e
    where e.id = k.event_id and e.received_at = k.received_at
    offset 0
) as e
join inbox_deliveries d on d.event_id = k.event_id and d.received_at >= k.received_at
where k.event_id = %(event_id)s::bigint and d.id = %(delivery_id)s::bigint

-- name: prune_preview
-- What a prune would remove, and what it keeps because work remains (pending, retrying or
-- dead events are never pruned). Through a SECURITY DEFINER function (migration 0006), so
-- the retention role needs no read access to the log.
select cutoff, deletable, kept, partitions_dropped, partitions_kept
from inbox_prune_preview(%(older_than_seconds)s::float8)

-- name: prune
-- The one door through the append-only guard: inbox_prune (migration 0006) deletes and
-- writes the audit row in one statement, as the tables' owner.
select audit_id, cutoff, events_deleted, deliveries_deleted, attempts_deleted, events_kept,
       partitions_dropped, partitions_kept, keys_deleted
from inbox_prune(%(older_than_seconds)s::float8, %(created_by)s::text, %(via)s::text)

-- name: drop_pruned
-- The files of what the prune detached, freed in a transaction of their own (the prune's
-- held the log's locks for its constant part only).
select inbox_drop_pruned()

-- name: prunes
-- The audit trail of retention, newest first.
select id, created_at, created_by, older_than_seconds, cutoff, events_deleted,
       deliveries_deleted, attempts_deleted, events_kept, via
from inbox_prunes
order by id desc
limit %(limit)s::bigint

-- name: activity
-- Received, processed and failed per bucket, the last bucket holding now. Buckets are
-- aligned to the step (date_bin), so two calls a minute apart agree on past buckets. Each
-- bucket counts its own range of the time indexes (inbox_events_received_at, and
-- inbox_attempts_finished_at, which carries the outcome): index-only scans, no sort of a
-- day's attempts (a single grouped scan sorted 100,000 of them: 200 ms at 1M events, this
-- takes 30). Processed counts settled attempts (processed or skipped); failed counts
-- attempts that raised or crashed (a handler's deliberate Retry is neither).
select b.at,
       (select count(*)
        from inbox_events e
        where e.received_at >= b.at and e.received_at < b.at + %(step)s::interval) as received,
       s.processed,
       s.failed
from generate_series(
    date_bin(%(step)s::interval, now(), timestamptz '2000-01-01 00:00:00+00')
        - %(step)s::interval * (%(buckets)s::integer - 1),
    now(),
    %(step)s::interval
) as b(at)
cross join lateral (
    select count(*) filter (where a.outcome in ('processed', 'skipped')) as processed,
           count(*) filter (where a.outcome in ('failed', 'dead', 'crashed')) as failed
    from inbox_attempts a
    where a.finished_at >= b.at and a.finished_at < b.at + %(step)s::interval
) as s
order by b.at

-- name: interactive
-- For the overview's counting reads, in their own transaction: JIT compilation pays off
-- for long analytics, not for a page (it took 500 ms of an 800 ms activity query when the
-- planner's estimate crossed jit_above_cost), and parallel workers cost more to start on
-- a small machine than they save on a few thousand rows.
select set_config('jit', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true)

-- name: replay_run
select id, kind, created_at, created_by, reason, filter, selected, queued, rate_per_second,
       via, required_version, outcome
from inbox_replays
where id = %(id)s::bigint

-- name: replay_progress
-- Where a run's events are now. Its pending or dead work still carries its id; an event
-- whose work is gone settled under the run, processed if one of the run's attempts
-- succeeded. An event a later run took over (a dead letter retried again) counts as failed
-- here: this run did not get it through. Attempts are found by the partial replay index;
-- the work table is small by design (it holds only what is still to do).
with work as (
    select w.event_id, w.state, w.last_error
    from inbox_work w
    where w.replay_id = %(id)s::bigint
),
attempted as (
    select a.event_id, bool_or(a.outcome in ('processed', 'skipped')) as succeeded,
           count(*) as attempts
    from inbox_attempts a
    where a.replay_id = %(id)s::bigint
    group by a.event_id
)
select count(*) filter (where w.event_id is null and t.succeeded) as processed,
       count(*) filter (where w.state = 'dead' or (w.event_id is null and not t.succeeded))
           as failed,
       count(*) filter (where w.state = 'pending') as pending,
       count(*) filter (where w.state = 'pending' and w.last_error is not null) as retrying,
       coalesce(sum(t.attempts), 0) as attempts
from work w
full join attempted t on t.event_id = w.event_id

-- name: audit
-- Replay runs, dead-letter retries and prunes in one list, newest first, paged by the
-- position (created_at, kind, id) of the last entry shown. Both tables are append-only
-- and small (one row per operator action).
select kind, id, created_at, created_by, via, reason, filter, selected, count
from (
    select r.kind, r.id, r.created_at, r.created_by, r.via, r.reason, r.filter,
           r.selected, r.queued as count
    from inbox_replays r
    union all
    select 'prune', p.id, p.created_at, p.created_by, p.via, null,
           jsonb_build_object('older_than_seconds', p.older_than_seconds,
                              'received_before', p.cutoff,
                              'events_kept', p.events_kept),
           null, p.events_deleted
    from inbox_prunes p
) as entries
where %(before_at)s::timestamptz is null
   or (created_at, kind, id)
      < (%(before_at)s::timestamptz, %(before_kind)s::text, %(before_id)s::bigint)
order by created_at desc, kind desc, id desc
limit %(limit)s::bigint

-- name: held_keys
-- Ordered keys held by their head (docs/ordering.md): a dead letter of a source that holds
-- (on_dead = 'hold'), held until an operator retries or skips it; or a failed event
-- waiting for its retry, with events of its key waiting behind it. A head is the first of
-- its key's rows in key order (the claim's rule): no row of the key sorts before it.
-- Candidates are few (dead or retrying rows); each test is a probe of inbox_work_key.
select w.source, w.ordering_key, w.event_id, w.state, w.attempts, w.last_error, w.run_at,
       (select count(*) from inbox_work f
         where f.source = w.source and f.ordering_key = w.ordering_key
           and f.state = 'pending' and f.event_id <> w.event_id) as waiting,
       count(*) over () as total
from inbox_work w
where w.ordering_key is not null
  and ((w.state = 'dead' and w.on_dead = 'hold')
       or (w.state = 'pending' and w.attempts > 0 and w.run_at > now()))
  and not exists (
      select from inbox_work h
      where (h.source, h.ordering_key) = (w.source, w.ordering_key)
        and (h.state = 'pending' or h.on_dead = 'hold')
        and (h.priority, h.order_at, h.event_id) < (w.priority, w.order_at, w.event_id))
order by w.state, w.event_id
limit %(limit)s::bigint
