"""A fork checkpoint: a copy of a past checkpoint as the new head of its thread."""

from __future__ import annotations

import copy

from ttcli.configs import RunnableConfig
from ttcli.savers.base import BaseSaver, CheckpointTuple
from ttcli.uuid6 import id_time, new_id


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
