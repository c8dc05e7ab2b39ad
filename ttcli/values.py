"""ttcli's own value types: what a graph's state, its writes and its interrupts hold.

They sit below graph/, runtime/ and savers/ (this module imports nothing of ttcli), so every
saver's serializer knows them whatever else a process imported: a stored `Interrupt` reads
back as an `Interrupt` in a process that never loaded the runtime. graph.messages and
runtime.commands re-export them, and so does the `ttcli` package.

A message is a `Message`: a dict (`{"type": "human", "content": "hi", "id": "..."}`) that
also answers attribute access (`m.type`, `m.content`), so code written against LangChain
messages reads the same and the stored form stays plain data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


class Message(dict[str, Any]):
    """A chat message: a dict with `type`, `content` and `id`, readable as attributes."""

    message_type = ""

    def __init__(self, content: Any = "", **fields: Any) -> None:
        fields.setdefault("type", self.message_type or fields.get("type", "human"))
        super().__init__(type=fields.pop("type"), content=content, **fields)
        self.setdefault("id", None)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in self.items() if key != "type")
        if type(self) is Message:
            fields = f"type={self.get('type')!r}, {fields}"
        return f"{type(self).__name__}({fields})"


class HumanMessage(Message):
    message_type = "human"


class AIMessage(Message):
    message_type = "ai"


class SystemMessage(Message):
    message_type = "system"


class ToolMessage(Message):
    message_type = "tool"


class RemoveMessage(Message):
    """Removes the message with this id when passed through `add_messages`."""

    message_type = "remove"

    def __init__(self, id: str, **fields: Any) -> None:  # noqa: A002 - LangChain's keyword
        super().__init__("", id=id, **fields)


#: the class of each message type
MESSAGE_CLASSES: dict[str, type[Message]] = {
    cls.message_type: cls
    for cls in (HumanMessage, AIMessage, SystemMessage, ToolMessage, RemoveMessage)
}


def rebuild(
    message_type: str, content: Any, message_id: str | None, fields: dict[str, Any]
) -> Message:
    """A stored message back as its class (no coercion: it was checked when written)."""
    if message_type == RemoveMessage.message_type:
        return RemoveMessage(id=str(message_id), **fields)
    cls = MESSAGE_CLASSES.get(message_type)
    if cls is None:
        return Message(content, type=message_type, id=message_id, **fields)
    return cls(content, id=message_id, **fields)


def copy_message(message: Message) -> Message:
    """A shallow copy of the same class (fields are shared, so a nested value is too)."""
    copied = type(message).__new__(type(message))
    dict.update(copied, message)
    return copied


@dataclass(frozen=True)
class Interrupt:
    """What a paused node asked for; answer it with `Command(resume=...)`."""

    value: Any
    #: answers a specific interrupt with `Command(resume={id: value})`
    id: str
    response_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class Send:
    """Run `node` with `arg` as its input in the next superstep (map-reduce fan-out)."""

    node: str
    arg: Any


@dataclass(frozen=True)
class Command:
    """Returned by a node, or given as input: update the state, go to nodes, answer interrupts."""

    graph: str | None = None
    update: Any = None
    resume: Any = None
    goto: str | Send | Sequence[str | Send] = field(default=())

    def destinations(self) -> list[str | Send]:
        if isinstance(self.goto, str | Send):
            return [self.goto]
        return list(self.goto)
