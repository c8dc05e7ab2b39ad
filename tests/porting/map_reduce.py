"""Map-reduce with Send: one joke per subject, in parallel, then the best one."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class Overall(TypedDict):
    topic: str
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


class JokeState(TypedDict):
    subject: str


def subjects(state: Overall) -> dict[str, Any]:
    return {"subjects": [f"{state['topic']} {n}" for n in ("one", "two", "three")]}


def continue_to_jokes(state: Overall) -> list[Send]:
    return [Send("joke", {"subject": s}) for s in state["subjects"]]


def joke(state: JokeState) -> dict[str, Any]:
    return {"jokes": [f"a joke about {state['subject']}"]}


def best(state: Overall) -> dict[str, Any]:
    return {"best": max(state["jokes"])}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(Overall)
    builder.add_node("subjects", subjects)
    builder.add_node("joke", joke)
    builder.add_node("best", best)
    builder.add_edge(START, "subjects")
    builder.add_conditional_edges("subjects", continue_to_jokes, ["joke"])
    builder.add_edge("joke", "best")
    builder.add_edge("best", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "mr"}}
    result = graph.invoke({"topic": "animals", "jokes": []}, config)
    return result, graph.get_state_history(config)
