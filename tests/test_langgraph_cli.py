"""The command line drives LangGraph graphs: `ttcli run app.py:graph` on a LangGraph graph runs
it on LangGraph with TtcliSaver, and update, replay, resume and fork go on with its thread."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.clitools import data, ttcli
from tests.conftest import NewDb

APP = textwrap.dedent(
    """
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import interrupt


    class State(MessagesState):
        plan: str


    def plan(state):
        return {"plan": f"refund ({state['messages'][-1].content})"}


    def review(state):
        answer = interrupt({"question": "approve?", "plan": state["plan"]})
        return {"messages": [AIMessage(f"reviewer said {answer}: {state['plan']}")]}


    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("review", review)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "review")
    builder.add_edge("review", END)
    graph = builder.compile()
    paused_before_review = builder.compile(interrupt_before=["review"])
    """
)
INPUT = json.dumps({"messages": [{"role": "user", "content": "order 7 broke"}]})


@pytest.fixture
def app(tmp_path: Path) -> str:
    (tmp_path / "app.py").write_text(APP)
    return f"{tmp_path / 'app.py'}:graph"


def _said(record: dict[str, Any]) -> list[str]:
    return [m["content"] for m in record["values"]["messages"]]


def test_run_pauses_and_resume_finishes_on_langgraph(app: str, new_db: NewDb) -> None:
    db = new_db("app.db")
    paused = ttcli(db, "run", app, "--thread", "t1", "--input", INPUT, "--json")
    done = ttcli(db, "resume", "--thread", "t1", "--value", '"yes"', "--json")

    assert paused.exit_code == 4
    record = json.loads(paused.stdout)
    assert record["status"] == "paused" and record["next"] == ["review"]
    (asked,) = record["waiting"][0]["interrupts"]
    assert asked["value"] == {"question": "approve?", "plan": "refund (order 7 broke)"}
    assert _said(data(done)) == ["order 7 broke", "reviewer said yes: refund (order 7 broke)"]
    assert [c["source"] for c in data(ttcli(db, "history", "--thread", "t1", "--json"))] == [
        "loop", "loop", "loop", "input"
    ]  # fmt: skip


def test_update_replay_and_fork_go_on_with_a_langgraph_thread(app: str, new_db: NewDb) -> None:
    db = new_db("app.db")
    ttcli(db, "run", app, "--thread", "t1", "--input", INPUT)
    ttcli(db, "resume", "--thread", "t1", "--value", '"yes"')

    dry = ttcli(db, "update", "--thread", "t1", "--at", "latest~1", "--as-node", "plan",
                "--set", 'plan="cancel"', "--dry-run", "--json")  # fmt: skip
    fixed = ttcli(db, "update", "--thread", "t1", "--at", "latest~1", "--as-node", "plan",
                  "--set", 'plan="cancel"', "--json")  # fmt: skip
    after_fix = ttcli(db, "resume", "--thread", "t1", "--value", '"ok"', "--json")
    replayed = ttcli(db, "replay", "latest~2", "--thread", "t1", "--json")
    forked = ttcli(db, "fork", "latest~1", "--thread", "t1", "--json")
    after_fork = ttcli(db, "run", app, "--thread", "t1", "--resume", '"again"', "--json")

    assert data(dry)["checkpoint_id"] is None and data(dry)["next"] == ["review"]
    assert data(fixed)["changes"] == [
        {"path": "plan", "kind": "changed", "old": "refund (order 7 broke)", "new": "cancel"}
    ]
    assert _said(data(after_fix))[-1] == "reviewer said ok: cancel"
    assert replayed.exit_code == 4  # replaying from before the answer asks again
    assert data(replayed)["waiting"][0]["node"] == "review"
    assert data(forked)["from"] != data(forked)["checkpoint_id"]
    assert _said(data(after_fork))[-1] == "reviewer said again: refund (order 7 broke)"
    assert ttcli(db, "verify").exit_code == 0


def test_a_compiled_langgraph_graph_keeps_its_breakpoints(app: str, new_db: NewDb) -> None:
    db = new_db("app.db")
    target = app.replace(":graph", ":paused_before_review")

    paused = ttcli(db, "run", target, "--thread", "t1", "--input", INPUT, "--json")

    assert paused.exit_code == 4
    assert data(paused)["next"] == ["review"]
    assert data(paused)["waiting"] == [{"node": "review", "interrupts": []}]  # not asked yet


def test_a_langgraph_target_without_langgraph_installed_names_the_extra(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    # what importing a LangGraph app raises where the extra is not installed
    app.write_text("raise ModuleNotFoundError(\"No module named 'langgraph'\", name='langgraph')\n")

    # SQLite only: what it checks is that no database file is made
    result = ttcli(tmp_path / "app.db", "run", f"{app}:graph", "--thread", "t1", "--input", "{}")

    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: graph TARGET '{app}:graph' needs LangGraph (langgraph is not installed): "
        "pip install 'ttcli[langgraph]'\n"
    )
    assert not (tmp_path / "app.db").exists()
