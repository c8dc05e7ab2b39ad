"""Reading a checkpoint's pending writes: what each task did, and answering interrupts.

Pending writes are saved per task as it finishes (LangGraph's fault tolerance). Besides the
task's own writes there are special channels: `__error__` (the exception it raised),
`__interrupt__` (the interrupt it is waiting on), `__resume__` (the answers it was given),
and writes under the null task id (a Command's update given as input).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ttcli.errors import AnswerConflictError, ConfigError
from ttcli.graph.constants import ERROR, INTERRUPT, NO_WRITES, NULL_TASK_ID, RESUME
from ttcli.runtime.algo import Task
from ttcli.runtime.commands import Interrupt, interrupt_id
from ttcli.runtime.plan import Write
from ttcli.savers.base import PendingWrite

SPECIAL = frozenset({ERROR, INTERRUPT, RESUME, NO_WRITES, "__scheduled__"})

MULTIPLE_INTERRUPTS = (
    "When there are multiple pending interrupts, you must specify the interrupt id when "
    "resuming. Docs: https://docs.langchain.com/oss/python/langgraph/interrupts"
    "#handling-multiple-interrupts."
)

_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass
class TaskRecord:
    """What the pending writes say about one task."""

    writes: list[Write] = field(default_factory=list)
    #: it ran to the end (its writes are saved; a resume reuses them)
    finished: bool = False
    error: str | None = None
    interrupts: tuple[Interrupt, ...] = ()
    resume: list[Any] = field(default_factory=list)

    def answered(self) -> bool:
        """It raised an interrupt that has its answer, and has not run with it yet."""
        return (
            not self.finished and bool(self.interrupts) and len(self.resume) >= len(self.interrupts)
        )

    def waiting_on(self, task: Task) -> Interrupt | None:
        """The interrupt this task waits on that has no answer yet, if any."""
        if self.finished or not self.interrupts:
            return None
        latest = self.interrupts[-1]
        unanswered = interrupt_id(task.name, task.id, len(self.resume))
        return latest if latest.id == unanswered else None


def records(pending: Iterable[PendingWrite]) -> dict[str, TaskRecord]:
    found: dict[str, TaskRecord] = {}
    for task_id, channel, value in pending:
        if task_id == NULL_TASK_ID:
            continue
        record = found.setdefault(task_id, TaskRecord())
        if channel == ERROR:
            record.error = str(value)
        elif channel == INTERRUPT:
            record.interrupts = tuple(value)
        elif channel == RESUME:
            record.resume = list(value)
        else:
            record.finished = True
            if channel != NO_WRITES:
                record.writes.append((channel, value))
    return found


def null_writes(pending: Iterable[PendingWrite]) -> list[Write]:
    return [(channel, value) for task_id, channel, value in pending if task_id == NULL_TASK_ID]


def answers(
    tasks: Sequence[Task], found: dict[str, TaskRecord], resume: Any, thread_id: str
) -> dict[str, list[Any]]:
    """The new answer lists of the tasks a `Command(resume=...)` answers, by task id.

    A map of interrupt ids answers those interrupts; any other value answers the one interrupt
    waiting, and is an error when several are.
    """
    waiting = {
        interrupt.id: task
        for task in tasks
        if (interrupt := found.get(task.id, TaskRecord()).waiting_on(task)) is not None
    }
    if (
        isinstance(resume, dict)
        and resume
        and all(isinstance(k, str) and _INTERRUPT_ID.match(k) for k in resume)
    ):
        chosen = []
        for key, value in resume.items():
            if key not in waiting:
                raise ConfigError(
                    f"no pending interrupt has id {key!r}; pending: {sorted(waiting) or 'none'}"
                )
            chosen.append((waiting[key], value))
    elif len(waiting) > 1:
        raise RuntimeError(MULTIPLE_INTERRUPTS)
    elif not waiting:
        _check_answered_again(tasks, found, resume, thread_id)
        chosen = []
    else:
        chosen = [(task, resume) for task in waiting.values()]
    return {task.id: [*found.get(task.id, TaskRecord()).resume, value] for task, value in chosen}


def _check_answered_again(
    tasks: Sequence[Task], found: dict[str, TaskRecord], resume: Any, thread_id: str
) -> None:
    """An answer to an interrupt that already has one (stored, its node not run yet): the
    same answer again is harmless, another one is refused (the first stays)."""
    for task in tasks:
        record = found.get(task.id)
        if record is not None and record.answered() and record.resume[-1] != resume:
            raise AnswerConflictError(record.resume[-1], thread_id)
