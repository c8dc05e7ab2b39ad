"""`ttcli graph`: a graph's nodes and edges, as text, JSON or a picture."""

from __future__ import annotations

from typing import Any

import click

from ttcli.cli import render
from ttcli.cli.main import PICTURES, Env, pass_env, picture_options
from ttcli.ops import pictures, targets
from ttcli.savers.memory import InMemorySaver


@click.command()
@click.argument("target")
@picture_options
@pass_env
def graph(env: Env, target: str) -> None:
    """Show a graph TARGET's nodes and edges: as lines `a -> b` (`a --> b` for a conditional
    edge), as JSON, or with --format mermaid or dot as a picture to paste into a document or
    render (conditional edges dashed). TARGET is loaded (its module runs), as `ttcli run`
    loads it; no database is needed.

    \b
    Example:
        ttcli graph fixtures/order_agent.py:graph
        ttcli graph fixtures/review_workflow.py:builder --format mermaid
        ttcli graph app.py:graph --format dot | dot -Tpng > graph.png
    """
    drawn = pictures.of_graph(targets.compile_target(target, InMemorySaver()))
    if env.format in PICTURES:
        render.picture(env, drawn)
    else:
        render.document(env, *_report(drawn))


def _report(drawn: pictures.Picture) -> tuple[dict[str, Any], list[str]]:
    record = {
        "nodes": [box.id for box in drawn.boxes],
        "edges": [
            {"source": a.source, "target": a.target, "conditional": a.dashed, "label": a.label}
            for a in drawn.arrows
        ],
    }
    lines = [
        f"{a.source} {'-->' if a.dashed else '->'} {a.target}"
        + (f"  ({a.label})" if a.label else "")
        for a in drawn.arrows
    ]
    return record, lines
