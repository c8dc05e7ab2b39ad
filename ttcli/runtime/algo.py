"""Planning a superstep and applying its writes: pure functions over a checkpoint."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ttcli.errors import UnknownSendError
from ttcli.graph.channels import Channel
from ttcli.graph.constants import INTERRUPT, PULL, PUSH, START, TASKS
from ttcli.runtime.ids import task_id
from ttcli.runtime.plan import GraphPlan, Write
from ttcli.savers.base import Checkpoint


@dataclass
class Task:
    """One node due in a superstep."""

    id: str
    name: str
    #: ("__pregel_pull", name), or ("__pregel_push", index, False) for a Send
    path: tuple[Any, ...]
    triggers: tuple[str, ...]
    writes: list[Write] = field(default_factory=list)
    #: what the node returned, as state keys (None if it returned None)
    output: dict[str, Any] | None = None
    #: a Send's argument: the node's input instead of the state
    arg: Any = None

    @property
    def path_text(self) -> str:
        return "~" + ", ".join(map(str, self.path))


def empty_checkpoint() -> Checkpoint:
    return Checkpoint(
        v=1,
        id="",
        ts="",
        channel_values={},
        channel_versions={},
        versions_seen={"__input__": {}},
        updated_channels=None,
    )


def bookkeeping_copy(checkpoint: Checkpoint) -> Checkpoint:
    """A checkpoint whose versions apply_writes may change without touching the original
    (values are not copied: apply_writes changes channels, not checkpoint values)."""
    return Checkpoint(
        **{
            **checkpoint,
            "channel_versions": dict(checkpoint["channel_versions"]),
            "versions_seen": {
                node: dict(seen) for node, seen in checkpoint["versions_seen"].items()
            },
        }
    )


def check_sends(plan: GraphPlan, checkpoint: Checkpoint, thread_id: str, namespace: str) -> None:
    """Refuse to go on from a checkpoint whose stored Sends name a node `plan` lacks (the
    graph was changed since): checked before a run saves anything, and by the CLI before it
    records the graph with the thread. LangGraph drops such a task with a warning.

    Raises:
        UnknownSendError: naming the node, the checkpoint and the graph's nodes.
    """
    for send in checkpoint["channel_values"].get(TASKS) or ():
        if getattr(send, "node", None) not in plan.nodes:
            where = f" (namespace '{namespace}')" if namespace else ""
            raise UnknownSendError(
                f"checkpoint {checkpoint['id']} of thread '{thread_id}'{where} holds a Send to "
                f"node {getattr(send, 'node', send)!r}, which this graph does not have (its "
                f"nodes: {sorted(n for n in plan.nodes if n != START)}): run the thread with "
                "the graph that wrote it, or fork it from an earlier checkpoint"
            )


def prepare_tasks(
    plan: GraphPlan,
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    step: int,
    namespace: str = "",
) -> list[Task]:
    """The tasks due at `checkpoint`: one per Send written in the last superstep, then the
    nodes with a trigger newer than what they last saw (sorted by name, so `next` never
    depends on declaration order or thread timing)."""
    versions = checkpoint["channel_versions"]
    tasks = []
    sends = channels[TASKS]
    for index, send in enumerate(sends.get() if sends.is_available() else ()):
        tasks.append(
            Task(
                id=task_id(checkpoint["id"], namespace, step, send.node, PUSH, str(index)),
                name=send.node,
                path=(PUSH, index, False),
                triggers=(PUSH,),
                arg=send.arg,
            )
        )
    for name, triggers in plan.sorted_triggers:
        seen = checkpoint["versions_seen"].get(name, {})
        fired = tuple(
            chan
            for chan in triggers
            if channels[chan].is_available() and versions.get(chan, 0) > seen.get(chan, 0)
        )
        if fired:
            tasks.append(
                Task(
                    id=task_id(checkpoint["id"], namespace, step, name, PULL, *fired),
                    name=name,
                    path=(PULL, name),
                    triggers=fired,
                )
            )
    return tasks


def apply_writes(
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    tasks: Sequence[Task],
    triggers: Collection[str] = (),
) -> set[str]:
    """Apply a superstep's writes to channels, bump versions; return the updated channels.

    Mutates `checkpoint` (versions, versions_seen) and `channels` in place. When the
    superstep updated none of the `triggers` (the plan's trigger channels), the run would end
    there: channels are told so, and a deferred node's trigger becomes available.
    """
    # sort by task path so reducers see writes in an order that does not depend on which
    # parallel task happened to finish first
    tasks = sorted(tasks, key=lambda task: task.path)
    versions = checkpoint["channel_versions"]
    for task in tasks:
        seen = checkpoint["versions_seen"].setdefault(task.name, {})
        for chan in task.triggers:
            if chan in versions:
                seen[chan] = versions[chan]
    next_version = max(versions.values(), default=0) + 1
    for chan in sorted({chan for task in tasks for chan in task.triggers}):
        if chan in channels and channels[chan].consume():
            versions[chan] = next_version
    grouped: dict[str, list[Any]] = {}
    for task in tasks:
        for chan, value in task.writes:
            if chan in channels:
                grouped.setdefault(chan, []).append(value)
    updated: set[str] = set()
    for chan, values in grouped.items():
        if channels[chan].update(values):
            versions[chan] = next_version
            if channels[chan].is_available():
                updated.add(chan)
    if any(task.triggers for task in tasks):
        # a new superstep begins: ephemeral channels not written in this one clear
        for chan, channel in channels.items():
            if chan not in updated and channel.is_available() and channel.update([]):
                versions[chan] = next_version
                if channel.is_available():
                    updated.add(chan)
        if triggers and updated.isdisjoint(triggers):
            for chan, channel in channels.items():
                if channel.finish():
                    versions[chan] = next_version
                    if channel.is_available():
                        updated.add(chan)
    return updated


def should_interrupt(checkpoint: Checkpoint, nodes: Sequence[str], tasks: Iterable[Task]) -> bool:
    """A breakpoint fires if anything changed since the last one fired and a due task is named."""
    seen = checkpoint["versions_seen"].get(INTERRUPT, {})
    changed = any(
        version > seen.get(chan, 0) for chan, version in checkpoint["channel_versions"].items()
    )
    return changed and any("*" in nodes or task.name in nodes for task in tasks)
