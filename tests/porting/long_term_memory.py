"""The docs' long-term memory across threads: a store given to `compile(store=...)`, a node
that takes `store: BaseStore` and one that reads `runtime.store`, namespaces per user from
the config, `search` with a filter, and a subgraph using its parent's store."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore


class State(TypedDict):
    said: str
    log: Annotated[list[str], operator.add]


def remember(state: State, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
    user = config["configurable"]["user_id"]
    count = len(store.search(("memories", user)))
    store.put(
        ("memories", user), f"m{count}", {"text": state["said"], "long": len(state["said"]) > 8}
    )
    return {"log": [f"{user} has {count + 1} memories"]}


def recall(state: State, runtime: Runtime) -> dict[str, Any]:
    found = runtime.store.search(("memories",), filter={"long": True}, limit=5)
    first = runtime.store.get(("memories", "u1"), "m0")
    return {"log": [f"long: {[(i.namespace, i.key, i.value['text']) for i in found]}",
                    f"first of u1: {first.value if first else None}"]}  # fmt: skip


def main(checkpointer: Any) -> Any:
    inner = StateGraph(State)
    inner.add_node("recall", recall)
    inner.add_edge(START, "recall")
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("sub", inner.compile())
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "sub")
    store = InMemoryStore()
    graph = builder.compile(checkpointer=checkpointer, store=store)
    outputs = []
    for thread, user, said in [("a", "u1", "I like tea"), ("b", "u1", "hi"),
                               ("c", "u2", "I live in Lyon")]:  # fmt: skip
        config = {"configurable": {"thread_id": thread, "user_id": user}}
        outputs.append(graph.invoke({"said": said, "log": []}, config)["log"])
    store.delete(("memories", "u2"), "m0")
    after = [item.key for item in store.search(("memories",))]
    return outputs, after, graph.get_state_history({"configurable": {"thread_id": "c"}})
