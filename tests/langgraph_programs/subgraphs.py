"""Subgraphs: an interrupt inside one, a Command to the parent graph, and a graph invoked
inside a node."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from tests.langgraph_programs.runner import Runner, cfg
from tests.langgraph_programs.states import Review


def subgraph_interrupt(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    def ask(state: Review) -> dict[str, Any]:
        return {"log": [f"inner got {interrupt('ok?')}"]}

    inner = StateGraph(Review)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(Review)
    outer.add_node("pre", lambda s: {"log": ["pre"]})
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "pre")
    outer.add_edge("pre", "sub")
    run = Runner(outer.compile(checkpointer=saver), mode)
    found: list[Any] = []
    for durability in ("sync", "async", "exit"):  # when LangGraph writes: each step, or at exit
        config = cfg(f"sub-{durability}")
        run.invoke({"plan": "", "log": []}, config, durability=durability)
        paused = run.state(config)
        inner_state = paused.tasks[0].state
        done = run.invoke(Command(resume="yes"), config, durability=durability)
        found += [paused.next, inner_state.values, inner_state.next, done, run.history(config)]
    return found


def command_to_parent(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    def escalate(state: Review) -> Command[str]:
        return Command(graph=Command.PARENT, goto="human", update={"log": ["escalated"]})

    inner = StateGraph(Review)
    inner.add_node("escalate", escalate)
    inner.add_edge(START, "escalate")
    outer = StateGraph(Review)
    outer.add_node("sub", inner.compile(), destinations=("human",))
    outer.add_node("human", lambda s: {"log": ["human took over"]})
    outer.add_edge(START, "sub")
    run = Runner(outer.compile(checkpointer=saver), mode)
    out = run.invoke({"plan": "", "log": []}, cfg("parent"))
    return [out, run.history(cfg("parent"))]


class Question(TypedDict):
    question: str
    answer: str


class Research(TypedDict):
    query: str
    notes: Annotated[list[str], operator.add]


def subgraph_in_a_node(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """A graph with its own schema invoked inside a node function: it inherits the parent's
    checkpointer and saves under its own namespace, whose history is read back."""
    inner = StateGraph(Research)
    inner.add_node("search", lambda s: {"notes": [f"found {s['query']}"]})
    inner.add_node("summarise", lambda s: {"notes": [f"{len(s['notes'])} note(s)"]})
    inner.add_edge(START, "search")
    inner.add_edge("search", "summarise")
    research = inner.compile()

    def call_research(state: Question) -> dict[str, Any]:
        found = research.invoke({"query": state["question"], "notes": []})
        return {"answer": "; ".join(found["notes"])}

    outer = StateGraph(Question)
    outer.add_node("research", call_research)
    outer.add_edge(START, "research")
    run = Runner(outer.compile(checkpointer=saver), mode)
    out = run.invoke({"question": "tides", "answer": ""}, cfg("nested"))
    history = run.history(cfg("nested"))
    (namespace,) = [t.state for snap in history for t in snap.tasks if t.state]
    return [out, run.history(namespace), history]
