"""What ``InboxWriter`` and ``AsyncInboxWriter`` share, free of I/O: the constructor and its
checks, the pool a writer makes for itself, ``write``'s signature and documentation, the plan
of a write and whether a wake-up follows.

The two shells (``inbox._writing.writer``, ``inbox._writing.writer_async``) add only the
I/O: the pool's connections, the rounds of the write statement, the NOTIFY. psycopg_pool
splits its pools the same way (``BasePool`` under ``ConnectionPool`` and
``AsyncConnectionPool``), so a rule about a writer's arguments is written once and the twins
cannot drift.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, LiteralString, TypedDict, TypeVar, get_args

from inbox._core.database.pooler import (
    PoolerMode,
    PreparedMode,
    behind_pooler,
    connect_kwargs,
    settings_statement,
    startup_options,
)
from inbox._core.errors import InboxError, MigrationError
from inbox._core.logs import get_logger
from inbox._core.tracing import current_trace_context
from inbox._writing.plan import (
    MAX_WRITE_ROUNDS,
    KnownPartitions,
    NotifyCoalescer,
    WriteRequest,
    WriteResult,
    owned_pool_options,
    prepare_write,
    write_query,
)

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "NotifyMode",
    "OnDead",
    "PlannedWrite",
    "WriterBase",
    "WriterOptions",
    "log",
    "rounds_exhausted",
    "write_rounds",
]

NotifyMode = Literal["after_commit", "in_transaction", "off"]
OnDead = Literal["hold", "continue"]
NOTIFY_MODES: tuple[str, ...] = get_args(NotifyMode)
POOLER_MODES: tuple[str, ...] = get_args(PoolerMode)
PREPARED_MODES: tuple[str, ...] = get_args(PreparedMode)

log = get_logger("inbox.writer")

PoolT = TypeVar("PoolT")
ConnT = TypeVar("ConnT", bound="psycopg.Connection[Any] | psycopg.AsyncConnection[Any]")
# What ``write`` returns: a ``WriteResult``, or (async) a coroutine of one.
ResultT = TypeVar("ResultT")


@dataclass(frozen=True, slots=True)
class PlannedWrite:
    """A checked write: the statement's parameters, and whose transaction it joins."""

    params: dict[str, Any]
    in_callers_txn: bool

    @property
    def notifies_in_statement(self) -> bool:
        """The statement itself sends the NOTIFY (it commits with the event)."""
        return bool(self.params["notify"])


def write_rounds() -> Iterator[LiteralString]:
    """The statements of a write, in order: insert, then look up a concurrent winner's row."""
    return (write_query(round_no) for round_no in range(MAX_WRITE_ROUNDS))


def rounds_exhausted(params: Mapping[str, Any]) -> InboxError:
    """The error when no round wrote or found the row (it vanished between the rounds)."""
    return InboxError(f"could not write or find {params['source']}:{params['key']}")


class WriterOptions(TypedDict, total=False):
    """The keyword options both writers take besides ``pool=`` (see ``WriterBase``)."""

    notify: NotifyMode
    notify_interval_seconds: float
    min_size: int
    max_size: int
    timeout_seconds: float
    connection_kwargs: Mapping[str, Any] | None
    pooler: PoolerMode
    prepared_statements: PreparedMode
    statement_timeout_seconds: float | None
    groups_in_flight: int


