-- Least privilege: the group roles of `inbox db roles` and exactly what each may do.
-- The role and schema names are identifiers composed in by inbox._core.database.roles (psycopg.sql),
-- written here as {owner}, {receiver}, {worker}, {operator}, {retention}, {schema}; the
-- role names also appear as literals ({owner_name}, ...) where a DO block needs them.
-- Every statement is idempotent: re-running it grants nothing new and fails on nothing.
-- The revokes first make the grants exact: a privilege granted by hand earlier goes.

-- name: create_roles
-- Group roles without login: a DBA grants one to each login role of a part.
do $$
declare
    wanted text;
begin
    foreach wanted in array array[{owner_name}, {receiver_name}, {worker_name},
                                  {operator_name}, {retention_name}]
    loop
        if not exists (select from pg_roles where rolname = wanted) then
            execute format('create role %I nologin', wanted);
        end if;
    end loop;
end
$$

-- name: reset
revoke all on {schema}.inbox_events, {schema}.inbox_work, {schema}.inbox_attempts,
              {schema}.inbox_deliveries, {schema}.inbox_claims, {schema}.inbox_replays,
              {schema}.inbox_prunes, {schema}.inbox_workers, {schema}.inbox_keys,
              {schema}.inbox_partitions, {schema}.inbox_retention,
              {schema}.inbox_console_sessions, {schema}.inbox_console_signin_attempts,
              {schema}.inbox_rehearsal_guard, {schema}.inbox_rehearsal_requests
    from {receiver}, {worker}, {operator}, {retention};
revoke all on function {schema}.inbox_prune(float8, text, text),
                       {schema}.inbox_prune_preview(float8),
                       {schema}.inbox_dead_skip(bigint[], text, text, text, jsonb),
                       {schema}.inbox_partition_for(timestamptz),
                       {schema}.inbox_ensure_partitions(),
                       {schema}.inbox_drop_pruned(),
                       {schema}.inbox_record_delivery(text, text, bytea, bytea),
                       {schema}.inbox_replay_begin(text, text, text, jsonb, integer, integer,
                                                   float8, text, text),
                       {schema}.inbox_replay_enqueue(bigint, bigint[], bigint),
                       {schema}.inbox_rehearsal_record(text, text, jsonb, integer, jsonb,
                                                       text),
                       {schema}.inbox_rehearsal_request(text, text, jsonb, bigint[], jsonb,
                                                        float8, text),
                       {schema}.inbox_write_event(text, text, text, text, jsonb, bytea,
                                                  bytea, text, timestamptz, text, text,
                                                  text, timestamptz, boolean),
                       {schema}.inbox_write_events(text[], text[], text[], text[], jsonb[],
                                                   bytea[], bytea[], text[], timestamptz[],
                                                   text[], text[], text[], timestamptz[])
    from {receiver}, {worker}, {operator}, {retention};
revoke all on sequence {schema}.inbox_replays_id_seq
    from {receiver}, {worker}, {operator}, {retention}

-- name: schema
-- The owner creates the schema's objects (it runs the migrations); the others only use
-- them. Every part may read which revision the schema is at: the worker checks it at start.
grant usage, create on schema {schema} to {owner};
grant usage on schema {schema} to {receiver}, {worker}, {operator}, {retention};
grant select on {schema}.alembic_version to {receiver}, {worker}, {operator}

-- name: receiver
-- The internet-facing part appends and nothing else, and only through the owner's write
-- functions (migration 0018): they claim the key and, only for a key claimed there,
-- append the event and queue its work, so there is no stored event it could queue again
-- and no row it names. It reads nothing: no table, no body, no header. A repeat delivery
-- is recorded by the database from the key (inbox_record_delivery, also called by the
-- write function). An import names its receipt time, whose partition of the log it may
-- have made (inbox_partition_for only creates the empty partitions of one period).
grant execute on function
    {schema}.inbox_write_event(text, text, text, text, jsonb, bytea, bytea, text,
                               timestamptz, text, text, text, timestamptz, boolean),
    {schema}.inbox_write_events(text[], text[], text[], text[], jsonb[], bytea[], bytea[],
                                text[], timestamptz[], text[], text[], text[],
                                timestamptz[]),
    {schema}.inbox_partition_for(timestamptz),
    {schema}.inbox_record_delivery(text, text, bytea, bytea)
    to {receiver}

