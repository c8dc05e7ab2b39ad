"""`update_state`: write to a thread as if a node had returned the values.

The update is a new `update` checkpoint, a child of the addressed one (the head if none is
named), so editing a past checkpoint forks and never rewrites history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import CheckpointNotFoundError, InvalidUpdateError
from ttcli.graph.channels import Channel
from ttcli.graph.constants import COPY, END, INPUT, INTERRUPT, PULL, RESUME, START
from ttcli.runtime.algo import Task, apply_writes, empty_checkpoint, prepare_tasks
from ttcli.runtime.checkpoints import checkpoint_metadata, new_checkpoint, new_versions
from ttcli.runtime.commands import Command
from ttcli.runtime.pending import answers, null_writes, records
from ttcli.runtime.plan import GraphPlan
from ttcli.savers.base import BaseSaver, Checkpoint, CheckpointTuple, PendingWrite


@dataclass
class _Base:
    """The checkpoint an update is made on, read once."""

    saved: CheckpointTuple | None
    ref: CheckpointRef
    checkpoint: Checkpoint
    channels: dict[str, Channel]
    step: int
    pending: list[PendingWrite]
    latest_id: str | None

    @property
    def parent(self) -> CheckpointRef:
        return self.ref.at(self.saved.checkpoint["id"] if self.saved else None)

    def due(self, plan: GraphPlan) -> list[Task]:
        return prepare_tasks(
            plan, self.checkpoint, self.channels, self.step, self.ref.checkpoint_ns
        )


def update_state(
    plan: GraphPlan,
    saver: BaseSaver,
    config: RunnableConfig,
    values: Any,
    as_node: str | None = None,
) -> RunnableConfig:
    """Store an `update` checkpoint and return its config."""
    base = _read(plan, saver, config, as_node)
    goto: list[tuple[str, Any]] = []
    if isinstance(values, Command):
        if values.resume is not None:
            _answer(plan, saver, base, values.resume)
            if values.update is None and not values.destinations():
                # the answer waits on this checkpoint: invoke(None, thread) goes on with it
                return base.parent.to_config()
        goto = plan.goto_writes("Command", values.destinations())
        values = values.update
    if as_node == COPY:
        return _copy(saver, config, base)
    node = as_node if as_node is not None else default_as_node(plan, base.checkpoint)
    if node not in plan.nodes and node != END:
        raise InvalidUpdateError(f"Node {node} does not exist")
    if node == END:
        if values is not None:
            raise InvalidUpdateError(
                "An update as END takes no values: use update_state(config, None, as_node=END)"
            )
        tasks, written = _all_done(base.due(plan), base.pending), None
    else:
        updates, writes = plan.node_writes(node, values, base.channels, config)
        writes += goto
        tasks = [Task(id="", name=node, path=(PULL, node), triggers=(INTERRUPT,), writes=writes)]
        written = {node: updates}
        for due in base.due(plan):
            if due.name == node:  # the update is that task's result, where it was due
                saver.put_writes(base.parent.to_config(), writes, due.id, due.path_text)
    return _put(saver, config, base, tasks, written, plan.triggers)


def _read(plan: GraphPlan, saver: BaseSaver, config: RunnableConfig, as_node: str | None) -> _Base:
    ref = CheckpointRef.from_config(config)
    saved = saver.get_tuple(ref.to_config())
    if saved is None and ref.checkpoint_id is not None:
        if as_node == COPY:
            raise InvalidUpdateError("Cannot copy a non-existent checkpoint")
        raise CheckpointNotFoundError(ref.checkpoint_id, ref.thread_id)
    checkpoint = saved.checkpoint if saved else empty_checkpoint()
    base = _Base(
        saved=saved,
        ref=ref,
        checkpoint=checkpoint,
        channels=plan.restore(checkpoint["channel_values"]),
        step=int(saved.metadata["step"]) + 1 if saved else 0,
        pending=list(saved.pending_writes or []) if saved else [],
        latest_id=next(iter(saver.checkpoint_ids(ref.at(None).to_config(), limit=1)), None),
    )
    # of the base's pending writes only a Command's input update carries over, as in LangGraph
    if found := null_writes(base.pending):
        apply_writes(checkpoint, base.channels, [Task("", INPUT, (), (), writes=found)])
    return base


def _answer(plan: GraphPlan, saver: BaseSaver, base: _Base, resume: Any) -> None:
    tasks = base.due(plan)
    answered = answers(tasks, records(base.pending), resume, base.ref.thread_id)
    for task in tasks:
        if task.id in answered:
            writes = [(RESUME, answered[task.id])]
            saver.put_writes(base.parent.to_config(), writes, task.id, task.path_text)


def _copy(saver: BaseSaver, config: RunnableConfig, base: _Base) -> RunnableConfig:
    """A sibling of the addressed checkpoint (as_node="__copy__"), as a `fork`."""
    saved = base.saved
    if saved is None:
        raise InvalidUpdateError("Cannot copy a non-existent checkpoint")
    copied = new_checkpoint(base.checkpoint, base.channels, base.step, None, latest=base.latest_id)
    metadata = checkpoint_metadata(config, "fork", base.step, None)
    copy_parent = (
        CheckpointRef.from_config(saved.parent_config) if saved.parent_config else base.ref.at(None)
    )
    return saver.put(copy_parent.to_config(), copied, metadata, {})


def _put(
    saver: BaseSaver,
    config: RunnableConfig,
    base: _Base,
    tasks: list[Task],
    written: dict[str, Any] | None,
    triggers: frozenset[str],
) -> RunnableConfig:
    checkpoint, step = base.checkpoint, base.step
    before = dict(checkpoint["channel_versions"])
    updated = apply_writes(checkpoint, base.channels, tasks, triggers)
    new = new_checkpoint(checkpoint, base.channels, step, updated, latest=base.latest_id)
    metadata = checkpoint_metadata(config, "update", step, written)
    if base.saved is not None:  # a subgraph's update stays under the parent checkpoints it was in
        metadata["parents"] = dict(base.saved.metadata.get("parents") or {})
    changed = new_versions(before, new["channel_versions"])
    return saver.put(base.parent.to_config(), new, metadata, changed)


def _all_done(tasks: list[Task], pending: list[PendingWrite]) -> list[Task]:
    """The tasks due at a checkpoint as done (an update as END): those that finished with
    their saved writes, the others with none."""
    found = records(pending)
    for task in tasks:
        record = found.get(task.id)
        if record is not None and record.finished:
            task.writes = record.writes
    return tasks


def default_as_node(plan: GraphPlan, checkpoint: Checkpoint) -> str:
    """LangGraph's rule: the only node, else START on a fresh thread, else the last node to run."""
    nodes = [name for name in plan.nodes if name != START]
    if len(nodes) == 1:
        return nodes[0]
    last_seen = {
        name: max(seen.values())
        for name, seen in checkpoint["versions_seen"].items()
        if name in plan.nodes and seen
    }
    if not last_seen:
        return START
    newest = max(last_seen.values())
    candidates = [name for name, version in last_seen.items() if version == newest]
    if len(candidates) > 1:
        raise InvalidUpdateError("Ambiguous update, specify as_node")
    return candidates[0]
