"""Reading a LangGraph SqliteSaver file without LangGraph, and without importing anything.

LangGraph's serializer (`langgraph.checkpoint.serde.jsonplus`) stores values as msgpack with
ext types that name a class as (module, name, ...) and rebuild it by importing that module.
This decoder reads the same bytes into inert data instead: LangChain messages become ttcli
messages, LangGraph's `Send` and `Interrupt` become ttcli's, datetimes, UUIDs, decimals and
sets are rebuilt from the standard library by a fixed table, and every other class (pydantic
models, dataclasses, enums, named tuples, ...) becomes typed data
`{"$type": "module.Name", "data": ...}`. A name from the file is never imported or called;
an unknown ext code or bytes that do not decode raise `CorruptValueError`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgpack

from ttcli.configs import unicode_error
from ttcli.errors import CorruptValueError, DatabaseBusyError, NotFoundError, StorageError
from ttcli.graph.constants import TASKS
from ttcli.savers.serde import OBJECT, TypedData, ext_hooks
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT
from ttcli.savers.sqlite.errors import raise_if_busy
from ttcli.savers.sqlite.migrations import file_uri
from ttcli.uuid6 import canonical_bytes, canonical_id
from ttcli.values import Interrupt, Message, Send, rebuild

# LangGraph's ext codes (jsonplus.py): part of its file format
CONSTRUCTOR_SINGLE_ARG, CONSTRUCTOR_POS_ARGS, CONSTRUCTOR_KW_ARGS, METHOD_SINGLE_ARG = 0, 1, 2, 3
PYDANTIC_V1, PYDANTIC_V2, NUMPY_ARRAY, DELTA_SNAPSHOT = 4, 5, 6, 7

#: the channel version under which a LangGraph checkpoint's `v` is kept (as TtcliSaver does)
V_CHANNEL = "__v__"
#: message fields left out when they hold LangChain's default (as TtcliSaver stores them)
_MESSAGE_DEFAULTS: dict[str, Any] = {
    "name": None,
    "additional_kwargs": {},
    "response_metadata": {},
    "example": False,
    "tool_calls": [],
    "invalid_tool_calls": [],
    "usage_metadata": None,
    "artifact": None,
    "status": "success",
}
_SINGLE: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("uuid", "UUID"): lambda arg: uuid.UUID(hex=arg),
    ("decimal", "Decimal"): lambda arg: Decimal(arg),
    ("builtins", "set"): lambda arg: _hashable(arg, set),
    ("builtins", "frozenset"): lambda arg: _hashable(arg, frozenset),
    ("collections", "deque"): list,
}
_POSITIONAL: dict[tuple[str, str], Callable[..., Any]] = {
    ("datetime", "date"): dt.date,
    ("datetime", "timedelta"): dt.timedelta,
}


def _hashable(items: Any, kind: Callable[[Any], Any]) -> Any:
    try:
        return kind(items)
    except TypeError:  # items decoded as lists or dicts: keep them, in order
        return list(items)


#: what a forged file's values raise in a constructor: Decimal("abc"), UUID(123), date(0, 0, 0)
_FORGED = (ArithmeticError, AttributeError, LookupError, TypeError, ValueError)


def _unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, ext_hook=_EXT_HOOK, strict_map_key=False, raw=False)


def _named(payload: Any, size: int) -> tuple[str, str, list[Any]]:
    if (
        not isinstance(payload, list | tuple)
        or len(payload) < size
        or not all(isinstance(part, str) for part in payload[:2])
    ):
        raise CorruptValueError("a LangGraph ext value is not (module, name, ...)")
    return payload[0], payload[1], list(payload[2:])


def _ext(inner: Any, code: int, data: bytes) -> Any:
    payload = msgpack.unpackb(data, ext_hook=inner, strict_map_key=False, raw=False)
    if code == DELTA_SNAPSHOT:
        return payload
    if code == NUMPY_ARRAY and isinstance(payload, list | tuple) and len(payload) == 4:
        dtype, shape, order, raw = payload
        array = {"dtype": dtype, "shape": shape, "order": order, "data": raw}
        return TypedData(OBJECT, "numpy.ndarray", array)
    if code in (PYDANTIC_V1, PYDANTIC_V2):
        module, name, rest = _named(payload, 3)
        return _model(module, name, rest[0])
    if code == CONSTRUCTOR_SINGLE_ARG:
        module, name, rest = _named(payload, 3)
        known = _SINGLE.get((module, name))
        return known(rest[0]) if known else TypedData(OBJECT, f"{module}.{name}", rest[0])
    if code == CONSTRUCTOR_POS_ARGS:
        return _positional(*_named(payload, 3))
    if code == CONSTRUCTOR_KW_ARGS:
        return _keywords(*_named(payload, 3))
    if code == METHOD_SINGLE_ARG:
        module, name, rest = _named(payload, 4)
        if (module, name, rest[1]) == ("datetime", "datetime", "fromisoformat"):
            return dt.datetime.fromisoformat(rest[0])
        return TypedData(OBJECT, f"{module}.{name}", rest[0])
    raise CorruptValueError(f"unknown LangGraph ext type {code}")


_EXT_HOOK = ext_hooks(_ext)


def _positional(module: str, name: str, rest: list[Any]) -> Any:
    args = rest[0]
    if not isinstance(args, list | tuple):
        raise CorruptValueError(f"the arguments of {module}.{name} are not a list")
    if (module, name) == ("langgraph.types", "Send") and len(args) >= 2:
        return Send(args[0], args[1])
    known = _POSITIONAL.get((module, name))
    if known is not None:
        try:
            return known(*args)
        except _FORGED as exc:
            raise CorruptValueError(f"{module}.{name} does not decode: {exc!r}") from None
    return TypedData(OBJECT, f"{module}.{name}", list(args))


def _keywords(module: str, name: str, rest: list[Any]) -> Any:
    fields = rest[0]
    if not isinstance(fields, dict):
        raise CorruptValueError(f"the fields of {module}.{name} are not a map")
    if (module, name) == ("langgraph.types", "Interrupt"):
        return Interrupt(value=fields.get("value"), id=str(fields.get("id", "")))
    return TypedData(OBJECT, f"{module}.{name}", fields)


def _model(module: str, name: str, fields: Any) -> Any:
    if not isinstance(fields, dict):
        raise CorruptValueError(f"the fields of {module}.{name} are not a map")
    if module.startswith("langchain_core.messages") and isinstance(fields.get("type"), str):
        return _message(fields)
    return TypedData(OBJECT, f"{module}.{name}", fields)


def _message(fields: dict[str, Any]) -> Message:
    kept = {k: v for k, v in fields.items() if _MESSAGE_DEFAULTS.get(k, ...) != v}
    message_type = kept.pop("type")
    content = kept.pop("content", "")
    message_id = kept.pop("id", None)
    return rebuild(message_type, content, message_id, kept)


def decode(kind: str | None, data: bytes | None) -> Any:
    """One value as LangGraph's savers store it (`type`, blob), as inert data.

    Raises:
        CorruptValueError: an unknown kind (pickle included) or ext type, or bytes that do
            not decode.
    """
    if kind in (None, "null"):
        return None
    if kind in ("bytes", "bytearray"):
        return bytes(data or b"")
    try:
        if kind == "json":
            return _unicode(json.loads(data or b"null"))
        if kind == "msgpack":
            return _unpack(data or b"")
    except CorruptValueError:
        raise
    except (*_FORGED, msgpack.UnpackException) as exc:
        raise CorruptValueError(f"bytes that do not decode ({exc})") from None
    raise CorruptValueError(f"a value stored as {kind!r}, which ttcli does not read")


def decode_metadata(data: Any) -> dict[str, Any]:
    """A checkpoint's metadata as stored: JSON text (3.x) or msgpack (older files)."""
    if data is None:
        return {}
    try:
        found = json.loads(data)
    except (ValueError, TypeError):
        found = decode("msgpack", bytes(data))
    if not isinstance(found, dict) or not _text_keyed(found):
        raise CorruptValueError("checkpoint metadata is not a map by name")
    _unicode(found)
    return found


