"""Pictures of a graph (its nodes and edges) and of a thread (its branches), as Mermaid or
Graphviz dot text to paste into a document or render."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ttcli.graph.constants import END, START
from ttcli.ops.inspect import Entry

if TYPE_CHECKING:  # reading commands draw threads without loading the runtime
    from ttcli.runtime.compiled import CompiledStateGraph


@dataclass(frozen=True, slots=True)
class Box:
    id: str
    label: str
    #: how it is drawn: "" (plain), "terminal" (START, END), "update", "fork", "latest",
    #: "paused"
    kind: str = ""


@dataclass(frozen=True, slots=True)
class Arrow:
    source: str
    target: str
    #: drawn dashed: a conditional edge, which runs only when its condition says so
    dashed: bool = False
    label: str = ""


@dataclass
class Picture:
    boxes: list[Box] = field(default_factory=list)
    arrows: list[Arrow] = field(default_factory=list)


def of_graph(graph: CompiledStateGraph) -> Picture:
    """A graph's nodes, its edges, its joins and its conditional edges (to each destination
    its path map names; without a map, to every node, as LangGraph draws them)."""
    builder = graph.builder
    names = [START, *builder.nodes, END]
    picture = Picture([Box(n, n, "terminal" if n in (START, END) else "") for n in names])
    picture.arrows += [Arrow(a, b) for a, b in builder.edges]
    picture.arrows += [
        Arrow(a, end, label="join") for starts, end in builder.waiting_edges for a in starts
    ]
    for source, branches in builder.branches.items():
        for branch in branches.values():
            if branch.path_map is None:
                targets = [(n, n) for n in names if n != START]
            else:
                targets = [(target, str(key)) for key, target in branch.path_map.items()]
            picture.arrows += [
                Arrow(source, t, dashed=True, label="" if k == t else k) for t, k in targets
            ]
    # in the order the nodes were declared (edges are a set): the same text every time
    place = {name: index for index, name in enumerate(names)}
    picture.arrows.sort(key=lambda a: (place[a.source], place[a.target], a.dashed, a.label))
    return picture


def of_thread(entries: Sequence[Entry], labels: Mapping[str, str], paused: set[str]) -> Picture:
    """A thread's checkpoints (newest first in `entries`), oldest at the top, each pointing
    at its children; updates, forks, paused branch heads and the latest checkpoint marked."""
    shown = {e.checkpoint_id for e in entries}
    picture = Picture()
    for index, e in reversed(list(enumerate(entries))):
        kind = "latest" if index == 0 else "paused" if e.checkpoint_id in paused else ""
        kind = kind or (e.source if e.source in ("update", "fork") else "")
        picture.boxes.append(Box(e.checkpoint_id, labels[e.checkpoint_id], kind))
        if e.parent_id is not None and e.parent_id in shown:
            picture.arrows.append(Arrow(e.parent_id, e.checkpoint_id))
    return picture


def mermaid(picture: Picture) -> str:
    """A Mermaid flowchart, top to bottom."""
    ids = {box.id: f"n{index}" for index, box in enumerate(picture.boxes)}
    lines = ["flowchart TD"]
    for box in picture.boxes:
        lines.append(f'    {ids[box.id]}["{_mermaid_text(box.label)}"]')
    for arrow in picture.arrows:
        link = "-.->" if arrow.dashed else "-->"
        label = f"|{_mermaid_text(arrow.label)}|" if arrow.label else ""
        lines.append(f"    {ids[arrow.source]} {link}{label} {ids[arrow.target]}")
    for kind, style in _MERMAID_STYLES.items():
        marked = [ids[box.id] for box in picture.boxes if box.kind == kind]
        if marked:
            lines.append(f"    classDef {kind} {style}")
            lines.append(f"    class {','.join(marked)} {kind}")
    return "\n".join(lines) + "\n"


def dot(picture: Picture) -> str:
    """A Graphviz digraph, top to bottom."""
    lines = ["digraph {", "    rankdir=TB;", "    node [shape=box];"]
    for box in picture.boxes:
        style = _DOT_STYLES.get(box.kind, "")
        lines.append(f"    {_dot_text(box.id)} [label={_dot_text(box.label)}{style}];")
    for arrow in picture.arrows:
        extra = (", style=dashed" if arrow.dashed else "") + (
            f", label={_dot_text(arrow.label)}" if arrow.label else ""
        )
        lines.append(f"    {_dot_text(arrow.source)} -> {_dot_text(arrow.target)} [{extra[2:]}];")
    lines.append("}")
    return "\n".join(lines).replace(" [];", ";") + "\n"


DRAWERS = {"mermaid": mermaid, "dot": dot}

_MERMAID_STYLES = {
    "terminal": "fill:#eee,stroke:#999",
    "update": "fill:#fff3c4,stroke:#c90",
    "fork": "fill:#e3f0ff,stroke:#36c",
    "paused": "fill:#ffe0e0,stroke:#c33",
    "latest": "stroke:#090,stroke-width:3px",
}
_DOT_STYLES = {
    "end": ', shape=ellipse, style=filled, fillcolor="#eeeeee"',
    "update": ', style=filled, fillcolor="#fff3c4"',
    "fork": ', style=filled, fillcolor="#e3f0ff"',
    "paused": ', style=filled, fillcolor="#ffe0e0"',
    "latest": ', penwidth=3, color="#009900"',
}


def _printable(text: str) -> str:
    # thread ids and node names come from users: no control character reaches the picture
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _mermaid_text(text: str) -> str:
    return _printable(text).replace('"', "#quot;").replace("|", "#124;")


def _dot_text(text: str) -> str:
    return '"' + _printable(text).replace("\\", "\\\\").replace('"', '\\"') + '"'
