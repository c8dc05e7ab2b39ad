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

import copy
import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

#: changes in place begun and ended, each counted twice (as it begins and as it ends), and
#: those begun and not yet ended; changed together under the lock (reentrant: the garbage
#: collector may run a callback that changes a message while this thread holds it)
_changes = 0
_busy = 0
_counting = threading.RLock()

T = TypeVar("T")


def message_changes() -> int:
    """How many times a message was changed in place (through its own methods) so far,
    counted as each change begins and again as it ends.

    A saver that kept messages checks them field by field only when this moved since it
    last did: a chat's history is not walked at every turn to find it unchanged. Changes
    made by calling dict's methods on a message (`dict.__setitem__(message, ...)`) bypass
    the count; the classes whose changes are counted are those `changes_counted` accepts.
    """
    return _changes


def made_unchanged(make: Callable[[], T]) -> tuple[T, int | None]:
    """What `make` returns (copies of messages, or their encoding), and `message_changes()`
    as it was while `make` ran, if no message was being changed in place meanwhile (else
    None): the copies then hold no change the count has not counted."""
    with _counting:
        began, busy = _changes, _busy
    made = make()
    with _counting:
        ended = _changes
    return made, began if busy == 0 and ended == began else None


def _counted(method: Callable[..., Any]) -> Callable[..., Any]:
    """Dict's `method`, counted as it begins and as it ends (a check that read the count
    before it began sees the change, or a new count)."""

    @functools.wraps(method)
    def changing(self: Message, *args: Any, **kwargs: Any) -> Any:
        global _changes, _busy  # noqa: PLW0603 - one count for every message of the process
        # no call of Python code from the counts to the mark, nor from the `finally` to the
        # end's counts: an exception a signal handler raises is raised either before the
        # change counts as under way or once it was counted as ended
        begun = False
        try:
            with _counting:
                _changes += 1
                _busy += 1
                begun = True
            return method(self, *args, **kwargs)
        finally:
            with _counting:
                if begun:
                    _changes += 1
                    _busy -= 1

    return changing


#: `Message.__init__` of a message made again in place: a change too
_init_again = _counted(dict.__init__)


class Message(dict[str, Any]):
    """A chat message: a dict with `type`, `content` and `id`, readable as attributes.

    Changes in place are counted (`message_changes`). A message has its fields and nothing
    else: no attributes of its own beside them (which a copy would not carry).
    """

    __slots__ = ("__weakref__",)

    message_type = ""
    #: what reading an absent field gives, as LangChain's message classes default them
    defaults: dict[str, Any] = {"name": None, "additional_kwargs": {}, "response_metadata": {}}

    def __init__(self, content: Any = "", **fields: Any) -> None:
        fields.setdefault("type", self.message_type or fields.get("type", "human"))
        again = bool(self)  # a message made again in place is a change too
        # the fields in the order a stored message reads back in: type, content, id, others
        # (made again in place without an id, it keeps its own, as dict's update would)
        message_id = fields.pop("id", dict.get(self, "id"))
        init = _init_again if again else dict.__init__
        init(self, type=fields.pop("type"), content=content, id=message_id, **fields)

    __setitem__ = _counted(dict.__setitem__)
    __delitem__ = _counted(dict.__delitem__)
    __ior__ = _counted(dict.__ior__)
    update = _counted(dict.update)
    setdefault = _counted(dict.setdefault)
    pop = _counted(dict.pop)
    popitem = _counted(dict.popitem)
    clear = _counted(dict.clear)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name in self.defaults:
                return copy.copy(self.defaults[name])
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        # `message.content = ...` changes the field, as on LangChain's message classes
        # (an attribute beside the fields would be lost when the message is stored)
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getstate__(self) -> Any:
        # object's own, under another name: pickle's protocols 0 and 1 refuse a class with
        # slots that has not defined one
        return object.__getstate__(self)

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in self.items() if key != "type")
        if type(self) is Message:
            fields = f"type={self.get('type')!r}, {fields}"
        return f"{type(self).__name__}({fields})"


class HumanMessage(Message):
    __slots__ = ()
    message_type = "human"


class AIMessage(Message):
    __slots__ = ()
    message_type = "ai"
    defaults = {**Message.defaults, "tool_calls": [], "invalid_tool_calls": []}
    defaults["usage_metadata"] = None


class SystemMessage(Message):
    __slots__ = ()
    message_type = "system"


class ToolMessage(Message):
    __slots__ = ()
    message_type = "tool"
    defaults = {**Message.defaults, "artifact": None, "status": "success"}


class RemoveMessage(Message):
    """Removes the message with this id when passed through `add_messages`."""

    __slots__ = ()
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


#: the methods through which a message changes in place, all counted
_CHANGING = (
    "__setattr__",
    "__delattr__",
    "__setitem__",
    "__delitem__",
    "__ior__",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
)


def changes_counted(cls: type) -> bool:
    """Whether every change in place to a message of this class is counted: a subclass that
    overrides a changing method may change it without calling `Message`'s."""
    return issubclass(cls, Message) and all(
        getattr(cls, name) is getattr(Message, name) for name in _CHANGING
    )


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


N = TypeVar("N")


@dataclass(frozen=True)
class Command(Generic[N]):
    """Returned by a node, or given as input: update the state, go to nodes, answer interrupts.

    Generic in the node names it may go to, so `-> Command[Literal["a", "b"]]` annotates
    a node as in LangGraph; `graph=Command.PARENT` sends it to the graph that called this one.
    """

    PARENT: ClassVar[str] = "__parent__"

    graph: str | None = None
    update: Any = None
    resume: Any = None
    goto: N | str | Send | Sequence[N | str | Send] = field(default=())

    def destinations(self) -> list[str | Send]:
        goto: Any = self.goto
        if isinstance(goto, str | Send):
            return [goto]
        return list(goto)
