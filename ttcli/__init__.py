"""ttcli: a LangGraph-compatible graph runtime whose every superstep can be revisited.

Port a LangGraph graph by changing its imports to `from ttcli import ...`. Names are loaded
on first use, so that the command line starts without the runtime it does not need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ttcli.errors import (
        EmptyInputError,
        GraphRecursionError,
        InvalidUpdateError,
        TtcliError,
    )
    from ttcli.graph.builder import StateGraph
    from ttcli.graph.constants import END, START
    from ttcli.graph.messages import MessagesState, add_messages
    from ttcli.graph.prebuilt import ToolNode, create_react_agent, tools_condition
    from ttcli.runtime.commands import (
        Runtime,
        StreamWriter,
        get_runtime,
        get_stream_writer,
        interrupt,
    )
    from ttcli.runtime.compiled import CompiledStateGraph
    from ttcli.runtime.retry import RetryPolicy
    from ttcli.runtime.store import BaseStore, InMemoryStore
    from ttcli.runtime.types import PregelTask, StateSnapshot
    from ttcli.savers.base import BaseSaver, CheckpointTuple
    from ttcli.savers.memory import InMemorySaver, MemorySaver
    from ttcli.savers.postgres import PostgresSaver
    from ttcli.savers.serde import Serializer
    from ttcli.savers.sqlite import SqliteSaver
    from ttcli.values import (
        AIMessage,
        Command,
        HumanMessage,
        Interrupt,
        Message,
        RemoveMessage,
        Send,
        SystemMessage,
        ToolMessage,
    )

__version__ = "0.1.0"

__all__ = [
    "AIMessage",
    "BaseSaver",
    "BaseStore",
    "CheckpointTuple",
    "Command",
    "CompiledStateGraph",
    "END",
    "EmptyInputError",
    "GraphRecursionError",
    "HumanMessage",
    "InMemorySaver",
    "InMemoryStore",
    "Interrupt",
    "InvalidUpdateError",
    "MemorySaver",
    "Message",
    "MessagesState",
    "PostgresSaver",
    "PregelTask",
    "RemoveMessage",
    "RetryPolicy",
    "Runtime",
    "START",
    "Send",
    "Serializer",
    "SqliteSaver",
    "StateGraph",
    "StateSnapshot",
    "StreamWriter",
    "SystemMessage",
    "ToolMessage",
    "ToolNode",
    "TtcliError",
    "add_messages",
    "create_react_agent",
    "get_runtime",
    "get_stream_writer",
    "interrupt",
    "tools_condition",
]

_WHERE = {
    "EmptyInputError": "ttcli.errors",
    "GraphRecursionError": "ttcli.errors",
    "InvalidUpdateError": "ttcli.errors",
    "TtcliError": "ttcli.errors",
    "StateGraph": "ttcli.graph.builder",
    "END": "ttcli.graph.constants",
    "START": "ttcli.graph.constants",
    "MessagesState": "ttcli.graph.messages",
    "add_messages": "ttcli.graph.messages",
    "ToolNode": "ttcli.graph.prebuilt",
    "create_react_agent": "ttcli.graph.prebuilt",
    "tools_condition": "ttcli.graph.prebuilt",
    "get_stream_writer": "ttcli.runtime.commands",
    "get_runtime": "ttcli.runtime.commands",
    "Runtime": "ttcli.runtime.commands",
    "StreamWriter": "ttcli.runtime.commands",
    "interrupt": "ttcli.runtime.commands",
    "CompiledStateGraph": "ttcli.runtime.compiled",
    "RetryPolicy": "ttcli.runtime.retry",
    "BaseStore": "ttcli.runtime.store",
    "InMemoryStore": "ttcli.runtime.store",
    "PregelTask": "ttcli.runtime.types",
    "StateSnapshot": "ttcli.runtime.types",
    "BaseSaver": "ttcli.savers.base",
    "CheckpointTuple": "ttcli.savers.base",
    "InMemorySaver": "ttcli.savers.memory",
    "MemorySaver": "ttcli.savers.memory",
    "Serializer": "ttcli.savers.serde",
    "SqliteSaver": "ttcli.savers.sqlite",
    "PostgresSaver": "ttcli.savers.postgres",
    "AIMessage": "ttcli.values",
    "Command": "ttcli.values",
    "HumanMessage": "ttcli.values",
    "Interrupt": "ttcli.values",
    "Message": "ttcli.values",
    "RemoveMessage": "ttcli.values",
    "Send": "ttcli.values",
    "SystemMessage": "ttcli.values",
    "ToolMessage": "ttcli.values",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ttcli' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
