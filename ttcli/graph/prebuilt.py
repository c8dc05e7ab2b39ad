"""LangGraph's prebuilt tool-calling pieces: `ToolNode` and `tools_condition`, for plain
functions (and objects with `name` and `invoke`, such as LangChain tools), and
`create_react_agent`, the model -> tools loop around a chat model object."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ttcli.graph.builder import StateGraph
from ttcli.graph.constants import END, START
from ttcli.graph.messages import MessagesState, SystemMessage, ToolMessage
from ttcli.values import Send

if TYPE_CHECKING:
    from ttcli.runtime.compiled import CompiledStateGraph
    from ttcli.savers.base import BaseSaver

#: how LangGraph's agent sends one tool call to the tool node, with the state it came from
TOOL_CALL_WITH_CONTEXT = "tool_call_with_context"


class ToolNode:
    """A node that runs the tool calls of the last AI message and answers each with a
    `ToolMessage`; an unknown tool gets an error message, an exception propagates."""

    def __init__(
        self,
        tools: Sequence[Callable[..., Any]],
        *,
        name: str = "tools",
        messages_key: str = "messages",
    ) -> None:
        self.name = name
        self.messages_key = messages_key
        self.tools = {_tool_name(tool): tool for tool in tools}

    def invoke(self, state: Any, config: Any = None) -> dict[str, list[ToolMessage]]:
        if isinstance(state, dict) and state.get("__type") == TOOL_CALL_WITH_CONTEXT:
            return {self.messages_key: [self._run(state["tool_call"])]}  # one call, sent
        message = _last_message(state, self.messages_key)
        calls = getattr(message, "tool_calls", None) or []
        return {self.messages_key: [self._run(call) for call in calls]}

    def _run(self, call: dict[str, Any]) -> ToolMessage:
        tool = self.tools.get(call["name"])
        if tool is None:
            known = ", ".join(self.tools)
            content = f"Error: {call['name']} is not a valid tool, try one of [{known}]."
            return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")
        invoke = getattr(tool, "invoke", None)
        result = invoke(call["args"]) if invoke is not None else tool(**call["args"])
        return ToolMessage(_content(result), name=call["name"], tool_call_id=call["id"])


def tools_condition(state: Any, messages_key: str = "messages") -> str:
    """ "tools" when the last AI message asks for tools, else END: the edge out of a model."""
    return "tools" if getattr(_last_message(state, messages_key), "tool_calls", None) else END


def create_react_agent(
    model: Any,
    tools: Sequence[Callable[..., Any]] | ToolNode,
    *,
    prompt: str | Any = None,
    state_schema: Any = None,
    checkpointer: BaseSaver | None = None,
    interrupt_before: Sequence[str] | None = None,
    interrupt_after: Sequence[str] | None = None,
    name: str | None = None,
    version: str = "v2",
) -> CompiledStateGraph:
    """LangGraph's prebuilt agent: an `agent` node calls `model` on the messages (after a
    system `prompt`, if given), and while its reply asks for tools a `tools` node runs them
    (in "v2", each call as a task of its own, sent with `Send`; in "v1", all in one task).

    `model` is a chat model object: its `invoke(messages, config)` returns the AI message,
    and its `bind_tools(tools)`, if it has one, is called first (LangChain's chat models have
    both); ttcli does not import LangChain. A model named by a string is not supported.
    """
    if isinstance(model, str) or not hasattr(model, "invoke"):
        raise TypeError(f"create_react_agent takes a chat model object, got {model!r}")
    tool_node = tools if isinstance(tools, ToolNode) else ToolNode(tools)
    bound = model
    if hasattr(model, "bind_tools") and "tools" not in (getattr(model, "kwargs", None) or {}):
        bound = model.bind_tools(list(tool_node.tools.values()))

    def agent(state: Any, config: Any) -> dict[str, Any]:
        messages = list(_messages(state))
        if isinstance(prompt, str):
            messages.insert(0, SystemMessage(prompt))
        elif callable(prompt):
            messages = list(prompt(state))
        elif prompt is not None:  # a system message object
            messages.insert(0, prompt)
        response = bound.invoke(messages, config)
        response.name = name
        return {"messages": [response]}

    def should_continue(state: Any) -> Any:
        calls = getattr(_messages(state)[-1], "tool_calls", None)
        if not calls:
            return END
        if version == "v1":
            return "tools"
        return [Send("tools", {"__type": TOOL_CALL_WITH_CONTEXT, "tool_call": call,
                               "state": state}) for call in calls]  # fmt: skip

    workflow = StateGraph(state_schema or MessagesState)
    workflow.add_node("agent", agent)
    workflow.add_node("tools", tool_node)
    workflow.add_edge(START, "agent")
    workflow.add_conditional_edges("agent", should_continue, ["tools", END])
    workflow.add_edge("tools", "agent")
    return workflow.compile(
        checkpointer,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        name=name,
    )


def _messages(state: Any) -> Any:
    return state["messages"] if isinstance(state, dict) else state.messages


def _last_message(state: Any, key: str) -> Any:
    if isinstance(state, list):
        messages = state
    elif isinstance(state, dict):
        messages = state.get(key, [])
    else:
        messages = getattr(state, key, [])
    if not messages:
        raise ValueError(f"No messages found in input state to tool_edge: {state}")
    return messages[-1]


def _tool_name(tool: Any) -> str:
    name = getattr(tool, "name", None) or getattr(tool, "__name__", None)
    return name if isinstance(name, str) else type(tool).__name__


def _content(result: Any) -> Any:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)
