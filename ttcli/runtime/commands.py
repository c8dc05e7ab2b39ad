"""Human-in-the-loop and dynamic routing: `interrupt`, `Command`, `Send`, `Interrupt`.

Names and behaviour follow LangGraph's `langgraph.types`, so `from ttcli import interrupt,
Command, Send` is the only change a ported graph needs. The value types themselves live in
`ttcli.values` (so every saver can rebuild them) and are re-exported here.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ttcli.values import Command, Interrupt, Send

if TYPE_CHECKING:
    from ttcli.runtime.subgraphs import ParentLink

__all__ = [
    "Command",
    "GraphInterrupt",
    "Interrupt",
    "ParentCommand",
    "Runtime",
    "Send",
    "StreamWriter",
    "TaskScratchpad",
    "current_scratchpad",
    "get_runtime",
    "get_stream_writer",
    "interrupt",
    "interrupt_id",
    "run_in_task",
]


class GraphInterrupt(Exception):  # noqa: N818 - LangGraph's name
    """Raised inside a node by `interrupt()` (or by a subgraph that paused): the run pauses;
    not an error."""

    def __init__(self, interrupts: Sequence[Interrupt], *, bubbled: bool = False) -> None:
        super().__init__(interrupts)
        self.interrupts = tuple(interrupts)
        #: raised by a subgraph the task ran, not by the task's own `interrupt()`
        self.bubbled = bubbled

    def adopted(self, scratchpad: TaskScratchpad) -> GraphInterrupt:
        """A subgraph's interrupts as the task's own: ids of the task, so that the parent
        answers them as it answers the task's (the subgraph gets the answer it waits for)."""
        if not self.bubbled:
            return self
        return GraphInterrupt(
            [
                Interrupt(
                    found.value,
                    interrupt_id(scratchpad.name, scratchpad.task_id, scratchpad.count + index),
                    found.response_schema,
                )
                for index, found in enumerate(self.interrupts)
            ]
        )


class ParentCommand(Exception):  # noqa: N818 - LangGraph's name
    """Raised for a node of a subgraph that returned `Command(graph=Command.PARENT, ...)`: the
    graph that called the subgraph takes the command as its node's result."""

    def __init__(self, command: Command[Any]) -> None:
        super().__init__(command)
        self.command = command


@dataclass
class TaskScratchpad:
    """What `interrupt()` needs to know about the task that calls it."""

    name: str
    task_id: str
    #: answers given so far to this task's interrupts, in order
    resume: list[Any]
    #: what `get_stream_writer()` hands the node: sends a `custom` stream chunk
    writer: Callable[[Any], None] = lambda chunk: None
    #: makes what a subgraph run inside this task takes from the task's run (made on demand:
    #: most tasks run none)
    make_link: Callable[[], ParentLink] | None = None
    #: the run's answer given when no interrupt was waiting: the first question takes it
    spare: list[Any] = field(default_factory=list)
    count: int = 0
    #: how many subgraphs the task has run so far
    subgraph_calls: int = 0
    #: the run's `context` (`invoke(..., context=...)`), for `get_runtime()`
    context: Any = None
    #: the graph's store (`compile(store=...)`), for `get_runtime()`
    store: Any = None

    @functools.cached_property
    def link(self) -> ParentLink | None:
        return self.make_link() if self.make_link is not None else None

    def take_answer(self) -> tuple[bool, Any]:
        """The newest answer not yet used by this task's own `interrupt()` calls, for the
        subgraph it runs (which asked the question): (False, None) if there is none."""
        if self.count >= len(self.resume):
            return False, None
        self.count = len(self.resume)
        return True, self.resume[-1]


_current: contextvars.ContextVar[TaskScratchpad] = contextvars.ContextVar("ttcli_task")


def interrupt_id(name: str, task_id: str, index: int) -> str:
    """The id of a task's `index`-th interrupt: the same every time the task is re-run."""
    namespace = f"{name}:{task_id}" + (f"|{index}" if index else "")
    return hashlib.blake2b(namespace.encode(), digest_size=16).hexdigest()


def interrupt(value: Any) -> Any:
    """Pause the run and hand `value` to a person; returns their answer once resumed.

    The node runs again from its start when resumed; the n-th call to `interrupt` in it
    returns the n-th answer.
    """
    try:
        scratchpad = _current.get()
    except LookupError:
        raise RuntimeError(
            "interrupt() can only be called inside a node of a running graph"
        ) from None
    index = scratchpad.count
    scratchpad.count += 1
    if index < len(scratchpad.resume):
        return scratchpad.resume[index]
    if scratchpad.spare:
        scratchpad.resume.append(scratchpad.spare.pop())
        return scratchpad.resume[index]
    raise GraphInterrupt(
        [Interrupt(value, interrupt_id(scratchpad.name, scratchpad.task_id, index))]
    )


#: the type of what `get_stream_writer()` returns (and a node's `writer` parameter), as
#: LangGraph names it
StreamWriter = Callable[[Any], None]


def current_scratchpad() -> TaskScratchpad | None:
    """The task running in this context, if any."""
    return _current.get(None)


def get_stream_writer() -> StreamWriter:
    """Inside a node: a function that sends a chunk to `stream(..., stream_mode="custom")`.

    It does nothing when the caller does not stream `custom` chunks.
    """
    try:
        return _current.get().writer
    except LookupError:
        raise RuntimeError("get_stream_writer() can only be called inside a node") from None


ContextT = TypeVar("ContextT")


def _no_chunks(chunk: Any) -> None:
    pass


@dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """What a node that takes a `runtime` parameter gets (LangGraph's `Runtime`): the run's
    `context`, the graph's `store` and its stream writer (ttcli has no functional API:
    `previous` is None)."""

    context: ContextT = None  # type: ignore[assignment]
    store: Any = None
    stream_writer: StreamWriter = _no_chunks
    previous: Any = None


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """Inside a node: the run's `Runtime` (`context_schema` only types the result)."""
    try:
        scratchpad = _current.get()
    except LookupError:
        raise RuntimeError("get_runtime() can only be called inside a node") from None
    return Runtime(
        context=scratchpad.context, store=scratchpad.store, stream_writer=scratchpad.writer
    )


def run_in_task(scratchpad: TaskScratchpad, func: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a node with `interrupt()` bound to its task."""
    token = _current.set(scratchpad)
    try:
        return func(*args, **kwargs)
    finally:
        _current.reset(token)