-- name: worker
-- Reads events (their trace context included: a handler's span links to its receipt);
-- claims (FOR UPDATE), settles (deletes or reschedules) work; appends attempts (row
-- security, migration 0016: only pending work is settled, and an attempt is written only
-- for an event with work; a dead letter is the operator's); keeps the
-- claim counters that spot a crashed worker. The queue gauges of its /metrics read
-- inbox_work and inbox_events too (processors' queue_gauges). It reports the code it
-- runs in inbox_workers (and removes the rows of workers that stopped long ago).
grant select on {schema}.inbox_events, {schema}.inbox_attempts to {worker};
grant select, update, delete on {schema}.inbox_work to {worker};
grant select, insert, update, delete on {schema}.inbox_claims to {worker};
grant insert on {schema}.inbox_attempts to {worker};
grant select, insert, update, delete on {schema}.inbox_workers to {worker};
-- It keeps the log's partitions made a few periods ahead (and may make a missing one).
grant execute on function {schema}.inbox_ensure_partitions(),
                          {schema}.inbox_partition_for(timestamptz) to {worker};
grant select on {schema}.inbox_partitions to {worker};
-- A rehearsal (`inbox replay --rehearse`) runs the worker's handlers in transactions that
-- roll back, each opened with a row here whose deferred trigger fails any COMMIT.
grant insert on {schema}.inbox_rehearsal_guard to {worker};
-- It runs the rehearsals the console asks for: takes one, counts its progress, leaves
-- its report.
grant select, update (state, worker, started_at, finished_at, done, report, error)
    on {schema}.inbox_rehearsal_requests to {worker}

-- name: operator
-- Reads everything; changes nothing but through the owner's audited functions, which
-- record the database login beside the actor it states: a replay or a dead-letter retry
-- writes its audit row (inbox_replay_begin) and then queues work under it
-- (inbox_replay_enqueue); skipping a dead letter (`inbox dead skip`) goes through
-- inbox_dead_skip; a rehearsal's record, through inbox_rehearsal_record, and the
-- console's request for one (which a worker runs), through inbox_rehearsal_request.
grant select on {schema}.inbox_events, {schema}.inbox_work, {schema}.inbox_attempts,
                {schema}.inbox_deliveries, {schema}.inbox_claims, {schema}.inbox_replays,
                {schema}.inbox_prunes, {schema}.inbox_workers, {schema}.inbox_keys,
                {schema}.inbox_partitions, {schema}.inbox_retention,
                {schema}.inbox_rehearsal_requests
    to {operator};
grant execute on function {schema}.inbox_dead_skip(bigint[], text, text, text, jsonb),
                          {schema}.inbox_replay_begin(text, text, text, jsonb, integer,
                                                      integer, float8, text, text),
                          {schema}.inbox_replay_enqueue(bigint, bigint[], bigint),
                          {schema}.inbox_rehearsal_record(text, text, jsonb, integer, jsonb,
                                                          text),
                          {schema}.inbox_rehearsal_request(text, text, jsonb, bigint[],
                                                           jsonb, float8, text)
    to {operator};
-- The console (which runs as the operator) keeps its users' sessions: signed in, used,
-- signed out; and the sign-in attempts every console process counts (UPDATE only for the
-- row locks of deleting expired ones). These rows hold no part of the log.
grant select, insert, update, delete on {schema}.inbox_console_sessions,
                                        {schema}.inbox_console_signin_attempts
    to {operator}

-- name: retention
-- Nothing but the audited functions: they read and delete as the owner (the drop of what
-- a prune detached, too).
grant execute on function {schema}.inbox_prune(float8, text, text),
                          {schema}.inbox_prune_preview(float8),
                          {schema}.inbox_drop_pruned()
    to {retention}

-- name: missing_privileges
-- Which of a part's needs the connected role lacks, checked when the part starts so a
-- missing grant is a refusal to start, not a failure at the first webhook. Column needs
-- are checked per column: the receiver is granted columns, never whole tables.
select n.kind, n.object, n.column_name, n.privilege, current_user::text
from unnest(%(kinds)s::text[], %(objects)s::text[], %(columns)s::text[], %(privileges)s::text[])
    with ordinality as n(kind, object, column_name, privilege, i)
where not case n.kind
    when 'table' then has_table_privilege(n.object, n.privilege)
    when 'column' then has_column_privilege(n.object, n.column_name, n.privilege)
    when 'sequence' then has_sequence_privilege(n.object, n.privilege)
    else has_function_privilege(n.object, n.privilege)
end
order by n.i
