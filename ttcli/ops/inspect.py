"""Reading a thread without its graph: what `history`, `show`, `threads` and `tree` print.

The command line never imports an application's graph to read a file (a file could name any
module). Everything here comes from what the saver stores: a checkpoint's triggers say which
nodes are due next, and its pending writes say what each task did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import ThreadNotFoundError
from ttcli.savers.base import NOT_LOADED, BaseSaver, CheckpointTuple, TaskWrite

#: the channel of the Sends a checkpoint schedules (`ttcli.graph.constants.TASKS`; not
#: imported from there, so that reading a file does not load the graph package)
TASKS = "__pregel_tasks"

_SPECIAL = frozenset({"__error__", "__interrupt__", "__resume__", "__no_writes__", "__scheduled__"})


def is_internal(channel: str) -> bool:
    """Trigger and bookkeeping channels, as opposed to the graph's state keys."""
    return channel.startswith(("__", "branch:to:", "join:"))


def state_values(channel_values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in channel_values.items() if not is_internal(k)}


def next_nodes(saved: CheckpointTuple) -> tuple[str, ...]:
    """The nodes a checkpoint schedules, read from its trigger channels (Sends first)."""
    checkpoint = saved.checkpoint
    values, seen = checkpoint["channel_values"], checkpoint["versions_seen"]
    sent = [_send_node(send) for send in values.get(TASKS) or ()]
    due = set()
    for channel, version in checkpoint["channel_versions"].items():
        if channel not in values:
            continue  # no value: not a trigger now
        node = _triggered(channel, values[channel])
        # versions are ints (ttcli's runtime) or LangGraph's zero-padded strings
        unseen = 0 if isinstance(version, int) else ""
        if node is not None and version > seen.get(node, {}).get(channel, unseen):
            due.add(node)
    return (*sent, *sorted(due))


def _triggered(channel: str, value: Any) -> str | None:
    if channel == "__start__":
        return channel
    if channel.startswith("branch:to:"):
        return channel.removeprefix("branch:to:")
    if channel.startswith("join:"):
        _, sources, node = channel.split(":", 2)
        return node if set(value or ()) == set(sources.split("+")) else None
    return None


def _send_node(send: Any) -> str:
    # a Send decodes as itself where the runtime is loaded, and as marked data elsewhere
    node = getattr(send, "node", None)
    if node is None and isinstance(send, Mapping):
        node = (send.get("data") or {}).get("node")
    return str(node)


@dataclass
class TaskView:
    """One task planned at a checkpoint, and what its pending writes say it did."""

    id: str
    name: str
    path: str
    #: state keys it wrote, or None if it has not finished
    result: dict[str, Any] | None = None
    error: str | None = None
    interrupts: list[Any] = field(default_factory=list)
    #: answers given to its interrupts
    answers: list[Any] = field(default_factory=list)

    @property
    def waiting(self) -> bool:
        """Paused on an interrupt that has no answer yet."""
        if self.result is not None or not self.interrupts:
            return False
        from ttcli.runtime.commands import interrupt_id  # only paused threads need it

        # the stored interrupt is the latest asked; it is unanswered if its id is the one
        # the next answer would go to
        latest = getattr(self.interrupts[-1], "id", None)
        return latest == interrupt_id(self.name, self.id, len(self.answers))


def tasks(saved: CheckpointTuple, writes: Sequence[TaskWrite]) -> list[TaskView]:
    """The tasks of a checkpoint: those that wrote something, then those still due."""
    sends = saved.checkpoint["channel_values"].get("__pregel_tasks") or []
    found: dict[str, TaskView] = {}
    for task_id, path, channel, value in writes:
        if task_id == "00000000-0000-0000-0000-000000000000":
            continue  # a Command's input update, not a task
        view = found.setdefault(task_id, TaskView(task_id, _name(path, sends), path))
        if channel == "__error__":
            view.error = str(value)
        elif channel == "__interrupt__":
            view.interrupts = list(value)
        elif channel == "__resume__":
            view.answers = list(value)
        else:
            view.result = view.result or {}
            if channel not in _SPECIAL and not is_internal(channel):
                view.result[channel] = value
    ran = [view.name for view in found.values()]
    due = []
    for name in next_nodes(saved):
        if name in ran:
            ran.remove(name)
        else:
            due.append(TaskView("", name, ""))
    return [*found.values(), *due]


def _name(path: str, sends: Sequence[Any]) -> str:
    parts = [part.strip() for part in path.lstrip("~").split(",")]
    if (
        len(parts) >= 2
        and parts[0] == "__pregel_push"
        and parts[1].isdigit()
        and int(parts[1]) < len(sends)
    ):
        return _send_node(sends[int(parts[1])])
    return parts[-1] if parts else path


