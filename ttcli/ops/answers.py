"""Answering the interrupts a paused thread waits on (`ttcli resume`)."""

from __future__ import annotations

from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import InputError, ThreadNotFoundError
from ttcli.ops.inspect import next_nodes, tasks
from ttcli.runtime.commands import Command
from ttcli.savers.base import BaseSaver


def waiting_ids(saver: BaseSaver, ref: CheckpointRef) -> list[str]:
    """The ids of the interrupts the thread's latest checkpoint waits on, oldest task first:
    those of every task that asked and has not finished, answered or not (a resume killed
    after storing its answer goes on with the same answer; the runtime refuses another).

    Raises:
        ThreadNotFoundError: the thread has no checkpoints.
    """
    latest = saver.get_tuple(ref.to_config())
    if latest is None:
        raise ThreadNotFoundError(ref.thread_id)
    views = tasks(latest, saver.get_writes(latest.config))
    return [str(i.id) for t in views if t.result is None for i in t.interrupts]


def _runs_on(saver: BaseSaver, ref: CheckpointRef) -> bool:
    """Whether the thread's latest checkpoint still has nodes to run."""
    latest = saver.get_tuple(ref.to_config())
    return latest is not None and bool(next_nodes(latest))


def answer(saver: BaseSaver, ref: CheckpointRef, value: Any, given_id: str | None) -> Command[Any]:
    """The command that answers the thread's interrupt (the one whose id starts with
    `given_id`, when several wait).

    Raises:
        InputError: the thread waits on no interrupt and has nothing left to run, or
            `given_id` names none or several.
    """
    waiting = waiting_ids(saver, ref)
    if not waiting and not _runs_on(saver, ref):
        raise InputError(
            f"thread '{ref.thread_id}' is not waiting on an interrupt: nothing to answer"
        )
    if given_id is None:
        # with no question asked yet but nodes still to run, the answer is kept for the
        # first interrupt() they ask, as LangGraph keeps it
        return Command(resume=value)
    matches = [i for i in waiting if i.startswith(given_id)]
    if len(matches) != 1:
        raise InputError(
            f"interrupt id {given_id!r} matches {len(matches)} of the interrupts thread "
            f"'{ref.thread_id}' waits on ({', '.join(waiting)})"
        )
    return Command(resume={matches[0]: value})
