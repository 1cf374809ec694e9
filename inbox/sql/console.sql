-- The console's sessions (inbox_console_sessions, migration 0015). The console runs as the
-- operator role: it reads, starts, touches and ends these rows, and nothing here touches
-- the log.

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
