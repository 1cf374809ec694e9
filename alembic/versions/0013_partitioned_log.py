"""The log in time partitions: inbox_events and inbox_attempts by the event's receipt time,
inbox_deliveries by their own; whole partitions are created ahead and dropped by the prune,
whose minimum retention the database enforces.

An existing log is not rewritten: each table becomes the first partition of its new parent
(its rows up to the day after tomorrow, checked by a constraint validated while writes go
on, so the attach itself reads nothing). An empty one is replaced by the partitioned table.
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"

TABLES = ("inbox_events", "inbox_attempts", "inbox_deliveries")

# The columns and checks of each parent, as the tables have them at 0012.
PARENTS = {
    "inbox_events": """
        id               bigint not null,
        source           text not null,
        idempotency_key  text not null,
        event_type       text,
        verifier         text,
        received_at      timestamptz not null default now(),
        headers          jsonb not null default '{}'::jsonb,
        body             bytea not null,
        body_sha256      bytea not null,
        ordering_key     text,
        order_at         timestamptz,
        on_dead          text constraint inbox_events_on_dead
                         check (on_dead in ('hold', 'continue')),
        traceparent      text constraint inbox_events_traceparent_length
                         check (length(traceparent) <= 256),
        tracestate       text constraint inbox_events_tracestate_length
                         check (length(tracestate) <= 512),
        constraint inbox_events_pkey primary key (id, received_at),
        constraint inbox_events_key_length
            check (length(idempotency_key) between 1 and 255),
        constraint inbox_events_sha256_length check (length(body_sha256) = 32)""",
    "inbox_attempts": """
        id               bigint generated always as identity,
        event_id         bigint not null,
        attempt          integer not null,
        started_at       timestamptz not null,
        finished_at      timestamptz not null default now(),
        outcome          text not null,
        handler          text,
        worker           text,
        error_class      text,
        error_message    text,
        replay_id        bigint,
        error_traceback  text constraint inbox_attempts_traceback_length
                         check (length(error_traceback) <= 16384),
        version          text,
        received_at      timestamptz not null,
        constraint inbox_attempts_pkey primary key (id, received_at)""",
    "inbox_deliveries": """
        id           bigint generated always as identity,
        event_id     bigint not null,
        received_at  timestamptz not null default now(),
        body_sha256  bytea not null,
        body         bytea,
        constraint inbox_deliveries_pkey primary key (id, received_at)""",
}

# The parents' other indexes (their partitions get theirs from them).
INDEXES = {
    "inbox_events": [
        ("inbox_events_received_at", "(received_at) include (source)"),
        ("inbox_events_source_id", "(source, id)"),
    ],
    "inbox_attempts": [
        ("inbox_attempts_event", "(event_id, id)"),
        ("inbox_attempts_finished_at", "(finished_at) include (outcome)"),
        ("inbox_attempts_replay", "(replay_id, event_id) where replay_id is not null"),
    ],
    "inbox_deliveries": [
        ("inbox_deliveries_event", "(event_id)"),
        ("inbox_deliveries_received_at", "(received_at)"),
    ],
}

# The first partition's end: the start of the day after tomorrow (UTC), so that whatever
# is written while the migration runs still falls in the old table; or after the latest
# receipt time there, if an import put one later.
LEGACY_END = """greatest(
            date_trunc('day', now(), 'UTC') + interval '2 days',
            (select date_trunc('day', max(received_at), 'UTC') + interval '1 day'
             from inbox_events),
            (select date_trunc('day', max(received_at), 'UTC') + interval '1 day'
             from inbox_attempts),
            (select date_trunc('day', max(received_at), 'UTC') + interval '1 day'
             from inbox_deliveries))"""


def _guard(table_name: str) -> str:
    """The append-only guard (0006's door), naming the refused table by ``table_name``."""
    return f"""
    create or replace function inbox_reject_change() returns trigger
    language plpgsql
    set search_path = pg_catalog, pg_temp
    as $$
    begin
        if tg_op = 'DELETE'
           and current_setting('inbox.prune_door', true) = 'open'
           and (select c.relowner from pg_class c where c.oid = tg_relid)
               = (select r.oid from pg_roles r where r.rolname = current_user) then
            return old;
        end if;
        raise exception 'pg-inbox: % is append-only; % is not allowed', {table_name}, tg_op
            using hint = 'events are kept exactly as received; '
                         'remove old ones with `inbox prune`, which is audited';
    end
    $$;
"""


def upgrade() -> None:
    op.execute(
        """
    -- How the log is partitioned and how long it must be kept, as `inbox db upgrade` last
    -- set it from [retention] (one row). Only the owner writes it: the minimum retention is
    -- the database's to enforce, not a caller's to pass.
    create table inbox_retention (
        one            boolean primary key default true constraint inbox_retention_one check (one),
        partition      text not null default 'week'
                       constraint inbox_retention_partition
                       check (partition in ('day', 'week', 'month')),
        minimum_days   float8 not null default 7 constraint inbox_retention_minimum
                       check (minimum_days >= 1),
        keys_days      float8 constraint inbox_retention_keys check (keys_days >= 1),
        updated_at     timestamptz not null default now()
    );
    insert into inbox_retention default values;

    -- The log's partitions: one row per period, whose partitions of inbox_events,
    -- inbox_attempts and inbox_deliveries are named by its suffix, created and dropped
    -- together. The ranges never overlap.
    create table inbox_partitions (
        suffix      text primary key,
        lo          timestamptz not null,
        hi          timestamptz not null,
        created_at  timestamptz not null default now(),
        constraint inbox_partitions_range check (lo < hi),
        constraint inbox_partitions_apart exclude using gist (tstzrange(lo, hi) with &&)
    );

    -- The audit of a prune names the partitions it dropped and those it kept (and why).
    alter table inbox_prunes
        add column partitions_dropped jsonb,
        add column partitions_kept jsonb,
        add column keys_deleted bigint;
    alter table inbox_prunes alter column events_deleted type bigint,
                             alter column deliveries_deleted type bigint,
                             alter column attempts_deleted type bigint,
                             alter column events_kept type bigint;
    """
    )
    with op.get_context().autocommit_block():
        # The old tables' unique indexes of the parents' primary keys, built while writes go
        # on; and each one's range, validated likewise (the attach then reads nothing).
        for table in TABLES:
            op.execute(
                f"create unique index concurrently if not exists {table}_id_received"
                f" on {table} (id, received_at)"
            )
        op.execute(f"""
    do $$
    declare
        legacy_end timestamptz := {LEGACY_END};
        t text;
    begin
        foreach t in array array{list(TABLES)!r} loop
            execute format('alter table %I add constraint %I check (received_at < %L) not valid',
                           t, t || '_legacy_range', legacy_end);
            execute format('alter table %I validate constraint %I', t, t || '_legacy_range');
            commit;
        end loop;
    end
    $$;
    """)
    op.execute(_switch_sql())
    op.execute(FUNCTIONS)


def _switch_sql() -> str:
    """Each table becomes its parent's first partition (or, empty, is replaced)."""
    parts = []
    for table in TABLES:
        indexes = "\n".join(
            f"        create index {name} on {table} {spec};" for name, spec in INDEXES[table]
        )
        identity = (
            ""
            if table == "inbox_events"
            else f"""
        -- Ids go on after the old table's, from the parent's own identity.
        execute format('alter table {table} alter column id restart with %s', next_id);"""
        )
        old_identity = (
            ""
            if table == "inbox_events"
            else f"            alter table {table} alter column id drop identity;"
        )
        parts.append(f"""
    -- {table}
    do $$
    declare
        legacy_end timestamptz := (
            select substring(pg_get_constraintdef(c.oid) from '''(.*)''')::timestamptz
            from pg_constraint c
            where c.conname = '{table}_legacy_range' and c.conrelid = '{table}'::regclass);
        keep boolean := exists (select from {table});
        next_id bigint := (select coalesce(max(id), 0) + 1 from {table});
        grantee text;
    begin
        alter table {table} drop constraint {table}_pkey;
        drop trigger {table}_append_only on {table};
        if keep then
            alter table {table} add constraint {table}_legacy_pkey
                primary key using index {table}_id_received;
{old_identity}
            alter table {table} rename to {table}_legacy;
{_renames(table)}
            -- A partition is reached through its parent, whose grants `inbox db roles`
            -- makes: nobody keeps a grant of the old table's on the partition itself.
            for grantee in
                select distinct coalesce(r.rolname, 'public')
                from pg_class c
                cross join lateral aclexplode(c.relacl) a
                left join pg_roles r on r.oid = a.grantee
                where c.oid = '{table}_legacy'::regclass and a.grantee <> c.relowner
            loop
                execute format('revoke all on {table}_legacy from %s',
                               case when grantee = 'public' then 'public'
                                    else quote_ident(grantee) end);
            end loop;
        else
            drop table {table};
        end if;
        create table {table} ({PARENTS[table]}
        ) partition by range (received_at);
        if keep then
            execute format('alter table {table} attach partition {table}_legacy'
                           ' for values from (minvalue) to (%L)', legacy_end);
        end if;
{indexes}
        create trigger {table}_append_only before update or delete on {table}
            for each row execute function inbox_reject_change();
        create trigger {table}_no_truncate before truncate on {table}
            for each statement execute function inbox_reject_change();{identity}
        if keep and '{table}' = 'inbox_events' then
            insert into inbox_partitions (suffix, lo, hi)
            values ('legacy', '-infinity', legacy_end);
        end if;
    end
    $$;""")
    return "\n".join(parts)


def _renames(table: str) -> str:
    """The old table's indexes get names of their own (the parent's take theirs)."""
    return "\n".join(
        f"            alter index {name} rename to {name.replace(table, table + '_legacy', 1)};"
        for name, _ in INDEXES[table]
    )


FUNCTIONS = (
    """
    -- The guard names the table a statement was refused on by the log's name, not the
    -- partition's; otherwise as 0006 made it (the door opens for the prune alone).
"""
    + _guard("coalesce(pg_partition_root(tg_relid)::text, tg_table_name)")
    + """
    -- A partition's rows from its statistics (what autovacuum's last analyze counted); a
    -- partition never analyzed is counted.
    create function inbox_row_estimate(partition text)
    returns bigint
    language plpgsql
    stable
    as $$
    declare
        estimate float4;
        exact bigint;
    begin
        select c.reltuples into estimate from pg_class c where c.oid = to_regclass(partition);
        if estimate is null then
            return 0;
        end if;
        if estimate >= 0 then
            return estimate::bigint;
        end if;
        execute format('select count(*) from %I', partition) into exact;
        return exact;
    end
    $$;

    -- The partitions of the period holding `at` (created if missing, for the three tables
    -- at once), and the period's range. A period is a UTC day, ISO week or month, shortened
    -- where it meets a partition that exists already (made under another setting). Created
    -- as tables, then attached, which takes no lock that stops writes or reads of the log.
    -- Callable by the writers (a write never fails for want of a partition: an import
    -- names its own receipt time) and the workers (who create them ahead).
    create function inbox_partition_for(at timestamptz)
    returns table (suffix text, lo timestamptz, hi timestamptz)
    language plpgsql
    security definer
    as $$
    declare
        period text;
        start_at timestamptz;
        end_at timestamptz;
        name text;
        t text;
    begin
        return query select p.suffix, p.lo, p.hi from inbox_partitions p
                     where p.lo <= at and at < p.hi;
        if found then
            return;
        end if;
        perform pg_advisory_xact_lock(hashtext('pg-inbox partitions'));
        return query select p.suffix, p.lo, p.hi from inbox_partitions p
                     where p.lo <= at and at < p.hi;
        if found then
            return;
        end if;
        select r.partition into period from inbox_retention r;
        start_at := date_trunc(period, at, 'UTC');
        end_at := (start_at at time zone 'UTC' + ('1 ' || period)::interval) at time zone 'UTC';
        start_at := greatest(start_at, (select max(p.hi) from inbox_partitions p
                                        where p.hi <= at));
        end_at := least(end_at, (select min(p.lo) from inbox_partitions p where p.lo > at));
        name := 'p' || to_char(start_at at time zone 'UTC', 'YYYYMMDD');
        perform set_config('lock_timeout', '10s', true);
        foreach t in array array['inbox_events', 'inbox_attempts', 'inbox_deliveries'] loop
            execute format('create table %I (like %I including defaults including constraints)',
                           t || '_' || name, t);
            execute format('alter table %I attach partition %I for values from (%L) to (%L)',
                           t, t || '_' || name, start_at, end_at);
            -- A TRUNCATE of the partition itself fires no trigger of its parent's.
            execute format('create trigger %I before truncate on %I for each statement'
                           ' execute function inbox_reject_change()',
                           t || '_no_truncate', t || '_' || name);
        end loop;
        insert into inbox_partitions (suffix, lo, hi) values (name, start_at, end_at);
        return query select name, start_at, end_at;
    end
    $$;

    -- The partitions from now to a few periods ahead (a week of days, three weeks, three
    -- months): what the workers and `inbox db upgrade` keep in place. How many it made.
    create function inbox_ensure_partitions()
    returns integer
    language plpgsql
    security definer
    as $$
    declare
        period text;
        ahead timestamptz;
        at timestamptz := now();
        before integer := (select count(*) from inbox_partitions);
    begin
        select r.partition into period from inbox_retention r;
        ahead := now() + case period when 'day' then interval '7 days'
                                     when 'week' then interval '3 weeks'
                                     else interval '3 months' end;
        while at < ahead loop
            select p.hi into at from inbox_partition_for(at) p;
        end loop;
        return (select count(*) from inbox_partitions) - before;
    end
    $$;

    -- The one way events leave the log: whole partitions whose period ended before the
    -- cutoff, dropped with their attempts and the deliveries of that period, when none of
    -- their events has work left (pending, retrying or dead); a partition with work is
    -- kept whole, and named with its count. The minimum retention is the database's
    -- (inbox_retention): no caller can go under it. A drop takes no time per row. It locks
    -- the three tables, then checks again (a replay may have queued one of its events
    -- meanwhile); a partition it cannot lock within 5 s (a long query reading the log) is
    -- kept this time, and the next prune takes it. Counts are the partitions' statistics.
    -- With [retention] keys_days, keys older than that and than every partition go too, in
    -- batches of 100,000: dedupe is permanent otherwise.
    -- The audit row is written in the same transaction as the drops.
    drop function inbox_prune(float8, text, text);
    create function inbox_prune(older_than_seconds float8, created_by text, via text)
    returns table (audit_id bigint, cutoff timestamptz, events_deleted bigint,
                   deliveries_deleted bigint, attempts_deleted bigint, events_kept bigint,
                   partitions_dropped jsonb, partitions_kept jsonb, keys_deleted bigint)
    language plpgsql
    security definer
    set inbox.prune_door = 'open'
    as $$
    declare
        policy inbox_retention;
        the_cutoff timestamptz;
        p record;
        unsettled bigint;
        counts bigint[];
        dropped jsonb := '[]';
        kept jsonb := '[]';
        events bigint := 0;
        deliveries bigint := 0;
        attempts bigint := 0;
        held bigint := 0;
        keys bigint := 0;
        audit bigint;
        t text;
    begin
        select * into policy from inbox_retention;
        if older_than_seconds < policy.minimum_days * 86400 then
            raise exception 'pg-inbox: refusing to prune events younger than the minimum'
                            ' retention of % days', policy.minimum_days
                using errcode = 'invalid_parameter_value',
                      hint = 'the minimum is [retention] minimum_days, which'
                             ' `inbox db upgrade` sets';
        end if;
        the_cutoff := now() - make_interval(secs => older_than_seconds);
        perform set_config('lock_timeout', '5s', true);
        for p in select * from inbox_partitions ip where ip.hi <= the_cutoff order by ip.lo loop
            select count(*) into unsettled from inbox_work w
            where w.received_at >= p.lo and w.received_at < p.hi;
            if unsettled = 0 then
                begin
                    -- The parents first, in the order every writer and worker takes them
                    -- (the log, then the history, then the deliveries), so a prune never
                    -- waits on a transaction that waits on it. Held until the prune
                    -- commits: writes pause for the drops, which take no time per row.
                    lock table inbox_events, inbox_attempts, inbox_deliveries
                        in access exclusive mode;
                    select count(*) into unsettled from inbox_work w
                    where w.received_at >= p.lo and w.received_at < p.hi;
                    if unsettled = 0 then
                        counts := array[inbox_row_estimate('inbox_events_' || p.suffix),
                                        inbox_row_estimate('inbox_attempts_' || p.suffix),
                                        inbox_row_estimate('inbox_deliveries_' || p.suffix)];
                        -- Detached, not dropped: the drop, which frees the files (its time
                        -- grows with their bytes), is inbox_drop_pruned's, in a transaction
                        -- of its own that holds no lock of the log's.
                        foreach t in array array['inbox_events', 'inbox_attempts',
                                                 'inbox_deliveries'] loop
                            execute format('alter table %I detach partition %I',
                                           t, t || '_' || p.suffix);
                            execute format('alter table %I rename to %I',
                                           t || '_' || p.suffix, 'pruned_' || t || '_' || p.suffix);
                        end loop;
                        delete from inbox_partitions ip where ip.suffix = p.suffix;
                        events := events + counts[1];
                        attempts := attempts + counts[2];
                        deliveries := deliveries + counts[3];
                        dropped := dropped || jsonb_build_object(
                            'partition', p.suffix, 'from', p.lo, 'to', p.hi,
                            'events', counts[1]);
                        continue;
                    end if;
                exception when lock_not_available or deadlock_detected then
                    kept := kept || jsonb_build_object(
                        'partition', p.suffix, 'from', p.lo, 'to', p.hi, 'busy', true);
                    continue;
                end;
            end if;
            held := held + unsettled;
            kept := kept || jsonb_build_object(
                'partition', p.suffix, 'from', p.lo, 'to', p.hi, 'unsettled', unsettled);
        end loop;
        if policy.keys_days is not null then
            with doomed as (
                select k.ctid from inbox_keys k
                where k.received_at < now() - make_interval(days => policy.keys_days::integer)
                  and k.received_at < coalesce((select min(ip.lo) from inbox_partitions ip),
                                               'infinity')
                limit 100000
            ),
            gone as (
                delete from inbox_keys k using doomed d where k.ctid = d.ctid returning 1
            )
            select count(*) into keys from gone;
        end if;
        insert into inbox_prunes
            (created_by, via, older_than_seconds, cutoff, events_deleted, deliveries_deleted,
             attempts_deleted, events_kept, partitions_dropped, partitions_kept, keys_deleted)
        values (inbox_prune.created_by, inbox_prune.via, older_than_seconds, the_cutoff,
                events, deliveries, attempts, held, dropped, kept, keys)
        returning id into audit;
        return query select audit, the_cutoff, events, deliveries, attempts, held, dropped,
                            kept, keys;
    end
    $$;

    -- The files of what a prune detached: their tables dropped, each in this function's
    -- transaction, which locks only them (a prune's own transaction holds the log's locks,
    -- and no longer than its constant part). How many tables it dropped. The prune's
    -- caller calls it right after; one that never ran is caught up by the next prune's.
    create function inbox_drop_pruned()
    returns integer
    language plpgsql
    security definer
    as $$
    declare
        t text;
        dropped integer := 0;
    begin
        for t in
            select c.relname from pg_class c
            where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r'
              and starts_with(c.relname, 'pruned_inbox_')
        loop
            execute format('drop table %I', t);
            dropped := dropped + 1;
        end loop;
        return dropped;
    end
    $$;

    -- What a prune would do now, for a retention role that may read nothing else: the
    -- partitions it would drop and those it would keep, with their counts.
    drop function inbox_prune_preview(float8);
    create function inbox_prune_preview(older_than_seconds float8)
    returns table (cutoff timestamptz, deletable bigint, kept bigint,
                   partitions_dropped jsonb, partitions_kept jsonb)
    language sql
    stable
    security definer
    as $$
    with parts as (
        select p.suffix, p.lo, p.hi,
               (select count(*) from inbox_work w
                where w.received_at >= p.lo and w.received_at < p.hi) as unsettled
        from inbox_partitions p
        where p.hi <= now() - make_interval(secs => inbox_prune_preview.older_than_seconds)
    )
    select now() - make_interval(secs => inbox_prune_preview.older_than_seconds),
           coalesce(sum(inbox_row_estimate('inbox_events_' || suffix))
                    filter (where unsettled = 0), 0)::bigint,
           coalesce(sum(unsettled), 0)::bigint,
           coalesce(jsonb_agg(jsonb_build_object(
               'partition', suffix, 'from', lo, 'to', hi,
               'events', inbox_row_estimate('inbox_events_' || suffix)) order by lo)
               filter (where unsettled = 0), '[]'),
           coalesce(jsonb_agg(jsonb_build_object(
               'partition', suffix, 'from', lo, 'to', hi, 'unsettled', unsettled) order by lo)
               filter (where unsettled > 0), '[]')
    from parts
    $$;

    revoke execute on function inbox_partition_for(timestamptz) from public;
    revoke execute on function inbox_ensure_partitions() from public;
    revoke execute on function inbox_prune(float8, text, text) from public;
    revoke execute on function inbox_prune_preview(float8) from public;
    revoke execute on function inbox_row_estimate(text) from public;
    revoke execute on function inbox_drop_pruned() from public;

    -- SECURITY DEFINER functions run with their schema pinned, pg_temp last (0006).
    do $$
    declare
        f text;
    begin
        foreach f in array array['inbox_partition_for(timestamptz)', 'inbox_ensure_partitions()',
                                 'inbox_prune(float8, text, text)',
                                 'inbox_prune_preview(float8)', 'inbox_row_estimate(text)',
                                 'inbox_drop_pruned()'] loop
            execute format('alter function %s set search_path = %I, pg_temp',
                           f, current_schema());
        end loop;
    end
    $$;

    -- The partitions of now and a few periods ahead.
    select inbox_ensure_partitions();
"""
)


def downgrade() -> None:
    # Back to plain tables, their rows copied (a downgrade may take its time); the old
    # prune and its preview come back from 0006, which alembic loaded.
    op.execute(
        """
    lock table inbox_events, inbox_attempts, inbox_deliveries in access exclusive mode;
    drop function inbox_prune(float8, text, text);
    drop function inbox_prune_preview(float8);
    drop function inbox_ensure_partitions();
    drop function inbox_partition_for(timestamptz);
    drop function inbox_row_estimate(text);
    drop function inbox_drop_pruned();
    """
        + "".join(_unpartition_sql(table) for table in TABLES)
        + """
    drop table inbox_partitions;
    drop table inbox_retention;
    alter table inbox_prunes
        drop column partitions_dropped,
        drop column partitions_kept,
        drop column keys_deleted;
    alter table inbox_prunes alter column events_deleted type integer,
                             alter column deliveries_deleted type integer,
                             alter column attempts_deleted type integer,
                             alter column events_kept type integer;
    """
        + _prune_0006()
        + """
    -- The guard as 0006 made it.
"""
        + _guard("tg_table_name")
        + """    """
    )


def _unpartition_sql(table: str) -> str:
    columns = PARENTS[table].replace(
        f"constraint {table}_pkey primary key (id, received_at)",
        f"constraint {table}_plain_pkey primary key (id)",
    )
    indexes = "\n".join(
        f"    create index {name} on {table} {spec};" for name, spec in INDEXES[table]
    )
    identity = (
        ""
        if table == "inbox_events"
        else f"""
    select setval(pg_get_serial_sequence('{table}', 'id'),
                  greatest((select max(id) from {table}), 1));"""
    )
    return f"""
    create table {table}_plain ({columns}
    );
    insert into {table}_plain overriding system value select * from {table};
    drop table {table} cascade;
    alter table {table}_plain rename to {table};
    alter index {table}_plain_pkey rename to {table}_pkey;
{indexes}
    create trigger {table}_append_only before update or delete on {table}
        for each row execute function inbox_reject_change();
    create trigger {table}_no_truncate before truncate on {table}
        for each statement execute function inbox_reject_change();{identity}
"""


def _prune_0006() -> str:
    """0006's prune and preview: rows deleted one by one, as before the partitions."""
    return """
    create function inbox_prune(older_than_seconds float8, created_by text, via text)
    returns table (audit_id bigint, cutoff timestamptz, events_deleted integer,
                   deliveries_deleted integer, attempts_deleted integer, events_kept integer)
    language sql
    security definer
    set inbox.prune_door = 'open'
    as $$
    with limits as (
        select now() - make_interval(secs => inbox_prune.older_than_seconds) as cutoff
    ),
    doomed as (
        select e.id
        from inbox_events e, limits
        where e.received_at < limits.cutoff
          and not exists (select from inbox_work w where w.event_id = e.id)
        for update of e
    ),
    kept as (
        select count(*) as n
        from inbox_events e, limits
        where e.received_at < limits.cutoff
          and exists (select from inbox_work w where w.event_id = e.id)
    ),
    deliveries as (
        delete from inbox_deliveries d using doomed where d.event_id = doomed.id returning 1
    ),
    attempts as (
        delete from inbox_attempts a using doomed where a.event_id = doomed.id returning 1
    ),
    events as (
        delete from inbox_events e using doomed where e.id = doomed.id returning 1
    )
    insert into inbox_prunes
        (created_by, via, older_than_seconds, cutoff, events_deleted, deliveries_deleted,
         attempts_deleted, events_kept)
    select inbox_prune.created_by, inbox_prune.via, inbox_prune.older_than_seconds,
           limits.cutoff,
           (select count(*) from events), (select count(*) from deliveries),
           (select count(*) from attempts), (select n from kept)
    from limits
    returning id, cutoff, events_deleted, deliveries_deleted, attempts_deleted, events_kept
    $$;
    create function inbox_prune_preview(older_than_seconds float8)
    returns table (cutoff timestamptz, deletable bigint, kept bigint)
    language sql
    stable
    security definer
    as $$
    select now() - make_interval(secs => inbox_prune_preview.older_than_seconds),
           count(*) filter (where w.event_id is null),
           count(*) filter (where w.event_id is not null)
    from inbox_events e
    left join inbox_work w on w.event_id = e.id
    where e.received_at < now() - make_interval(secs => inbox_prune_preview.older_than_seconds)
    $$;
    revoke execute on function inbox_prune(float8, text, text) from public;
    revoke execute on function inbox_prune_preview(float8) from public;
    do $$
    begin
        execute format('alter function inbox_prune(float8, text, text)'
                       ' set search_path = %I, pg_temp', current_schema());
        execute format('alter function inbox_prune_preview(float8)'
                       ' set search_path = %I, pg_temp', current_schema());
    end
    $$;
    """
