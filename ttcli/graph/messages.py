"""Chat messages coerced from dicts, tuples and strings, and the `add_messages` reducer.

The message classes themselves live in `ttcli.values` (so every saver can rebuild them) and
are re-exported here, where LangGraph users look for them.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Sequence
from itertools import repeat
from typing import Annotated, Any, TypedDict

from ttcli.values import (
    MESSAGE_CLASSES,
    AIMessage,
    HumanMessage,
    Message,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    copy_message,
    rebuild,
)

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "HumanMessage",
    "Message",
    "MessagesState",
    "RemoveMessage",
    "SystemMessage",
    "ToolMessage",
    "add_messages",
    "coerce_messages",
    "copy_message",
    "rebuild",
    "to_message",
]

REMOVE_ALL_MESSAGES = "__remove_all__"

_ROLE_TO_TYPE = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "function",
    "remove": "remove",
}


def to_message(value: Any) -> Message:
    """Coerce a message dict, a `(role, content)` tuple or a string to a `Message`."""
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return HumanMessage(value)
    if isinstance(value, tuple | list) and len(value) == 2 and isinstance(value[0], str):
        role, content = value
        return _make(role, {"content": content})
    if isinstance(value, dict):
        fields = dict(value)
        role = fields.pop("type", None) or fields.pop("role", None)
        if role is None or "content" not in fields and role != "remove":
            raise ValueError(
                f"Message dict must contain 'role' (or 'type') and 'content' keys, got {value!r}"
            )
        return _make(role, fields)
    if isinstance(getattr(value, "type", None), str) and hasattr(value, "content"):
        return _foreign(value)
    raise ValueError(f"Unsupported message type: {type(value).__name__} ({value!r})")


# fields another library's message may carry that a ttcli message keeps, when not empty
_FOREIGN_FIELDS = (
    "name",
    "tool_calls",
    "tool_call_id",
    "invalid_tool_calls",
    "additional_kwargs",
    "response_metadata",
    "usage_metadata",
)


def _foreign(value: Any) -> Message:
    """Another library's message object (LangChain's `HumanMessage`, ...) as a ttcli message.

    Read by duck typing (`type`, `content`, `id` and the fields above), never by importing
    that library; a streamed chunk (`AIMessageChunk`) becomes the message type it is part of.
    """
    role = value.type.removesuffix("MessageChunk").lower() or "ai"
    fields: dict[str, Any] = {"content": value.content, "id": getattr(value, "id", None)}
    for name in _FOREIGN_FIELDS:
        if found := getattr(value, name, None):
            fields[name] = found
    return _make(role, fields)


def _make(role: str, fields: dict[str, Any]) -> Message:
    message_type = _ROLE_TO_TYPE.get(role)
    if message_type is None:
        raise ValueError(f"Unknown message role {role!r}; use one of {sorted(_ROLE_TO_TYPE)}")
    cls = MESSAGE_CLASSES.get(message_type, Message)
    content = fields.pop("content", "")
    if cls is RemoveMessage:
        return RemoveMessage(**fields)
    if cls is Message:
        fields["type"] = message_type
    return cls(content, **fields)


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, tuple) and not (len(value) == 2 and isinstance(value[0], str)):
        return list(value)
    return [value]


def add_messages(left: Sequence[Any] | Any, right: Sequence[Any] | Any) -> list[Message]:
    """Merge two message lists: new ids append, an existing id replaces, RemoveMessage deletes.

    Messages without an id get a fresh uuid4, so every stored message can be addressed later.
    """
    history = _as_list(left)
    incoming, new_ids = _with_ids(right)
    unknown = {None, *new_ids}  # no id at all, or one of the new ones
    if (
        len(unknown) == len(new_ids) + 1
        and RemoveMessage.message_type not in map(operator.itemgetter("type"), incoming)
        and all(map(isinstance, history, repeat(Message)))
        and unknown.isdisjoint(map(dict.get, history, repeat("id")))
    ):
        # new messages after a history of messages with ids (a chat's turn): appended,
        # checked in one pass over the history, at C speed, without indexing it
        return [*history, *incoming]
    merged, ids = _with_ids(history)
    for position, message in enumerate(incoming):
        if message.type == "remove" and message.id == REMOVE_ALL_MESSAGES:
            merged, ids = [], []
            incoming = incoming[position + 1 :]
            break
    # a chat's history is merged at every turn: built at C speed, not message by message
    index = dict(zip(ids, range(len(ids)), strict=True))
    removed: set[str] = set()
    for message in incoming:
        if message.type == "remove":
            if message.id not in index:
                raise ValueError(
                    f"Attempting to delete a message with an ID that doesn't exist ('{message.id}')"
                )
            removed.add(message.id)
        elif message.id in index:
            merged[index[message.id]] = message
            removed.discard(message.id)
        else:
            index[message.id] = len(merged)
            merged.append(message)
    return [m for m in merged if m.id not in removed] if removed else merged


def coerce_messages(value: Sequence[Any] | Any) -> list[Message]:
    """A message, or a list of them, as a list of ttcli messages that all have ids."""
    return _with_ids(value)[0]


def _with_ids(value: Sequence[Any] | Any) -> tuple[list[Message], list[Any]]:
    """`coerce_messages`, and the messages' ids."""
    items = _as_list(value)
    # already messages with ids (a channel's own value)? checked at C speed
    if all(map(isinstance, items, repeat(Message))):
        ids = list(map(dict.get, items, repeat("id")))
        if None not in ids:
            return list(items), ids
    messages = [_with_id(to_message(m)) for m in items]
    return messages, [m["id"] for m in messages]


def _with_id(message: Message) -> Message:
    if message.get("id") is None:
        message = type(message)(**{**message, "id": str(uuid.uuid4())})
    return message


class MessagesState(TypedDict):
    """A state with one key, `messages`, merged by `add_messages`."""

    messages: Annotated[list[Message], add_messages]
