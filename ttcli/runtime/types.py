"""The records the runtime hands back: snapshots of a thread and the tasks they schedule."""

from __future__ import annotations

from typing import Any, NamedTuple

from ttcli.configs import RunnableConfig


class PregelTask(NamedTuple):
    """A task a checkpoint schedules, with what happened when it ran."""

    id: str
    name: str
    #: ("__pregel_pull", node) for edge-triggered tasks
    path: tuple[Any, ...]
    #: repr() of the exception the task raised, if it failed
    error: str | None = None
    interrupts: tuple[Any, ...] = ()
    #: only for a task that runs a subgraph: where its checkpoints are (a config), or with
    #: `get_state(config, subgraphs=True)` the subgraph's own snapshot
    state: RunnableConfig | StateSnapshot | None = None
    #: {channel: value} the task wrote, or None while it has no writes
    result: dict[str, Any] | None = None


class StateSnapshot(NamedTuple):
    """A thread's state at one checkpoint, as `get_state` and `get_state_history` give it."""

    values: dict[str, Any]
    #: names of the nodes this checkpoint schedules
    next: tuple[str, ...]
    config: RunnableConfig
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: RunnableConfig | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Any, ...]
