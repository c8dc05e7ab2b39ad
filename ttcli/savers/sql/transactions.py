"""Transactions and batches over one database connection, shared by the SQL backends.

Every write runs in a write transaction that serializes it with the other writers of the
database (SQLite: `BEGIN IMMEDIATE`) or of the threads it writes (PostgreSQL: `claim`), so a
checkpoint with its values commits as one transaction or not at all. Reads run in a read
transaction, so they see one consistent snapshot while others write. A batch groups the
writes of a block into one transaction (a superstep: its task's writes and its checkpoint
commit together).

A backend says how to begin, commit and roll back, whether another connection wrote since
this one last looked, and what a driver error means to the user.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, TypeVar

from ttcli.errors import StorageError, TtcliError

DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a writer waits for another before giving up

Hook = Callable[[], None]

#: the backend's connection type (the SQL parts need only `Db` of it)
DbT = TypeVar("DbT", covariant=True)


@dataclass
class BatchFacts:
    """What write transactions learned about the database: kept while this connection is the
    only one to write it (`notice_others` drops them when another did; a rollback too)."""

    threads: dict[tuple[str, str], int] = field(default_factory=dict)
    latest: dict[int, bytes | None] = field(default_factory=dict)
    #: (thread key, checkpoint id) of checkpoints this connection inserted that have no
    #: `writes` row yet: their pending writes need not be read (a superstep's next task writes)
    rowless: set[tuple[int, bytes]] = field(default_factory=set)
    #: a write in the batch raised: none of the batch may be stored, even if it was caught
    failed: bool = False


class Transactions(ABC, Generic[DbT]):
    """One connection, its lock, and the batch in progress (if any)."""

    #: the statements run on; valid inside a transaction
    conn: DbT
    #: the most listed checkpoints `list` reads in one read transaction (their values sit in
    #: memory together until yielded): a read's begin and commit cost more than a row's
    read_ahead = 8

    def __init__(self, path: str, *, readonly: bool) -> None:
        #: what the user named the database by (a file path, or a DSN without its password)
        self.path = path
        self.readonly = readonly
        self.lock = threading.RLock()
        self.depth = 0
        #: the thread inside `batch()`, if one is
        self.batch_owner: int | None = None
        self.facts = BatchFacts()
        #: called with the connection before any other statement of a batch runs, and at its
        #: end: write what the parts held back for the batch (pending writes, counts)
        self.on_flush: list[Callable[[Any], None]] = []
        #: caches to drop after a rollback; caches to drop when another connection changed
        #: the database; what to reset when a batch ends
        self.on_rollback: list[Hook] = []
        self.on_other_writer: list[Hook] = []
        self.on_batch_end: list[Hook] = []
        #: in a write transaction (or a batch): `claim` a thread before touching it
        self.writing = False
        #: the write transaction's commit reaches the disk before it returns (`batch`)
        self.durable = False
        #: write transactions (or batch statements) begun through this connection: what was
        #: read ahead before one began may be untrue after it
        self.writes_begun = 0

    # -- what a backend provides

    @abstractmethod
    def _begin(self, *, writing: bool, durable: bool = False) -> None:
        """Begin a transaction (writing, where a write locks the whole database: wait for the
        other writers, at most the timeout); a durable one's commit is on the disk when it
        returns, whatever the database's settings say."""

    @abstractmethod
    def _end(self, *, commit: bool) -> None:
        """Commit or roll back the open transaction, if one is open."""

    @abstractmethod
    def in_transaction(self) -> bool:
        """Whether the connection is in a transaction (a failed statement may end one)."""

    @abstractmethod
    def notice_others(self) -> None:
        """Drop what another connection may have made untrue since this one last looked:
        thread keys and latest ids (`forget_rows`), and where a key may be handed out again,
        what the parts cached (`on_other_writer`). Called first thing in every transaction."""

    def claim(self, thread_id: str) -> None:
        """Wait for the other writers of the thread, in a write transaction: called before
        the transaction reads or writes the thread's rows. (Nothing to do where every write
        transaction holds the whole database's lock.)"""

    def deleting(self) -> None:
        """The write transaction deletes rows: tell the other connections, whose caches may
        hold what goes (nothing to do where they notice every write anyway)."""

    @abstractmethod
    def error(self, exc: BaseException) -> TtcliError | None:
        """The ttcli error a driver failure means, as one actionable line; None for an
        exception that is not the driver's."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def vacuum(self) -> None:
        """Give the space of deleted rows back (outside any transaction)."""

    # -- shared

    @property
    def in_batch(self) -> bool:
        return self.depth > 0

    def batch_held(self) -> bool:
        """Whether the calling thread is inside `batch()` (see `BaseSaver.batch_held`)."""
        return self.batch_owner == threading.get_ident()

    def flush(self, conn: Any) -> None:
        for hook in self.on_flush:
            hook(conn)

    def batch(self, *, durable: bool = False) -> AbstractContextManager[None]:
        """One transaction for every write in the block (one commit instead of one each).

        All of it commits or none: if a write in the block raises, nothing of the block is
        stored, even if the block caught the error (it ends with a StorageError). A durable
        batch is on the disk when it returns: it survives a power cut, not only the death of
        the process. It cannot nest in a batch that is not durable, whose commit decides.
        """
        return _Batch(self, durable)

    def write(self, *, keep_held: bool = False) -> AbstractContextManager[DbT]:
        """One write transaction: all of it commits, or none of it. Inside a batch, held
        writes are written first unless the caller takes them (`keep_held`)."""
        return _Write(self, keep_held)

    def _open_write(self, *, durable: bool = False) -> None:
        """Begin a write transaction of its own (the caller holds the lock)."""
        if self.readonly:
            raise StorageError(
                f"{self.path} was opened for reading only: open it without readonly to write"
            )
        self._guarded_begin(writing=True, durable=durable)
        self.writing, self.durable = True, durable
        try:
            self.notice_others()
        except BaseException as exc:
            if (replacement := self._close_write(exc)) is not None:
                raise replacement from None
            raise

    def _close_write(self, exc: BaseException | None) -> BaseException | None:
        """End the write transaction: commit it, or roll it back if `exc` (what its block
        raised) ended it. Returns what to raise instead of `exc`: the commit's failure, or
        the ttcli error a driver's failure means."""
        try:
            if exc is not None:
                return self._roll_back(exc)
            try:
                self._end(commit=True)
            except BaseException as failure:  # noqa: BLE001 - rolled back and handed back
                return self._roll_back(failure) or failure
            return None
        finally:
            self.writing = self.durable = False

    def _roll_back(self, exc: BaseException) -> TtcliError | None:
        """Roll back after `exc`; returns the ttcli error it means, if a driver raised it."""
        self._end(commit=False)
        self.forget()
        return self.error(exc)

    @contextmanager
    def read(self) -> Iterator[DbT]:
        """A read transaction: one consistent snapshot while other processes write."""
        with self.lock:
            if self.depth:  # reads inside a batch see its writes
                conn = self._in_batch(flush=True, writing=False)
                try:
                    yield conn
                except BaseException as exc:
                    self._batch_failed(exc, writing=False)
                return
            self._guarded_begin(writing=False)
            try:
                self.notice_others()
                yield self.conn
            except BaseException as exc:
                if (mapped := self.error(exc)) is None:
                    raise
                raise mapped from None
            finally:
                self._end(commit=True)

    def _guarded_begin(self, *, writing: bool, durable: bool = False) -> None:
        try:
            self._begin(writing=writing, durable=durable)
        except BaseException as exc:
            self._end(commit=False)
            if (mapped := self.error(exc)) is None:
                raise
            raise mapped from None

    def _in_batch(self, *, flush: bool, writing: bool) -> DbT:
        """The batch's connection for one more statement; after a failed write (the database
        itself may have rolled back) nothing more of the batch runs: on its own, each would
        commit. (A plain call, not a context manager: it runs for every statement of a
        superstep.)"""
        if self.facts.failed or not self.in_transaction():
            self.facts.failed = self.facts.failed or writing
            raise StorageError(
                f"an earlier write to {self.path} in this batch failed: nothing of the batch "
                "is stored"
            )
        if flush:
            try:
                self.flush(self.conn)
            except BaseException as exc:  # what was held is dropped: the batch is incomplete
                self._batch_failed(exc, writing=True)
        return self.conn

    def _batch_failed(self, exc: BaseException, *, writing: bool) -> NoReturn:
        # a failed read fails the batch too where the database ended its transaction for it
        # (PostgreSQL aborts a transaction at any error): what follows could not be stored
        self.facts.failed = self.facts.failed or writing or not self.in_transaction()
        if (mapped := self.error(exc)) is None:
            raise exc
        raise mapped from None

    def forget(self) -> None:
        """Drop what the parts cached (after a rollback, or rows deleted)."""
        call(self.on_rollback)
        self.forget_rows()

    def forget_rows(self) -> None:
        """Drop the thread keys and latest ids known (rows were written behind the parts'
        back: an archive copy inserts stored rows as they are)."""
        self.facts.threads.clear()
        self.facts.latest.clear()
        self.facts.rowless.clear()


