"""Where a run's checkpoints and pending writes go, by `durability` (LangGraph's choices).

"sync" and "async" save each checkpoint and each finished task's writes at once (LangGraph's
"async" only moves the same saves to a background thread: the histories are the same).
"exit" saves one checkpoint when the run ends: the last one, as a child of the last checkpoint
stored before, with the writes of the step that paused or failed on it, if one did; a
subgraph saves one only when it paused or failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import ConfigError
from ttcli.runtime.checkpoints import new_versions
from ttcli.savers.base import BaseSaver, Checkpoint

DURABILITY = ("sync", "async", "exit")

#: (task id, task path, [(channel, value), ...])
TaskWrites = tuple[str, str, list[tuple[str, Any]]]


class Recorder:
    """Saves a run's checkpoints and writes: at once, or at the end with durability="exit"."""

    def __init__(self, saver: BaseSaver | None, durability: str | None) -> None:
        if durability is not None and durability not in DURABILITY:
            raise ConfigError(
                f"Unknown durability {durability!r}; use one of {', '.join(DURABILITY)}"
            )
        self.saver = saver
        self.at_exit = durability == "exit"
        #: the writes of the checkpoint a run is on, held back with durability="exit"
        self.held: list[tuple[CheckpointRef, TaskWrites]] = []
        #: with durability="exit": (parent it will have, checkpoint, metadata) not saved yet
        self.unsaved: tuple[CheckpointRef, Checkpoint, dict[str, Any]] | None = None
        self.stored_versions: dict[str, Any] = {}

    def loaded(self, versions: Mapping[str, Any]) -> None:
        """The run starts from a checkpoint whose channels have these versions."""
        self.stored_versions = dict(versions)

    def put_writes(self, at: CheckpointRef, writes: TaskWrites) -> None:
        if self.saver is None:
            return
        if self.at_exit:
            self.held.append((at, writes))
            return
        task_id, task_path, values = writes
        self.saver.put_writes(at.to_config(), values, task_id, task_path)

    def put_writes_together(self, at: CheckpointRef, writes: list[TaskWrites]) -> None:
        """Save several tasks' writes in one transaction where the saver groups writes."""
        if self.saver is None or not writes:
            return
        # with durability="exit" they are held until the run ends: nothing to write now
        with nullcontext() if self.at_exit else self.saver.batch():
            for task_writes in writes:
                self.put_writes(at, task_writes)

    def put(
        self,
        parent: CheckpointRef,
        checkpoint: Checkpoint,
        metadata: dict[str, Any],
        deferred: list[TaskWrites],
    ) -> None:
        """Save `checkpoint` as a child of `parent`, with the writes that led to it."""
        if self.saver is None:
            return
        if self.at_exit:
            if self.unsaved is not None:
                parent = self.unsaved[0]  # skipped checkpoints leave no gap in the chain
            self.unsaved, self.held = (parent, checkpoint, metadata), []
            return
        changed = new_versions(self.stored_versions, checkpoint["channel_versions"])
        with self.saver.batch():
            for writes in deferred:
                self.put_writes(parent, writes)
            self.saver.put(parent.to_config(), checkpoint, metadata, changed)
        self.stored_versions = dict(checkpoint["channel_versions"])

    def finish(self, *, keep: bool = True) -> None:
        """At the end of a run with durability="exit": save what was held back (unless not
        `keep`: a subgraph that ran to its end)."""
        if self.saver is None or not self.at_exit:
            return
        held, unsaved = self.held, self.unsaved
        self.held, self.unsaved, self.at_exit = [], None, False
        if not keep:
            return
        if unsaved is not None:
            self.put(*unsaved, [])
        for at, writes in held:
            self.put_writes(at, writes)
