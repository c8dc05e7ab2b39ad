"""Bound parameters in pieces: SQLite caps the variables one statement may bind."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

CHUNK = 500  # ids or keys per `IN (...)` list, well under SQLite's limit


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
