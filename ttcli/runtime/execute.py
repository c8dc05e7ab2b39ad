"""Running a superstep's tasks: in the run's thread, or on worker threads.

Parallel tasks run on worker threads, which a run keeps from one superstep to the next
(`Workers`): starting threads anew every superstep cost more than a small task. When the
caller streams what nodes write as they run (`custom`, `messages`), every task runs on a
worker and the run's thread passes their chunks on as they arrive, so a chunk is seen while
its node is still running.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from ttcli.runtime.algo import Task

#: what running a task raised: an error, a GraphInterrupt, or None
Outcome = BaseException | None
#: a stream chunk: (mode, payload)
Chunk = tuple[str, Any]


class Finished(NamedTuple):
    """A task that finished running, and what it raised."""

    task: Task
    outcome: Outcome


#: a finished task, or a chunk a node wrote while it was running
Event = Finished | Chunk

_DONE = "__done__"


class Workers:
    """The worker threads of one run, as many as its widest superstep had tasks (every
    task of a step runs at once, as before: a task may wait for a sibling)."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._size = 0

    def pool(self, size: int) -> ThreadPoolExecutor:
        if self._pool is None or size > self._size:
            self.close()
            self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="ttcli-task")
            self._size = size
        return self._pool

    def close(self) -> None:
        """End the threads, once the tasks still running (a run stopped early) finish."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def execute(
    tasks: list[Task],
    call: Callable[[Task], Outcome],
    chunks: queue.SimpleQueue[tuple[str, Any]] | None,
    workers: Workers,
) -> Iterator[Event]:
    """Run `tasks` with `call`, yielding each as it finishes; with a `chunks` queue (that the
    nodes' stream writers fill), also yield those chunks as they come."""
    if chunks is None and len(tasks) <= 1:
        yield from (Finished(task, call(task)) for task in tasks)
        return
    pool = workers.pool(len(tasks))
    # each task reports on one queue as it finishes (lighter than futures and their waiters)
    events = queue.SimpleQueue() if chunks is None else chunks
    for task in tasks:
        pool.submit(_report, call, task, events)
    left = len(tasks)
    while left:
        mode, payload = events.get()
        if mode == _DONE:
            left -= 1
            yield payload
        else:
            yield mode, payload


def _report(
    call: Callable[[Task], Outcome], task: Task, chunks: queue.SimpleQueue[tuple[str, Any]]
) -> None:
    outcome: Outcome = None
    try:
        outcome = call(task)
    except BaseException as exc:  # noqa: BLE001 - the run's thread raises it
        outcome = exc
    finally:
        chunks.put((_DONE, Finished(task, outcome)))