class _Write(Generic[DbT]):
    """`Transactions.write()`. A class, not a generator: it runs for every put of a superstep."""

    __slots__ = ("batched", "durable", "keep_held", "transactions")

    def __init__(
        self, transactions: Transactions[DbT], keep_held: bool, durable: bool = False
    ) -> None:
        self.transactions, self.keep_held, self.batched = transactions, keep_held, False
        self.durable = durable

    def __enter__(self) -> DbT:
        transactions = self.transactions
        transactions.lock.acquire()
        transactions.writes_begun += 1
        try:
            if transactions.depth:  # a statement of the batch's transaction
                if self.durable and not transactions.durable:
                    raise StorageError(
                        f"a durable batch on {transactions.path} began inside one that is "
                        "not: begin the outer batch with durable=True"
                    )
                self.batched = True
                return transactions._in_batch(flush=not self.keep_held, writing=True)
            transactions._open_write(durable=self.durable)
            return transactions.conn
        except BaseException:
            transactions.lock.release()
            raise

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> None:
        transactions = self.transactions
        try:
            if self.batched:
                if exc is not None:
                    transactions._batch_failed(exc, writing=True)
                return
            if (replacement := transactions._close_write(exc)) is not None:
                raise replacement from None
        finally:
            transactions.lock.release()


