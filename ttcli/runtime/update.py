"""`update_state`: write to a thread as if a node had returned the values.

The update is a new `update` checkpoint, a child of the addressed one (the head if none is
named), so editing a past checkpoint forks and never rewrites history.
"""

from __future__ import annotations

from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import CheckpointNotFoundError, InvalidUpdateError
from ttcli.graph.constants import COPY, END, INPUT, INTERRUPT, PULL, RESUME, START
from ttcli.runtime.algo import Task, apply_writes, empty_checkpoint, prepare_tasks
from ttcli.runtime.checkpoints import checkpoint_metadata, new_checkpoint, new_versions
from ttcli.runtime.commands import Command
from ttcli.runtime.pending import answers, null_writes, records
from ttcli.runtime.plan import GraphPlan
from ttcli.savers.base import BaseSaver, Checkpoint


def update_state(
    plan: GraphPlan,
    saver: BaseSaver,
    config: RunnableConfig,
    values: Any,
    as_node: str | None = None,
) -> RunnableConfig:
    """Store an `update` checkpoint and return its config."""
    ref = CheckpointRef.from_config(config)
    saved = saver.get_tuple(ref.to_config())
    if saved is None and ref.checkpoint_id is not None:
        if as_node == COPY:
            raise InvalidUpdateError("Cannot copy a non-existent checkpoint")
        raise CheckpointNotFoundError(ref.checkpoint_id, ref.thread_id)
    checkpoint = saved.checkpoint if saved else empty_checkpoint()
    step = int(saved.metadata["step"]) + 1 if saved else 0
    channels = plan.restore(checkpoint["channel_values"])
    parent = ref.at(saved.checkpoint["id"] if saved else None)
    latest_id = next(iter(saver.checkpoint_ids(ref.at(None).to_config(), limit=1)), None)
    pending = list(saved.pending_writes or []) if saved else []
    # of the base's pending writes only a Command's input update carries over, as in LangGraph
    if found := null_writes(pending):
        apply_writes(checkpoint, channels, [Task("", INPUT, (), (), writes=found)])
    goto: list[tuple[str, Any]] = []
    if isinstance(values, Command):
        if values.resume is not None:
            tasks = prepare_tasks(plan, checkpoint, channels, step, ref.checkpoint_ns)
            answered = answers(tasks, records(pending), values.resume, ref.thread_id)
            for task in tasks:
                if task.id in answered:
                    saver.put_writes(
                        parent.to_config(), [(RESUME, answered[task.id])], task.id, task.path_text
                    )
            if values.update is None and not values.destinations():
                # the answer waits on this checkpoint: invoke(None, thread) goes on with it
                return parent.to_config()
        goto = plan.goto_writes("Command", values.destinations())
        values = values.update
    if as_node == COPY:
        if saved is None:
            raise InvalidUpdateError("Cannot copy a non-existent checkpoint")
        copied = new_checkpoint(checkpoint, channels, step, None, latest=latest_id)
        metadata = checkpoint_metadata(config, "fork", step, None)
        copy_parent = (
            CheckpointRef.from_config(saved.parent_config) if saved.parent_config else ref.at(None)
        )
        return saver.put(copy_parent.to_config(), copied, metadata, {})
    node = as_node if as_node is not None else default_as_node(plan, checkpoint)
    if node not in plan.nodes and node != END:
        raise InvalidUpdateError(f"Node {node} does not exist")
    if node == END:
        if values is not None:
            raise InvalidUpdateError(
                "An update as END takes no values: use update_state(config, None, as_node=END)"
            )
        # every task due here counts as done, with no writes
        tasks = prepare_tasks(plan, checkpoint, channels, step, ref.checkpoint_ns)
        written = None
    else:
        updates, writes = plan.node_writes(node, values, channels, config)
        writes += goto
        tasks = [Task(id="", name=node, path=(PULL, node), triggers=(INTERRUPT,), writes=writes)]
        written = {node: updates}
    before = dict(checkpoint["channel_versions"])
    updated = apply_writes(checkpoint, channels, tasks)
    new = new_checkpoint(checkpoint, channels, step, updated, latest=latest_id)
    metadata = checkpoint_metadata(config, "update", step, written)
    return saver.put(
        parent.to_config(), new, metadata, new_versions(before, new["channel_versions"])
    )


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
