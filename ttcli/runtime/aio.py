"""Bridging the synchronous engine to async callers without blocking their event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import TypeVar

T = TypeVar("T")

_END = object()


async def in_thread(iterator: Iterator[T]) -> AsyncIterator[T]:
    """Drive `iterator` on worker threads, one item at a time, handing each to the caller.

    Closed when the caller stops early, so a run's finally (saving finished writes) runs.
    """
    try:
        while True:
            item = await asyncio.to_thread(next, iterator, _END)
            if item is _END:
                return
            yield item  # type: ignore[misc]
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
