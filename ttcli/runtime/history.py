"""Reading a thread: `get_state` and `get_state_history`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.runtime.plan import GraphPlan
from ttcli.runtime.snapshots import snapshot_of
from ttcli.runtime.types import StateSnapshot
from ttcli.savers.base import BaseSaver, CheckpointTuple


def get_state(
    plan: GraphPlan, saver: BaseSaver, config: RunnableConfig, *, subgraphs: bool = False
) -> StateSnapshot:
    """The thread's head (live view), or the checkpoint `config` names (record view); with
    `subgraphs`, a task that runs a subgraph holds the subgraph's snapshot as its `state`.

    An unknown thread or checkpoint gives an empty snapshot, as in LangGraph.
    """
    ref = CheckpointRef.from_config(config)
    saved = saver.get_tuple(ref.to_config())
    if saved is None:
        return StateSnapshot({}, (), config, None, None, None, (), ())
    snapshot = _snapshot(plan, saved, live=ref.checkpoint_id is None)
    if not subgraphs:
        return snapshot
    tasks = []
    for task in snapshot.tasks:
        inner = plan.subgraphs.get(task.name)
        where = task.state
        if isinstance(where, dict) and inner is not None and saver.get_tuple(where) is not None:
            task = task._replace(state=get_state(inner.plan, saver, where, subgraphs=True))
        tasks.append(task)
    return snapshot._replace(tasks=tuple(tasks))


def get_state_history(
    plan: GraphPlan,
    saver: BaseSaver,
    config: RunnableConfig,
    *,
    filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
    before: RunnableConfig | None = None,
    limit: int | None = None,
) -> Iterator[StateSnapshot]:
    """Snapshots newest first, each in the record view."""
    ref = CheckpointRef.from_config(config)
    for saved in saver.list(ref.to_config(), filter=filter, before=before, limit=limit):
        yield _snapshot(plan, saved, live=False)


def _snapshot(plan: GraphPlan, saved: CheckpointTuple, *, live: bool) -> StateSnapshot:
    return snapshot_of(
        plan,
        saved.config,
        saved.checkpoint,
        saved.metadata,
        saved.parent_config,
        list(saved.pending_writes or []),
        live=live,
    )
