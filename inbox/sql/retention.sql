-- How the log is kept: written by `inbox db upgrade` (the schema's owner) from [retention].
-- Loaded by inbox._core.database.migrate.

-- name: set_retention
-- The database enforces what [retention] says: inbox_prune refuses to go under
-- minimum_days, whoever calls it, and makes partitions of this period from now on (the
-- ones that exist keep theirs).
update inbox_retention
set partition = %(partition)s::text,
    minimum_days = %(minimum_days)s::float8,
    keys_days = %(keys_days)s::float8,
    updated_at = now()
where partition is distinct from %(partition)s::text
   or minimum_days is distinct from %(minimum_days)s::float8
   or keys_days is distinct from %(keys_days)s::float8

-- name: ensure_partitions
-- The log's partitions from now to a few periods ahead.
select inbox_ensure_partitions()
