"""Stored states and pending writes with their name keys and entries mapped: into another
file's keys to copy them, or to names to compare them across files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _same(entry: Any) -> Any:
    return entry


def rekey_state(
    stored: list[Any], name: Callable[[int], Any], entry: Callable[[Any], Any] = _same
) -> list[Any]:
    """A stored state (full or delta) with its name keys and entries mapped: into another
    file's keys to copy it, or to names to compare it across files."""
    depth, channels, seen, updated, writes = stored
    return [
        depth,
        {
            name(k): None if e is None else [e[0], *(entry(v) for v in e[1:])]
            for k, e in channels.items()
        },
        {
            name(n): None if m is None else {name(c): v for c, v in m.items()}
            for n, m in seen.items()
        },
        None if updated is None else [name(k) for k in updated],
        None
        if writes is None
        else [
            [name(w[0]), 0, name(w[2])] if len(w) == 3 else [name(w[0]), entry(w[1])]
            for w in writes
        ],
    ]


def rekey_pending(
    stored: dict[Any, Any], name: Callable[[int], Any], entry: Callable[[Any], Any] = _same
) -> dict[Any, Any]:
    """Stored pending writes with their name keys and entries mapped (see `rekey_state`)."""
    return {
        task: [name(path), [[i, name(c), entry(e)] for i, c, e in writes]]
        for task, (path, writes) in stored.items()
    }
