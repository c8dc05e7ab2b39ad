"""State values between LangGraph and ttcli's format.

What ttcli's serializer stores as itself (plain data, datetimes, UUIDs, decimals, sets of
plain values) is stored as it is; LangChain messages become ttcli messages (dicts with
type, content and id, as the CLI shows them) and LangGraph's `Send`, `Interrupt` and
`Command` become ttcli's. Every other value (pydantic models, dataclasses, enums, named
tuples, ...) is encoded by the saver's LangGraph serializer and stored as typed data,
`{"$type": "pkg.Cls", "data": {"$langgraph": [kind, bytes], "value": <what ttcli reads>}}`:
reading it back goes through that serializer, its allowlist included, so the value comes
back exactly as LangGraph's own savers give it, and no name from the file is imported
outside that allowlist. Plain tuples come back as lists, as LangGraph's msgpack gives them.

A chat's history is read and stored again at every turn: `KnownMessages` hands ttcli's
saver, for a message stored again unchanged, the very message it was read from.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
import uuid
import weakref
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from langchain_core import messages as lc
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.types import Command as LgCommand
from langgraph.types import Interrupt as LgInterrupt
from langgraph.types import Send as LgSend

from ttcli.errors import SerializationError
from ttcli.savers import serde as ttcli_serde
from ttcli.savers.serde import OBJECT, TypedData
from ttcli.values import Command, Interrupt, Message, Send

#: the key of a value LangGraph's serializer encoded, in its typed data
ENCODED = "$langgraph"

_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})
_STORED_AS_IS = frozenset({dt.datetime, dt.date, dt.time, dt.timedelta, uuid.UUID, Decimal})

#: LangChain's message classes by their `type`: the only classes a message is rebuilt as
_MESSAGE_CLASSES: dict[str, type[lc.BaseMessage]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        lc.AIMessage,
        lc.AIMessageChunk,
        lc.ChatMessage,
        lc.ChatMessageChunk,
        lc.FunctionMessage,
        lc.FunctionMessageChunk,
        lc.HumanMessage,
        lc.HumanMessageChunk,
        lc.RemoveMessage,
        lc.SystemMessage,
        lc.SystemMessageChunk,
        lc.ToolMessage,
        lc.ToolMessageChunk,
    )
}


#: a known message: a reference to it, the stored message it was read from, and when it was
#: last stored, its fields (`_fields`), those of them that are empty dicts or lists, and what
#: it was stored as
_Known = tuple["_Ref", "Message | None", "tuple[Any, ...] | None", "list[Any]", Any]


class _Ref(weakref.ref):  # type: ignore[type-arg]
    """A weak reference that knows the id() its message had."""

    __slots__ = ("key",)
    key: int


class KnownMessages:
    """LangChain messages converted to ttcli's, for as long as they live (weak references).

    LangGraph's loop reads a thread's checkpoint, runs its nodes and stores the grown
    history several times a turn, as LangChain messages made from the stored ones. Converted
    anew, every message of the history was a new ttcli message at each put, which ttcli's
    saver had to encode whole. So a message stored again is given the same ttcli message as
    the last time, and one made by a read, the very message the saver handed out (the saver
    then recognises the history it kept and stores only what was added). A message counts as
    unchanged only while its fields are the very objects they were (names and values, in
    order), every value immutable or an empty dict or list, still empty (checked at each
    put); any other message is converted again, as is one whose conversion differs in any
    field from the message it was read from.
    """

    def __init__(self) -> None:
        self._known: dict[int, _Known] = {}  # by id() of the live message

    def read(self, message: Any, source: Message) -> None:
        """`message` was made from the stored `source`."""
        self._known[id(message)] = (self._ref(message), source, None, [], None)

    def stored(self, message: Any, convert: Callable[[Any], Message]) -> Any:
        """What `message` is stored as: what it was stored as before if it is unchanged
        since, else `convert(message)` (or the message it was read from, if the same)."""
        entry = self._known.get(id(message))
        if entry is not None and entry[0]() is not message:
            entry = None  # another message that had its id, gone
        if entry is not None and entry[2] is not None and not message.__pydantic_extra__:
            fields = message.__dict__
            now = (*fields, *fields.values())
            if (
                len(now) == len(entry[2])
                and all(map(operator.is_, now, entry[2]))
                and not any(map(len, entry[3]))
            ):
                return entry[4]
        fields = _fields(message)  # before converting: a change meanwhile is seen next time
        converted = convert(message)
        if fields is None:
            return converted
        source = entry[1] if entry is not None else None
        if source is not None and _same_fields(converted, source):
            converted = source
        empties = [value for value in fields if type(value) in _CONTAINERS]  # keys are str
        ref = entry[0] if entry is not None else self._ref(message)
        self._known[id(message)] = (ref, source, fields, empties, converted)
        return converted

    def _ref(self, message: Any) -> _Ref:
        ref = _Ref(message, self._gone)
        ref.key = id(message)
        return ref

    def _gone(self, ref: _Ref) -> None:
        key = ref.key
        entry = self._known.get(key)
        if entry is not None and entry[0] is ref:  # not a newer message's, of the same id
            del self._known[key]


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list})


def _fields(message: Any) -> tuple[Any, ...] | None:
    """A LangChain message's field names, then the objects they hold, if none can change in
    place unseen: each immutable, or an empty dict or list; no extra field. None otherwise."""
    if message.__pydantic_extra__:
        return None
    fields = message.__dict__
    for value in fields.values():
        if type(value) not in _IMMUTABLE and not (type(value) in _CONTAINERS and not value):
            return None
    return (*fields, *fields.values())


def _same_fields(a: Message, b: Message) -> bool:
    """The same fields in the same order, each the same value (see `_same_value`)."""
    return list(a) == list(b) and all(map(_same_value, a.values(), b.values()))


def _same_value(x: Any, y: Any) -> bool:
    """Equal, of the same type, and a float of the same sign: 1 and True, 0.0 and -0.0 are
    stored apart."""
    return (
        type(x) is type(y)
        and x == y
        and (type(x) is not float or math.copysign(1.0, x) == math.copysign(1.0, y))
    )


class Values:
    """Converts values both ways; `serde` is the LangGraph serializer of the saver, `known`
    the messages it converted."""

    def __init__(self, serde: SerializerProtocol, known: KnownMessages | None = None) -> None:
        self.serde = serde
        self.known = known or KnownMessages()

    def to_ttcli(self, value: Any) -> Any:
        """A LangGraph value as ttcli stores it."""
        kind = type(value)
        if kind in _SCALARS or kind in _STORED_AS_IS:
            return value
        if kind is dict and all(type(key) in _SCALARS for key in value):
            return {key: self.to_ttcli(item) for key, item in value.items()}
        if kind is list or kind is tuple:
            return [self.to_ttcli(item) for item in value]
        if kind is set or kind is frozenset:
            if all(type(item) in _SCALARS for item in value):
                return value
        elif isinstance(value, lc.BaseMessage) and _MESSAGE_CLASSES.get(value.type) is kind:
            return self.known.stored(value, self._message)
        elif kind is LgSend:
            return _send(Send, value, self.to_ttcli)
        elif kind is LgInterrupt and not isinstance(value.response_schema, type):
            return _interrupt(Interrupt, value, self.to_ttcli)
        elif kind is LgCommand:
            return _command(Command, value, self.to_ttcli)
        elif isinstance(value, BaseException):  # a failed task's error: LangGraph keeps its repr
            return repr(value)
        return self._encoded(value)

    def _message(self, message: lc.BaseMessage) -> Message:
        # only what differs from the defaults: a message reads in the CLI as it was written
        fields = message.model_dump(exclude_defaults=True)
        fields.pop("type", None)
        content = fields.pop("content", message.content)
        return Message(
            self.to_ttcli(content),
            type=message.type,
            id=fields.pop("id", None),
            **{key: self.to_ttcli(item) for key, item in fields.items()},
        )

    def _encoded(self, value: Any) -> TypedData:
        kind, data = self.serde.dumps_typed(value)
        stored: dict[str, Any] = {ENCODED: [kind, data]}
        try:  # what the CLI shows: ttcli's reading of the value, without its class
            stored["value"] = ttcli_serde.loads(ttcli_serde.dumps(value))
        except SerializationError:
            pass
        name = f"{type(value).__module__}.{type(value).__qualname__}"
        return TypedData(OBJECT, name, stored)

    def to_langgraph(self, value: Any) -> Any:
        """A value ttcli stored, as LangGraph's serializer gives it."""
        kind = type(value)
        if kind in _SCALARS or kind in _STORED_AS_IS:
            return value
        if isinstance(value, Message):
            return self._lc_message(value)
        if isinstance(value, TypedData):
            return self._decoded(value)
        if kind is dict:
            return {key: self.to_langgraph(item) for key, item in value.items()}
        if kind is list:
            return [self.to_langgraph(item) for item in value]
        if kind is tuple:
            return tuple(self.to_langgraph(item) for item in value)
        if kind is Send:
            return _send(LgSend, value, self.to_langgraph)
        if kind is Interrupt:
            return _interrupt(LgInterrupt, value, self.to_langgraph)
        if kind is Command:
            return _command(LgCommand, value, self.to_langgraph)
        return value

    def _lc_message(self, message: Message) -> Any:
        cls = _MESSAGE_CLASSES.get(str(message.get("type")))
        fields = {k: self.to_langgraph(v) for k, v in message.items() if k != "type"}
        if cls is None:  # written by ttcli's own runtime: one of its messages
            return message
        if cls is lc.RemoveMessage:
            fields.pop("content", None)
        made = cls(**fields)
        self.known.read(made, message)
        return made

    def _decoded(self, value: TypedData) -> Any:
        data = value.get("data")
        if not isinstance(data, Mapping) or ENCODED not in data:
            return value  # typed data ttcli's runtime wrote: inert, as ttcli reads it
        kind, encoded = data[ENCODED]
        return self.serde.loads_typed((kind, encoded))


# LangGraph's Send, Interrupt and Command and ttcli's have the same fields: one copy each way


def _send(cls: Callable[..., Any], send: Any, convert: Callable[[Any], Any]) -> Any:
    return cls(send.node, convert(send.arg))


def _interrupt(cls: Callable[..., Any], interrupt: Any, convert: Callable[[Any], Any]) -> Any:
    return cls(
        value=convert(interrupt.value), id=interrupt.id, response_schema=interrupt.response_schema
    )


def _command(cls: Callable[..., Any], command: Any, convert: Callable[[Any], Any]) -> Any:
    return cls(
        graph=command.graph,
        update=convert(command.update),
        resume=convert(command.resume),
        goto=convert(command.goto),
    )
