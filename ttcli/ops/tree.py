"""A thread's branches drawn as text, newest first, the way `git log --graph` draws commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ttcli.ops.inspect import Entry


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    parent_id: str | None
    label: str
    #: lines drawn under the node, indented past its branch (a subgraph's own tree)
    nested: tuple[str, ...] = ()


def draw(nodes: Sequence[Node]) -> list[str]:
    """Lines of `* label` with `|` for the other branches, `|/` where a branch joins, and
    each node's nested lines under it.

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
        if node.nested:
            below = "".join("| " if waits is not None else "  " for waits in lanes)
            lines += [f"{below.ljust(2 * column + 2)}  {line}" for line in node.nested]
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


def marks(entries: Sequence[Entry]) -> dict[str, str]:
    """What to say beside checkpoints (newest first): `latest`, and `paused` for the heads of
    other branches with work left, each with the nodes it would run next."""
    heads = {e.checkpoint_id for e in entries} - {e.parent_id for e in entries}
    return {
        e.checkpoint_id: ("latest" if i == 0 else "paused")
        + (f", next: {','.join(e.next)}" if e.next else "")
        for i, e in enumerate(entries)
        if i == 0 or (e.next and e.checkpoint_id in heads)  # a branch head with work left
    }
