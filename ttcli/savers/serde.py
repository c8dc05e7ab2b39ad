"""msgpack serialisation of state values that never runs code from the file.

Plain msgpack covers None, bool, int, float, str, bytes, lists and maps. Everything else is an
ext type whose code is fixed here (and in `schema.sql`). Decoding never imports a module and
never calls a name found in the file: a class is rebuilt only if the `Serializer` decoding it
knows it; any other typed value decodes to plain data with a type marker,
`{"$type": "pkg.Cls", "data": {...}}` (a `TypedData`), so a hostile file yields inert dicts.
Stored again unchanged, such data is stored as it was read: a saver that does not know a class
never strips it from the values it writes or copies.

Each saver owns a `Serializer` (`SqliteSaver(path, serde=...)`, `InMemorySaver(serde=...)`,
like LangGraph's `BaseCheckpointSaver(serde=)`; by default a new `Serializer()`). It always
knows ttcli's own value types (`ttcli.values`: messages, `Interrupt`, `Send`, `Command`),
whatever the process imported. Application types are registered on the instance, never in
a process-wide registry: `Serializer(types=[Order])` or `saver.serde.register(Order)`, and
compiling a graph with a saver registers its state schema's types on that saver's serializer.
So what a stored value decodes to depends only on the saver that reads it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import uuid
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

import msgpack

from ttcli.errors import CorruptValueError, SerializationError
from ttcli.savers.msgpack_frames import packed_uint
from ttcli.savers.value_paths import parts, walk
from ttcli.uuid6 import canonical_bytes, dashed
from ttcli.values import Command, Interrupt, Message, Send, rebuild

# ext type codes: part of the file format, never renumber
TUPLE, SET, FROZENSET, DATETIME, DATE, TIME, TIMEDELTA = 1, 2, 3, 4, 5, 6, 7
UUID, DECIMAL, ENUM, OBJECT, MESSAGE, REF, SEND = 8, 9, 10, 11, 12, 13, 14

TYPE_MARKER = "$type"

#: typed values (ext types) one inside another, at most, written or read: each level is a call
#: of msgpack's, which takes ~40 KB of the C stack to decode and nests up to ~1,000 lists or
#: maps of its own (~400 bytes each) to encode, so that 250 typed levels, or 20 each holding
#: 1,000 lists, overflowed a thread's 8 MB and killed the process; 16 of 1,000 measured safe
EXT_DEPTH_MAX = 16

#: ttcli's own types by the name they are stored under. The names are part of the file format:
#: the classes were first defined in ttcli.runtime.commands and are still stored under it (a
#: Send as ext 11 only in files of version 6 and older: since, it is ext 14).
_OLD_SEND = "ttcli.runtime.commands.Send"
OWN_TYPES: dict[str, type] = {
    "ttcli.runtime.commands.Command": Command,
    "ttcli.runtime.commands.Interrupt": Interrupt,
    _OLD_SEND: Send,
}
_STORED_NAMES = {cls: name for name, cls in OWN_TYPES.items()}


class TypedData(dict[str, Any]):
    """A value of a class its serializer does not know: `{"$type": name, "data": {...}}` (an
    enum's: `"value"`). Plain data to read; stored again unchanged, it is stored as it was
    read, so a saver that does not know a class never strips it from a value it copies."""

    __slots__ = ("code",)

    def __init__(self, code: int, name: str, data: Any) -> None:
        super().__init__({TYPE_MARKER: name, _TYPED_KEYS[code]: data})
        self.code = code

    def __reduce__(self) -> Any:  # copies and pickles rebuild it, not a plain dict
        payload = self.stored_form()
        return (dict, (dict(self),)) if payload is None else (TypedData, (self.code, *payload))

    def stored_form(self) -> list[Any] | None:
        """[name, data] as the ext payload, or None once its keys were changed."""
        key = _TYPED_KEYS[self.code]
        if len(self) != 2 or key not in self or not isinstance(self.get(TYPE_MARKER), str):
            return None
        return [self[TYPE_MARKER], self[key]]


class Ref(NamedTuple):
    """A reference to another stored blob; only storage code writes these."""

    key: int


def type_name(cls: type) -> str:
    """The name a class's values are stored under."""
    return _STORED_NAMES.get(cls) or f"{cls.__module__}.{cls.__qualname__}"


class Serializer:
    """Encodes values and decodes them, rebuilding ttcli's own types and the types given to it.

    Args:
        types: application classes (dataclasses, named tuples, enums, pydantic models) to
            rebuild when read back; any other typed value reads back as `{"$type": ...}` data.
    """

    def __init__(self, types: Iterable[type] = ()) -> None:
        self._types: dict[str, type] = dict(OWN_TYPES)
        self.register(*types)
        self._ext_hook = ext_hooks(self._decode_ext)

    def register(self, *types: type) -> None:
        """Rebuild these classes too when this serializer reads their values back."""
        for cls in types:
            self._types[type_name(cls)] = cls

    def dumps(self, value: Any, *, path: str = "value") -> bytes:
        """Encode a value (the bytes do not depend on the serializer); see `dumps`."""
        return dumps(value, path=path)

    def same(self, one: Any, other: Any) -> bool:
        """Whether two values are the same value as stored: equal, or encoded alike (a float
        NaN is the same value, yet not equal to itself)."""
        if one == other:
            return True
        try:
            return self.dumps(one) == self.dumps(other)
        except (TypeError, ValueError):
            return False

    def loads(self, data: bytes) -> Any:
        """Decode bytes written by `dumps`.

        Raises:
            CorruptValueError: the bytes are not a complete msgpack value.
        """
        try:
            return msgpack.unpackb(data, ext_hook=self._ext_hook, strict_map_key=False, raw=False)
        except CorruptValueError:
            raise
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise CorruptValueError(f"undecodable value ({detail})") from None

    def _decode_ext(self, inner: Any, code: int, data: bytes) -> Any:
        if code == REF:
            return _ref(data)
        payload = msgpack.unpackb(data, ext_hook=inner, strict_map_key=False, raw=False)
        decode = _DECODERS.get(code)
        try:
            if code in _TYPED_KEYS:
                return self._typed(code, payload)
            if decode is None:
                return {"$undecodable": {"ext": code, "bytes": data.hex()}}
            return decode(payload)
        except (TypeError, ValueError) as exc:
            raise CorruptValueError(f"undecodable ext type {code}: {exc}") from None

    def _typed(self, code: int, payload: list[Any]) -> Any:
        name, data = payload
        cls = self._types.get(name)
        if cls is None:
            return TypedData(code, name, data)
        if cls is Send:  # as files of version 6 and older hold it
            return _send(_send_fields(data))
        if issubclass(cls, enum.Enum):
            return cls(data)
        if hasattr(cls, "model_validate"):
            return cls.model_validate(data)
        return cls(**data)


def dumps(value: Any, *, path: str = "value") -> bytes:
    """Encode a value; an unsupported type fails here, naming where in the state it sits.

    Raises:
        SerializationError: e.g. "cannot store messages[3].tool_calls[0]: type Foo ...".
    """
    try:
        return _pack(value)
    except _TooDeep:
        raise SerializationError(
            f"cannot store {path}: it is nested too deeply (over {EXT_DEPTH_MAX} typed values: "
            "tuples, sets, dataclasses, messages, ... inside one another, or over about 1,000 "
            "lists and maps); store fewer levels"
        ) from None
    except _Unsupported:
        where, found = _find_unsupported(value, path) or (path, value)
        if type(found) is Send:
            raise SerializationError(
                f"cannot store {where}: a Send's node must be the name of a node (text), "
                f"not {type(found.node).__name__} {found.node!r}"
            ) from None
        if isinstance(found, int):
            raise SerializationError(
                f"cannot store {where}: the integer {found} is outside the range msgpack "
                "stores (-2**63 to 2**64-1); store it as a string or a Decimal"
            ) from None
        raise SerializationError(
            f"cannot store {where}: type {type_name(type(found))} is not serialisable; "
            "use plain data, a dataclass, a named tuple, an enum or a pydantic model"
        ) from None


def loads(data: bytes) -> Any:
    """Decode as a `Serializer()` does: ttcli's own types rebuilt, any other as plain data."""
    return _PLAIN.loads(data)


class _Unsupported(Exception):
    pass


class _TooDeep(_Unsupported):
    pass


def ext_hooks(decode: Any) -> Any:
    """msgpack's `ext_hook` for a value's typed values, one level of them at a time:
    `decode(inner, code, data)` decodes an ext type's payload with `inner`, the hook of the
    level below, so that no count is kept (threads decode at once); past EXT_DEPTH_MAX levels
    the hook refuses."""
    hook: Any = _too_deep
    for _ in range(EXT_DEPTH_MAX):
        hook = functools.partial(decode, hook)
    return hook


def _too_deep(code: int, data: bytes) -> Any:
    raise CorruptValueError(f"undecodable value (typed values nested over {EXT_DEPTH_MAX} deep)")


def _pack(value: Any, level: int = 0) -> bytes:
    """`value` encoded, inside `level` typed values."""
    try:
        return msgpack.packb(value, default=_DEFAULTS[level], strict_types=True, use_bin_type=True)  # type: ignore[no-any-return]
    except OverflowError:  # an int beyond msgpack's 64 bits
        raise _Unsupported from None
    except ValueError as exc:
        if "recursion limit" in str(exc):  # msgpack's own: lists and maps nested too deep
            raise _TooDeep from None
        raise


def packer() -> msgpack.Packer:
    """A packer encoding as `dumps` does, for encoding many values one at a time (it fails
    without naming where: call `dumps` for the message)."""
    return msgpack.Packer(default=_DEFAULTS[0], strict_types=True, use_bin_type=True)


def _ext(code: int, payload: Any, level: int) -> msgpack.ExtType:
    if level >= EXT_DEPTH_MAX:
        raise _TooDeep
    return msgpack.ExtType(code, _pack(payload, level + 1))


def _default(level: int, obj: Any) -> Any:  # noqa: PLR0911 - one branch per supported type
    if isinstance(obj, Message):
        return _ext(MESSAGE, _message_payload(obj), level)
    if isinstance(obj, Ref):  # the commonest ext in stored states: packed by hand
        return msgpack.ExtType(REF, packed_uint(obj.key))
    if type(obj) is Send:  # a fan-out writes one per task: [node, arg], no class name
        if not isinstance(obj.node, str):
            raise _Unsupported  # `dumps` names it
        return _ext(SEND, [str.__str__(obj.node), obj.arg], level)  # a StrEnum's: its text
    if isinstance(obj, TypedData) and (payload := obj.stored_form()) is not None:
        return _ext(obj.code, payload, level)
    if isinstance(obj, enum.Enum):
        return _ext(ENUM, [type_name(type(obj)), obj.value], level)
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):
        return _ext(OBJECT, [type_name(type(obj)), dict(obj._asdict())], level)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return _ext(OBJECT, [type_name(type(obj)), fields], level)
    if hasattr(obj, "model_dump") and hasattr(type(obj), "model_fields"):  # pydantic v2
        return _ext(OBJECT, [type_name(type(obj)), obj.model_dump()], level)
    for base, convert in _PLAIN_BASES:
        if isinstance(obj, base):
            return convert(obj)
    for base, code, encode in _TYPED:
        if isinstance(obj, base):
            return _ext(code, encode(obj), level)
    raise _Unsupported


