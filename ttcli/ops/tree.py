"""A thread's branches drawn as text, newest first, the way `git log --graph` draws commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    parent_id: str | None
    label: str


def draw(nodes: Sequence[Node]) -> list[str]:
    """Lines of `* label` with `|` for the other branches, `|/` where a branch joins.

    `nodes` come newest first (every child before its parent).
    """
    lanes: list[str | None] = []  # per column: the id the branch there waits for
    lines = []
    for node in nodes:
        waiting = [i for i, waits in enumerate(lanes) if waits == node.id]
        if waiting:
            column = waiting[0]
            for lane in reversed(waiting[1:]):  # branches that fork here join first
                lines.append(_join(lanes, lane))
                del lanes[lane]
        else:
            column = _free(lanes)
        lines.append(_row(lanes, column) + node.label)
        lanes[column] = node.parent_id
        while lanes and lanes[-1] is None:
            lanes.pop()
    return lines


def _free(lanes: list[str | None]) -> int:
    if None in lanes:
        return lanes.index(None)
    lanes.append(None)
    return len(lanes) - 1


def _row(lanes: list[str | None], column: int) -> str:
    return "".join(
        "* " if i == column else ("| " if waits is not None else "  ")
        for i, waits in enumerate(lanes)
    )


def _join(lanes: list[str | None], lane: int) -> str:
    row = "".join("| " if waits is not None else "  " for waits in lanes[:lane])
    return row[: 2 * lane - 1] + "/"
