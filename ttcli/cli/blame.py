"""`ttcli blame`: which checkpoint, step and node last wrote each part of a state value."""

from __future__ import annotations

from typing import Any

import click

from ttcli.cli import render
from ttcli.cli.main import Env, output_options, pass_env, thread_options
from ttcli.configs import CheckpointRef
from ttcli.ops.blame import Blame
from ttcli.ops.blame import blame as blame_value
from ttcli.ops.refs import resolve, short_ids

FIELDS = ["part", "value", "checkpoint_id", "step", "source", "nodes"]


@click.command()
@click.argument("path", metavar="KEY[.PATH]")
@thread_options
@click.option(
    "--at", "at_ref", default="latest", show_default=True, metavar="REF",
    help="The checkpoint whose value to explain.",
)  # fmt: skip
@output_options
@pass_env
def blame(env: Env, path: str, thread: str, ns: str, at_ref: str) -> None:
    """Show which checkpoint, step and node last wrote each part of a state value (each
    item of a list, each entry of a mapping), like git blame: who set `tool`?

    \b
    Example:
        ttcli blame tool --thread order:123
        ttcli blame log --thread order:123 --at latest~2
        ttcli blame messages.-1 --thread chat:7 --json
    """
    saver = env.reader(thread)
    found = blame_value(saver, resolve(saver, CheckpointRef(thread, ns), at_ref), path)
    empty = f"{path} is empty: nothing wrote a part of it"
    render.rows(env, *_table(found), fields=FIELDS, empty=empty)


def _table(found: list[Blame]) -> tuple[list[dict[str, Any]], list[str], list[list[Any]]]:
    """Records for scripts; headers and short cells for people."""
    short = short_ids(b.checkpoint_id for b in found)
    records = [
        dict(
            zip(FIELDS, (b.part, b.value, b.checkpoint_id, b.step, b.source, b.nodes), strict=True)
        )
        for b in found
    ]
    cells = [
        [b.part, render.compact(b.value, 50), short[b.checkpoint_id], b.step, b.source,
         ",".join(b.nodes) or "-"]
        for b in found
    ]  # fmt: skip
    return records, ["part", "value", "checkpoint", "step", "source", "node"], cells