#: msgpack's `default` inside 0, 1, ... typed values
_DEFAULTS = [functools.partial(_default, level) for level in range(EXT_DEPTH_MAX + 1)]


_MESSAGE_TYPES = ("human", "ai", "system", "tool", "remove")
_MESSAGE_CODES = {name: code for code, name in enumerate(_MESSAGE_TYPES)}


#: types whose values never change in place
SCALARS = frozenset({str, int, float, bool, bytes, type(None)})


def _message_payload(message: Message) -> list[Any]:
    # [type, content, id, other fields]: the keys every message has are positional, and a
    # UUID id (the usual case) takes 16 bytes instead of 36
    fields = dict(message)
    message_type, content, message_id = fields.pop("type"), fields.pop("content"), fields.pop("id")
    if isinstance(message_id, str):
        message_id = canonical_bytes(message_id) or message_id
    return [_MESSAGE_CODES.get(message_type, message_type), content, message_id, fields or None]


def _message(payload: list[Any]) -> Message:
    message_type, content, message_id, fields = payload
    if isinstance(message_type, int):
        message_type = _MESSAGE_TYPES[message_type]
    if isinstance(message_id, bytes):
        message_id = dashed(message_id.hex())
    return rebuild(message_type, content, message_id, fields or {})


def _send(payload: Any) -> Send:
    if type(payload) is not list or len(payload) != 2 or type(payload[0]) is not str:
        raise ValueError("a Send is [node name, argument]")
    return Send(*payload)


