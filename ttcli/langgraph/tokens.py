"""Tokens for `stream_mode="messages"` in ttcli's own runtime, from LangChain chat models.

A LangChain chat model streams its tokens to the callback handlers of the config it runs
with; inside a node that config comes from LangChain's context variable when the node does
not pass one. While a node runs, `streaming` puts a handler there that hands each token
chunk on as `(chunk, metadata)`, as LangGraph's `StreamMessagesHandler` does. The runtime
loads this module only when the application has imported `langchain_core` itself (a model
object exists only then); this module imports LangChain, not LangGraph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler

#: a model run tagged so is not streamed (LangGraph's TAG_NOSTREAM)
NOSTREAM = "nostream"


class TokenHandler(BaseCallbackHandler, _StreamingCallbackHandler[Any]):
    """Hands on the token chunks of the chat models a node calls."""

    # called in the thread that streams, in order, rather than from an executor
    run_inline = True

    def __init__(
        self,
        emit: Callable[[Any, dict[str, Any]], None],
        metadata: dict[str, Any],
        streamed: set[str],
    ) -> None:
        self.emit = emit
        self.metadata = metadata
        #: the ids of the messages streamed: the node's output does not repeat them
        self.streamed = streamed
        self._runs: dict[UUID, dict[str, Any]] = {}

    def tap_output_iter(self, run_id: UUID, output: Iterator[Any]) -> Iterator[Any]:
        return output

    def tap_output_aiter(self, run_id: UUID, output: Any) -> Any:
        return output

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if NOSTREAM not in (tags or ()):
            self._runs[run_id] = {**self.metadata, **(metadata or {})}

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        metadata = self._runs.get(run_id)
        if metadata is not None and isinstance(chunk, ChatGenerationChunk):
            if chunk.message.id is not None:
                self.streamed.add(chunk.message.id)
            self.emit(chunk.message, dict(metadata))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)


@contextmanager
def streaming(
    emit: Callable[[Any, dict[str, Any]], None], metadata: dict[str, Any], streamed: set[str]
) -> Iterator[None]:
    """While the block runs (a node), chat models called in it stream their token chunks
    to `emit(chunk, metadata)`, and the ids of their messages go to `streamed`."""
    handler = TokenHandler(emit, metadata, streamed)
    token = var_child_runnable_config.set({"callbacks": [handler], "metadata": dict(metadata)})
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def muted() -> AbstractContextManager[None]:
    """While the block runs (the node of a subgraph whose chunks are not streamed), chat
    models do not stream to the handler of the node that runs the subgraph (a plain
    function: every node of every run asks, and there is seldom a handler to hide)."""
    current = var_child_runnable_config.get() or {}
    callbacks = current.get("callbacks")
    if not isinstance(callbacks, list) or not any(
        isinstance(handler, TokenHandler) for handler in callbacks
    ):
        return nullcontext()
    return _without_handlers(callbacks)


@contextmanager
def _without_handlers(callbacks: list[Any]) -> Iterator[None]:
    current = var_child_runnable_config.get() or {}
    kept = [handler for handler in callbacks if not isinstance(handler, TokenHandler)]
    token = var_child_runnable_config.set({**current, "callbacks": kept})
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)
