"""`ttcli import`: copy every thread of another database into a ttcli database, through the
saver contract (`put`, `put_writes`), one batch per thread.

The source is a LangGraph SqliteSaver file, a LangGraph PostgresSaver database, or another
ttcli database (a SQLite file or a PostgreSQL DSN): threads move between the backends.

LangGraph 1.x no longer records `writes` (what each node returned) in a checkpoint's
metadata; the import derives it from the pending writes, as ttcli's runtime records it: an
input checkpoint's is the `__start__` task's channels, any other's the channels each task
finished writing at its parent, by node (a later task of the same node wins, as in the
runtime's `{name: output}`).
"""

from __future__ import annotations

import builtins
import sqlite3
import stat
from collections import Counter
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ttcli.configs import MAX_TEXT_BYTES, CheckpointRef, check_text
from ttcli.errors import (
    ConfigError,
    CorruptValueError,
    NotFoundError,
    SerializationError,
    TtcliError,
)
from ttcli.ops.copy import thread_exists
from ttcli.ops.inspect import task_name
from ttcli.ops.langgraph_file import LangGraphFile, Stored, is_langgraph_file, read_only_uri
from ttcli.ops.targets import anchored
from ttcli.savers.base import BaseSaver, Checkpoint
from ttcli.savers.locate import file_stat, is_dsn, open_saver, refuse_other_urls
from ttcli.savers.memory import InMemorySaver
from ttcli.savers.rules import copy_checkpoint
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT
from ttcli.savers.sqlite.errors import raise_if_busy

if TYPE_CHECKING:
    from ttcli.ops.langgraph_postgres import LangGraphPostgres


@dataclass
class ImportSummary:
    threads: int = 0
    namespaces: int = 0
    checkpoints: int = 0
    #: what the source takes (a LangGraph file with its WAL, LangGraph's tables, or the
    #: imported threads of a ttcli database)
    bytes_before: int = 0
    #: what the imported threads take in the ttcli database
    bytes_after: int = 0
    #: threads the database held already, just as the source has them (an earlier import)
    skipped: int = 0


class Source(Protocol):
    """Threads to import, each read whole before any of it is written."""

    def thread_ids(self) -> builtins.list[str]: ...

    def bytes_of(self, thread_ids: builtins.list[str]) -> int:
        """What the source takes: a LangGraph database whole (its file with its WAL, or its
        tables), a ttcli database the threads named."""
        ...

    def copy(self, thread_id: str, target: BaseSaver) -> builtins.list[str]:
        """Write the thread into `target` (in its batch); returns its namespaces."""
        ...

    def close(self) -> None: ...


