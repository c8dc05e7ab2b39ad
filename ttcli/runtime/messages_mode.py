"""`stream_mode="messages"`: the chat messages a node wrote, with where they come from.

While a node runs, the LangChain chat models it calls stream their token chunks as
`(chunk, metadata)` through LangChain's callbacks, as on LangGraph; the handler is in
`ttcli.langgraph.tokens`, loaded only when the application has imported `langchain_core`
itself (ttcli never imports it). Once the node finishes, each message it wrote that was not
in its input and was not streamed comes as `(message, metadata)`, as LangGraph does for
messages no model streamed.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

from ttcli.configs import CheckpointRef
from ttcli.runtime.algo import Task
from ttcli.runtime.subgraphs import task_namespace


def task_metadata(task: Task, step: int, where: CheckpointRef) -> dict[str, Any]:
    """Where a message comes from, as LangGraph tells it."""
    # a run without a thread (no checkpointer, no thread_id) has no thread_id to tell
    return {
        **({"thread_id": where.thread_id} if where.thread_id else {}),
        "ls_integration": "langgraph",
        "langgraph_step": step,
        "langgraph_node": task.name,
        "langgraph_triggers": task.triggers,
        "langgraph_path": task.path,
        "langgraph_checkpoint_ns": task_namespace(where.checkpoint_ns, task.name, task.id),
    }


def token_streaming(
    emit: Callable[[Any, dict[str, Any]], None], metadata: dict[str, Any], streamed: set[str]
) -> AbstractContextManager[None]:
    """A context to run a node in: the LangChain chat models it calls stream their token
    chunks to `emit(chunk, metadata)`, and the ids of their messages go to `streamed`."""
    if "langchain_core" not in sys.modules:  # no LangChain model can be running
        return nullcontext()
    tokens = importlib.import_module("ttcli.langgraph.tokens")
    # on LangGraph, a model run's config holds the task's namespace, which LangChain copies
    # into the run's metadata
    metadata = {**metadata, "checkpoint_ns": metadata["langgraph_checkpoint_ns"]}
    return cast(AbstractContextManager[None], tokens.streaming(emit, metadata, streamed))


def token_muting() -> AbstractContextManager[None]:
    """A context to run the node of a subgraph whose chunks are not streamed in: the chat
    models it calls do not stream to the node that runs the subgraph (as on LangGraph)."""
    if "langchain_core" not in sys.modules:
        return nullcontext()
    tokens = importlib.import_module("ttcli.langgraph.tokens")
    return cast(AbstractContextManager[None], tokens.muted())


def message_chunks(
    task: Task, task_input: Any, metadata: dict[str, Any], streamed: set[str]
) -> Iterator[tuple[str, tuple[Any, dict[str, Any]]]]:
    """("messages", (message, metadata)) for each message the finished `task` wrote that
    was neither in its input nor `streamed` as tokens."""
    seen = {message.id for message in _messages(task_input)} | streamed
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
