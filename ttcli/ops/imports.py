"""`ttcli import`: copy every thread of a LangGraph SqliteSaver file into a ttcli database,
through the saver contract (`put`, `put_writes`), one batch per thread."""

from __future__ import annotations

from dataclasses import dataclass

from ttcli.configs import CheckpointRef
from ttcli.errors import ConfigError
from ttcli.ops.langgraph_file import LangGraphFile, Stored
from ttcli.savers.base import BaseSaver, Checkpoint


@dataclass
class ImportSummary:
    threads: int = 0
    namespaces: int = 0
    checkpoints: int = 0
    #: the LangGraph file's size (with its WAL)
    bytes_before: int = 0
    #: what the imported threads take in the ttcli database
    bytes_after: int = 0


def import_langgraph(path: str, saver: BaseSaver) -> ImportSummary:
    """Copy every thread (all namespaces) of the LangGraph file at `path` into `saver`.

    Every thread is decoded in full before any of it is written, and written in one batch,
    so a value that does not decode stops the import without leaving half a thread.

    Raises:
        ConfigError: a thread of the file is already in `saver` (nothing is written).
        CorruptValueError: a value does not decode (threads before it stay imported).
    """
    source = LangGraphFile(path)
    try:
        thread_ids = source.thread_ids()
        present = [t for t in thread_ids if _has_thread(saver, t)]
        if present:
            raise ConfigError(
                f"thread '{present[0]}' is already in the database ({len(present)} of the "
                "file's threads are): import into another file, or delete them first"
            )
        summary = ImportSummary(bytes_before=source.size)
        for thread_id in thread_ids:
            stored = list(source.thread(thread_id))
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


def _has_thread(saver: BaseSaver, thread_id: str) -> bool:
    return any(found.thread_id == thread_id for found in saver.list_threads(thread_id))


def _put(saver: BaseSaver, thread_id: str, saved: Stored) -> None:
    ref = CheckpointRef(thread_id, saved.ns)
    checkpoint = Checkpoint(**saved.checkpoint)  # type: ignore[typeddict-item]
    saver.put(ref.at(saved.parent_id).to_config(), checkpoint, saved.metadata, {})
    at = ref.at(checkpoint["id"]).to_config()
    for task_id, (task_path, writes) in saved.writes.items():
        saver.put_writes(at, writes, task_id, task_path)