def _send_fields(fields: Any) -> list[Any] | None:
    """[node, arg] of a Send as files of version 6 and older hold it (an ext 11 object's
    fields), or None if they are not a Send's."""
    if type(fields) is not dict or list(fields) != ["node", "arg"]:
        return None
    return [fields["node"], fields["arg"]]


def _sorted_items(items: Any) -> list[Any]:
    # sets are stored sorted when possible, so equal sets give equal bytes
    try:
        return sorted(items)
    except TypeError:
        return list(items)


# subclasses of plain types are stored as the plain type
_PLAIN_BASES: list[tuple[type, Any]] = [
    (bool, bool),
    (int, int),
    (float, float),
    (str, str),
    (bytes, bytes),
    (bytearray, bytes),
    (Mapping, dict),
    (list, list),
]

# datetime before date: a datetime is a date
_TYPED: list[tuple[type, int, Any]] = [
    (tuple, TUPLE, list),
    (frozenset, FROZENSET, _sorted_items),
    (set, SET, _sorted_items),
    (dt.datetime, DATETIME, lambda v: v.isoformat()),
    (dt.date, DATE, lambda v: v.isoformat()),
    (dt.time, TIME, lambda v: v.isoformat()),
    (dt.timedelta, TIMEDELTA, lambda v: [v.days, v.seconds, v.microseconds]),
    (uuid.UUID, UUID, lambda v: v.bytes),
    (Decimal, DECIMAL, str),
]


