"""ttcli: a LangGraph-compatible graph runtime whose every superstep can be revisited.

Port a LangGraph graph by changing its imports to `from ttcli import ...`.
"""

from ttcli.errors import (
    EmptyInputError,
    GraphRecursionError,
    InvalidUpdateError,
    TtcliError,
)
from ttcli.graph.builder import StateGraph
from ttcli.graph.constants import END, START
from ttcli.graph.messages import (
    AIMessage,
    HumanMessage,
    Message,
    MessagesState,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    add_messages,
)
from ttcli.runtime.commands import Command, Interrupt, Send, interrupt
from ttcli.runtime.compiled import CompiledStateGraph
from ttcli.runtime.types import PregelTask, StateSnapshot
from ttcli.savers.base import BaseSaver, CheckpointTuple
from ttcli.savers.memory import InMemorySaver, MemorySaver
from ttcli.savers.sqlite import SqliteSaver

__version__ = "0.1.0"

__all__ = [
    "AIMessage",
    "BaseSaver",
    "CheckpointTuple",
    "Command",
    "CompiledStateGraph",
    "END",
    "EmptyInputError",
    "GraphRecursionError",
    "HumanMessage",
    "InMemorySaver",
    "Interrupt",
    "InvalidUpdateError",
    "MemorySaver",
    "Message",
    "MessagesState",
    "PregelTask",
    "RemoveMessage",
    "START",
    "Send",
    "SqliteSaver",
    "StateGraph",
    "StateSnapshot",
    "SystemMessage",
    "ToolMessage",
    "TtcliError",
    "add_messages",
    "interrupt",
]
