-- Replays and dead-letter retries. Owned by inbox._operations.replay.ReplayStore; loaded once.
-- A replay never touches the log: it only appends work rows and its run record.

-- name: next_replay_id
-- The run's id is drawn first, so its work rows can carry it; the run record is written
-- last, in the same transaction, with the final counts (the table is append-only).
select nextval(pg_get_serial_sequence('inbox_replays', 'id'))

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
-- Queue one chunk of a run at priority 1, so live work (priority 0) is claimed first. An
-- event with pending work keeps it (it is not queued twice; selection_work has left it out
-- already, this guards a caller's READ COMMITTED transaction); a dead letter is revived with
-- a fresh attempt budget. With a rate, the n-th event of the run becomes due n/rate
-- seconds from now: the workers' claim order spreads the run out without any process
-- having to stay up to feed it.
-- An ordered event's work row takes its key again from the log. Its key's order puts
-- priority first, so a replayed event never runs ahead of its key's live pending events,
-- and replayed events of one key run in key order (whatever their due times). A revived
-- dead letter of an ordered key keeps its priority: it takes its place in its key again
-- (a held key's head stays its head) rather than queueing behind the events it held.
-- With a required version, only a worker running that version of the code claims them.
insert into inbox_work
    (event_id, received_at, priority, run_at, replay_id, source, ordering_key, order_at,
     on_dead, required_version)
select t.event_id,
       e.received_at,
       1,
       case
           when %(rate)s::float8 is null then now()
           else now() + make_interval(secs => (%(offset)s::bigint + t.n - 1) / %(rate)s::float8)
       end,
       %(replay_id)s::bigint,
       case when e.ordering_key is not null then e.source end,
       e.ordering_key,
       e.order_at,
       e.on_dead,
       %(required_version)s::text
from unnest(%(event_ids)s::bigint[]) with ordinality as t(event_id, n)
join inbox_keys k on k.event_id = t.event_id
cross join lateral (
    -- Each event in its own partition (OFFSET 0 keeps the probe a subquery run with the
    -- key's receipt time, which prunes the others).
    select e.received_at, e.source, e.ordering_key, e.order_at, e.on_dead
    from inbox_events e
    where e.id = k.event_id and e.received_at = k.received_at
    offset 0
) as e
on conflict (event_id) do update
    set state = 'pending',
        priority = case when inbox_work.ordering_key is null then excluded.priority
                        else inbox_work.priority end,
        run_at = excluded.run_at,
        attempts = 0,
        last_error = null,
        enqueued_at = now(),
        replay_id = excluded.replay_id,
        required_version = excluded.required_version
    where inbox_work.state = 'dead'
returning event_id

-- name: insert_replay_run
insert into inbox_replays
    (id, kind, created_by, reason, filter, selected, queued, rate_per_second, via,
     required_version)
overriding system value
values
    (%(id)s::bigint, %(kind)s::text, %(created_by)s::text, %(reason)s::text,
     %(filter)s::jsonb, %(selected)s::integer, %(queued)s::integer, %(rate)s::float8,
     %(via)s::text, %(required_version)s::text)

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
       via, required_version
from inbox_replays
order by id desc
limit %(limit)s::bigint
