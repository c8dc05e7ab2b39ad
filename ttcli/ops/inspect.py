"""Reading a thread without its graph: what `history`, `show`, `threads` and `tree` print.

The command line never imports an application's graph to read a file (a file could name any
module). Everything here comes from what the saver stores: a checkpoint's triggers say which
nodes are due next, and its pending writes say what each task did.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import ThreadNotFoundError
from ttcli.ops import paths
from ttcli.savers.base import NOT_LOADED, BaseSaver, CheckpointTuple, TaskWrite, ThreadSummary

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
    sent = [_send_node(send) for send in values.get("__pregel_tasks") or ()]
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
    # a deferred node's trigger is stored as [value, finished]: due only once finished
    deferred = isinstance(value, list | tuple) and len(value) == 2 and isinstance(value[1], bool)
    if deferred and not value[1]:
        return None
    if channel.startswith("branch:to:"):
        return channel.removeprefix("branch:to:")
    if channel.startswith("join:"):
        _, sources, node = channel.split(":", 2)
        seen = value[0] if deferred else value
        return node if set(seen or ()) == set(sources.split("+")) else None
    return None


def _send_node(send: Any) -> str:
    # a Send decodes as itself where the runtime is loaded, and as marked data elsewhere
    node = getattr(send, "node", None)
    if node is None and isinstance(send, Mapping):
        node = (send.get("data") or {}).get("node")
    return str(node)


@dataclass(frozen=True, slots=True)
class Asked:
    """An interrupt as people and scripts see it: what it asks, and the id `resume --id`
    takes."""

    id: str | None
    value: Any


def asked(stored: Any) -> Asked:
    """An interrupt read back: an `Interrupt` where the runtime is loaded, marked data
    (`{"$type": ..., "data": {"value": ..., "id": ...}}`) where it is not."""
    if isinstance(stored, Mapping):
        data = stored.get("data")
        fields = data if isinstance(data, Mapping) else stored
        found = fields.get("id")
        return Asked(None if found is None else str(found), fields.get("value"))
    found = getattr(stored, "id", None)
    return Asked(None if found is None else str(found), getattr(stored, "value", stored))


@dataclass(frozen=True, slots=True)
class Waiting:
    """A task a paused thread waits on: for answers to its interrupts, or (none asked) to be
    run on after a breakpoint or a stop."""

    node: str
    interrupts: list[Asked]


def waiting(views: Sequence[TaskView]) -> list[Waiting]:
    """The tasks of a checkpoint that have not finished, with what they ask."""
    return [
        Waiting(t.name, t.interrupts if t.waiting else [])
        for t in views
        if t.result is None and t.error is None
    ]


@dataclass
class TaskView:
    """One task planned at a checkpoint, and what its pending writes say it did."""

    id: str
    name: str
    path: str
    #: state keys it wrote, or None if it has not finished
    result: dict[str, Any] | None = None
    error: str | None = None
    interrupts: list[Asked] = field(default_factory=list)
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
        latest = self.interrupts[-1].id
        return latest == interrupt_id(self.name, self.id, len(self.answers))


def tasks(saved: CheckpointTuple, writes: Sequence[TaskWrite]) -> list[TaskView]:
    """The tasks of a checkpoint: those that wrote something, then those still due."""
    sends = saved.checkpoint["channel_values"].get("__pregel_tasks") or []
    found: dict[str, TaskView] = {}
    for task_id, path, channel, value in writes:
        if task_id == "00000000-0000-0000-0000-000000000000":
            continue  # a Command's input update, not a task
        view = found.setdefault(task_id, TaskView(task_id, task_name(path, sends), path))
        if channel == "__error__":
            view.error = str(value)
        elif channel == "__interrupt__":
            view.interrupts = [asked(item) for item in value]
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


def task_name(path: str, sends: Sequence[Any]) -> str:
    """The node a task runs, from its path: a pull task names it, a push task indexes the
    checkpoint's Sends (`sends`)."""
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
    where: Mapping[str, Any] | None = None,
) -> list[Entry]:
    """Newest first, without reading any stored value unless `where` or a filter on what
    nodes wrote asks about them. A filter `writes=NODE` matches the checkpoints NODE wrote,
    alone or with other nodes, and `writes=[NODE, ...]` those these nodes wrote and no other
    (names only: nothing is read); `writes.NODE.KEY=VALUE` looks at what NODE wrote. `where`
    maps paths into the state (`order.items.0`) to their values.

    Raises:
        ThreadNotFoundError: the thread has no checkpoints.
        InputError: a `where` path that is not one.
    """
    wanted = dict(filter or {})
    checks: list[Callable[[CheckpointTuple], bool]] = []
    if (by_names := _writers(wanted.get("writes"))) is not None:
        del wanted["writes"]
        checks.append(by_names)
    if where:
        [paths.parse(path) for path in where]  # a bad path fails before anything is read
        checks.append(
            lambda saved: paths.matches(state_values(saved.checkpoint["channel_values"]), where)
        )
    found = select(
        saver.list if where else saver.list_metadata, ref, wanted, before, limit,
        (lambda saved: all(check(saved) for check in checks)) if checks else None,
    )  # fmt: skip
    if not found and saver.get_tuple(ref.to_config()) is None:
        raise ThreadNotFoundError(ref.thread_id)
    return [entry(_with_triggers(saver, saved)) for saved in found]


def _writers(value: Any) -> Callable[[CheckpointTuple], bool] | None:
    """A filter `writes=NODE` or `writes=[NODE, ...]` as a check of the names of the nodes
    that wrote; None for another value (a filter on what they wrote, left to the saver)."""
    if isinstance(value, str):
        return lambda saved: value in (saved.metadata.get("writes") or {})
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = set(value)
        return lambda saved: set(saved.metadata.get("writes") or {}) == names
    return None


