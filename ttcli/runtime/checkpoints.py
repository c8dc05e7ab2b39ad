"""Making checkpoints and their metadata from the live channels of a run."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ttcli.configs import RunnableConfig
from ttcli.graph.channels import MISSING, Channel
from ttcli.savers.base import Checkpoint
from ttcli.uuid6 import id_time, new_id

# configurable keys that describe where a checkpoint is, not who asked for it
_NOT_METADATA = frozenset(
    {
        "thread_id",
        "checkpoint_id",
        "checkpoint_ns",
        "checkpoint_map",
        "langgraph_step",
        "langgraph_node",
        "langgraph_triggers",
        "langgraph_path",
        "langgraph_checkpoint_ns",
    }
)


def utc_now() -> str:
    return datetime.now(UTC).isoformat()


def new_checkpoint(
    previous: Checkpoint,
    channels: Mapping[str, Channel],
    step: int,
    updated: set[str] | None,
    *,
    latest: str | None = None,
) -> Checkpoint:
    """A checkpoint of the channels as they are now, with a fresh id that sorts after its
    parent `previous` and after the thread's `latest` checkpoint, whatever the clocks."""
    values = {}
    for name, channel in channels.items():
        value = channel.checkpoint()
        if value is not MISSING:
            values[name] = value
    checkpoint_id = new_id(step, after=max(previous["id"], latest or ""))
    return Checkpoint(
        v=1,
        id=checkpoint_id,
        ts=id_time(checkpoint_id).isoformat(),  # the id carries its creation time
        channel_values=values,
        channel_versions=dict(previous["channel_versions"]),
        versions_seen={node: dict(seen) for node, seen in previous["versions_seen"].items()},
        updated_channels=sorted(updated) if updated is not None else None,
    )


def checkpoint_metadata(
    config: RunnableConfig, source: str, step: int, writes: dict[str, Any] | None
) -> dict[str, Any]:
    """source, step, parents, writes, then the caller's scalar config keys (LangGraph's rule)."""
    metadata: dict[str, Any] = {"source": source, "step": step, "parents": {}, "writes": writes}
    for mapping in (config.get("metadata") or {}, config.get("configurable") or {}):
        for key, value in mapping.items():
            if (
                isinstance(value, str | int | float | bool)
                and not key.startswith("__")
                and key not in _NOT_METADATA
                and key not in metadata
            ):
                metadata[key] = value.replace("\x00", "") if isinstance(value, str) else value
    return metadata


def new_versions(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Channels whose version moved between two checkpoints."""
    return {chan: version for chan, version in after.items() if before.get(chan) != version}
