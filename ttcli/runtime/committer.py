"""Group commit for durability="async": a run's saves go to one background thread.

The run hands each save (a checkpoint with the writes that led to it, or a task's writes) to
its `Committer` and goes on with the next superstep. The committer's thread takes everything
handed off while it was busy and commits it in one transaction (`saver.batch()`), in the
order handed off: a parent before its child, the same rows as durability="sync" stores. A
run's subgraphs hand their saves to the run's committer, so the order holds across them.

What the run reads from the saver waits for what it handed off (`flush`): a subgraph loading
its checkpoint, `get_state` or `update_state` called by a node. At most `PENDING_LIMIT` saves
wait at once (the run waits for room) besides the group being committed: a crash loses at
most twice that tail of the history, and never leaves a checkpoint without its parent. A
save that fails is raised in the run, at its next hand-off or at its end; nothing handed off
after it is stored.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from ttcli.savers.base import BaseSaver

#: saves that may wait for the committer before the run waits for room
PENDING_LIMIT = 64

Save = Callable[[], None]


class Committer:
    """One background thread committing a run's saves in groups, in order."""

    def __init__(self, saver: BaseSaver, limit: int = PENDING_LIMIT) -> None:
        self.saver = saver
        self.limit = limit
        self._waiting: deque[Save] = deque()
        #: a group is being committed
        self._busy = False
        #: what the first failed save raised: nothing is committed after it
        self._error: BaseException | None = None
        self._closing = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def hand_off(self, save: Save) -> None:
        """Queue `save` to be committed after everything handed off before it (waiting for
        room when `limit` saves wait already); raises what a save before it raised."""
        with self._changed:
            while len(self._waiting) >= self.limit and self._error is None:
                self._changed.wait()
            self._raise_failure()
            self._waiting.append(save)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._commit_loop, name="ttcli-committer", daemon=True
                )
                self._thread.start()
            self._changed.notify_all()

    def flush(self) -> None:
        """Wait until everything handed off is committed; raise what failed."""
        with self._changed:
            while (self._waiting or self._busy) and self._error is None:
                self._changed.wait()
            self._raise_failure()

    def close(self) -> None:
        """Commit what is left and end the thread (the end of the run); raise what failed."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error

    def _commit_loop(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._closing:
                    self._changed.wait()
                if not self._waiting:
                    return
                group = list(self._waiting)
                self._waiting.clear()
                self._busy = True
                self._changed.notify_all()  # room for more hand-offs
            error = self._commit(group)
            with self._changed:
                self._busy = False
                if error is not None:
                    self._error = error
                    self._waiting.clear()
                self._changed.notify_all()
            if error is not None:
                return

    def _commit(self, group: list[Save]) -> BaseException | None:
        """Commit `group` in one transaction; if that fails, each save alone in order, so
        that what precedes the failing save is stored, as durability="sync" would have."""
        try:
            with self.saver.batch():
                for save in group:
                    save()
            return None
        except BaseException as exc:  # noqa: BLE001 - raised in the run
            if len(group) == 1:
                return exc
        for save in group:
            try:
                with self.saver.batch():
                    save()
            except BaseException as exc:  # noqa: BLE001 - raised in the run
                return exc
        return None
