"""`ttcli tree`: a thread's branches drawn as text (or a picture), each subgraph's own tree
under the checkpoint whose task ran it."""

from __future__ import annotations

import click

from ttcli.cli import render
from ttcli.cli.main import PICTURES, Env, pass_env, picture_options, thread_options
from ttcli.configs import CheckpointRef
from ttcli.ops import inspect, pictures, subgraphs
from ttcli.ops import tree as trees
from ttcli.ops.refs import short_ids
from ttcli.savers.base import BaseSaver


@click.command()
@thread_options
@picture_options
@pass_env
def tree(env: Env, thread: str, ns: str) -> None:
    """Draw a thread's branches as a tree, newest first, like git log --graph; marks the
    latest checkpoint and checkpoints paused with work left to do, and draws each subgraph's
    checkpoints under the checkpoint whose task ran it. --format mermaid or dot draws the
    namespace as a picture (oldest at the top; updates, forks and paused heads marked).

    \b
    Example:
        ttcli tree --thread order:123
        ttcli tree --thread order:123 --format mermaid > order.mmd
        ttcli tree --thread order:123 --format dot | dot -Tsvg > order.svg
    """
    saver, ref = env.reader(thread), CheckpointRef(thread, ns)
    entries = inspect.history(saver, ref)
    if env.format in PICTURES:
        render.picture(env, _picture(entries))
        return
    found: list[subgraphs.Subgraph] = []
    lines = _tree_lines(saver, ref, entries, found)
    record = {
        "lines": lines,
        "checkpoints": [render.entry_record(e) for e in entries],
        "subgraphs": [render.subgraph_record(sub) for sub in found],
    }
    render.document(env, record, lines, escaped=True)


def _picture(entries: list[inspect.Entry]) -> pictures.Picture:
    short, marks = short_ids(e.checkpoint_id for e in entries), trees.marks(entries)
    paused = {i for i, mark in marks.items() if mark.startswith("paused")}
    titles = {
        e.checkpoint_id: " ".join(_tree_label(e, short).split())
        + (f" ({marks[e.checkpoint_id]})" if e.checkpoint_id in marks else "")
        for e in entries
    }
    return pictures.of_thread(entries, titles, paused)


def _tree_lines(
    saver: BaseSaver,
    ref: CheckpointRef,
    entries: list[inspect.Entry],
    found: list[subgraphs.Subgraph],
) -> list[str]:
    """The namespace's tree, with each subgraph's own tree under the checkpoint its task was
    planned at (the subgraphs drawn are added to `found`)."""
    short, marks = short_ids(e.checkpoint_id for e in entries), trees.marks(entries)
    nested: dict[str | None, list[str]] = {}
    for sub in subgraphs.below(saver, ref):
        found.append(sub)
        inner = CheckpointRef(ref.thread_id, sub.checkpoint_ns)
        nested.setdefault(sub.parent_checkpoint_id, []).extend(
            [render.safe(f"{sub.checkpoint_ns}  (subgraph of task {sub.task_name})")]
            + _tree_lines(saver, inner, inspect.history(saver, inner), found)
        )
    return trees.draw(
        [trees.Node(e.checkpoint_id, e.parent_id, _tree_label(e, short) + _mark(marks, e),
                    tuple(nested.get(e.checkpoint_id, ())))
         for e in entries]
    )  # fmt: skip


def _tree_label(e: inspect.Entry, short: dict[str, str]) -> str:
    return render.safe(
        f"{short[e.checkpoint_id]}  step {e.step:>3}  {e.source:<6} {','.join(e.writes) or '-'}"
    )


def _mark(marks: dict[str, str], e: inspect.Entry) -> str:
    if e.checkpoint_id not in marks:
        return ""
    return render.style(render.safe(f"  ({marks[e.checkpoint_id]})"), fg="green")