# the ext types that name a class: the key their data is under when it is not rebuilt
_TYPED_KEYS = {ENUM: "value", OBJECT: "data"}

_DECODERS: dict[int, Any] = {
    TUPLE: tuple,
    SET: set,
    FROZENSET: frozenset,
    DATETIME: dt.datetime.fromisoformat,
    DATE: dt.date.fromisoformat,
    TIME: dt.time.fromisoformat,
    TIMEDELTA: lambda p: dt.timedelta(days=p[0], seconds=p[1], microseconds=p[2]),
    UUID: lambda p: uuid.UUID(bytes=p),
    DECIMAL: Decimal,
    MESSAGE: _message,
    SEND: _send,
}

_PLAIN = Serializer()


def _ref(data: bytes) -> Ref:
    """A blob reference: one unsigned int below 2**63, or the value is undecodable (a
    forged key must not name a blob a prune would collect, nor be one no database holds)."""
    try:
        key = msgpack.unpackb(data)
    except ValueError:
        key = None
    if type(key) is not int or not 0 <= key < 1 << 63:  # both databases' keys are int64
        raise CorruptValueError(
            f"undecodable ext type {REF}: a blob reference is not a key "
            "(an unsigned int below 2**63)"
        )
    # what Ref(key) builds, without its Python __new__: states hold thousands of these
    return tuple.__new__(Ref, (key,))


class Verbatim(Serializer):
    """Reads stored bytes no further than their stored form: a typed value (a message, a
    date, an application's class) stays the `msgpack.ExtType` it was stored as, and encodes
    back to the same bytes (a `Send` of a file of version 6 or older excepted, wherever it
    is: it reads as a `Send` is stored now, so that a copy holds the same value as its
    source); a reference reads as a `Ref`. Code that rewrites or deletes rows reads them so:
    nothing is rebuilt to learn what a row points at, and no class an application registers
    (or changed since it stored a value) alters what is written back."""

    def _decode_ext(self, inner: Any, code: int, data: bytes) -> Any:
        if code == REF:
            return _ref(data)
        if _OLD_SEND_NAME not in data:  # the usual case: no old Send in it, at any depth
            return msgpack.ExtType(code, data)
        # a Send as files of version 6 and older hold it, here or inside: read as a Send is
        # stored now, so that a copy written since (ext 14) holds the same value as its source
        payload = msgpack.unpackb(data, ext_hook=inner, strict_map_key=False, raw=False)
        if code == OBJECT and type(payload) is list and len(payload) == 2:
            send = _send_fields(payload[1]) if payload[0] == _OLD_SEND else None
            if send is not None and type(send[0]) is str:
                return msgpack.ExtType(SEND, _pack(send))
        return msgpack.ExtType(code, _pack(payload))


#: what every old Send's bytes hold: its class's name
_OLD_SEND_NAME = _OLD_SEND.encode()

VERBATIM = Verbatim()


def _find_unsupported(value: Any, path: str) -> tuple[str, Any] | None:
    """The first value under `value` that `dumps` cannot encode, with its path."""
    for where, item in walk(value, path):
        try:
            _pack(item)
        except _Unsupported:
            # a Send fails itself (its node), not through its fields
            if type(item) is Send or not list(parts(item, where)):
                return where, item
    return None
