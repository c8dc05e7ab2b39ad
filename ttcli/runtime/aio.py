"""Bridging the synchronous engine to async callers without blocking their event loop, and
async nodes to the worker threads that run them.

asyncio is imported here, when something async first needs it, and by no other module of the
runtime (nor by the saver, but for its `to_thread`, used here too): it made importing the
runtime a third slower (~23 ms of 72), and a synchronous program or a command of the
command line never needs it, unless a graph has async nodes.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import TYPE_CHECKING, TypeVar

from ttcli.savers.base import to_thread

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

_END = object()


def running_loop() -> asyncio.AbstractEventLoop:
    """The event loop of the async caller this is called from."""
    import asyncio

    return asyncio.get_running_loop()


async def in_thread(iterator: Iterator[T]) -> AsyncIterator[T]:
    """Drive `iterator` on worker threads, one item at a time, handing each to the caller.

    Closed when the caller stops early, so a run's finally (saving finished writes) runs.
    """
    try:
        while True:
            item = await to_thread(next, iterator, _END)
            if item is _END:
                return
            yield item
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


def run_awaitable(awaitable: Awaitable[T], loop: asyncio.AbstractEventLoop | None) -> T:
    """Wait for `awaitable` from a worker thread: on `loop` if given, else on a loop of its own."""
    import asyncio

    if loop is not None:
        return asyncio.run_coroutine_threadsafe(_wrap(awaitable), loop).result()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_wrap(awaitable))
    # called from inside a running loop (invoke from async code): that loop is busy waiting
    # for us, so the coroutine runs on a loop in a thread of its own (in this task's context)
    result: list[T] = []
    errors: list[BaseException] = []
    context = contextvars.copy_context()

    def target() -> None:
        try:
            result.append(context.run(asyncio.run, _wrap(awaitable)))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            errors.append(exc)

    thread = threading.Thread(target=target, name="ttcli-async-node")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


async def _wrap(awaitable: Awaitable[T]) -> T:
    return await awaitable
