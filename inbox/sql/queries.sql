-- The receiving side's queries. Loaded once by inbox._core.sql.load_queries("inbox.sql", ...).

-- name: insert_event
-- One round trip for a new event, or a repeat of a known key (the database records that
-- delivery): the owner's function (migration 0018) claims the key and, only when it is
-- new, appends the event and queues its work row. No row back: the key's first writer has
-- not committed yet, and the caller runs record_duplicate. %(received_at)s is the receipt
-- time to store (an import; null: now); %(traceparent)s and %(tracestate)s the W3C trace
-- context of the span that wrote it (null: none), what the handler spans link to.
-- With %(notify)s true, a new event also sends the wake-up NOTIFY inside this transaction.
-- PostgreSQL takes a database-wide lock to queue notifications at commit, which serialises
-- concurrent writers: that is the mode for writes joined to a caller's transaction (whose
-- commit the writer cannot observe); standalone writes notify after commit, coalesced.
select event_id, is_new
from inbox_write_event(
    %(source)s::text, %(key)s::text, %(event_type)s::text, %(verifier)s::text,
    %(headers)s::jsonb, %(body)s::bytea, %(body_sha256)s::bytea, %(ordering_key)s::text,
    %(order_at)s::timestamptz, %(on_dead)s::text, %(traceparent)s::text,
    %(tracestate)s::text, %(received_at)s::timestamptz, %(notify)s::boolean)

-- name: insert_events
-- Group commit: the new events of several concurrent writes in one statement and one
-- commit (the owner's function, migration 0018). Each input row comes back with its event
-- id when this call claimed its key, or with a null id when its key was already taken:
-- that write then goes the single way (insert_event), which records the delivery. The
-- caller sends each (source, key) at most once per group. Past a short wait on a key that
-- another transaction holds uncommitted, the call fails (lock_not_available) and each
-- write goes singly.
-- The arrays go in binary (the %(...)b placeholders): psycopg's text format quotes and
-- escapes every element in Python (a jsonb[] of headers most of all), ~35 us a row against
-- ~7 in binary, which made the array dumping a tenth of `inbox serve`'s CPU under load.
select n, event_id
from inbox_write_events(
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
)

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
-- The health check: the server answers and the schema is there, as far as the writer
-- needs it (its function, migration 0018; a missing one raises undefined_function).
select 'inbox_write_event(text, text, text, text, jsonb, bytea, bytea, text, timestamptz,
                          text, text, text, timestamptz, boolean)'::regprocedure
