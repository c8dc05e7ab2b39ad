"""The events of `stream_mode="debug"`, shaped as LangGraph's: a `checkpoint` event for each
checkpoint, a `task` event when a task starts and a `task_result` event when it ends."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from ttcli.configs import RunnableConfig
from ttcli.runtime.algo import Task
from ttcli.runtime.checkpoints import utc_now
from ttcli.runtime.commands import GraphInterrupt, Interrupt
from ttcli.runtime.execute import Outcome
from ttcli.runtime.plan import GraphPlan
from ttcli.runtime.snapshots import snapshot_of
from ttcli.savers.base import Checkpoint, PendingWrite


def event(kind: str, step: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {"step": step, "timestamp": utc_now(), "type": kind, "payload": payload}


def task_event(task: Task, task_input: Any, step: int) -> dict[str, Any]:
    payload = {"id": task.id, "name": task.name, "input": task_input, "triggers": task.triggers}
    return event("task", step, payload)


def result_event(plan: GraphPlan, task: Task, outcome: Outcome, step: int) -> dict[str, Any]:
    interrupts = outcome.interrupts if isinstance(outcome, GraphInterrupt) else ()
    payload = {
        "id": task.id,
        "name": task.name,
        # the exception itself, as LangGraph gives it
        "error": None if isinstance(outcome, GraphInterrupt) else outcome,
        "result": {k: v for k, v in task.writes if k in plan.state_keys},
        "interrupts": list(_plain(interrupts)),
    }
    return event("task_result", step, payload)


def checkpoint_event(
    plan: GraphPlan,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: dict[str, Any],
    parent_config: RunnableConfig | None,
    pending: list[PendingWrite],
) -> dict[str, Any]:
    snapshot = snapshot_of(
        plan, config, checkpoint, metadata, parent_config, pending, declared_order=False
    )
    payload = {
        "config": snapshot.config,
        "parent_config": parent_config,
        "values": snapshot.values,
        "metadata": metadata,
        "next": list(snapshot.next),
        "tasks": [
            {"id": t.id, "name": t.name, "interrupts": _plain(t.interrupts), "state": None}
            for t in snapshot.tasks
        ],
    }
    return event("checkpoint", metadata["step"], payload)


def _plain(interrupts: Iterable[Interrupt]) -> tuple[dict[str, Any], ...]:
    """Interrupts as LangGraph's debug events show them: as dicts."""
    return tuple(asdict(found) for found in interrupts)