class _Batch:
    """`Transactions.batch()`: a write transaction whose writes, and the batches nested in
    it, commit together."""

    __slots__ = ("block", "conn", "transactions")

    def __init__(self, transactions: Transactions[Any], durable: bool) -> None:
        self.transactions = transactions
        # a batch nested in another writes nothing when it begins: what the parts hold back
        # (pending writes, counts) is written by the statement that needs it, or at the end
        # (a committer's group of supersteps, each a batch: one count update, not one each)
        self.block = _Write(transactions, keep_held=True, durable=durable)

    def __enter__(self) -> None:
        self.conn = self.block.__enter__()
        self.transactions.depth += 1
        self.transactions.batch_owner = threading.get_ident()

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> None:
        transactions = self.transactions
        try:
            try:
                if exc is None and transactions.depth == 1:
                    if transactions.facts.failed:
                        raise StorageError(
                            f"a write to {transactions.path} in this batch failed: nothing of "
                            "the batch was stored"
                        )
                    transactions.flush(self.conn)
            finally:
                transactions.depth -= 1
                if not transactions.depth:
                    transactions.batch_owner = None
                    # thread keys and latest ids stay known while no other connection
                    # writes (see notice_others): the next superstep asks for neither
                    transactions.facts.failed = False
                    call(transactions.on_batch_end)
        except BaseException as failure:
            self.block.__exit__(type(failure), failure, failure.__traceback__)
            raise
        self.block.__exit__(kind, exc, traceback)


def call(hooks: list[Hook]) -> None:
    for hook in hooks:
        hook()