class LangGraphSource:
    """A LangGraph database: its checkpoints decoded into inert data, then stored."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        try:  # read on opening: a source whose thread ids do not read creates no target
            self.ids = list(reader.thread_ids())
            for thread_id in self.ids:
                _storable(thread_id, reader.path)
        except BaseException:
            reader.close()
            raise

    def thread_ids(self) -> builtins.list[str]:
        return self.ids

    def bytes_of(self, thread_ids: builtins.list[str]) -> int:
        return int(self.reader.size)

    def copy(self, thread_id: str, target: BaseSaver) -> builtins.list[str]:
        stored = with_writes(self.reader.thread(thread_id))  # decoded before a write
        ids = Counter((saved.ns, saved.checkpoint["id"]) for saved in stored)
        twice = next((key for key, times in ids.items() if times > 1), None)
        if twice is not None:  # LangGraph compares ids as text: 'A...' and 'a...' are two
            raise CorruptValueError(
                f"thread '{thread_id}' in {self.reader.path} holds checkpoint {twice[1]} "
                "twice, its id spelled two ways (upper and lower case, or braced): delete one "
                "of the two rows, then run again"
            )
        with target.batch():
            for saved in stored:
                try:
                    _put(target, thread_id, saved)
                except (ConfigError, SerializationError) as exc:  # what LangGraph never writes
                    raise CorruptValueError(
                        f"checkpoint {saved.checkpoint['id']} of thread '{thread_id}' in "
                        f"{self.reader.path}: {exc}"
                    ) from None
        return sorted({saved.ns for saved in stored})

    def close(self) -> None:
        self.reader.close()


def _storable(thread_id: str, path: str) -> None:
    """Raises: CorruptValueError: a thread id no ttcli database stores (LangGraph's have no
    limit): named before anything is imported."""
    try:
        check_text(thread_id, "thread id")
    except ConfigError:
        raise CorruptValueError(
            f"{path} holds thread {thread_id[:20]!r}... of {len(thread_id.encode()):,} bytes, "
            f"over the {MAX_TEXT_BYTES:,} a ttcli database stores: nothing was imported"
        ) from None


class TtcliSource:
    """Another ttcli database: checkpoints copied as the archive copies them, and what is
    recorded with each thread (its graph TARGET, whole)."""

    def __init__(self, saver: SqlSaver, folder: Path | None) -> None:
        self.saver, self.folder = saver, folder

    def thread_ids(self) -> builtins.list[str]:
        return sorted({summary.thread_id for summary in self.saver.list_threads()})

    def bytes_of(self, thread_ids: builtins.list[str]) -> int:
        wanted = set(thread_ids)
        return sum(
            self.saver.thread_bytes(CheckpointRef(s.thread_id, s.checkpoint_ns).to_config()) or 0
            for s in self.saver.list_threads()
            if s.thread_id in wanted
        )

    def copy(self, thread_id: str, target: BaseSaver) -> builtins.list[str]:
        namespaces = [s.checkpoint_ns for s in self.saver.list_threads(thread_id)
                      if s.thread_id == thread_id]  # fmt: skip
        with target.batch():
            for ns in namespaces:
                ref = CheckpointRef(thread_id, ns)
                for saved in reversed(builtins.list(self.saver.list(ref.to_config()))):
                    copy_checkpoint(self.saver, saved, target, ref)
            info = self.saver.get_thread_info(thread_id)
            if info:
                target.set_thread_info(thread_id, anchored(info, self.folder))
        return namespaces

    def close(self) -> None:
        self.saver.close()


def open_source(source: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Source:
    """The database at `source`, opened to be read only.

    Raises:
        NotFoundError: no file there. DatabaseBusyError: a writer holds it locked past
            `busy_timeout`. StorageError: a database neither LangGraph's nor ttcli's, or
            one that cannot be opened.
    """
    refuse_other_urls(source)
    if is_dsn(source):
        return _postgres_source(source)
    found = file_stat(source)
    if found is None or not stat.S_ISREG(found.st_mode):
        raise NotFoundError(f"no database at {source}")
    if _is_ttcli_file(source, busy_timeout):
        return TtcliSource(
            open_saver(source, busy_timeout=busy_timeout, readonly=True),
            Path(source).resolve().parent,
        )
    return LangGraphSource(LangGraphFile(source, busy_timeout))


def _is_ttcli_file(path: str, busy_timeout: float) -> bool:
    try:
        with closing(sqlite3.connect(read_only_uri(path), timeout=busy_timeout, uri=True)) as c:
            tables = {row[0] for row in c.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error as exc:
        raise_if_busy(exc, path)
        return False
    return {"threads", "blobs", "names"} <= tables


def _postgres_source(dsn: str) -> Source:
    try:
        found = _langgraph_postgres(dsn)
    except ImportError:
        return TtcliSource(open_saver(dsn, readonly=True), None)  # names the extra to install
    return LangGraphSource(found) if found else TtcliSource(open_saver(dsn, readonly=True), None)


def _langgraph_postgres(dsn: str) -> LangGraphPostgres | None:
    """The LangGraph PostgresSaver database at `dsn`, or None when its schema holds none.

    Raises:
        ImportError: the `postgres` extra is not installed.
    """
    import psycopg

    from ttcli.ops.langgraph_postgres import LangGraphPostgres, is_langgraph_postgres
    from ttcli.savers.postgres.connection import display_name
    from ttcli.savers.postgres.errors import storage_error

    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise storage_error(exc, display_name(dsn), connecting=True) from None
    if is_langgraph_postgres(conn):
        return LangGraphPostgres(conn, dsn)
    conn.close()
    return None


def langgraph_kind(db: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> str | None:
    """Which LangGraph database `db` names ("SqliteSaver file", "PostgresSaver database"), or
    None: the reading commands read those into memory, the writing ones refuse them."""
    if not is_dsn(db):
        return "SqliteSaver file" if is_langgraph_file(db, busy_timeout) else None
    try:
        found = _langgraph_postgres(db)
    except (ImportError, TtcliError):
        return None
    if found is None:
        return None
    found.close()
    return "PostgresSaver database"


def import_threads(opened: Source, saver: BaseSaver, thread_id: str | None = None) -> ImportSummary:
    """Copy every thread (all namespaces) of the opened database (`open_source`) into
    `saver`, or only `thread_id`'s. The caller closes `opened`.

    Every thread is read in full before any of it is written, and written in one batch, so a
    value that does not decode stops the import without leaving half a thread.

    Raises:
        ConfigError: `opened` is `saver`'s own database, or one of its threads is already in
            `saver` otherwise than the source has it (nothing is written). A thread there
            just as the source has it (checkpoints, metadata, pending writes) is skipped: an
            interrupted import goes on where it stopped.
        CorruptValueError: a value does not decode (threads before it stay imported).
    """
    if isinstance(opened, TtcliSource) and opened.saver.stores_in(saver):
        raise ConfigError(f"{opened.saver.path} is the database being imported into: nothing to do")
    thread_ids = [t for t in opened.thread_ids() if thread_id in (None, t)]
    present = [t for t in thread_ids if thread_exists(saver, t)]
    done = {t for t in present if _imported_before(opened, saver, t)}
    differing = [t for t in present if t not in done]
    if differing:
        raise ConfigError(
            f"thread '{differing[0]}' is already in the database, not as the source has it "
            f"({len(differing)} of the source's threads are): import into another database, "
            "or delete them first"
        )
    summary = ImportSummary(skipped=len(done))
    thread_ids = [t for t in thread_ids if t not in done]
    for thread_id in thread_ids:
        namespaces = opened.copy(thread_id, saver)
        summary.threads += 1
        summary.namespaces += len(namespaces)
        for ns in namespaces:
            config = CheckpointRef(thread_id, ns).to_config()
            summary.checkpoints += saver.count_checkpoints(config)
            summary.bytes_after += saver.thread_bytes(config) or 0
    summary.bytes_before = opened.bytes_of(thread_ids)
    return summary


#: channels a task writes that are not its output: control, and the edges it takes
_NOT_OUTPUT = ("__", "branch:")
_START = "__start__"
#: what a task that raised or paused writes (a task that sent only Sends did finish)
_UNFINISHED = frozenset({"__error__", "__interrupt__", "__resume__"})


def with_writes(thread: Iterable[Stored]) -> list[Stored]:
    """A thread's checkpoints, each with `writes` in its metadata as ttcli's runtime records
    it, derived from the pending writes: an input checkpoint's from its `__start__` task's,
    any other's from its parent's tasks'. What LangGraph before 1.0 recorded there stands
    where nothing is derived: an input checkpoint's raw input (any value, or a map of its
    channels) put under `__start__`, another's `{node: output}`. (In 1.0 and later, `writes`
    in the metadata can only be a key of the caller's config.) Parents come before their
    children."""
    stored = list(thread)
    by_id = {(saved.ns, saved.checkpoint["id"]): saved for saved in stored}
    for saved in stored:
        recorded = saved.metadata.get("writes")
        if saved.metadata.get("source") == "input":
            outputs = _outputs(saved, start=True)
            if not any(outputs.values()) and recorded is not None:
                outputs = recorded if _is_start(recorded) else {_START: recorded}
        elif isinstance(recorded, dict) or (recorded is None and "writes" in saved.metadata):
            continue  # recorded by LangGraph before 1.0
        else:
            parent = by_id.get((saved.ns, saved.parent_id))
            outputs = _outputs(parent, start=False) if parent is not None else {}
        saved.metadata["writes"] = outputs or None
    return stored


def _is_start(recorded: Any) -> bool:
    return isinstance(recorded, dict) and set(recorded) == {_START}


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


def read_langgraph(
    path: str, thread_id: str | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> BaseSaver:
    """Every thread of the LangGraph file at `path` (or only `thread_id`), decoded into
    memory as `import` would copy them: the reading commands work on a LangGraph file
    without changing it.

    Raises:
        CorruptValueError: a value does not decode.
    """
    saver = InMemorySaver()
    with closing(open_source(path, busy_timeout)) as opened:
        import_threads(opened, saver, thread_id)
    return saver


def _imported_before(opened: Source, saver: BaseSaver, thread_id: str) -> bool:
    """Whether `saver` holds the thread as importing it now would write it: the same
    checkpoints, values, metadata and pending writes (a source still written to since,
    with a write more, is not the same)."""
    fresh = InMemorySaver()
    opened.copy(thread_id, fresh)
    return _content(fresh, thread_id) == _content(saver, thread_id)


def _content(saver: BaseSaver, thread_id: str) -> list[Any]:
    found = []
    for summary in sorted(saver.list_threads(thread_id), key=lambda s: s.checkpoint_ns):
        if summary.thread_id != thread_id:
            continue
        for saved in saver.list(CheckpointRef(thread_id, summary.checkpoint_ns).to_config()):
            writes = sorted(saved.pending_writes or [], key=lambda w: (w[0], w[1]))
            found.append((saved.checkpoint, saved.metadata, saved.parent_config, writes))
    return found


def _put(saver: BaseSaver, thread_id: str, saved: Stored) -> None:
    ref = CheckpointRef(thread_id, saved.ns)
    checkpoint = Checkpoint(**saved.checkpoint)  # type: ignore[typeddict-item]
    saver.put(ref.at(saved.parent_id).to_config(), checkpoint, saved.metadata, {})
    at = ref.at(checkpoint["id"]).to_config()
    for task_id, (task_path, writes) in saved.writes.items():
        saver.put_writes(at, writes, task_id, task_path)
