"""Human-in-the-loop and dynamic routing: `interrupt`, `Command`, `Send`, `Interrupt`.

Names and behaviour follow LangGraph's `langgraph.types`, so `from ttcli import interrupt,
Command, Send` is the only change a ported graph needs. The value types themselves live in
`ttcli.values` (so every saver can rebuild them) and are re-exported here.
"""

from __future__ import annotations

import contextvars
import hashlib
from dataclasses import dataclass
from typing import Any

from ttcli.values import Command, Interrupt, Send

__all__ = [
    "Command",
    "GraphInterrupt",
    "Interrupt",
    "Send",
    "TaskScratchpad",
    "interrupt",
    "interrupt_id",
    "run_in_task",
]


class GraphInterrupt(Exception):  # noqa: N818 - LangGraph's name
    """Raised inside a node by `interrupt()`: the run pauses; not an error."""

    def __init__(self, interrupt: Interrupt) -> None:
        super().__init__(interrupt)
        self.interrupt = interrupt


@dataclass
class TaskScratchpad:
    """What `interrupt()` needs to know about the task that calls it."""

    name: str
    task_id: str
    #: answers given so far to this task's interrupts, in order
    resume: list[Any]
    count: int = 0


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
    raise GraphInterrupt(Interrupt(value, interrupt_id(scratchpad.name, scratchpad.task_id, index)))


def run_in_task(scratchpad: TaskScratchpad, func: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a node with `interrupt()` bound to its task."""
    token = _current.set(scratchpad)
    try:
        return func(*args, **kwargs)
    finally:
        _current.reset(token)