def status(views: Sequence[TaskView]) -> str:
    """done, paused (waiting for input, at a breakpoint, or stopped mid-run with work left)
    or failed (a node raised)."""
    if any(view.error for view in views if view.result is None):
        return "failed"
    # tasks that all finished still leave the superstep they belong to to be checkpointed
    return "paused" if views else "done"


@dataclass
class Entry:
    """A checkpoint as `history` lists it."""

    checkpoint_id: str
    parent_id: str | None
    step: int
    source: str
    next: tuple[str, ...]
    #: the nodes whose returns metadata.writes records
    writes: list[str]
    created_at: str
    #: metadata beyond source, step, parents and writes (user keys)
    extra: dict[str, Any]


def entry(saved: CheckpointTuple) -> Entry:
    metadata = saved.metadata
    writes = metadata.get("writes")
    return Entry(
        checkpoint_id=saved.checkpoint["id"],
        parent_id=CheckpointRef.from_config(saved.parent_config).checkpoint_id
        if saved.parent_config
        else None,
        step=int(metadata.get("step", 0)),
        source=str(metadata.get("source", "")),
        next=next_nodes(saved),
        writes=list(writes) if isinstance(writes, Mapping) else [],
        created_at=saved.checkpoint["ts"],
        extra={
            k: v for k, v in metadata.items() if k not in ("source", "step", "parents", "writes")
        },
    )


def history(
    saver: BaseSaver,
    ref: CheckpointRef,
    *,
    filter: Mapping[str, Any] | None = None,  # noqa: A002 - the saver's keyword
    before: CheckpointTuple | None = None,
    limit: int | None = None,
) -> list[Entry]:
    """Newest first, without reading any stored value.

    Raises:
        ThreadNotFoundError: the thread has no checkpoints.
    """
    found = saver.list_metadata(
        ref.to_config(), filter=filter, before=before.config if before else None, limit=limit
    )
    if not found and saver.get_tuple(ref.to_config()) is None:
        raise ThreadNotFoundError(ref.thread_id)
    return [entry(_with_sends(saver, saved)) for saved in found]


def _with_sends(saver: BaseSaver, saved: CheckpointTuple) -> CheckpointTuple:
    """The Sends a checkpoint schedules say what runs next; those too big to be kept inline
    (not loaded by `list_metadata`) are read, with that checkpoint alone."""
    if saved.checkpoint["channel_values"].get(TASKS) is not NOT_LOADED:
        return saved
    return saver.get_tuple(saved.config) or saved


@dataclass
class Detail:
    """One checkpoint in full, as `show` prints it."""

    entry: Entry
    thread_id: str
    checkpoint_ns: str
    values: dict[str, Any]
    #: metadata.writes with the values each node returned
    writes: dict[str, Any] | None
    tasks: list[TaskView]
    children: list[str]


def describe(saver: BaseSaver, saved: CheckpointTuple) -> Detail:
    ref = CheckpointRef.from_config(saved.config)
    writes = saved.metadata.get("writes")
    return Detail(
        entry=entry(saved),
        thread_id=ref.thread_id,
        checkpoint_ns=ref.checkpoint_ns,
        values=state_values(saved.checkpoint["channel_values"]),
        writes=dict(writes) if isinstance(writes, Mapping) else None,
        tasks=tasks(saved, saver.get_writes(saved.config)),
        children=saver.child_ids(saved.config),
    )


@dataclass
class ThreadRow:
    """One thread as `threads` lists it."""

    thread_id: str
    checkpoint_ns: str
    checkpoints: int
    last_step: int
    last_activity: str
    status: str
    #: bytes the thread takes in the file, where the saver can tell
    bytes: int | None


def threads(saver: BaseSaver, prefix: str = "", *, sizes: bool = False) -> list[ThreadRow]:
    """The threads whose id starts with `prefix`; `sizes` adds the bytes each takes, which
    reads all of every thread."""
    rows = []
    for summary in saver.list_threads(prefix):
        ref = CheckpointRef(summary.thread_id, summary.checkpoint_ns)
        latest = saver.get_tuple(ref.to_config())
        if latest is None:
            continue  # deleted since it was listed
        rows.append(
            ThreadRow(
                thread_id=summary.thread_id,
                checkpoint_ns=summary.checkpoint_ns,
                checkpoints=summary.checkpoints,
                last_step=int(latest.metadata.get("step", 0)),
                last_activity=summary.latest_ts,
                status=status(tasks(latest, saver.get_writes(latest.config))),
                bytes=saver.thread_bytes(ref.to_config()) if sizes else None,
            )
        )
    return rows
