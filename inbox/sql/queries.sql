-- The receiving side's queries. Loaded once by inbox._core.sql.load_queries("inbox.sql", ...).

-- name: insert_event
-- One round trip for a new event: claim its key, and only when the key is new, append the
-- event and queue its work row. The key table (inbox_keys) is what makes a key unique, for
-- good: its row stays when the event's partition of the log is dropped, so a key delivered
-- again after that is still a duplicate. It also draws the event's id.
-- A key that was already there is recorded as a duplicate delivery here too, one
-- committed by a concurrent writer while this statement waited on it included (the
-- delivery's function reads a snapshot of its own). Should that key still be unseen, the
-- statement returns no row and the caller runs record_duplicate.
-- %(received_at)s is the receipt time to store (an import from another inbox); null: now.
-- %(traceparent)s and %(tracestate)s are the W3C trace context of the span that wrote it
-- (null: none, or no tracestate), what the handler spans link to.
-- With %(notify)s true, a new event also sends the wake-up NOTIFY inside this transaction.
-- PostgreSQL takes a database-wide lock to queue notifications at commit, which serialises
-- concurrent writers: that is the mode for writes joined to a caller's transaction (whose
-- commit the writer cannot observe); standalone writes notify after commit, coalesced.
-- An ordered event (%(ordering_key)s not null) carries its key, its order timestamp (the
-- given one, else its arrival) and its dead-letter policy, on the log (replays re-create
-- work rows from it) and on its work row (the claim).
with keyed as (
    insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
    values (%(source)s, %(key)s, coalesce(%(received_at)s::timestamptz, now()),
            %(body_sha256)s)
    on conflict (source, idempotency_key) do nothing
    returning event_id, received_at
),
ordering as (
    select keyed.event_id, keyed.received_at,
           case when %(ordering_key)s::text is not null
                then coalesce(%(order_at)s::timestamptz, keyed.received_at) end as order_at
    from keyed
),
inserted as (
    insert into inbox_events
        (id, received_at, source, idempotency_key, event_type, verifier, headers, body,
         body_sha256, ordering_key, order_at, on_dead, traceparent, tracestate)
    select event_id, received_at, %(source)s, %(key)s, %(event_type)s, %(verifier)s,
           %(headers)s, %(body)s, %(body_sha256)s, %(ordering_key)s::text, order_at,
           %(on_dead)s::text, %(traceparent)s, %(tracestate)s
    from ordering
),
queued as (
    insert into inbox_work (event_id, received_at, source, ordering_key, order_at, on_dead)
    select event_id, received_at,
           case when %(ordering_key)s::text is not null then %(source)s::text end,
           %(ordering_key)s::text, order_at, %(on_dead)s::text
    from ordering
),
-- A key that was there already: its repeat is recorded by the database, which finds the
-- key's event (inbox_record_delivery, the receiver's only way to write a delivery). The
-- FROM-less WHERE gates the call: it runs only when the key was not claimed here. The
-- function reads a fresh snapshot, so a key committed meanwhile is found too.
known as (
    select inbox_record_delivery(%(source)s::text, %(key)s::text, %(body_sha256)s::bytea,
                                 %(body)s::bytea) as event_id
    where not exists (select from keyed)
)
select keyed.event_id, true as is_new
from keyed
left join lateral (select pg_notify('inbox_work', '') where %(notify)s::boolean) as woken on true
union all
select event_id, false as is_new from known where event_id is not null

-- name: insert_events
-- Group commit: the new events of several concurrent writes in one statement and one
-- commit. Each input row comes back with its event id when this statement claimed its key,
-- or with a null id when its key was already taken: that write then goes the single way
-- (insert_event), which records the delivery. The caller sends each (source, key) at most
-- once per group. Keys go in key order, so two groups that share keys wait on each other
-- in the same order instead of deadlocking.
-- A key that another transaction holds uncommitted (a write joined to a long application
-- transaction) must not hold up the rest of the group: past a short lock wait the statement
-- fails (lock_not_available) and each write goes singly. The setting is local to this
-- statement's transaction, and is made while the input is read, which the insert's sort
-- finishes before inserting (and so before waiting on) any key.
-- The arrays go in binary (the %(...)b placeholders): psycopg's text format quotes and
-- escapes every element in Python (a jsonb[] of headers most of all), ~35 us a row against
-- ~7 in binary, which made the array dumping a tenth of `inbox serve`'s CPU under load.
with wait_briefly as (
    select set_config('lock_timeout', '250ms', true)
),
input as (
    select i.*
    from unnest(
        %(sources)b::text[],
        %(keys)b::text[],
        %(event_types)b::text[],
        %(verifiers)b::text[],
        %(headers)b::jsonb[],
        %(bodies)b::bytea[],
        %(body_sha256s)b::bytea[],
        %(ordering_keys)b::text[],
        %(order_ats)b::timestamptz[],
        %(on_deads)b::text[],
        %(traceparents)b::text[],
        %(tracestates)b::text[],
        %(received_ats)b::timestamptz[]
    ) with ordinality
        as i(source, idempotency_key, event_type, verifier, headers, body, body_sha256,
             ordering_key, given_order_at, on_dead, traceparent, tracestate,
             given_received_at, n)
    cross join wait_briefly
),
keyed as (
    insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
    select source, idempotency_key, coalesce(given_received_at, now()), body_sha256
    from input
    order by source, idempotency_key
    on conflict (source, idempotency_key) do nothing
    returning event_id, received_at, source, idempotency_key
),
ordered as (
    -- As in insert_event: an ordered event without a timestamp is ordered by arrival.
    select keyed.event_id, keyed.received_at, input.*,
           case when ordering_key is not null
                then coalesce(given_order_at, keyed.received_at) end as order_at
    from keyed
    join input using (source, idempotency_key)
),
inserted as (
    insert into inbox_events
        (id, received_at, source, idempotency_key, event_type, verifier, headers, body,
         body_sha256, ordering_key, order_at, on_dead, traceparent, tracestate)
    select event_id, received_at, source, idempotency_key, event_type, verifier, headers,
           body, body_sha256, ordering_key, order_at, on_dead, traceparent, tracestate
    from ordered
),
queued as (
    insert into inbox_work (event_id, received_at, source, ordering_key, order_at, on_dead)
    select event_id, received_at,
           case when ordering_key is not null then source end,
           ordering_key, order_at, on_dead
    from ordered
)
select input.n, keyed.event_id
from input
left join keyed using (source, idempotency_key)
order by input.n

-- name: record_duplicate
-- The second step for a key that a concurrent writer committed while insert_event waited.
select event_id, false as is_new
from inbox_record_delivery(%(source)s::text, %(key)s::text, %(body_sha256)s::bytea,
                                 %(body)s::bytea) as event_id
where event_id is not null

-- name: partition_for
-- The range of the log's partition that holds receipt time %(at)s (null: now), made if
-- missing: what a writer asks before an import (which names its receipt time) and after a
-- write that found none. Partitions are made ahead by the workers and `inbox db upgrade`.
select lo, hi from inbox_partition_for(coalesce(%(at)s::timestamptz, now()))

-- name: notify_work
-- A payload-free hint: the work table is the truth, a notification only says "look now".
select pg_notify('inbox_work', '')

-- name: ping
-- The health check: the server answers and the schema is there.
select 1 from inbox_keys limit 1