class WriterBase(ABC, Generic[PoolT, ConnT, ResultT]):
    """The state and rules of a writer; ``PoolT``, ``ConnT`` are the shell's pool and
    connection classes, ``ResultT`` what its ``write`` returns.

    Give it a connection string (the writer then owns a pool of autocommit connections) or a
    ``pool=`` of your own, not both. ``connection_kwargs`` go to every connection of an owned
    pool (``connect_timeout``, ...). ``statement_timeout_seconds`` bounds each write on the
    server. ``pooler`` ("auto", "none", "transaction"; ``inbox._core.database.pooler``) says whether
    the URL reaches PostgreSQL through a transaction pooler: if so, the owned pool prepares
    no statements and sets the timeout per transaction instead of at connection.
    ``prepared_statements`` ("auto", "on", "off") overrides the first: "on" for a pooler that
    keeps prepared statements per client (PgBouncer 1.21 and later).

    Standalone writes (not ``conn=``) are group-committed (``inbox._writing.groups``):
    ``groups_in_flight`` is how many group statements may run at once; 2 (the default) lets
    one commit while the next gathers. It is capped at half the pool, so that writes that go
    singly (duplicates, failures) find a connection.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: PoolT | None = None,
        notify: NotifyMode = "after_commit",
        notify_interval_seconds: float = 0.01,
        min_size: int = 1,
        max_size: int = 10,
        timeout_seconds: float = 5.0,
        connection_kwargs: Mapping[str, Any] | None = None,
        pooler: PoolerMode = "auto",
        prepared_statements: PreparedMode = "auto",
        statement_timeout_seconds: float | None = None,
        groups_in_flight: int = 2,
    ) -> None:
        name = type(self).__name__
        if isinstance(groups_in_flight, bool) or not isinstance(groups_in_flight, int):
            raise TypeError(
                f"{name}(groups_in_flight=...) must be an int, got {groups_in_flight!r}"
            )
        if groups_in_flight < 1:
            raise ValueError(
                f"{name}(groups_in_flight=...) must be at least 1, got {groups_in_flight}"
            )
        self._groups_wanted = groups_in_flight
        for option, value, modes in (
            ("notify", notify, NOTIFY_MODES),
            ("pooler", pooler, POOLER_MODES),
            ("prepared_statements", prepared_statements, PREPARED_MODES),
        ):
            if value not in modes:
                choices = ", ".join(repr(mode) for mode in modes)
                raise ValueError(f"{name}({option}=...) must be one of {choices}, got {value!r}")
        self._owns_pool = pool is None
        # A statement sent first in each transaction of an owned pooled connection.
        self._prelude: Any = None
        if pool is None:
            if dsn is None:
                raise TypeError(f"{name} needs a connection string or pool=")
            pooled = behind_pooler(pooler, dsn)
            limits = (
                {}
                if statement_timeout_seconds is None
                else {"statement_timeout": str(math.ceil(statement_timeout_seconds * 1000))}
            )
            if pooled and limits:
                self._prelude = settings_statement(limits, local=True)
            # Kept to make the pool again in a forked child (InboxWriter).
            self._pool_recipe = (
                dsn,
                owned_pool_options(
                    min_size=min_size,
                    max_size=max_size,
                    timeout_seconds=timeout_seconds,
                    connection_kwargs={
                        **connect_kwargs(pooled, prepared_statements),
                        **startup_options(pooled, limits),
                        **(connection_kwargs or {}),
                    },
                ),
            )
            pool = self._make_pool(*self._pool_recipe)
        elif dsn is not None:
            raise TypeError(f"{name} takes a connection string or pool=, not both")
        self._pool: PoolT = pool
        self._notify: NotifyMode = notify
        self._coalescer = NotifyCoalescer(notify_interval_seconds)
        self._partitions = KnownPartitions()
        self._init_io()

    @abstractmethod
    def _make_pool(self, dsn: str, options: dict[str, Any]) -> PoolT:
        """The pool an owning writer makes from ``owned_pool_options``."""

    def _init_io(self) -> None:
        """The shell's own state (timers, tasks); runs once the pool is set."""

    def write(
        self,
        source: str,
        key: str,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        event_type: str | None = None,
        verifier: str | None = None,
        ordering_key: str | None = None,
        order_at: datetime | None = None,
        on_dead: OnDead | None = None,
        received_at: datetime | None = None,
        conn: ConnT | None = None,
    ) -> ResultT:
        """Append one delivery. Returns the event id and whether it was new (from
        ``AsyncInboxWriter``, a coroutine: ``await writer.write(...)``).

        A duplicate ``(source, key)`` creates no work; it is recorded as a delivery.
        ``ordering_key``: events of this source with the same ordering key run one at a
        time, in the order of ``order_at`` (default: their arrival; arrival breaks ties);
        ``on_dead`` ("hold", the default, or "continue") says whether a dead letter holds
        the key's later events (docs/ordering.md). ``received_at``: the time the event was
        first received, for an import from another inbox (default: now); it decides the
        event's partition of the log. ``conn``: join that connection's open transaction
        instead of committing on the writer's own pool.
        Raises ``InvalidWriteError`` before any SQL for bad input, and
        ``DatabaseUnavailableError`` when the write could not be committed.
        """
        request = WriteRequest(
            source,
            key,
            body,
            headers,
            event_type,
            verifier,
            ordering_key,
            order_at,
            on_dead,
            received_at,
        )
        return self._write(request, conn)

    @abstractmethod
    def _write(self, request: WriteRequest, conn: ConnT | None) -> ResultT:
        """The shell's write: ``_plan`` it, run its rounds, owe a wake-up. The async shell's
        is a coroutine function, so nothing (not even a check) runs before it is awaited."""

    def _plan(self, request: WriteRequest, conn: ConnT | None) -> PlannedWrite:
        """Check a write; ``conn`` is the caller's connection, None for the writer's pool.

        A write that joins the caller's open transaction sends its NOTIFY in that
        transaction (unless notifications are off): only its commit may wake the workers.
        """
        in_callers_txn = conn is not None and not conn.autocommit
        params = prepare_write(
            request,
            notify_in_transaction=self._notify == "in_transaction"
            or (in_callers_txn and self._notify != "off"),
            # The span the write runs in (the receipt's, or the host's): handlers link to it.
            trace_context=current_trace_context(),
        )
        return PlannedWrite(params, in_callers_txn)

    def _partition_wanted(self, plan: PlannedWrite) -> datetime | None:
        """The receipt time of an import whose partition the writer has not been told of
        (a write at the database's now() finds the ones made ahead)."""
        at: datetime | None = plan.params["received_at"]
        return None if at is None or self._partitions.covers(at) else at

    def _no_partition(self, params: Mapping[str, Any]) -> MigrationError:
        """A write joined to a caller's transaction met a missing partition: that
        transaction is aborted, and only the caller can try again."""
        at = params["received_at"] or "now"
        return MigrationError(
            f"writing {params['source']}:{params['key']}: no partition of the log holds"
            f" receipt time {at}; `inbox db upgrade` and running workers make them ahead,"
            " and a write on the writer's own pool makes a missing one"
        )

    def _owes_wake_up(self, plan: PlannedWrite, result: WriteResult) -> bool:
        """Whether a NOTIFY is owed after the write committed: a new event whose statement
        did not send one, written outside the caller's transaction, with notifications on."""
        return (
            result.is_new
            and not plan.notifies_in_statement
            and not plan.in_callers_txn
            and self._notify != "off"
        )
