"""The saver contract: what the runtime needs from any checkpoint store.

The runtime only ever talks to `BaseSaver`; `InMemorySaver`, the SQLite saver and a future
PostgreSQL saver all pass the same contract suite (`tests/test_saver_contract.py`).
Method names and shapes follow LangGraph's `BaseCheckpointSaver`, so code that calls a
checkpointer directly ports by changing imports.

Invariants every saver keeps (stated once here and in `schema.sql`; `ttcli verify` checks
what a file can break, and the contract suite checks every saver):

1. Within a thread a child's id sorts after its parent's, whatever the clocks of the
   processes that wrote them (`put` refuses one that would not; the runtime makes ids with
   `uuid6.new_id(step, after=...)`), so the largest id is the newest checkpoint.
2. A committed checkpoint never changes (values, metadata, parent) and disappears only by
   `delete_thread`, `delete_checkpoints` or a prune; its pending writes only grow.
3. Deleting checkpoints leaves every other one reading exactly as before; a child whose
   parent went keeps `parent_config` naming it.
4. Stored values point only at older stored values (no cycles; chains are bounded), so
   every read ends.
5. An interrupt's answer is stored once: a different second answer is refused
   (`AnswerConflictError`), the same answer again is harmless (`rules.merged_answers`).
6. What a prune deleted with an archive is in the archive as it was stored (compared in
   stored form, `stored_tuple`: `ttcli.ops.prune`).
"""

from __future__ import annotations

import bisect
import builtins
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NamedTuple, TypedDict, TypeVar

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import ConfigError
from ttcli.savers.rules import copy_checkpoint
from ttcli.savers.serde import Serializer

#: ids read at a time by `ids_ending`
ID_PAGE = 10_000

#: Stands for a channel value that `list_metadata` did not read.
NOT_LOADED: Any = type("NotLoaded", (), {"__repr__": lambda self: "NOT_LOADED"})()

#: A pending write: (task_id, channel, value).
PendingWrite = tuple[str, str, Any]
#: A pending write with the path of its task: (task_id, task_path, channel, value).
TaskWrite = tuple[str, str, str, Any]
#: A task's writes as `put_step` takes them: (task_id, task_path, [(channel, value), ...]).
TaskWrites = tuple[str, str, Sequence[tuple[str, Any]]]

T = TypeVar("T")


class Checkpoint(TypedDict):
    """The state of a thread at one superstep boundary."""

    v: int
    #: time-sortable id (UUIDv6); the largest id of a thread is its latest checkpoint
    id: str
    #: ISO-8601 UTC creation time
    ts: str
    #: values of the channels that hold one, state keys and internal triggers alike
    channel_values: dict[str, Any]
    #: channel -> version; versions only grow, so "changed" is "version is new"
    channel_versions: dict[str, int]
    #: node -> {trigger channel -> version it last ran on}
    versions_seen: dict[str, dict[str, int]]
    #: channels written by the step that produced this checkpoint
    updated_channels: list[str] | None


#: The checkpoint `put_step` stores: `put`'s (checkpoint, metadata, new_versions).
StepCheckpoint = tuple[Checkpoint, Mapping[str, Any], Mapping[str, int]]


class CheckpointTuple(NamedTuple):
    """A checkpoint with everything stored around it."""

    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: dict[str, Any]
    parent_config: RunnableConfig | None = None
    pending_writes: builtins.list[PendingWrite] | None = None


class ThreadSummary(NamedTuple):
    """One thread (in one namespace) as `list_threads` reports it."""

    thread_id: str
    checkpoint_ns: str
    checkpoints: int
    #: id of the newest checkpoint (the largest id)
    latest_id: str
    #: ISO-8601 time of the newest checkpoint
    latest_ts: str