def _unicode(found: Any) -> Any:
    """`found`, read from JSON, if all its text is Unicode (JSON may spell a lone surrogate,
    which no UTF-8 database stores)."""
    exc = unicode_error(found)  # msgpack's text is UTF-8 already
    if exc is not None:
        raise CorruptValueError(f"text that is not Unicode ({exc.reason})")
    return found


@dataclass
class Stored:
    """One checkpoint of a LangGraph file, decoded, with its pending writes by task."""

    ns: str
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    parent_id: str | None
    #: task_id -> (task_path, [(channel, value), ...]) in the order they were written
    writes: dict[str, tuple[str, list[tuple[str, Any]]]] = field(default_factory=dict)


#: the columns `thread` and `_writes` read (a ttcli file has tables of the same names)
_CHECKPOINT_COLUMNS = frozenset(
    "thread_id checkpoint_ns checkpoint_id parent_checkpoint_id type checkpoint metadata".split()
)
_WRITE_COLUMNS = frozenset(
    "thread_id checkpoint_ns checkpoint_id task_id task_path channel type value".split()
)


class LangGraphFile:
    """A LangGraph SqliteSaver file, opened read-only."""

    def __init__(self, path: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        """Raises: DatabaseBusyError: a writer holds the file locked past `busy_timeout`."""
        if not Path(path).is_file():
            raise NotFoundError(f"no LangGraph file at {path}")
        self.path = path
        self.size = sum(
            Path(path + suffix).stat().st_size
            for suffix in ("", "-wal")
            if Path(path + suffix).exists()
        )
        try:
            self.conn = sqlite3.connect(read_only_uri(path), timeout=busy_timeout, uri=True)
            columns = {
                table: {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}
                for table in ("checkpoints", "writes")  # constants, not input
            }
        except sqlite3.Error as exc:
            raise_if_busy(exc, path)
            raise StorageError(f"{path} is not a LangGraph SQLite file ({exc})") from None
        if not (
            _CHECKPOINT_COLUMNS <= columns["checkpoints"] and _WRITE_COLUMNS <= columns["writes"]
        ):
            self.conn.close()
            raise StorageError(
                f"{path} is not a LangGraph SqliteSaver file (no checkpoints and writes tables "
                "of LangGraph's)"
            )

    def close(self) -> None:
        self.conn.close()

    def thread_ids(self) -> list[str]:
        """Raises: CorruptValueError: a thread id that is not text (LangGraph writes text;
        one stored otherwise would be skipped without a word)."""
        rows = self._rows(
            "SELECT DISTINCT typeof(thread_id), CAST(thread_id AS BLOB) FROM checkpoints "
            "ORDER BY thread_id"
        )
        found = []
        for kind, raw in rows:
            try:
                if kind == "text":
                    found.append(bytes(raw).decode("utf-8"))
                    continue
            except UnicodeDecodeError:
                pass
            raise CorruptValueError(
                f"{self.path} holds a thread id stored as {kind} {bytes(raw or b'')[:40]!r}, "
                "not UTF-8 text (LangGraph writes text): nothing was imported"
            )
        return found

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Raises: CorruptValueError: text that is not UTF-8, or pages that do not read
        (a program writing the file meanwhile, or damage)."""
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise_if_busy(exc, self.path)
            raise CorruptValueError(
                f"{self.path} does not read ({exc}): if a program is writing it, stop it or "
                "copy the file, then run again"
            ) from None

    def thread(self, thread_id: str) -> Iterator[Stored]:
        """Every checkpoint of a thread, each namespace's oldest first (parents first)."""
        rows = self._rows(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
            "metadata FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id",
            (thread_id,),
        )
        for ns, checkpoint_id, parent_id, kind, blob, metadata in rows:
            where = f"checkpoint {checkpoint_id} of thread '{thread_id}'"
            try:
                saved = Stored(ns, checkpoint_of(decode(kind, blob)), decode_metadata(metadata),
                               canonical_id(parent_id))  # fmt: skip
                self._writes(thread_id, ns, checkpoint_id, saved)
            except CorruptValueError as exc:
                raise CorruptValueError(f"{where} in {self.path}: {exc}") from None
            yield saved

    def _writes(self, thread_id: str, ns: str, checkpoint_id: str, saved: Stored) -> None:
        rows = self._rows(
            "SELECT task_id, task_path, channel, type, value FROM writes WHERE thread_id = ? "
            "AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY rowid",
            (thread_id, ns, checkpoint_id),
        )
        for task_id, task_path, channel, kind, value in rows:
            task = saved.writes.setdefault(str(task_id), (str(task_path or ""), []))
            task[1].append((str(channel), decode(kind, value)))


def is_langgraph_file(path: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> bool:
    """Whether `path` is a LangGraph SqliteSaver file (its tables are there).

    Raises: DatabaseBusyError: a writer holds it locked past `busy_timeout`."""
    try:
        LangGraphFile(path, busy_timeout).close()
    except DatabaseBusyError:
        raise
    except (StorageError, NotFoundError):
        return False
    return True


def read_only_uri(path: str) -> str:
    """Read-only; a file in WAL mode with no WAL file beside it (no writer has it open)
    immutable as well, so that reading leaves no `-wal` or `-shm` file next to it. Never a
    file in rollback-journal mode: its writer puts uncommitted pages in the file itself,
    which only its locks keep readers from."""
    uri = f"{file_uri(os.path.realpath(path))}?mode=ro"
    wal_mode = _header(path)[18:20] == b"\x02\x02"
    return f"{uri}&immutable=1" if wal_mode and not Path(path + "-wal").exists() else uri


def _header(path: str) -> bytes:
    """The first 100 bytes of a SQLite file (bytes 18 and 19 are 2 in WAL mode)."""
    try:
        with open(path, "rb") as file:
            return file.read(100)
    except OSError:
        return b""


def checkpoint_of(found: Any) -> dict[str, Any]:
    """LangGraph's checkpoint as ttcli's contract takes it (its `v` kept as a version).

    Raises:
        CorruptValueError: fields that are not what LangGraph writes (maps of versions
            keyed by channel name, text id and ts, a list of updated channels).
    """
    if not isinstance(found, dict) or not {"id", "ts", "channel_versions"} <= set(found):
        raise CorruptValueError("a checkpoint that is not a LangGraph checkpoint")
    values = found.get("channel_values") or {}
    seen = found.get("versions_seen") or {}
    updated = found.get("updated_channels")
    versions = _versions(found["channel_versions"], "channel_versions")
    for field_name in ("id", "ts"):
        if not isinstance(found[field_name], str):
            raise CorruptValueError(f"the checkpoint's {field_name} is not text")
    if not (_text_keyed(values) and _text_keyed(seen)):
        raise CorruptValueError("channel_values or versions_seen is not a map by name")
    if updated is not None and not _text_list(updated):
        raise CorruptValueError("updated_channels is not a list of channel names")
    sends = values.get(TASKS) or []
    if not isinstance(sends, list) or not all(isinstance(send, Send) for send in sends):
        raise CorruptValueError(f"{TASKS} is not a list of Sends")
    seen = {node: _versions(v, f"versions_seen of {node}") for node, v in seen.items()}
    if len({type(v) is str for m in (versions, *seen.values()) for v in m.values()}) > 1:
        raise CorruptValueError("versions are numbers and text at once")
    checkpoint_id = canonical_id(found["id"])
    if canonical_bytes(checkpoint_id) is None:
        raise CorruptValueError(f"the checkpoint's id {checkpoint_id[:40]!r} is not a UUID")
    if found.get("v", 1) != 1:
        versions[V_CHANNEL] = found["v"]
    return {
        "v": 1,
        "id": checkpoint_id,
        "ts": found["ts"],
        "channel_values": dict(values),
        "channel_versions": versions,
        "versions_seen": seen,
        "updated_channels": updated,
    }


def _versions(found: Any, what: str) -> dict[str, Any]:
    """A map of channel name -> version (text, or a finite number: a NaN would never equal
    itself again), as LangGraph's savers make."""
    if not _text_keyed(found) or not all(
        isinstance(v, str)
        or (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v))
        for v in found.values()
    ):
        raise CorruptValueError(f"{what} is not a map of channel name to version")
    return dict(found)


def _text_keyed(found: Any) -> bool:
    return isinstance(found, dict) and all(isinstance(k, str) for k in found)


def _text_list(found: Any) -> bool:
    return isinstance(found, list) and all(isinstance(k, str) for k in found)
