"""`ttcli import`: copy every thread of a LangGraph SqliteSaver file into a ttcli database,
through the saver contract (`put`, `put_writes`), one batch per thread.

LangGraph 1.x no longer records `writes` (what each node returned) in a checkpoint's
metadata; the import derives it from the pending writes, as ttcli's runtime records it: an
input checkpoint's is the `__start__` task's channels, any other's the channels each task
finished writing at its parent, by node (a later task of the same node wins, as in the
runtime's `{name: output}`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import ConfigError
from ttcli.ops.inspect import task_name
from ttcli.ops.langgraph_file import LangGraphFile, Stored
from ttcli.savers.base import BaseSaver, Checkpoint
from ttcli.savers.memory import InMemorySaver


@dataclass
class ImportSummary:
    threads: int = 0
    namespaces: int = 0
    checkpoints: int = 0
    #: the LangGraph file's size (with its WAL)
    bytes_before: int = 0
    #: what the imported threads take in the ttcli database
    bytes_after: int = 0


def import_langgraph(path: str, saver: BaseSaver, thread_id: str | None = None) -> ImportSummary:
    """Copy every thread (all namespaces) of the LangGraph file at `path` into `saver`, or
    only `thread_id`'s.

    Every thread is decoded in full before any of it is written, and written in one batch,
    so a value that does not decode stops the import without leaving half a thread.

    Raises:
        ConfigError: a thread of the file is already in `saver` (nothing is written).
        CorruptValueError: a value does not decode (threads before it stay imported).
    """
    source = LangGraphFile(path)
    try:
        thread_ids = [t for t in source.thread_ids() if thread_id in (None, t)]
        present = [t for t in thread_ids if _has_thread(saver, t)]
        if present:
            raise ConfigError(
                f"thread '{present[0]}' is already in the database ({len(present)} of the "
                "file's threads are): import into another file, or delete them first"
            )
        summary = ImportSummary(bytes_before=source.size)
        for thread_id in thread_ids:
            stored = with_writes(source.thread(thread_id))
            with saver.batch():
                for saved in stored:
                    _put(saver, thread_id, saved)
            summary.threads += 1
            summary.checkpoints += len(stored)
            namespaces = sorted({saved.ns for saved in stored})
            summary.namespaces += len(namespaces)
            for ns in namespaces:
                taken = saver.thread_bytes(CheckpointRef(thread_id, ns).to_config())
                summary.bytes_after += taken or 0
        return summary
    finally:
        source.close()


#: channels a task writes that are not its output: control, and the edges it takes
_NOT_OUTPUT = ("__", "branch:")
_START = "__start__"
#: what a task that raised or paused writes (a task that sent only Sends did finish)
_UNFINISHED = frozenset({"__error__", "__interrupt__", "__resume__"})


def with_writes(thread: Iterable[Stored]) -> list[Stored]:
    """A thread's checkpoints, each with `writes` in its metadata (derived from the pending
    writes when LangGraph did not record it). Parents come before their children."""
    stored = list(thread)
    by_id = {(saved.ns, saved.checkpoint["id"]): saved for saved in stored}
    for saved in stored:
        if "writes" in saved.metadata:  # recorded by LangGraph before 1.0
            continue
        if saved.metadata.get("source") == "input":
            outputs = _outputs(saved, start=True)
        else:
            parent = by_id.get((saved.ns, saved.parent_id))
            outputs = _outputs(parent, start=False) if parent is not None else {}
        saved.metadata["writes"] = outputs or None
    return stored


def _outputs(saved: Stored, start: bool) -> dict[str, Any]:
    """{node: {channel: value}} for the tasks that finished at `saved` (those that only
    raised or paused wrote no output): the `__start__` task's if `start`, else all others."""
    sends = saved.checkpoint["channel_values"].get("__pregel_tasks") or []
    found: dict[str, Any] = {}
    for task_path, writes in saved.writes.values():
        name = task_name(task_path, sends)
        if not task_path or (name == _START) != start:
            continue  # a Command's input (no task path), or a task not asked for
        if all(channel in _UNFINISHED for channel, _ in writes):
            continue
        found[name] = {c: v for c, v in writes if not c.startswith(_NOT_OUTPUT)}
    return found


def read_langgraph(path: str, thread_id: str | None = None) -> BaseSaver:
    """Every thread of the LangGraph file at `path` (or only `thread_id`), decoded into
    memory as `import` would copy them: the reading commands work on a LangGraph file
    without changing it.

    Raises:
        CorruptValueError: a value does not decode.
    """
    saver = InMemorySaver()
    import_langgraph(path, saver, thread_id)
    return saver


def _has_thread(saver: BaseSaver, thread_id: str) -> bool:
    return any(found.thread_id == thread_id for found in saver.list_threads(thread_id))


def _put(saver: BaseSaver, thread_id: str, saved: Stored) -> None:
    ref = CheckpointRef(thread_id, saved.ns)
    checkpoint = Checkpoint(**saved.checkpoint)  # type: ignore[typeddict-item]
    saver.put(ref.at(saved.parent_id).to_config(), checkpoint, saved.metadata, {})
    at = ref.at(checkpoint["id"]).to_config()
    for task_id, (task_path, writes) in saved.writes.items():
        saver.put_writes(at, writes, task_id, task_path)
