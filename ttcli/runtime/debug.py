"""The events of `stream_mode="debug"`, shaped as LangGraph's: a `checkpoint` event for each
checkpoint, a `task` event when a task starts and a `task_result` event when it ends."""

from __future__ import annotations

from typing import Any

from ttcli.configs import RunnableConfig
from ttcli.runtime.algo import Task
from ttcli.runtime.checkpoints import utc_now
from ttcli.runtime.commands import GraphInterrupt
from ttcli.runtime.execute import Outcome
from ttcli.runtime.plan import GraphPlan
from ttcli.runtime.snapshots import snapshot_of
from ttcli.savers.base import Checkpoint


def event(kind: str, step: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {"step": step, "timestamp": utc_now(), "type": kind, "payload": payload}


def task_event(task: Task, task_input: Any, step: int) -> dict[str, Any]:
    payload = {"id": task.id, "name": task.name, "input": task_input, "triggers": task.triggers}
    return event("task", step, payload)


def result_event(plan: GraphPlan, task: Task, outcome: Outcome, step: int) -> dict[str, Any]:
    interrupted = isinstance(outcome, GraphInterrupt)
    payload = {
        "id": task.id,
        "name": task.name,
        "error": repr(outcome) if outcome is not None and not interrupted else None,
        "result": {k: v for k, v in task.writes if k in plan.state_keys},
        "interrupts": list(outcome.interrupts) if isinstance(outcome, GraphInterrupt) else [],
    }
    return event("task_result", step, payload)


def checkpoint_event(
    plan: GraphPlan,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: dict[str, Any],
    parent_config: RunnableConfig | None,
) -> dict[str, Any]:
    snapshot = snapshot_of(plan, config, checkpoint, metadata, parent_config, [])
    payload = {
        "config": snapshot.config,
        "parent_config": parent_config,
        "values": snapshot.values,
        "metadata": metadata,
        "next": list(snapshot.next),
        "tasks": [
            {"id": t.id, "name": t.name, "interrupts": (), "state": None} for t in snapshot.tasks
        ],
    }
    return event("checkpoint", metadata["step"], payload)
