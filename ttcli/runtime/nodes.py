"""Calling a node: a function (plain or `async def`), or any object with `invoke`/`ainvoke`.

Nodes run in worker threads. An async node's coroutine runs on the caller's event loop under
`ainvoke`/`astream`, and on a loop of its own under `invoke`/`stream`, so both kinds of node
run under both APIs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ttcli.configs import RunnableConfig
from ttcli.runtime.aio import run_awaitable
from ttcli.runtime.commands import get_runtime, get_stream_writer

if TYPE_CHECKING:
    import asyncio  # only named: see runtime/aio.py

NodeCall = Callable[[Any, RunnableConfig, "asyncio.AbstractEventLoop | None"], Any]


def node_call(action: Any) -> NodeCall:
    """A function `(state, config, loop) -> output` that runs `action` to completion."""
    if not inspect.isroutine(action) and (hasattr(action, "invoke") or hasattr(action, "ainvoke")):
        return functools.partial(_call_object, action)
    names = parameter_names(action)
    if not {"config", "writer", "runtime", "store"} & names:
        return lambda state, config, loop: resolve(action(state), loop)

    def call(state: Any, config: RunnableConfig, loop: asyncio.AbstractEventLoop | None) -> Any:
        # LangGraph's injected keywords, for the nodes that ask for them by name
        extra: dict[str, Any] = {}
        if "config" in names:
            extra["config"] = config
        if "writer" in names:
            extra["writer"] = get_stream_writer()
        if "runtime" in names:
            extra["runtime"] = get_runtime()
        if "store" in names:
            extra["store"] = get_runtime().store
        return resolve(action(state, **extra), loop)

    return call


def _call_object(
    action: Any, state: Any, config: RunnableConfig, loop: asyncio.AbstractEventLoop | None
) -> Any:
    # under the async API an object's own async entry point is the one to use
    use_async = hasattr(action, "ainvoke") and (loop is not None or not hasattr(action, "invoke"))
    method = action.ainvoke if use_async else action.invoke
    output = method(state, config) if _takes_two(method) else method(state)
    return resolve(output, loop)


#: what nodes and branches usually return: never awaitable (no ABC check to tell)
_NEVER_AWAITED = frozenset({dict, str, list, tuple})


def resolve(output: Any, loop: asyncio.AbstractEventLoop | None) -> Any:
    """`output`, or what it gives once awaited if a node handed back an awaitable."""
    if output is None or type(output) in _NEVER_AWAITED or not inspect.isawaitable(output):
        return output
    return run_awaitable(output, loop)


def takes_config(func: Callable[..., Any]) -> bool:
    # cached: a branch asks on every step, and inspecting a signature costs more than the step
    try:
        return "config" in _parameter_names_cached(func)
    except TypeError:  # an unhashable callable
        return "config" in parameter_names(func)


@functools.lru_cache(maxsize=1024)
def _parameter_names_cached(func: Callable[..., Any]) -> frozenset[str]:
    return parameter_names(func)


def parameter_names(func: Callable[..., Any]) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return frozenset()


def _takes_two(method: Callable[..., Any]) -> bool:
    """Whether `invoke` takes a config after its input (a Runnable's `invoke(input, config)`)."""
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return True
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) >= 2
