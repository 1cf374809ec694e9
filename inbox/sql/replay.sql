-- Replays and dead-letter retries. Owned by inbox._operations.replay.ReplayStore; loaded once.
-- A replay never touches the log: it only appends work rows and its run record.

-- name: begin_replay_run
-- A run's audit row comes first, in the run's transaction, with the counts the selection
-- gave (the enqueue fails if they no longer hold): its id, which the run's work rows carry.
-- Through the owner's function, which records the database login beside `created_by`:
-- an operator cannot queue work, nor write an audit row, any other way.
select inbox_replay_begin(%(kind)s::text, %(created_by)s::text, %(reason)s::text,
                          %(filter)s::jsonb, %(selected)s::integer, %(queued)s::integer,
                          %(rate)s::float8, %(via)s::text, %(required_version)s::text)

-- name: replay_snapshot
-- The first statement of a replay's transaction: its selection, counts, sample and enqueue
-- all read one snapshot, so what the preview says is what the run queues. A work row that
-- another transaction changes after the snapshot makes the enqueue fail with a
-- serialization failure instead of queueing something the preview did not count; the
-- replay then starts over on a fresh snapshot.
set transaction isolation level repeatable read

-- name: selection_work
-- The selected events (oldest first) that a replay queues: those without pending work (a
-- replay leaves pending work as it is), in the order given, each with whether it ran
-- successfully before. A replay runs those handlers again, in a new transaction, so their
-- writes happen again unless the handler is replay-safe: the operator is told, and must
-- ask for it.
select t.event_id,
       exists (
           select from inbox_attempts a
           where a.event_id = t.event_id and a.received_at = k.received_at
             and a.outcome = 'processed'
           offset 0
       ) as processed
from unnest(%(event_ids)s::bigint[]) with ordinality as t(event_id, n)
join inbox_keys k on k.event_id = t.event_id
left join inbox_work w on w.event_id = t.event_id
where w.state is distinct from 'pending'
order by t.n

-- name: enqueue_replay
-- Queue one chunk of the run begun in this transaction, through the owner's function
-- (migration 0016): at priority 1, so live work (priority 0) is claimed first. An event
-- with pending work keeps it (selection_work has left it out already; should one have
-- gained pending work since, in a caller's READ COMMITTED transaction, the function fails
-- as a serialization failure rather than queue fewer than the run recorded); a dead letter
-- is revived with a fresh attempt budget. With the run's rate, the n-th event of the run
-- becomes due n/rate seconds from now: the workers' claim order spreads the run out
-- without any process having to stay up to feed it.
-- An ordered event's work row takes its key again from the log. Its key's order puts
-- priority first, so a replayed event never runs ahead of its key's live pending events,
-- and replayed events of one key run in key order (whatever their due times). A revived
-- dead letter of an ordered key keeps its priority: it takes its place in its key again
-- (a held key's head stays its head) rather than queueing behind the events it held.
-- With the run's required version, only a worker running that version claims them.
select event_id
from inbox_replay_enqueue(%(replay_id)s::bigint, %(event_ids)s::bigint[], %(offset)s::bigint)
    as event_id

-- name: skip_dead
-- `inbox dead skip`: the dead letters among the ids leave the work table as skipped (their
-- held keys go on), audited as a 'dead-skip' run, in one call of the owner's function.
select skip_id, event_id
from inbox_dead_skip(%(event_ids)s::bigint[], %(created_by)s::text, %(reason)s::text,
                     %(via)s::text, %(filter)s::jsonb)

-- name: wake_workers
-- Sent inside the run's transaction: PostgreSQL delivers it at commit, once the work exists.
select pg_notify('inbox_work', '')

-- name: replay_runs
select id, kind, created_at, created_by, reason, filter, selected, queued, rate_per_second,
       via, required_version, outcome
from inbox_replays
order by id desc
limit %(limit)s::bigint

-- name: record_rehearsal
-- A rehearsal's one audit row, written after its events ran and rolled back (it holds
-- their counts): through the owner's function, which records the login as for a replay.
select inbox_rehearsal_record(%(created_by)s::text, %(reason)s::text, %(filter)s::jsonb,
                              %(selected)s::integer, %(outcome)s::jsonb, %(via)s::text)

-- name: request_rehearsal
-- The console's rehearsal: its audit row and its request, which a worker with the
-- events' handlers runs (processors/_rehearsal/requests.py), through the owner's function.
select inbox_rehearsal_request(%(created_by)s::text, %(reason)s::text, %(filter)s::jsonb,
                               %(event_ids)s::bigint[], %(form)s::jsonb,
                               %(timeout_seconds)s::float8, %(via)s::text)

-- name: rehearsal_request
-- A requested rehearsal with its audit row. One still queued or running past its deadline
-- reads as expired: no worker finished it in time (a worker that stops mid-run says
-- nothing, so the deadline is the truth).
select r.replay_id, p.created_at, p.created_by, p.reason, p.via, r.event_ids, r.sources,
       r.form,
       case when r.state in ('queued', 'running') and r.deadline <= now() then 'expired'
            else r.state end as state,
       r.deadline, r.worker, r.started_at, r.finished_at, r.done, r.report, r.error
from inbox_rehearsal_requests r
    join inbox_replays p on p.id = r.replay_id
where r.replay_id = %(replay_id)s::bigint

-- name: rehearsal_workers
-- The sources of the events, and how many running worker processes handle them all
-- (running as in operator.sql's running_workers).
with wanted as (
    select array(select distinct e.source from inbox_events e
                 where e.id = any(%(event_ids)s::bigint[]) order by 1) as sources
)
select wanted.sources,
       (select count(*)::integer from inbox_workers w
        where w.stopped_at is null
          and ('*' = any(w.sources) or wanted.sources <@ w.sources)
          and (w.seen_at > now() - interval '30 seconds'
               or exists (
                   select from pg_stat_activity a
                   where a.datname = current_database()
                     and starts_with(a.application_name,
                                     left('pg-inbox worker ' || w.name || '/', 63))
               ))) as workers
from wanted
