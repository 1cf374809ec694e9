"""The limit on failed sign-ins, against ``inbox console`` over real HTTP: it holds when the
guesses arrive together, to one console process or spread over several, and it counts per
address across names (password spraying). The count is the database's: no test here waits
for a window to pass, it moves the attempts' times back instead."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import httpx
import psycopg
from starlette.applications import Starlette
from starlette.testclient import TestClient

from inbox.console import create_app
from tests._wait import scalar
from tests.console._seed import Seeded
from tests.console.conftest import OPERATOR, VIEWER, csrf_of, live_console, make_settings

# A hash that costs real time, as a production one does: the guesses overlap while it runs.
COST = 2**14


def _together(base: str, passwords: list[str]) -> Counter[int]:
    """Sign in as the viewer with each password, all at once, on one session; the
    statuses."""

    async def run() -> list[int]:
        limits = httpx.Limits(max_connections=len(passwords))
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
            page = await client.get("/login")
            match = re.search(r'name="csrf" value="([^"]+)"', page.text)
            assert match, page.text
            token = match.group(1)

            async def attempt(password: str) -> int:
                form = {"username": VIEWER[0], "password": password, "csrf": token}
                response = await client.post("/login", data=form)
                return response.status_code

            return list(await asyncio.gather(*(attempt(p) for p in passwords)))

    return Counter(asyncio.run(run()))


ATTEMPTS = "inbox_console_signin_attempts"


def test_concurrent_guesses_do_not_pass_the_limit(seeded_db: Seeded, tmp_path: Path) -> None:
    with live_console(seeded_db, tmp_path, extra="login_attempts = 5", cost=COST) as server:
        base = server.base_url + "/console"
        wrong = _together(base, [f"guess-{n}" for n in range(100)])
        assert wrong == {401: 5, 429: 95}, wrong
        assert scalar(seeded_db.url, f"select count(*) from {ATTEMPTS}") == 5
        # The count is the table's: emptied, the limit starts again.
        with psycopg.connect(seeded_db.url) as conn:
            conn.execute(f"delete from {ATTEMPTS}")
        # The right password among 39 guesses: it may sign in only as one of the first 5.
        mixed = _together(base, [f"guess-{n}" for n in range(39)] + [VIEWER[1]])
        assert mixed[429] >= 35, mixed
        assert mixed[401] + mixed[303] <= 5, mixed


def _consoles(url: str, n: int, **console: object) -> list[Starlette]:
    """``n`` consoles on one database, as the processes of ``inbox serve`` are: each its
    own app, pool and limiter, nothing shared in memory."""
    return [create_app(make_settings(**console), dsn=url) for _ in range(n)]


def test_every_console_process_counts_against_one_limit(seeded_db: Seeded) -> None:
    first, second = _consoles(seeded_db.url, 2, login_attempts=3)
    peer = ("192.0.2.10", 5000)
    with TestClient(first, client=peer) as one, TestClient(second, client=peer) as other:

        def attempt(client: TestClient, password: str) -> httpx.Response:
            form = {"username": VIEWER[0], "password": password, "csrf": csrf_of(client)}
            return client.post("/login", data=form, follow_redirects=False)

        for guess in ("guess-1", "guess-2"):
            assert attempt(one, guess).status_code == 401
        assert attempt(other, VIEWER[1]).status_code == 303  # forgiven: still two failures
        assert attempt(other, "guess-3").status_code == 401  # the third, made elsewhere
        for client in (one, other):
            limited = attempt(client, VIEWER[1])
            assert limited.status_code == 429
            assert 1 <= int(limited.headers["retry-after"]) <= 300


def test_guesses_spread_over_processes_do_not_pass_the_limit_together(
    seeded_db: Seeded,
) -> None:
    consoles = _consoles(seeded_db.url, 2, login_attempts=4)

    async def run() -> list[int]:
        clients = [
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app, client=("192.0.2.11", 5000)),
                base_url="http://console.test",
            )
            for app in consoles
        ]
        try:
            tokens = []
            for client in clients:
                page = await client.get("/login")
                match = re.search(r'name="csrf" value="([^"]+)"', page.text)
                assert match, page.text
                tokens.append(match.group(1))

            async def attempt(n: int) -> int:
                form = {"username": VIEWER[0], "password": f"guess-{n}", "csrf": tokens[n % 2]}
                return (await clients[n % 2].post("/login", data=form)).status_code

            return list(await asyncio.gather(*(attempt(n) for n in range(40))))
        finally:
            for client in clients:
                await client.aclose()
            for app in consoles:
                await app.state.console.pool.close()

    statuses = Counter(asyncio.run(run()))
    assert statuses == {401: 4, 429: 36}, statuses  # each alone would allow login_attempts


def test_failed_sign_ins_are_limited_per_address_across_names(seeded_db: Seeded) -> None:
    settings = make_settings(login_attempts=3, login_attempts_per_address=6)
    app = create_app(settings, dsn=seeded_db.url)
    with TestClient(app, client=("192.0.2.7", 5000)) as sprayer:
        for n in range(6):  # one guess for each of six names: under the per-name limit
            form = {"username": f"user-{n}", "password": "Spring2026!", "csrf": csrf_of(sprayer)}
            assert sprayer.post("/login", data=form).status_code == 401
        form = {"username": OPERATOR[0], "password": OPERATOR[1], "csrf": csrf_of(sprayer)}
        limited = sprayer.post("/login", data=form)
        assert limited.status_code == 429  # even the right password, from this address
        assert 1 <= int(limited.headers["retry-after"]) <= 300
    with TestClient(app, client=("192.0.2.8", 5000)) as elsewhere:
        form = {"username": OPERATOR[0], "password": OPERATOR[1], "csrf": csrf_of(elsewhere)}
        assert elsewhere.post("/login", data=form, follow_redirects=False).status_code == 303


def test_a_right_password_does_not_reset_the_count(seeded_db: Seeded) -> None:
    app = create_app(make_settings(login_attempts=3), dsn=seeded_db.url)
    with TestClient(app, client=("192.0.2.9", 5000)) as client:
        for password in ["guess-1", "guess-2", VIEWER[1], "guess-3", VIEWER[1]]:
            form = {"username": VIEWER[0], "password": password, "csrf": csrf_of(client)}
            last = client.post("/login", data=form, follow_redirects=False)
        assert last.status_code == 429  # 3 failures in the window, the sign-in between them


def test_failures_expire_with_their_window_and_leave_the_table(seeded_db: Seeded) -> None:
    app = create_app(make_settings(login_attempts=2), dsn=seeded_db.url)
    with TestClient(app, client=("192.0.2.12", 5000)) as client:

        def attempt(password: str) -> int:
            form = {"username": VIEWER[0], "password": password, "csrf": csrf_of(client)}
            return client.post("/login", data=form, follow_redirects=False).status_code

        assert [attempt("guess-1"), attempt("guess-2"), attempt(VIEWER[1])] == [401, 401, 429]
        with psycopg.connect(seeded_db.url) as conn:  # the window passes for both failures
            conn.execute(f"update {ATTEMPTS} set at = at - interval '301 seconds'")
        assert attempt(VIEWER[1]) == 303
    # The expired failures went with that attempt; the right one was forgiven.
    assert scalar(seeded_db.url, f"select count(*) from {ATTEMPTS}") == 0
