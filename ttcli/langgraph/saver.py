"""TtcliSaver: LangGraph's checkpointer interface on ttcli's format (SQLite or PostgreSQL).

Everything is stored through ttcli's saver contract (`ttcli.SqliteSaver` or
`ttcli.PostgresSaver`), so the database is a ttcli database that every `ttcli` command
reads. What LangGraph sends that ttcli's contract does not take as it is gets translated
here, and back when read:

- values: see `ttcli.langgraph.values`;
- a checkpoint's `v` (ttcli's rows read as 1) is kept, when it is not 1, as the version of
  a channel `__v__` that holds no value, and LangGraph's string channel versions as they are;
- `put_writes` may arrive before the `put` of its checkpoint (LangGraph's loop sends both
  from background threads): such writes wait in memory and are stored right after it.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ttcli.configs import CheckpointRef
from ttcli.errors import CheckpointNotFoundError
from ttcli.langgraph.values import KnownMessages, Values
from ttcli.savers import base as ttcli_base
from ttcli.savers.locate import open_saver
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT

#: the channel whose version is the checkpoint's `v` (when it is not 1)
V_CHANNEL = "__v__"

WriteKey = tuple[str, str, str]
EarlyWrites = list[tuple[list[tuple[str, Any]], str, str]]


class TtcliSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer storing in a ttcli database.

    Args:
        path: the SQLite file (created if missing), or a `postgresql://` DSN (needs
            `ttcli[postgres]`; the tables are created if missing).
        serde: LangGraph's serializer for the values ttcli does not store as they are
            (by default LangGraph's `JsonPlusSerializer`, with its allowlist).
        busy_timeout: seconds to wait for another process's write lock.

    A checkpoint whose id does not sort after its parent's is refused (`ValueError`),
    since ttcli's files keep the largest id the newest checkpoint: LangGraph's ids are
    time-ordered, so it happens only when a process whose clock runs behind continues a
    thread another process wrote.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        serde: SerializerProtocol | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        super().__init__(serde=serde)
        store = open_saver(path, busy_timeout=busy_timeout)
        self._bind(store, store.close)

    @classmethod
    def on(
        cls, saver: ttcli_base.BaseSaver, *, serde: SerializerProtocol | None = None
    ) -> TtcliSaver:
        """A TtcliSaver storing through a ttcli saver that is already open (the command
        line's); closing it leaves that saver open."""
        bridge = cls.__new__(cls)
        BaseCheckpointSaver.__init__(bridge, serde=serde)
        bridge._bind(saver, lambda: None)
        return bridge

    def _bind(self, saver: ttcli_base.BaseSaver, close: Callable[[], None]) -> None:
        #: ttcli's saver underneath: `ttcli` commands read the same file
        self.saver = saver
        self._close = close
        self._lock = threading.RLock()
        #: writes whose checkpoint's put has not arrived yet
        self._early: dict[WriteKey, EarlyWrites] = {}
        #: the LangChain messages this bridge made or stored, while they live
        self._known = KnownMessages()

    @property
    def values(self) -> Values:
        # made from `serde` at each use: LangGraph's `with_allowlist` gives a compiled graph
        # a copy of the saver with another serializer (the state schema's types allowed)
        return Values(self.serde, self._known)

    def close(self) -> None:
        self._close()

    def __enter__(self) -> TtcliSaver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> TtcliSaver:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = self.saver.get_tuple(_config(config))
        return None if found is None else self._tuple(found)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        found = self.saver.list(
            None if config is None else _config(config),
            filter=filter,
            before=None if before is None else _config(before),
            limit=limit,
        )
        for saved in found:
            yield self._tuple(saved)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        ref = _ref(config)
        stored = self._checkpoint(checkpoint)
        merged = dict(get_serializable_checkpoint_metadata(config, metadata))
        with self._lock:
            self.saver.put(ref.to_config(), stored, merged, new_versions)  # type: ignore[arg-type]
            early = self._early.pop((ref.thread_id, ref.checkpoint_ns, checkpoint["id"]), [])
        at = ref.at(checkpoint["id"]).to_config()
        for writes, task_id, task_path in early:
            self.saver.put_writes(at, writes, task_id, task_path)
        return at  # type: ignore[return-value]

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        ref = _ref(config)
        stored = [(channel, self.values.to_ttcli(value)) for channel, value in writes]
        with self._lock:
            # looked up first, in a read: a write refused in its transaction is rolled back,
            # and with it everything the saver keeps (a chat's history would be decoded and
            # encoded whole again at the next put)
            if self.saver.has_checkpoint(ref.to_config()):
                try:
                    self.saver.put_writes(ref.to_config(), stored, task_id, task_path)
                    return
                except CheckpointNotFoundError:  # deleted meanwhile by another process
                    pass
            # its checkpoint's put has not arrived yet
            key = (ref.thread_id, ref.checkpoint_ns, str(ref.checkpoint_id))
            self._early.setdefault(key, []).append((stored, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self.saver.delete_thread(str(thread_id))
            for key in [k for k in self._early if k[0] == str(thread_id)]:
                del self._early[key]

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        by_thread: dict[tuple[str, str], list[str]] = {}
        for run_id in run_ids:
            for saved in self.saver.list_metadata(None, filter={"run_id": run_id}):
                ref = _ref(saved.config)
                by_thread.setdefault((ref.thread_id, ref.checkpoint_ns), []).append(
                    saved.checkpoint["id"]
                )
        for (thread_id, ns), checkpoint_ids in by_thread.items():
            self.saver.delete_checkpoints(CheckpointRef(thread_id, ns).to_config(), checkpoint_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint of a thread, in every namespace, with its pending writes.

        Every channel is given as changed: LangGraph may keep a channel's version while its
        value changes (its conformance suite does), so ttcli must not take the parent's.
        Checkpoints the target has already are left as they are.
        """
        source, target = str(source_thread_id), str(target_thread_id)
        for summary in [s for s in self.saver.list_threads(source) if s.thread_id == source]:
            to = CheckpointRef(target, summary.checkpoint_ns)
            found = self.saver.list(CheckpointRef(source, summary.checkpoint_ns).to_config())
            for saved in reversed([*found]):
                self._copy(saved, to)

    def _copy(self, saved: ttcli_base.CheckpointTuple, to: CheckpointRef) -> None:
        """One checkpoint and its writes; a copy stopped halfway completes when run again."""
        checkpoint = saved.checkpoint
        at = to.at(checkpoint["id"]).to_config()
        if self.saver.get_tuple(at) is None:
            parent = saved.parent_config
            parent_id = _ref(parent).checkpoint_id if parent else None
            versions = checkpoint["channel_versions"]
            self.saver.put(to.at(parent_id).to_config(), checkpoint, saved.metadata, versions)
        present = {task_id for task_id, *_ in self.saver.get_writes(at)}
        tasks: dict[str, tuple[str, list[tuple[str, Any]]]] = {}
        for task_id, path, channel, value in self.saver.get_writes(saved.config):
            tasks.setdefault(task_id, (path, []))[1].append((channel, value))
        for task_id, (path, writes) in tasks.items():
            if task_id not in present:
                self.saver.put_writes(at, writes, task_id, path)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.saver.prune([str(t) for t in thread_ids], strategy=strategy)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """As LangGraph's InMemorySaver: `<counter, 32 digits>.<random>`, sortable as text."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: [*self.list(config, filter=filter, before=before, limit=limit)]
        )
        for saved in found:
            yield saved

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    def _checkpoint(self, checkpoint: Checkpoint) -> ttcli_base.Checkpoint:
        versions: dict[str, Any] = {**cast(dict[str, Any], checkpoint["channel_versions"])}
        if checkpoint["v"] != 1:
            versions[V_CHANNEL] = checkpoint["v"]
        return ttcli_base.Checkpoint(
            v=1,
            id=checkpoint["id"],
            ts=checkpoint["ts"],
            channel_values={
                k: self.values.to_ttcli(v) for k, v in checkpoint["channel_values"].items()
            },
            channel_versions=versions,
            versions_seen=cast(dict[str, dict[str, int]], checkpoint["versions_seen"]),
            updated_channels=checkpoint.get("updated_channels"),
        )

    def _tuple(self, saved: ttcli_base.CheckpointTuple) -> CheckpointTuple:
        stored = saved.checkpoint
        versions: dict[str, Any] = {**stored["channel_versions"]}
        checkpoint = Checkpoint(
            v=versions.pop(V_CHANNEL, 1),
            id=stored["id"],
            ts=stored["ts"],
            channel_values={
                k: self.values.to_langgraph(v) for k, v in stored["channel_values"].items()
            },
            channel_versions=versions,
            versions_seen=stored["versions_seen"],  # type: ignore[typeddict-item]
            updated_channels=stored["updated_channels"],
        )
        return CheckpointTuple(
            config=saved.config,  # type: ignore[arg-type]
            checkpoint=checkpoint,
            metadata=saved.metadata,  # type: ignore[arg-type]
            parent_config=saved.parent_config,  # type: ignore[arg-type]
            pending_writes=[
                (task_id, channel, self.values.to_langgraph(value))
                for task_id, channel, value in saved.pending_writes or ()
            ],
        )


def _ref(config: RunnableConfig | dict[str, Any]) -> CheckpointRef:
    return CheckpointRef.from_config(cast(dict[str, Any], config))


def _config(config: RunnableConfig) -> dict[str, Any]:
    """The part of a LangGraph config ttcli's saver reads: thread, namespace, checkpoint."""
    return _ref(config).to_config()
