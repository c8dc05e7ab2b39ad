"""Where a run's checkpoints and pending writes go, by `durability` (LangGraph's choices).

"sync" (the default) commits each checkpoint, with the writes that led to it, before the
next superstep runs. "async" hands the same saves to a background committer (committer.py),
which commits them in order, in groups, while the run goes on: the same history, committed
by the time the run returns, pauses or fails. "exit" saves one checkpoint when the run ends:
the last one, as a child of the last checkpoint stored before, with the writes of the step
that paused or failed on it, if one did; a subgraph saves one only when it paused or failed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import ConfigError
from ttcli.runtime.algo import bookkeeping_copy
from ttcli.runtime.checkpoints import new_versions
from ttcli.runtime.committer import Committer
from ttcli.savers.base import BaseSaver, Checkpoint, TaskWrites

DURABILITY = ("sync", "async", "exit")


class Recorder:
    """Saves a run's checkpoints and writes: at once, in the background, or at the end."""

    def __init__(
        self,
        saver: BaseSaver | None,
        durability: str | None,
        inherited: Committer | None = None,
    ) -> None:
        if durability is not None and durability not in DURABILITY:
            raise ConfigError(
                f"Unknown durability {durability!r}; use one of {', '.join(DURABILITY)}"
            )
        self.saver = saver
        self.at_exit = durability == "exit"
        #: the committer of the run this one is a subgraph of: what it reads waits for it
        self.inherited = inherited
        #: with durability="async": where the saves go (the enclosing run's committer, if any)
        self.committer = None
        if saver is not None and durability == "async":
            # inside the caller's batch no other thread could commit before it ends
            self.committer = inherited or (None if saver.batch_held() else Committer(saver))
        #: the writes of the checkpoint a run is on, held back with durability="exit"
        self.held: list[tuple[CheckpointRef, TaskWrites]] = []
        #: with durability="exit": (parent it will have, checkpoint, metadata) not saved yet
        self.unsaved: tuple[CheckpointRef, Checkpoint, dict[str, Any]] | None = None
        self.stored_versions: dict[str, Any] = {}

    @property
    def in_flight(self) -> Committer | None:
        """The committer whose saves come before this run's reads and its subgraphs'."""
        return self.committer or self.inherited

    def settle(self) -> None:
        """Wait until what was handed off is committed (before the run reads the saver)."""
        if self.in_flight is not None:
            self.in_flight.flush()

    def loaded(self, versions: Mapping[str, Any]) -> None:
        """The run starts from a checkpoint whose channels have these versions."""
        self.stored_versions = dict(versions)

    def put_writes(self, at: CheckpointRef, writes: TaskWrites) -> None:
        self.put_writes_together(at, [writes])

    def put_writes_together(self, at: CheckpointRef, writes: list[TaskWrites]) -> None:
        """Save several tasks' writes in one transaction where the saver groups writes."""
        if self.saver is None or not writes:
            return
        if self.at_exit:  # held until the run ends
            self.held += [(at, task_writes) for task_writes in writes]
            return
        self._save(partial(self.saver.put_step, at.to_config(), writes, None))

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
        if self.committer is not None:  # the run goes on changing the versions of its own
            checkpoint = bookkeeping_copy(checkpoint)
        stored = (checkpoint, metadata, changed)
        self._save(partial(self.saver.put_step, parent.to_config(), deferred, stored))
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

    def close(self) -> None:
        """The run ends: commit what it handed off, and end its committer's thread (a
        subgraph's saves are its parent's to commit); raise what failed."""
        if self.committer is not None and self.committer is not self.inherited:
            self.committer.close()

    def _save(self, save: Callable[[], None]) -> None:
        """Run `save` (a `put_step`, one transaction) now, or hand it to the committer (which
        runs it in the transaction of its group)."""
        if self.committer is not None:
            self.committer.hand_off(save)
            return
        save()
