"""Each part's whole path works under its least role: the receiver's HTTP path through
the Starlette app, the worker's claim/settle/retry/dead-letter path in a real Worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from inbox import InboxWriter, Settings, create_app, queries
from processors import Event, Router
from tests._wait import scalar
from tests.processors._support import run_until_empty, run_worker_until, settings, write_events
from tests.receiver.conftest import SW_SECRET, signed
from tests.security.conftest import Roles


def test_the_receivers_http_path_works_as_the_receiver_role(db_url: str, roles: Roles) -> None:
    config = Settings(
        database={"url": roles.url("receiver")},
        sources=[{"name": "sw", "verifier": "standard-webhooks", "secrets": [SW_SECRET]}],
    )
    request = signed(config, "sw")
    with TestClient(create_app(config)) as client:
        new = client.post("/webhooks/sw", content=request.body, headers=request.headers)
        again = client.post("/webhooks/sw", content=request.body, headers=request.headers)
    assert new.status_code == 200
    assert new.json()["status"] == "accepted"
    assert again.status_code == 200
    assert again.json()["status"] == "duplicate"
    assert again.json()["event_id"] == new.json()["event_id"]
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select body from inbox_events").fetchall() == [(request.body,)]
        assert conn.execute("select count(*) from inbox_deliveries").fetchone() == (1,)
        assert conn.execute("select count(*) from inbox_work").fetchone() == (1,)


def _refusing(source: str, seen: list[int], refusal: Callable[[Event], str | None]) -> Router:
    """A handler that raises ValueError(reason) when ``refusal`` gives a reason for the
    event, and else records the event's id in ``seen``."""
    router = Router()

    @router.on(source)
    async def handle(event: Event, conn: Any) -> None:
        reason = refusal(event)
        if reason is not None:
            raise ValueError(reason)
        seen.append(event.id)

    return router


def test_the_workers_path_works_as_the_worker_role(db_url: str, roles: Roles) -> None:
    [good, bad, later] = write_events(roles.url("receiver"), 3)
    seen: list[int] = []

    def refusal(event: Event) -> str | None:
        if event.id == bad:
            return "card declined"
        return "try again" if event.id == later and event.attempt == 1 else None

    router = _refusing("shop", seen, refusal)

    run_worker_until(
        roles.url("worker"),
        router,
        lambda: (
            scalar(db_url, "select count(*) from inbox_work") == 1
            and scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 1
        ),
        worker_settings=settings(max_attempts=2),
    )
    # A batch with a failure is re-run event by event, so a handler may see an event twice
    # (its writes undone): the settled history below is what counts.
    assert set(seen) == {good, later}
    with psycopg.connect(db_url) as conn:
        outcomes = conn.execute(
            "select event_id, attempt, outcome from inbox_attempts order by id"
        ).fetchall()
        assert conn.execute("select count(*) from inbox_claims").fetchone() == (0,)
    assert sorted(outcomes) == sorted(
        [
            (good, 1, "processed"),
            (bad, 1, "failed"),
            (bad, 2, "dead"),
            (later, 1, "failed"),
            (later, 2, "processed"),
        ]
    )


def test_replays_and_dead_letter_retries_work_as_the_operator_role(
    db_url: str, roles: Roles
) -> None:
    [done, dead] = write_events(roles.url("receiver"), 2)
    with psycopg.connect(db_url) as conn:  # one settled, one dead-lettered, as a worker would
        conn.execute("delete from inbox_work where event_id = %s", [done])
        conn.execute("update inbox_work set state = 'dead' where event_id = %s", [dead])
    operator = roles.url("operator")
    replayed = queries.replay(operator, reason="audit asked", ids=[done], actor="olga")
    retried = queries.retry_dead(operator, reason="card network fixed", actor="olga")
    assert (replayed.queued, retried.queued) == (1, 1)
    with psycopg.connect(db_url) as conn:
        runs = conn.execute("select kind, created_by, queued from inbox_replays order by id")
        assert runs.fetchall() == [("replay", "olga", 1), ("dead-retry", "olga", 1)]
        pending = conn.execute("select count(*) from inbox_work where state = 'pending'")
        assert pending.fetchone() == (2,)
    with (
        psycopg.connect(operator) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("delete from inbox_work")


def test_ordered_events_flow_through_each_role_and_skip_is_the_operators(
    db_url: str, roles: Roles
) -> None:
    """The receiver stores an ordered event's key, the worker claims by it, the operator
    skips a dead head (only through the audited function: it still cannot delete work)."""
    with InboxWriter(roles.url("receiver")) as writer:
        first = writer.write("o", "e1", b"{}", ordering_key="k").event_id
        second = writer.write("o", "e2", b"{}", ordering_key="k").event_id
    seen: list[int] = []
    router = _refusing("o", seen, lambda event: "poison" if event.id == first else None)

    held = "select count(*) from inbox_work where state = 'dead'"
    run_worker_until(
        roles.url("worker"),
        router,
        lambda: scalar(db_url, held) == 1,
        worker_settings=settings(max_attempts=1),
    )
    assert seen == []
    skipped = queries.skip_dead(roles.url("operator"), ids=[first], reason="bad", actor="olga")
    assert skipped.skipped == [first]
    run_until_empty(db_url, router, worker_url=roles.url("worker"))
    assert seen == [second]
    runs = scalar(db_url, "select created_by || ' ' || kind from inbox_replays")
    assert runs == "olga dead-skip"


def test_console_sessions_work_as_the_operator_role(db_url: str, roles: Roles) -> None:
    from inbox.console import create_app as create_console
    from tests.console.conftest import OPERATOR, csrf_of, make_settings, sign_in

    app = create_console(make_settings(), dsn=roles.url("operator"))
    with TestClient(app) as client:
        sign_in(client, OPERATOR)
        copied = client.cookies["inbox_console"]
        assert client.get("/", follow_redirects=False).status_code == 200
        signed_out = client.post("/logout", data={"csrf": csrf_of(client, "/")})
        assert signed_out.status_code == 200  # the sign-in form, after the redirect
    with TestClient(app, cookies={"inbox_console": copied}) as thief:
        assert thief.get("/", follow_redirects=False).status_code == 303
    assert scalar(db_url, "select count(*) from inbox_console_sessions") == 0


def test_the_console_sign_in_limit_works_as_the_operator_role(db_url: str, roles: Roles) -> None:
    from inbox.console import create_app as create_console
    from tests.console.conftest import OPERATOR, csrf_of, make_settings

    app = create_console(make_settings(login_attempts=2), dsn=roles.url("operator"))
    with TestClient(app) as client:

        def attempt(password: str) -> int:
            form = {"username": OPERATOR[0], "password": password, "csrf": csrf_of(client)}
            return client.post("/login", data=form, follow_redirects=False).status_code

        assert [attempt("guess-1"), attempt("guess-2"), attempt(OPERATOR[1])] == [401, 401, 429]
        with psycopg.connect(db_url) as conn:  # the window passes
            conn.execute("update inbox_console_signin_attempts set at = at - interval '1 hour'")
        # Counted, and the expired rows deleted under their row locks, as the operator.
        assert attempt("guess-3") == 401
        assert attempt(OPERATOR[1]) == 303
    assert scalar(db_url, "select count(*) from inbox_console_signin_attempts") == 1
