"""Running the CLI in tests: the order-agent fixture paths, a runner that rejects
tracebacks, and a dump of everything a file stores."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from ttcli.cli import cli

ROOT = Path(__file__).parent.parent
ORDER_AGENT = f"{ROOT}/fixtures/order_agent.py:graph"
REVIEW = f"{ROOT}/fixtures/review_workflow.py:builder"
#: a Send fan-out: `square` runs once per item
FAN_OUT = "import ttcli\nfrom tests.graphs import map_reduce\ngraph = map_reduce(ttcli)\n"
ORDER = {"request": "Please refund order 123, it arrived broken.", "tool_result": "", "log": []}

GRAPHS = textwrap.dedent(
    """
    import operator
    from typing import Annotated, TypedDict
    from ttcli import StateGraph, START, END

    class S(TypedDict):
        log: Annotated[list, operator.add]

    def boom(state):
        raise ValueError("boom in b")

    failing = StateGraph(S)
    failing.add_node("a", lambda s: {"log": ["a"]})
    failing.add_node("b", boom)
    failing.add_edge(START, "a")
    failing.add_edge("a", "b")

    not_a_graph = 42
    """
)


def ttcli(db: Path, *args: str, stdin: str | None = None) -> Result:
    result = CliRunner().invoke(cli, ["--db", str(db), *args], input=stdin)
    assert "Traceback" not in result.output + result.stderr
    return result


def data(result: Result) -> Any:
    assert result.exit_code in (0, 4), result.stderr
    return json.loads(result.stdout)


def dump(db: Path) -> list[tuple[Any, ...]]:
    """Everything stored, to show that a failing command changed nothing."""
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [(t, sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)) for t in tables]
