"""InMemorySaver: the saver contract held in dictionaries, for tests and notebooks.

Values are kept encoded by the saver's serializer, as a file would keep them: what one
reads back is what the SQLite saver would give, and a caller mutating a returned state can
never rewrite history.
"""

from __future__ import annotations

import builtins
import copy
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig, check_text
from ttcli.errors import CheckpointNotFoundError, StorageError
from ttcli.savers.base import (
    RESUME,
    WRITES_IDX_MAP,
    BaseSaver,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
    TaskWrite,
    ThreadSummary,
)
from ttcli.savers.rules import (
    check_child_id,
    check_metadata,
    checkpoint_time,
    merged_answers,
    metadata_matches,
    refuse_stored,
    validate_filter,
)
from ttcli.savers.serde import VERBATIM, Serializer
from ttcli.uuid6 import canonical_id

_Key = tuple[str, str]  # (thread_id, checkpoint_ns)


class _Stored:
    __slots__ = ("checkpoint", "metadata", "parent_id", "ts", "writes")

    def __init__(self, checkpoint: bytes, metadata: bytes, parent_id: str | None, ts: str):
        self.checkpoint = checkpoint
        self.ts = ts
        self.metadata = metadata
        self.parent_id = parent_id
        # (task_id, idx) -> (task_path, channel, encoded value)
        self.writes: dict[tuple[str, int], tuple[str, str, bytes]] = {}


