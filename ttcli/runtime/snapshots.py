"""Building StateSnapshots from stored checkpoints: the record view and the live view.

The record view (an explicit checkpoint id, every history entry) shows the state at the
start of the superstep, every task it scheduled and every interrupt raised. The live view
(`get_state` of the thread's head) also applies the writes of tasks that already finished;
`next` lists only what is left and `interrupts` only what is unanswered, as LangGraph 1.2.
"""

from __future__ import annotations

from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.graph.constants import INPUT, PULL
from ttcli.runtime.algo import Task, apply_writes, bookkeeping_copy, prepare_tasks
from ttcli.runtime.pending import TaskRecord, null_writes, records
from ttcli.runtime.plan import GraphPlan
from ttcli.runtime.subgraphs import task_namespace
from ttcli.runtime.types import PregelTask, StateSnapshot
from ttcli.savers.base import Checkpoint, PendingWrite


def snapshot_of(
    plan: GraphPlan,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: dict[str, Any],
    parent_config: RunnableConfig | None,
    pending_writes: list[PendingWrite],
    *,
    live: bool = False,
    declared_order: bool = True,
) -> StateSnapshot:
    channels = plan.restore(checkpoint["channel_values"])
    checkpoint = bookkeeping_copy(checkpoint)
    if found := null_writes(pending_writes):
        apply_writes(checkpoint, channels, [Task("", INPUT, (), (), writes=found)])
    namespace = CheckpointRef.from_config(config).checkpoint_ns
    tasks = prepare_tasks(plan, checkpoint, channels, int(metadata["step"]) + 1, namespace)
    if declared_order:  # a snapshot lists nodes as the graph declares them, as LangGraph's does
        order = {name: index for index, name in enumerate(plan.nodes)}
        tasks.sort(key=lambda task: (task.path[0] == PULL, order.get(task.name, 0)))
    by_task = records(pending_writes)
    described = [_describe(plan, config, task, by_task.get(task.id)) for task in tasks]
    finished = [
        Task(task.id, task.name, task.path, task.triggers, record.writes)
        for task in tasks
        if (record := by_task.get(task.id)) is not None and record.finished
    ]
    next_names = tuple(task.name for task in tasks)
    interrupts = tuple(i for t in described for i in t.interrupts)
    if live:
        if finished:
            apply_writes(checkpoint, channels, finished, plan.triggers)
        done = {task.id for task in finished}
        next_names = tuple(task.name for task in tasks if task.id not in done)
        interrupts = tuple(
            waiting
            for task in tasks
            if (waiting := by_task.get(task.id, TaskRecord()).waiting_on(task)) is not None
        )
    return StateSnapshot(
        values=plan.read(channels, plan.state_keys),  # private channels too, as LangGraph
        next=next_names,
        config=config,
        metadata=metadata,
        created_at=checkpoint["ts"],
        parent_config=parent_config,
        tasks=tuple(described),
        interrupts=interrupts,
    )


def _describe(
    plan: GraphPlan, config: RunnableConfig, task: Task, record: TaskRecord | None
) -> PregelTask:
    record = record or TaskRecord()
    result = {c: v for c, v in record.writes if c in plan.state_keys}
    return PregelTask(
        id=task.id,
        name=task.name,
        path=task.path,
        error=record.error,
        interrupts=record.interrupts,
        result=result if record.finished else None,
        state=_subgraph_config(config, task) if task.name in plan.subgraphs else None,
    )


def _subgraph_config(config: RunnableConfig, task: Task) -> RunnableConfig:
    """Where the subgraph a task runs saves its checkpoints."""
    ref = CheckpointRef.from_config(config)
    namespace = task_namespace(ref.checkpoint_ns, task.name, task.id)
    return CheckpointRef(ref.thread_id, namespace).to_config()
