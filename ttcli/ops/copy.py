"""Copying checkpoints between threads or files, ids and pending writes included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import CheckpointNotFoundError, CorruptValueError
from ttcli.savers.base import BaseSaver, CheckpointTuple


def lineage(saver: BaseSaver, config: RunnableConfig) -> list[CheckpointTuple]:
    """The checkpoint `config` names and its ancestors, oldest first (stops at a pruned one).

    Raises:
        CheckpointNotFoundError: the checkpoint does not exist.
    """
    ref = CheckpointRef.from_config(config)
    head = saver.get_tuple(config)
    if head is None:
        raise CheckpointNotFoundError(str(ref.checkpoint_id or "latest"), ref.thread_id)
    found = [head]
    seen = {head.checkpoint["id"]}  # a forged file's parents may loop
    while found[-1].parent_config is not None:
        parent = saver.get_tuple(found[-1].parent_config)
        if parent is None:
            break
        if parent.checkpoint["id"] in seen:
            raise CorruptValueError(
                f"checkpoint {parent.checkpoint['id']} of thread '{ref.thread_id}' is its own "
                "ancestor (its parents loop); `ttcli verify` lists what else is damaged"
            )
        seen.add(parent.checkpoint["id"])
        found.append(parent)
    return found[::-1]


def copy_checkpoint(
    source: BaseSaver,
    saved: CheckpointTuple,
    target: BaseSaver,
    target_ref: CheckpointRef,
    *,
    extra_metadata: dict[str, Any] | None = None,
) -> bool:
    """Store one checkpoint (same id, values, metadata, parent and pending writes) in
    `target` under `target_ref`'s thread. Returns False if it was there already; a copy
    interrupted halfway (say, between the checkpoint and its writes) completes when run again.
    """
    checkpoint_id = saved.checkpoint["id"]
    at = target_ref.at(checkpoint_id).to_config()
    copied = target.get_tuple(at) is None
    if copied:
        parent_id = (
            CheckpointRef.from_config(saved.parent_config).checkpoint_id
            if saved.parent_config
            else None
        )
        metadata = {**saved.metadata, **(extra_metadata or {})}
        # no change hints: the target compares channel versions with the parent it has
        target.put(target_ref.at(parent_id).to_config(), saved.checkpoint, metadata, {})
    present = {task_id for task_id, *_ in target.get_writes(at)}
    for task_id, task_path, writes in _by_task(source.get_writes(saved.config)):
        if task_id not in present:
            target.put_writes(at, writes, task_id, task_path)
    return copied


def copy_lineage(saver: BaseSaver, config: RunnableConfig, to_thread: str) -> RunnableConfig:
    """Copy a checkpoint and its ancestors into thread `to_thread` of the same saver.

    Every copy keeps its id, values and pending writes; its metadata gains `copied_from`,
    the source thread. Other branches and later checkpoints are not copied.

    Returns:
        The config of the copied checkpoint in the new thread.
    """
    source_ref = CheckpointRef.from_config(config)
    target_ref = CheckpointRef(to_thread, source_ref.checkpoint_ns)
    chain = lineage(saver, config)
    for saved in chain:
        copy_checkpoint(
            saver, saved, saver, target_ref, extra_metadata={"copied_from": source_ref.thread_id}
        )
    return target_ref.at(chain[-1].checkpoint["id"]).to_config()


def _by_task(
    writes: list[tuple[str, str, str, Any]],
) -> Iterator[tuple[str, str, list[tuple[str, Any]]]]:
    grouped: dict[str, tuple[str, list[tuple[str, Any]]]] = {}
    for task_id, task_path, channel, value in writes:
        grouped.setdefault(task_id, (task_path, []))[1].append((channel, value))
    for task_id, (task_path, task_writes) in grouped.items():
        yield task_id, task_path, task_writes