class InMemorySaver(BaseSaver):
    """Keeps every checkpoint in memory, encoded by its serializer.

    Args:
        serde: decodes what it stores; by default a new `Serializer()` of its own.
    """

    def __init__(self, *, serde: Serializer | None = None) -> None:
        self.serde = serde or Serializer()
        self._threads: dict[_Key, dict[str, _Stored]] = {}
        self._info: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()
        #: inside a batch: how to take back each of its writes
        self._undo: list[Callable[[], None]] | None = None
        #: the thread inside `batch()`, if one is
        self._batch_owner: int | None = None
        #: a write of the batch failed: nothing of it is kept (as the SQL savers do)
        self._failed = False
        #: the batch in progress was begun durable (a durable one may nest in it)
        self._durable = False

    @contextmanager
    def batch(self, *, durable: bool = False) -> Iterator[None]:
        """All of the block's writes, or none of them if the block raises or one of them
        failed, even if the block caught it (as the SQL savers' transaction). Nothing here
        outlives the process, durable or not."""
        with self._lock:
            if self._undo is not None:  # part of the batch around it
                if durable and not self._durable:  # refused as the SQL savers refuse it
                    raise StorageError(
                        "a durable batch began inside one that is not: begin the outer "
                        "batch with durable=True"
                    )
                yield
                return
            self._undo, self._batch_owner = [], threading.get_ident()
            self._durable = durable
            try:
                yield
                if self._failed:
                    raise StorageError(
                        "a write in this batch failed: nothing of the batch was stored"
                    )
            except BaseException:
                for undo in reversed(self._undo):
                    undo()
                raise
            finally:
                self._undo, self._batch_owner, self._failed = None, None, False
                self._durable = False

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write: in a batch, refused once a write of it failed (alone, each would be
        kept), and failing the batch if it fails."""
        with self._lock:
            if self._failed:
                raise StorageError(
                    "an earlier write in this batch failed: nothing of the batch is stored"
                )
            try:
                yield
            except BaseException:
                self._failed = self._undo is not None
                raise

    def _on_undo(self, undo: Callable[[], None]) -> None:
        if self._undo is not None:
            self._undo.append(undo)

    def batch_held(self) -> bool:
        return self._batch_owner == threading.get_ident()

    @staticmethod
    def ref(config: RunnableConfig) -> CheckpointRef:
        """The config's place, its id as the SQL databases keep it (`canonical_id`): one id
        spelled two ways finds one checkpoint, as there."""
        ref = CheckpointRef.from_config(config)
        checkpoint_id = canonical_id(ref.checkpoint_id)
        return ref if checkpoint_id == ref.checkpoint_id else ref.at(checkpoint_id)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._get(config, self.serde)

    def stored_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._get(config, VERBATIM)

    def _get(self, config: RunnableConfig, serde: Serializer) -> CheckpointTuple | None:
        ref = self.ref(config)
        with self._lock:
            stored = self._threads.get((ref.thread_id, ref.checkpoint_ns), {})
            checkpoint_id = ref.checkpoint_id or max(stored, default=None)
            if checkpoint_id is None or checkpoint_id not in stored:
                return None
            return self._tuple(ref, checkpoint_id, stored[checkpoint_id], serde)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        wanted = validate_filter(filter)
        ref = self.ref(config) if config else None
        before_id = self.ref(before).checkpoint_id if before else None
        with self._lock:
            rows = [
                (checkpoint_id, key, stored)
                for key, thread in self._threads.items()
                if ref is None or key == (ref.thread_id, ref.checkpoint_ns)
                for checkpoint_id, stored in thread.items()
                if (ref is None or ref.checkpoint_id in (None, checkpoint_id))
                and (before_id is None or checkpoint_id < before_id)
                and (not wanted or metadata_matches(self.serde.loads(stored.metadata), wanted))
            ]
            rows.sort(key=lambda row: row[0], reverse=True)
            found = [
                (key, checkpoint_id, stored, self._tuple(ref, checkpoint_id, stored, self.serde))
                for checkpoint_id, key, stored in rows[:limit]
                for ref in [CheckpointRef(key[0], key[1])]
            ]
        for key, checkpoint_id, stored, saved in found:
            with self._lock:  # as it is now: none the caller deleted since
                now = self._threads.get(key, {}).get(checkpoint_id)
                if now is not None and now is not stored:
                    saved = self._tuple(CheckpointRef(*key), checkpoint_id, now, self.serde)
            if now is not None:
                yield saved

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        ref = self.ref(config)
        checkpoint_id = canonical_id(checkpoint["id"])
        if checkpoint_id != checkpoint["id"]:
            checkpoint = Checkpoint(**{**checkpoint, "id": checkpoint_id})
        check_child_id(checkpoint_id, ref.checkpoint_id)
        checkpoint_time(checkpoint["ts"])
        check_metadata(metadata)
        key = (ref.thread_id, ref.checkpoint_ns)
        with self._write():
            if checkpoint_id in self._threads.get(key, {}):
                refuse_stored(checkpoint_id, ref.thread_id)
            stored = _Stored(
                self.serde.dumps(checkpoint, path="checkpoint"),
                self.serde.dumps(dict(metadata), path="metadata"),
                ref.checkpoint_id,
                checkpoint["ts"],
            )
            self._threads.setdefault(key, {})[checkpoint_id] = stored
            self._on_undo(lambda: self._forget(key, checkpoint_id))
        return ref.config_at(checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        ref = self.ref(config)
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        with self._write():
            thread = self._threads.get((ref.thread_id, ref.checkpoint_ns), {})
            stored = thread.get(ref.checkpoint_id or "")
            if stored is None:
                raise CheckpointNotFoundError(str(ref.checkpoint_id), ref.thread_id)
            for position, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, position)
                before = stored.writes.get((task_id, idx))
                if channel == RESUME and before is not None:
                    value = merged_answers(self.serde.loads(before[2]), value, ref.thread_id)
                if replace or before is None:
                    stored.writes[(task_id, idx)] = (
                        task_path,
                        channel,
                        self.serde.dumps(value, path=f"{channel} (pending write)"),
                    )
                    self._on_undo(_restore(stored.writes, (task_id, idx), before))

    def checkpoint_ids(
        self,
        config: RunnableConfig,
        *,
        below: str | None = None,
        since: str | None = None,
        **options: Any,
    ) -> builtins.list[str]:
        return super().checkpoint_ids(
            config, below=canonical_id(below), since=canonical_id(since), **options
        )

    def neighbour_ids(self, config: RunnableConfig, checkpoint_ids: Iterable[str]) -> set[str]:
        return super().neighbour_ids(config, map(canonical_id, checkpoint_ids))

    def get_writes(self, config: RunnableConfig) -> builtins.list[TaskWrite]:
        ref = self.ref(config)
        with self._lock:
            stored = self._threads.get((ref.thread_id, ref.checkpoint_ns), {}).get(
                ref.checkpoint_id or ""
            )
            return [] if stored is None else _writes(stored, self.serde)

    def has_checkpoint(self, config: RunnableConfig) -> bool:
        ref = self.ref(config)
        with self._lock:
            thread = self._threads.get((ref.thread_id, ref.checkpoint_ns), {})
            return ref.checkpoint_id is not None and ref.checkpoint_id in thread

    def stored_pending_writes(
        self, config: RunnableConfig, checkpoint_ids: Iterable[str]
    ) -> dict[str, builtins.list[TaskWrite]]:
        ref = self.ref(config)
        with self._lock:
            thread = self._threads.get((ref.thread_id, ref.checkpoint_ns), {})
            found = {i: canonical_id(i) for i in checkpoint_ids}
            return {i: _writes(thread[c], VERBATIM) for i, c in found.items() if c in thread}

    def delete_thread(self, thread_id: str) -> None:
        with self._write():
            for key in [key for key in self._threads if key[0] == thread_id]:
                self._on_undo(_restore(self._threads, key, self._threads.pop(key)))
            if thread_id in self._info:
                self._on_undo(_restore(self._info, thread_id, self._info.pop(thread_id)))

    def delete_checkpoints(
        self, config: RunnableConfig, checkpoint_ids: Sequence[str], *, collect: bool = True
    ) -> None:
        ref = self.ref(config)
        key = (ref.thread_id, ref.checkpoint_ns)
        with self._write():
            thread = self._threads.get(key, {})
            for checkpoint_id in map(canonical_id, checkpoint_ids):
                if checkpoint_id in thread:
                    self._on_undo(_restore(thread, checkpoint_id, thread.pop(checkpoint_id)))
            if not thread and key in self._threads:
                self._on_undo(_restore(self._threads, key, self._threads.pop(key)))

    def get_thread_info(self, thread_id: str) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._info.get(thread_id, {}))

    def set_thread_info(self, thread_id: str, info: Mapping[str, Any]) -> None:
        with self._write():
            self._on_undo(_restore(self._info, thread_id, copy.deepcopy(self._info.get(thread_id))))
            self._info.setdefault(thread_id, {}).update(copy.deepcopy(dict(info)))

    def list_threads(self, prefix: str = "") -> Iterator[ThreadSummary]:
        check_text(prefix, "thread prefix")
        with self._lock:
            found = [
                ThreadSummary(key[0], key[1], len(thread), latest, thread[latest].ts)
                for key, thread in sorted(self._threads.items())
                if key[0].startswith(prefix) and thread
                for latest in [max(thread)]
            ]
        yield from found

    def _forget(self, key: _Key, checkpoint_id: str) -> None:
        thread = self._threads.get(key, {})
        thread.pop(checkpoint_id, None)
        if not thread:
            self._threads.pop(key, None)

    def _tuple(
        self, ref: CheckpointRef, checkpoint_id: str, stored: _Stored, serde: Serializer
    ) -> CheckpointTuple:
        writes: list[PendingWrite] = [
            (task_id, channel, value) for task_id, _path, channel, value in _writes(stored, serde)
        ]
        return CheckpointTuple(
            config=ref.at(checkpoint_id).to_config(),
            checkpoint=serde.loads(stored.checkpoint),
            metadata=serde.loads(stored.metadata),
            parent_config=ref.at(stored.parent_id).to_config() if stored.parent_id else None,
            pending_writes=writes,
        )


def _writes(stored: _Stored, serde: Serializer) -> list[TaskWrite]:
    # sorted by (task_path, task_id, idx): the order the runtime applies writes in
    ordered = sorted(stored.writes.items(), key=lambda item: (item[1][0], *item[0]))
    return [
        (task_id, path, channel, serde.loads(value))
        for (task_id, _idx), (path, channel, value) in ordered
    ]


def _restore(mapping: dict[Any, Any], key: Any, before: Any) -> Callable[[], None]:
    """How to take back a change of `mapping[key]` (`before`: what it held, or None)."""

    def undo() -> None:
        if before is None:
            mapping.pop(key, None)
        else:
            mapping[key] = before

    return undo


#: LangGraph's older name for the same saver.
MemorySaver = InMemorySaver
