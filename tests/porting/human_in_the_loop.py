"""Approve or reject: interrupt() asks a person, Command(resume=...) answers, and the node
routes with Command(goto=...)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class State(TypedDict):
    action: str
    status: str


def propose(state: State) -> dict[str, Any]:
    return {"action": f"refund {state['action']}"}


def approval(state: State) -> Command[Literal["execute", "cancel"]]:
    decision = interrupt({"question": "Approve this action?", "action": state["action"]})
    return Command(goto="execute" if decision == "approve" else "cancel")


def execute(state: State) -> dict[str, Any]:
    return {"status": f"done: {state['action']}"}


def cancel(state: State) -> dict[str, Any]:
    return {"status": "cancelled"}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    for name, node in [("propose", propose), ("approval", approval)]:
        builder.add_node(name, node)
    builder.add_node("execute", execute)
    builder.add_node("cancel", cancel)
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "approval")
    builder.add_edge("execute", END)
    builder.add_edge("cancel", END)
    graph = builder.compile(checkpointer=checkpointer)
    results = []
    for thread, answer in [("a", "approve"), ("b", "reject")]:
        config = {"configurable": {"thread_id": thread}}
        paused = graph.invoke({"action": "order 7", "status": "new"}, config)
        asked = [i.value for i in paused["__interrupt__"]]
        results.append((asked, graph.invoke(Command(resume=answer), config)))
    return results, graph.get_state_history({"configurable": {"thread_id": "a"}})
