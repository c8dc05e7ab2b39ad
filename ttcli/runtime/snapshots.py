"""Building StateSnapshots from stored checkpoints: the record view and the live view.

The record view (an explicit checkpoint id, every history entry) shows the state at the
start of the superstep and every task it scheduled. The live view (`get_state` of the
thread's head) also applies the writes of tasks that already finished, and `next` lists
only what is left, as LangGraph 1.2 does.
"""

from __future__ import annotations

import copy
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.graph.constants import ERROR, NO_WRITES
from ttcli.runtime.algo import Task, apply_writes, prepare_tasks
from ttcli.runtime.plan import GraphPlan
from ttcli.runtime.types import PregelTask, StateSnapshot
from ttcli.savers.base import Checkpoint, PendingWrite

_SPECIAL = frozenset({ERROR, NO_WRITES, "__interrupt__", "__resume__", "__scheduled__"})


def snapshot_of(
    plan: GraphPlan,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: dict[str, Any],
    parent_config: RunnableConfig | None,
    pending_writes: list[PendingWrite],
    *,
    live: bool = False,
) -> StateSnapshot:
    channels = plan.restore(checkpoint["channel_values"])
    namespace = CheckpointRef.from_config(config).checkpoint_ns
    tasks = prepare_tasks(plan, checkpoint, channels, int(metadata["step"]) + 1, namespace)
    by_task: dict[str, list[PendingWrite]] = {}
    for write in pending_writes:
        by_task.setdefault(write[0], []).append(write)
    finished: list[Task] = []
    described: list[PregelTask] = []
    for task in tasks:
        writes = by_task.get(task.id, [])
        errors = [value for _, chan, value in writes if chan == ERROR]
        done = [(chan, value) for _, chan, value in writes if chan not in _SPECIAL]
        ran = any(chan not in (ERROR, "__interrupt__") for _, chan, _ in writes)
        if ran:
            finished.append(Task(task.id, task.name, task.path, task.triggers, done))
        described.append(
            PregelTask(
                id=task.id,
                name=task.name,
                path=task.path,
                error=str(errors[-1]) if errors else None,
                result={chan: value for chan, value in done if chan in plan.state_keys}
                if ran
                else None,
            )
        )
    next_names = tuple(task.name for task in tasks)
    if live and finished:
        apply_writes(copy.deepcopy(checkpoint), channels, finished)
        done_ids = {task.id for task in finished}
        next_names = tuple(task.name for task in tasks if task.id not in done_ids)
    return StateSnapshot(
        values=plan.values(channels),
        next=next_names,
        config=config,
        metadata=metadata,
        created_at=checkpoint["ts"],
        parent_config=parent_config,
        tasks=tuple(described),
        interrupts=(),
    )
