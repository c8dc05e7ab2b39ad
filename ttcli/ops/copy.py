"""Copying checkpoints between threads or files, ids and pending writes included."""

from __future__ import annotations

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import CheckpointNotFoundError, CorruptValueError
from ttcli.ops.subgraphs import is_below
from ttcli.savers.base import BaseSaver, CheckpointTuple
from ttcli.savers.rules import copy_checkpoint

__all__ = [
    "copy_checkpoint",
    "copy_lineage",
    "lineage",
    "stored_keys",
    "thread_exists",
    "with_subgraphs",
]


def thread_exists(saver: BaseSaver, thread_id: str) -> bool:
    """Whether `saver` holds a checkpoint of `thread_id` in any namespace (a subgraph's
    too): a copy into it would merge two threads."""
    return any(found.thread_id == thread_id for found in saver.list_threads(thread_id))


def stored_keys(saver: BaseSaver, thread_id: str) -> set[tuple[str, str]]:
    """A thread's (namespace, checkpoint id) pairs in `saver`, every namespace's."""
    return {
        (found.checkpoint_ns, checkpoint_id)
        for found in saver.list_threads(thread_id)
        if found.thread_id == thread_id
        for checkpoint_id in saver.checkpoint_ids(
            CheckpointRef(thread_id, found.checkpoint_ns).to_config()
        )
    }


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


def with_subgraphs(saver: BaseSaver, config: RunnableConfig) -> list[CheckpointTuple]:
    """`lineage`, then the subgraphs its tasks ran (`subgraph_runs`)."""
    chain = lineage(saver, config)
    return chain + subgraph_runs(saver, CheckpointRef.from_config(config), chain)


def subgraph_runs(
    saver: BaseSaver, ref: CheckpointRef, chain: list[CheckpointTuple]
) -> list[CheckpointTuple]:
    """The checkpoints of the namespaces below `ref`'s (at any depth) whose `parents` name
    one of `chain`'s, each namespace's oldest first."""
    planned_at = {saved.checkpoint["id"] for saved in chain}
    found = []
    for summary in saver.list_threads(ref.thread_id):
        ns = summary.checkpoint_ns
        if summary.thread_id != ref.thread_id or not is_below(ns, ref.checkpoint_ns):
            continue
        for saved in reversed(list(saver.list(CheckpointRef(ref.thread_id, ns).to_config()))):
            if (saved.metadata.get("parents") or {}).get(ref.checkpoint_ns) in planned_at:
                found.append(saved)
    return found


def copy_lineage(saver: BaseSaver, config: RunnableConfig, to_thread: str) -> RunnableConfig:
    """Copy a checkpoint, its ancestors and the subgraphs their tasks ran (`with_subgraphs`:
    a task paused inside a subgraph resumes in the copy) into thread `to_thread` of the
    same saver.

    Every copy keeps its id, values and pending writes; its metadata gains `copied_from`,
    the source thread. Other branches and later checkpoints are not copied.

    Returns:
        The config of the copied checkpoint in the new thread.
    """
    source_ref = CheckpointRef.from_config(config)
    chain = lineage(saver, config)
    head = chain[-1].checkpoint["id"]
    for saved in chain + subgraph_runs(saver, source_ref, chain):
        ns = CheckpointRef.from_config(saved.config).checkpoint_ns
        copy_checkpoint(
            saver,
            saved,
            saver,
            CheckpointRef(to_thread, ns),
            extra_metadata={"copied_from": source_ref.thread_id},
        )
    return CheckpointRef(to_thread, source_ref.checkpoint_ns).at(head).to_config()
