"""`stream_mode="messages"`: the chat messages a node wrote, with where they come from.

LangGraph streams a LangChain chat model's tokens through LangChain's callbacks; ttcli does
not import LangChain, so it streams what nodes return: each message a node writes that was
not in its input, once the node finishes, as `(message, metadata)`, like LangGraph does for
messages no model streamed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.runtime.algo import Task
from ttcli.runtime.subgraphs import task_namespace


def message_chunks(
    task: Task, task_input: Any, step: int, where: CheckpointRef
) -> Iterator[tuple[str, tuple[Any, dict[str, Any]]]]:
    """("messages", (message, metadata)) for each message the finished `task` wrote."""
    seen = {message.id for message in _messages(task_input)}
    metadata = {
        "thread_id": where.thread_id,
        "ls_integration": "langgraph",
        "langgraph_step": step,
        "langgraph_node": task.name,
        "langgraph_triggers": task.triggers,
        "langgraph_path": task.path,
        "langgraph_checkpoint_ns": task_namespace(where.checkpoint_ns, task.name, task.id),
    }
    for message in _messages(task.output or {}):
        if message.id not in seen:
            seen.add(message.id)
            yield "messages", (message, dict(metadata))


def _messages(values: Any) -> Iterator[Any]:
    """The message objects among a state's (or an update's) values."""
    if not isinstance(values, Mapping):
        values = getattr(values, "__dict__", {})
    for value in values.values():
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(getattr(item, "type", None), str) and hasattr(item, "content"):
                yield item