class BaseSaver(ABC):
    """Stores checkpoints, their metadata and the pending writes of their tasks."""

    #: encodes and decodes the values stored; each saver owns its own (see savers/serde.py)
    serde: Serializer

    @abstractmethod
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch one checkpoint.

        Args:
            config: names the thread and namespace, and the checkpoint id; without an id
                the thread's latest checkpoint (largest id) is returned.

        Returns:
            The checkpoint with metadata, parent and pending writes, or None if absent.
        """

    @abstractmethod
    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints newest first (by id), each as it is when yielded: one the caller
        deleted through this saver since the listing began is not yielded (a saver may read
        a few ahead, and what other processes delete meanwhile may still be yielded as it was).

        Args:
            config: the thread (and namespace) to list; None lists every thread. A
                checkpoint id in it narrows the result to that checkpoint.
            filter: metadata equality (dotted keys reach nested fields), `writes` (what each
                node returned) included, on every saver; keys are checked with
                `validate_filter`.
            before: only checkpoints whose id is smaller than this config's id.
            limit: at most this many, applied after the other conditions.

        Raises:
            InvalidFilterError: a filter key that is not a plain name.
        """

    def list_metadata(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> builtins.list[CheckpointTuple]:
        """Like `list` where values are not needed (history tables, prune plans); a backend
        that can skip reading stored values overrides it."""
        return builtins.list(self.list(config, filter=filter, before=before, limit=limit))

    @abstractmethod
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        """Store a checkpoint as a child of the checkpoint named in `config`.

        Args:
            config: the thread and namespace, and the parent's id (absent for a root).
            checkpoint: the checkpoint to store.
            metadata: JSON-compatible metadata (source, step, parents, writes, user keys).
            new_versions: the channels whose version changed since the parent, so a saver
                may store only what changed.

        Returns:
            The config of the stored checkpoint.
        """

    @abstractmethod
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the checkpoint the task was planned from.

        A repeated (task_id, index) is ignored for normal channels and replaced for
        special ones (`__error__`, `__interrupt__`, `__resume__`, ...).
        """

    def put_step(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: StepCheckpoint | None,
    ) -> None:
        """Store tasks' writes against the checkpoint `config` names, then the checkpoint
        they lead to, if any (`put`'s other arguments): a superstep's save, all of it or
        nothing (in one `batch()`).

        No value changes during the call, so a saver may store a value that a task wrote
        and the new checkpoint holds once (the SQL savers encode a map written and then
        kept in its channel once, not twice, unless `put` or `put_writes` is overridden).
        """
        with self.batch():
            for task_id, task_path, values in writes:
                self.put_writes(config, values, task_id, task_path)
            if checkpoint is not None:
                self.put(config, *checkpoint)

    @abstractmethod
    def get_writes(self, config: RunnableConfig) -> builtins.list[TaskWrite]:
        """The pending writes of the checkpoint `config` names, with their task paths, in the
        order the runtime applies them; what copying a checkpoint needs to keep."""

    @abstractmethod
    def stored_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """`get_tuple` with every value in its stored form (`serde.Verbatim`: a typed value
        stays the `msgpack.ExtType` it was stored as), alike in every saver. What a prune
        compares between a database and its archive: it must not depend on the
        application's classes, which may have changed since a value was stored (a class
        given a required field no longer rebuilds it)."""

    @abstractmethod
    def stored_pending_writes(
        self, config: RunnableConfig, checkpoint_ids: Iterable[str]
    ) -> dict[str, builtins.list[TaskWrite]]:
        """The pending writes of those of these checkpoints the config's thread has, by id,
        each as `get_writes` gives them but with every value in its stored form (see
        `stored_tuple`); a checkpoint the thread lacks is left out. What a prune compares
        between a file and its archive, a page at a time."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and write of a thread, in every namespace."""

    @abstractmethod
    def delete_checkpoints(
        self, config: RunnableConfig, checkpoint_ids: Sequence[str], *, collect: bool = True
    ) -> None:
        """Delete some checkpoints of the config's thread (prune's primitive).

        Every other checkpoint reads exactly as before: values, metadata, and its own pending
        writes. One whose parent is deleted keeps its `parent_config` naming that parent, so
        history simply ends earlier. Ids that do not exist are ignored, so a retry is safe.
        With `collect=False` a saver may leave storage only the deleted checkpoints used to
        be reclaimed by the next call that collects (a prune collects with its last batch).
        """

    @abstractmethod
    def get_thread_info(self, thread_id: str) -> dict[str, Any]:
        """What was recorded about a thread with `set_thread_info` (empty if nothing)."""

    @abstractmethod
    def set_thread_info(self, thread_id: str, info: Mapping[str, Any]) -> None:
        """Record JSON-compatible facts about a thread (merged into what is there)."""

    @abstractmethod
    def list_threads(self, prefix: str = "") -> Iterator[ThreadSummary]:
        """Every thread (per namespace) whose id starts with `prefix`, ordered by id."""

    def batch(self, *, durable: bool = False) -> AbstractContextManager[None]:
        """Group the writes of a block into one transaction where the saver has them (all
        commit or none); archiving uses it to commit once per batch, not per checkpoint.
        A durable batch is on the disk when the block returns, so it survives a power cut:
        an archive's copies, before the live rows go. (A saver without batches, as here,
        makes each write as durable as it makes any.)"""
        return nullcontext()

    def batch_held(self) -> bool:
        """Whether the calling thread is inside this saver's `batch()`: no other thread can
        write until the block ends, so a run started there saves in the caller's thread
        (durability="async" runs as "sync")."""
        return False

    def stores_in(self, other: BaseSaver) -> bool:
        """Whether `other` keeps its checkpoints where this saver does (an archive there
        would be the database itself: prune refuses it)."""
        return other is self

    def copy_rows(self, config: RunnableConfig, below: str, target: BaseSaver) -> int | None:
        """Copy the config's thread's checkpoints with ids below `below` that `target` lacks,
        pending writes included, into the same thread of `target` as stored rows, checking
        the copy before it commits; returns how many it copied. Rows `target` has already are
        left as they are (a prune compares them before it deletes). None: this saver cannot
        copy into `target` that way, and the caller copies value by value (`ttcli.ops.copy`).
        """
        return None

    def checkpoint_ids(
        self,
        config: RunnableConfig,
        *,
        below: str | None = None,
        limit: int | None = None,
        since: str | None = None,
        oldest_first: bool = False,
    ) -> builtins.list[str]:
        """The checkpoint ids of the config's thread, newest first (or `oldest_first`), read
        without decoding anything (so that one broken checkpoint does not hide the others);
        only ids below `below` and at or above `since`, and at most `limit` of them, when
        given (a page of a long thread, or which of a page's ids are still there)."""
        found = [t.checkpoint["id"] for t in self.list_metadata(config)]
        found = [i for i in found if (below is None or i < below) and (since is None or i >= since)]
        if oldest_first:
            found.reverse()
        return found if limit is None else found[:limit]

    def ids_ending(self, config: RunnableConfig, tail: str) -> builtins.list[str]:
        """The ids of the config's thread that end with `tail`, newest first: how a short id
        (the random end of an id) is found. No index orders ids by their end, so this reads
        every id of the thread, a page at a time; a backend that can compare the stored ids
        where they lie overrides it."""
        found: builtins.list[str] = []
        below = None
        while page := self.checkpoint_ids(config, below=below, limit=ID_PAGE):
            found += [i for i in page if i.endswith(tail)]
            if len(page) < ID_PAGE:
                break
            below = page[-1]
        return found

    def count_checkpoints(self, config: RunnableConfig, *, below: str | None = None) -> int:
        """How many checkpoints the config's thread has (with ids below `below`, if given)."""
        return len(self.checkpoint_ids(config, below=below))

    def has_checkpoint(self, config: RunnableConfig) -> bool:
        """Whether the checkpoint `config` names is stored: asked before a write that would
        be refused for want of it (a refused write rolls its transaction back, and with it
        what the saver keeps in memory). This default lists the thread; backends override it
        with a lookup that decodes nothing."""
        checkpoint_id = self.ref(config).checkpoint_id
        return checkpoint_id is not None and checkpoint_id in self.checkpoint_ids(
            config, since=checkpoint_id
        )

    def child_ids(self, config: RunnableConfig) -> builtins.list[str]:
        """Ids of the checkpoints whose parent is the one `config` names."""
        ref = self.ref(config)
        return sorted(
            t.checkpoint["id"]
            for t in self.list_metadata(ref.at(None).to_config())
            if t.parent_config and self.ref(t.parent_config).checkpoint_id == ref.checkpoint_id
        )

    def integrity_problems(self) -> builtins.list[str]:
        """What the storage's own consistency check finds wrong (nothing, by default)."""
        return []

    def neighbour_ids(self, config: RunnableConfig, checkpoint_ids: Iterable[str]) -> set[str]:
        """The ids right before and after each given one in the thread (by id order): all it
        takes to abbreviate ids uniquely. Backends with an index override this."""
        ids = sorted(t.checkpoint["id"] for t in self.list_metadata(config))
        found = set()
        for checkpoint_id in checkpoint_ids:
            before, after = (
                bisect.bisect_left(ids, checkpoint_id),
                bisect.bisect_right(ids, checkpoint_id),
            )
            found.update(ids[max(before - 1, 0) : before] + ids[after : after + 1])
        return found

    def thread_bytes(self, config: RunnableConfig) -> int | None:
        """Bytes the config's thread (and namespace) takes in storage, if the backend can
        tell; None otherwise."""
        return None

    def get(self, config: RunnableConfig) -> Checkpoint | None:
        found = self.get_tuple(config)
        return found.checkpoint if found else None

    @staticmethod
    def ref(config: RunnableConfig) -> CheckpointRef:
        return CheckpointRef.from_config(config)

    # The async API, as LangGraph names it (arguments as the sync method's): each runs the
    # sync method on a worker thread, so an event loop is never blocked by storage. A natively
    # async backend overrides them.

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await to_thread(self.get_tuple, config)

    async def alist(
        self, config: RunnableConfig | None, **options: Any
    ) -> AsyncIterator[CheckpointTuple]:
        def page() -> builtins.list[CheckpointTuple]:
            return builtins.list(self.list(config, **options))

        for found in await to_thread(page):
            yield found

    async def aput(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        return await to_thread(self.put, *args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        await to_thread(self.put_writes, *args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        await to_thread(self.delete_thread, thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint of a thread (all namespaces), with ids, metadata, parents and
        pending writes, into another thread, as LangGraph's `copy_thread` does. Checkpoints
        the target has already are left as they are, so a copy interrupted halfway completes
        when run again."""
        for summary in self.list_threads(source_thread_id):
            if summary.thread_id != source_thread_id:
                continue
            source = CheckpointRef(source_thread_id, summary.checkpoint_ns)
            target = CheckpointRef(target_thread_id, summary.checkpoint_ns)
            for saved in reversed(builtins.list(self.list(source.to_config()))):
                copy_checkpoint(self, saved, self, target)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """LangGraph's `prune`: `keep_latest` keeps each namespace's newest checkpoint of
        the threads (with its pending writes), `delete` removes the threads. Time-based
        retention with an archive is `ttcli.ops.prune`."""
        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(f"unknown prune strategy {strategy!r}: keep_latest or delete")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            for summary in self.list_threads(thread_id):
                if summary.thread_id == thread_id:
                    config = CheckpointRef(thread_id, summary.checkpoint_ns).to_config()
                    self.delete_checkpoints(config, self.checkpoint_ids(config)[1:])


#: The write channel of a task's answers to its interrupts (see `rules.merged_answers`).
RESUME = "__resume__"
#: Fixed indices of special write channels, as LangGraph numbers them.
WRITES_IDX_MAP = {"__error__": -1, "__scheduled__": -2, "__interrupt__": -3, RESUME: -4}


async def to_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`asyncio.to_thread`, imported when first used: asyncio costs every command-line start
    ~20 ms, and only async callers need it."""
    import asyncio

    return await asyncio.to_thread(function, *args, **kwargs)
