"""`ToolNode` and `tools_condition`: LangGraph's prebuilt tool-calling pieces, for plain
functions (and objects with `name` and `invoke`, such as LangChain tools)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ttcli.graph.constants import END
from ttcli.graph.messages import ToolMessage


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
