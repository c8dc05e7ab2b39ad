"""A fork checkpoint: a copy of a past checkpoint as the new head of its thread, or its
lineage copied into a new thread."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import InputError
from ttcli.ops.copy import copy_lineage, stored_keys, thread_exists, with_subgraphs
from ttcli.savers.base import BaseSaver, CheckpointTuple
from ttcli.uuid6 import id_time, new_id

#: thread info key: when `fork --to-thread` made the thread (ISO time, UTC)
COPIED_AT = "copied_at"


def fork(saver: BaseSaver, saved: CheckpointTuple) -> RunnableConfig:
    """Store a `fork` child of `saved` with the same state: a new branch head.

    It is what replay writes first (LangGraph's time travel), without running anything:
    the thread's next `invoke(None, thread)` runs what `saved` had scheduled, on the new
    branch, and the old branch stays as it was.
    """
    step = int(saved.metadata.get("step", -1)) + 1
    checkpoint = copy.deepcopy(saved.checkpoint)
    # after the thread's newest too, so that the fork is its latest checkpoint
    newest = saver.checkpoint_ids(saver.ref(saved.config).at(None).to_config(), limit=1)
    checkpoint["id"] = new_id(step, after=max([saved.checkpoint["id"], *newest]))
    checkpoint["ts"] = id_time(checkpoint["id"]).isoformat()
    metadata = {
        "source": "fork",
        "step": step,
        "parents": saved.metadata.get("parents", {}),
        "writes": None,
    }
    for key, value in saved.metadata.items():
        if key not in metadata and key != "copied_from":
            metadata[key] = value
    return saver.put(saved.config, checkpoint, metadata, {})


def fork_to_thread(
    saver: BaseSaver, saved: CheckpointTuple, to_thread: str, *, now: datetime
) -> RunnableConfig:
    """Copy `saved` and its ancestors into the new thread `to_thread`, which remembers the
    source's graph and the time of the copy (its last activity: the copied checkpoints keep
    their ids and times, so without it `prune --idle` could delete a copy made a minute ago).

    Raises:
        InputError: `to_thread` already exists, in any namespace (a copy never merges into
            a thread; nothing is written).
    """
    source = CheckpointRef.from_config(saved.config).thread_id
    taken = InputError(
        f"thread '{to_thread}' already exists: --to-thread makes a new thread; pick another id"
    )
    with saver.batch():  # the whole copy or none of it
        if thread_exists(saver, to_thread):
            raise taken
        made = copy_lineage(saver, saved.config, to_thread)
        # a fork by another process may have written the thread since the check (PostgreSQL
        # checks and writes concurrently): the thread must hold this copy and nothing else
        copies = {(CheckpointRef.from_config(c.config).checkpoint_ns, c.checkpoint["id"])
                  for c in with_subgraphs(saver, made)}  # fmt: skip
        if stored_keys(saver, to_thread) != copies:
            raise taken
        info = {k: v for k, v in saver.get_thread_info(source).items() if k == "target"}
        saver.set_thread_info(to_thread, {**info, COPIED_AT: now.isoformat()})
    return made


def last_activity(latest_ts: str, info: Mapping[str, Any]) -> str:
    """A thread's last activity: its newest checkpoint's time, or when it was copied."""
    copied = info.get(COPIED_AT)
    return max(latest_ts, copied) if isinstance(copied, str) else latest_ts
