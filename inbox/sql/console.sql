-- The console's sessions (inbox_console_sessions, migration 0015) and sign-in attempts
-- (inbox_console_signin_attempts, migration 0017). The console runs as the operator role:
-- it reads, starts, touches and ends these rows, and nothing here touches the log.

-- name: start_session
-- A new session; expired ones go first (the expiry index finds them).
with expired as (
    delete from inbox_console_sessions where expires_at <= now()
)
insert into inbox_console_sessions (id, user_name, via, credential, expires_at)
values (%(id)s, %(user_name)s, %(via)s, %(credential)s,
        now() + make_interval(secs => %(max_seconds)s))

-- name: touch_session
-- The session is alive when its row exists, names the same user and credential, and is
-- neither past its absolute end nor idle too long; using it moves its idle clock.
update inbox_console_sessions
   set seen_at = now()
 where id = %(id)s
   and user_name = %(user_name)s
   and credential = %(credential)s
   and expires_at > now()
   and seen_at > now() - make_interval(secs => %(idle_seconds)s)
returning via

-- name: end_session
delete from inbox_console_sessions where id = %(id)s

-- name: lock_sign_in
-- Attempts from one address wait for each other here until their transaction ends, in
-- every console process. Both limits are the address's (the name's is per name and
-- address), so one lock covers both. It is a statement of its own because a statement sees
-- only what was committed when it began: the check must begin once the lock is held, to
-- see the attempt that held it before.
select pg_advisory_xact_lock(hashtextextended('pg-inbox console sign-in ' || %(address)s, 0))

-- name: begin_sign_in
-- Under lock_sign_in's lock: when the address is under both limits, the attempt is counted
-- (its id returned, to forgive it if the password is right); otherwise nothing is, and the
-- time the oldest failure that still holds a limit expires is returned for each limit
-- reached. Rows past the window go first, from any address, so the table holds only the
-- window; rows another attempt is already deleting are left to it.
with expired as (
    delete from inbox_console_signin_attempts
     where id in (select id from inbox_console_signin_attempts
                   where at <= statement_timestamp() - make_interval(secs => %(window_seconds)s)
                     for update skip locked)
),
recent as (
    select name_sha256 = %(name_sha256)s as same_name, at
      from inbox_console_signin_attempts
     where address = %(address)s
       and at > statement_timestamp() - make_interval(secs => %(window_seconds)s)
),
reached as (
    select (select at from recent where same_name
             order by at desc offset %(attempts)s - 1 limit 1) as name_at,
           (select at from recent
             order by at desc offset %(per_address)s - 1 limit 1) as address_at
),
counted as (
    insert into inbox_console_signin_attempts (name_sha256, address, at)
    select %(name_sha256)s, %(address)s, statement_timestamp()
      from reached
     where name_at is null and address_at is null
    returning id
)
select (select id from counted) as attempt,
       extract(epoch from name_at + make_interval(secs => %(window_seconds)s)
                          - statement_timestamp())::float8 as name_wait,
       extract(epoch from address_at + make_interval(secs => %(window_seconds)s)
                          - statement_timestamp())::float8 as address_wait
  from reached

-- name: forgive_sign_in
-- The password was right: this attempt is no failure. The failures before it stay.
delete from inbox_console_signin_attempts where id = %(id)s
