"""Interrupts, Command and Send: what ttcli adds to (or checks more than) LangGraph."""

from __future__ import annotations

from contextlib import closing
from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from tests.conftest import NewDb
from ttcli import END, START, Command, Send, StateGraph, interrupt
from ttcli.errors import ConfigError, EmptyInputError, InvalidUpdateError, UnknownSendError
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver

API = SimpleNamespace(
    StateGraph=StateGraph, START=START, END=END, interrupt=interrupt, Command=Command, Send=Send
)


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_update_state_with_a_resume_answers_the_interrupt(saver: BaseSaver) -> None:
    # seed 001 §5.3 answers a paused review this way; LangGraph 1.2 silently drops the answer
    app = graphs.review(API).compile(checkpointer=saver)
    app.invoke({"plan": "", "log": []}, cfg())
    config = app.update_state(cfg(), Command(resume="approved"))
    assert (
        config["configurable"]["checkpoint_id"]
        == app.get_state(cfg()).config["configurable"]["checkpoint_id"]
    )
    assert app.get_state(cfg()).interrupts == ()  # answered, not yet run
    assert app.invoke(None, cfg())["log"] == ["plan", "review:approved", "act"]


def test_the_interrupt_survives_a_restart_of_the_process(new_db: NewDb) -> None:
    db = new_db("review.db")
    with closing(open_saver(db)) as saver:
        paused = (
            graphs.review(API).compile(checkpointer=saver).invoke({"plan": "", "log": []}, cfg())
        )
    (asked,) = paused["__interrupt__"]
    assert asked.value == {"question": "approve?", "plan": "refund order 123"}
    with closing(open_saver(db)) as saver:
        app = graphs.review(API).compile(checkpointer=saver)
        assert app.get_state(cfg()).interrupts == (asked,)
        assert app.invoke(Command(resume={asked.id: "ok"}), cfg())["log"][-2:] == [
            "review:ok",
            "act",
        ]


def test_bad_resumes_are_clear_errors(saver: BaseSaver) -> None:
    app = graphs.review(API).compile(checkpointer=saver)
    app.invoke({"plan": "", "log": []}, cfg())
    with pytest.raises(ConfigError, match="no pending interrupt has id '0{32}'; pending: \\['"):
        app.invoke(Command(resume={"0" * 32: "x"}), cfg())
    with pytest.raises(EmptyInputError, match="Received empty Command input"):
        app.invoke(Command(), cfg())
    with pytest.raises(
        RuntimeError, match=r"Cannot use Command\(resume=\.\.\.\) without checkpointer"
    ):
        graphs.review(API).compile().invoke(Command(resume="x"))
    assert app.get_state(cfg()).next == ("review",)


def test_interrupt_outside_a_node_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="inside a node"):
        interrupt("why?")


def test_commands_and_sends_to_unknown_nodes_fail_clearly() -> None:
    builder = StateGraph(graphs.LogState)
    builder.add_node("a", lambda state: Command(goto="nowhere"))
    builder.add_edge(START, "a")
    with pytest.raises(InvalidUpdateError, match="Node 'a' named unknown node 'nowhere'"):
        builder.compile().invoke({"log": []})
    builder = StateGraph(graphs.LogState)
    builder.add_node("a", lambda state: {})
    builder.add_conditional_edges(START, lambda state: [Send("ghost", {})])
    with pytest.raises(
        InvalidUpdateError,
        match="Branch 'condition' of node '__start__' named unknown node 'ghost'",
    ):
        builder.compile().invoke({"log": []})
    builder = StateGraph(graphs.LogState)
    builder.add_node("a", lambda state: Command(graph=Command.PARENT))
    builder.add_edge(START, "a")
    with pytest.raises(InvalidUpdateError, match="no parent graph"):
        builder.compile().invoke({"log": []})


def _fan_to(name: str, saver: BaseSaver, ask: bool) -> Any:
    """prep sends one task to `name`; the run pauses before it, or (`ask`) in it."""

    def node(state: graphs.LogState) -> dict[str, Any]:
        return {"log": [f"{name}:{interrupt('go?')}" if ask else name]}

    builder = StateGraph(graphs.LogState)
    builder.add_node("prep", lambda state: {})
    builder.add_node(name, node)
    builder.add_edge(START, "prep")
    builder.add_conditional_edges("prep", lambda state: [Send(name, {"log": []})], [name])
    return builder.compile(checkpointer=saver, interrupt_before=[] if ask else [name])


#: ways of going on from the paused checkpoint: (the node asks, the input, at the head, the
#: log when the graph that wrote the thread goes on so)
GOING_ON: dict[str, tuple[bool, Any, bool, list[str]]] = {
    "invoke-none": (False, None, False, ["work"]),
    "resume": (True, Command(resume="yes"), False, ["work:yes"]),
    "command-update": (False, Command(update={"log": ["typo"]}), False, ["typo", "work"]),
    "replay": (False, None, True, ["work"]),
}


@pytest.mark.parametrize("way", list(GOING_ON))
def test_a_stored_send_to_a_node_the_graph_no_longer_has_is_refused_before_anything_is_saved(
    saver: BaseSaver, way: str
) -> None:
    # the graph was changed (its node renamed) while a thread waited on a Send to it: no
    # answer, update or fork of the refused call is kept, and the old graph goes on
    ask, given, at_head, log = GOING_ON[way]
    _fan_to("work", saver, ask).invoke({"log": []}, cfg())

    def history() -> list[Any]:
        return [
            (s.config, s.next, s.tasks)
            for s in _fan_to("work", saver, ask).get_state_history(cfg())
        ]

    before = history()
    config = before[0][0] if at_head else cfg()
    with pytest.raises(
        UnknownSendError,
        match=r"holds a Send to node 'work', which this graph does not have "
        r"\(its nodes: \['labour', 'prep'\]\): run the thread with the graph that wrote it",
    ):
        _fan_to("labour", saver, ask).invoke(given, config)
    assert history() == before
    assert _fan_to("work", saver, ask).invoke(given, config)["log"] == log


def test_a_finished_sibling_is_not_run_again_when_the_interrupt_is_answered(
    saver: BaseSaver,
) -> None:
    calls: list[str] = []

    def slow(state: graphs.LogState) -> dict[str, Any]:
        calls.append("slow")
        return {"log": ["slow"]}

    def ask(state: graphs.LogState) -> dict[str, Any]:
        calls.append("ask")
        return {"log": [f"ask={interrupt('go?')}"]}

    builder = StateGraph(graphs.LogState)
    builder.add_node("slow", slow)
    builder.add_node("ask", ask)
    builder.add_edge(START, "slow")
    builder.add_edge(START, "ask")
    app = builder.compile(checkpointer=saver)
    app.invoke({"log": []}, cfg())
    assert app.get_state(cfg()).values == {"log": ["slow"]}  # live view: slow's writes applied
    assert app.invoke(Command(resume="yes"), cfg()) == {"log": ["ask=yes", "slow"]}
    assert calls == ["ask", "slow", "ask"] or calls == ["slow", "ask", "ask"]
