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
"""

from __future__ import annotations

import datetime as dt
import uuid
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


class Values:
    """Converts values both ways; `serde` is the LangGraph serializer of the saver."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde

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
            return self._message(value)
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
        return cls(**fields)

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