Lister = Callable[..., Iterable[CheckpointTuple]]
PAGE = 200  # checkpoints read at a time when a condition the saver cannot test is checked


def select(
    lister: Lister,
    ref: CheckpointRef,
    filter: Mapping[str, Any],  # noqa: A002
    before: CheckpointTuple | None,
    limit: int | None,
    keep: Callable[[CheckpointTuple], bool] | None,
) -> list[CheckpointTuple]:
    """What `lister` (a saver's `list` or `list_metadata`) finds, newest first, narrowed by
    `keep`: page by page, so that `limit` matches end the reading early."""
    cursor = before.config if before else None
    if keep is None:
        return list(lister(ref.to_config(), filter=filter, before=cursor, limit=limit))
    found: list[CheckpointTuple] = []
    while limit is None or len(found) < limit:
        page = list(lister(ref.to_config(), filter=filter, before=cursor, limit=PAGE))
        found += [saved for saved in page if keep(saved)]
        if len(page) < PAGE:
            break
        cursor = page[-1].config
    return found[:limit]


def _with_triggers(saver: BaseSaver, saved: CheckpointTuple) -> CheckpointTuple:
    """`saved` itself, or read in full when a value that says what runs next was too big
    to be read with the metadata (the Sends of a fan-out): only those checkpoints pay."""
    values = saved.checkpoint["channel_values"]
    if not any(v is NOT_LOADED for k, v in values.items() if is_internal(k)):
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


#: thread info key: the graph's state keys in the order its schema declares them
STATE_KEYS = "state_keys"


def in_state_order(values: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """`values` in the order of the state's keys (as `ttcli run` recorded them), any others
    after them in stored order."""
    ordered = {key: values[key] for key in keys if key in values}
    return ordered | {k: v for k, v in values.items() if k not in ordered}


def replay_forks(saver: BaseSaver, saved: CheckpointTuple) -> bool:
    """Whether replaying `saved` writes a fork first: always, except for an `update` or
    `fork` checkpoint that is its thread's head, which runs on as it is (as in LangGraph)."""
    if saved.metadata.get("source") not in ("update", "fork"):
        return True
    latest = saver.get_tuple(CheckpointRef.from_config(saved.config).at(None).to_config())
    return latest is None or latest.checkpoint["id"] != saved.checkpoint["id"]


def describe(saver: BaseSaver, saved: CheckpointTuple) -> Detail:
    ref = CheckpointRef.from_config(saved.config)
    writes = saved.metadata.get("writes")
    return Detail(
        entry=entry(saved),
        thread_id=ref.thread_id,
        checkpoint_ns=ref.checkpoint_ns,
        values=in_state_order(
            state_values(saved.checkpoint["channel_values"]),
            saver.get_thread_info(ref.thread_id).get(STATE_KEYS) or (),
        ),
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
    #: done, paused, failed, or interrupted (Ctrl-C stopped its last run)
    status: str
    #: bytes the thread takes in the file, where the saver can tell
    bytes: int | None


def threads_with_prefix(saver: BaseSaver, prefix: str) -> list[ThreadSummary]:
    """The saver's threads whose id starts with `prefix`. A prefix ending in the last code
    point (U+10FFFF) has no upper bound for a range: the saver is asked for what it starts
    with up to there, and the rest is checked here."""
    asked = prefix.rstrip(chr(sys.maxunicode))
    found = saver.list_threads(asked)
    return [t for t in found if t.thread_id.startswith(prefix)]


#: thread info key: the checkpoint at which Ctrl-C stopped the thread's last run
INTERRUPTED_AT = "interrupted_at"


def mark_interrupted(saver: BaseSaver, ref: CheckpointRef) -> CheckpointTuple | None:
    """Record that a run of the thread was stopped (Ctrl-C) at its latest checkpoint, so that
    `threads` says `interrupted` rather than `paused` (which a person's answer ends) until
    the thread moves on. Returns that checkpoint (None: the run stopped before the first)."""
    latest = saver.get_tuple(ref.to_config())
    if latest is not None:
        saver.set_thread_info(ref.thread_id, {INTERRUPTED_AT: latest.checkpoint["id"]})
    return latest


def threads(saver: BaseSaver, prefix: str = "", *, sizes: bool = False) -> list[ThreadRow]:
    """The threads whose id starts with `prefix`; `sizes` adds the bytes each takes, which
    reads all of every thread."""
    rows = []
    for summary in threads_with_prefix(saver, prefix):
        ref = CheckpointRef(summary.thread_id, summary.checkpoint_ns)
        latest = saver.get_tuple(ref.to_config())
        if latest is None:
            continue  # deleted since it was listed
        info = saver.get_thread_info(summary.thread_id)
        found = status(tasks(latest, saver.get_writes(latest.config)))
        if found == "paused" and info.get(INTERRUPTED_AT) == latest.checkpoint["id"]:
            found = "interrupted"
        rows.append(
            ThreadRow(
                thread_id=summary.thread_id,
                checkpoint_ns=summary.checkpoint_ns,
                checkpoints=summary.checkpoints,
                last_step=int(latest.metadata.get("step", 0)),
                last_activity=_last_activity(summary.latest_ts, info),
                status=found,
                bytes=saver.thread_bytes(ref.to_config()) if sizes else None,
            )
        )
    return rows


def _last_activity(latest_ts: str, info: Mapping[str, Any]) -> str:
    from ttcli.ops.fork import last_activity  # here: `history` and `show` never load forks

    return last_activity(latest_ts, info)
