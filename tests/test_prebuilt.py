"""`create_react_agent` in ttcli's runtime around a chat model object of any library (here a
plain class): the tools it binds, the prompt it sends first, v1 and v2 tool tasks."""

from __future__ import annotations

from typing import Any

import pytest

import ttcli


def refund(order_id: str) -> str:
    return f"order {order_id} refunded"


def track(order_id: str) -> str:
    return f"order {order_id} is in Lyon"


class Model:
    """A chat model object: `invoke(messages, config)`, replies scripted."""

    def __init__(self) -> None:
        calls = [
            {"name": "refund", "args": {"order_id": "7"}, "id": "c1"},
            {"name": "track", "args": {"order_id": "8"}, "id": "c2"},
        ]
        self.replies = [ttcli.AIMessage("", tool_calls=calls, id="m1"), ttcli.AIMessage("done")]
        self.bound: list[str] = []
        self.asked: list[list[tuple[str, Any]]] = []

    def invoke(self, messages: list[Any], config: Any = None) -> Any:
        self.asked.append([(m.type, m.content) for m in messages])
        return self.replies.pop(0)


class ToolCallingModel(Model):
    """One that takes tools first, as LangChain's chat models do."""

    def bind_tools(self, tools: list[Any]) -> ToolCallingModel:
        self.bound = [tool.__name__ for tool in tools]
        return self


@pytest.mark.parametrize(("version", "tasks"), [("v1", ("tools",)), ("v2", ("tools", "tools"))])
def test_the_agent_loops_through_its_tools(version: str, tasks: tuple[str, ...]) -> None:
    model = ToolCallingModel()
    agent = ttcli.create_react_agent(
        model, [refund, track], prompt="Be brief.", checkpointer=ttcli.InMemorySaver(),
        version=version,
    )  # fmt: skip
    config: Any = {"configurable": {"thread_id": "a"}}

    result = agent.invoke({"messages": [ttcli.HumanMessage("refund 7, track 8")]}, config)
    steps = [snapshot.next for snapshot in agent.get_state_history(config)]

    assert [(m.type, m.content) for m in result["messages"]] == [
        ("human", "refund 7, track 8"),
        ("ai", ""),
        ("tool", "order 7 refunded"),
        ("tool", "order 8 is in Lyon"),
        ("ai", "done"),
    ]
    assert model.bound == ["refund", "track"]
    assert [asked[0] for asked in model.asked] == [("system", "Be brief."), ("system", "Be brief.")]
    assert steps == [(), ("agent",), tasks, ("agent",), ("__start__",)]


def test_a_model_without_bind_tools_and_a_tool_node() -> None:
    model = Model()
    agent = ttcli.create_react_agent(model, ttcli.ToolNode([refund, track]))
    result = agent.invoke({"messages": [ttcli.HumanMessage("go")]})
    assert result["messages"][-1].content == "done"
    assert model.asked[0] == [("human", "go")]


def test_a_model_named_by_a_string_is_refused() -> None:
    refused = "create_react_agent takes a chat model object, got 'openai:gpt-4o'"
    with pytest.raises(TypeError, match=refused):
        ttcli.create_react_agent("openai:gpt-4o", [refund])
