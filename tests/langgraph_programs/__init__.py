"""Real LangGraph programs, each a function `program(saver, mode)` that builds its graph on
`saver`, runs it the sync or the async way (`mode`) and returns what it saw (outputs, states,
histories), to be compared between LangGraph's InMemorySaver and TtcliSaver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from tests.langgraph_programs.agents import react_agent, streamed_tokens, tool_calling_agent
from tests.langgraph_programs.basics import (
    chat,
    interrupt_resume,
    send_fan_out,
    time_travel,
    typed_states_streamed,
)
from tests.langgraph_programs.recovery import (
    async_nodes,
    breakpoint_edit,
    deferred_node,
    fault_tolerance,
    parallel_interrupts,
)
from tests.langgraph_programs.states import SERDE
from tests.langgraph_programs.subgraphs import (
    command_to_parent,
    subgraph_in_a_node,
    subgraph_interrupt,
)

Program = Callable[[BaseCheckpointSaver[Any], str], list[Any]]

PROGRAMS: dict[str, Program] = {
    "chat": chat,
    "interrupt_resume": interrupt_resume,
    "send_fan_out": send_fan_out,
    "time_travel": time_travel,
    "subgraph_interrupt": subgraph_interrupt,
    "tool_calling_agent": tool_calling_agent,
    "command_to_parent": command_to_parent,
    "typed_states_streamed": typed_states_streamed,
    "react_agent": react_agent,
    "streamed_tokens": streamed_tokens,
    "async_nodes": async_nodes,
    "breakpoint_edit": breakpoint_edit,
    "parallel_interrupts": parallel_interrupts,
    "fault_tolerance": fault_tolerance,
    "subgraph_in_a_node": subgraph_in_a_node,
    "deferred_node": deferred_node,
}

__all__ = ["PROGRAMS", "SERDE", "Program", "chat", "interrupt_resume", "subgraph_interrupt"]
