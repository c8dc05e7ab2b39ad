"""Decoded list values kept between reads: a chat reads its history at every turn.

Only lists of immutable scalars, and of messages or plain dicts whose fields are all immutable
scalars, are kept; each reader gets copies, checked against what was stored before every
reuse.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from ttcli.savers import serde
from ttcli.values import Message, copy_message


@dataclass(frozen=True, slots=True)
class Decoded:
    """A list channel value as decoded, handed out as copies while it is intact.

    Only lists of immutable scalars, and of messages or plain dicts (both "messages" here)
    whose fields are all immutable scalars, are kept. Before every reuse each message's
    fields are checked to be the very objects they were (by identity, at C speed: an equal
    value of another type or sign, such as True for 1, is a change), so a message changed in
    place is never handed out again; and each reader gets messages of its own (copies), so
    what one reader changes no other sees.
    """

    items: tuple[Any, ...]
    messages: tuple[Message, ...]
    #: per message its number of fields, then all their keys and values, in order
    sizes: tuple[int, ...]
    keys: tuple[Any, ...]
    values: tuple[Any, ...]

    @classmethod
    def of(cls, value: Any) -> Decoded | None:
        # checked at C speed: this runs for every list a chat stores or reads
        if type(value) is not list:
            return None
        kinds = set(map(type, value))
        if kinds <= serde.SCALARS:
            return cls(tuple(value), (), (), (), ())
        if all(kind is dict or issubclass(kind, Message) for kind in kinds) and all(
            map(serde.SCALARS.__contains__, map(type, chain.from_iterable(map(dict.values, value))))
        ):
            return cls(tuple(value), tuple(value), *_shape(value))
        return None

    def intact(self, length: int | None = None) -> bool:
        """Whether every message is as it was kept (with `length`, those among the first
        `length` items)."""
        messages, sizes = self.messages, self.sizes
        if length is not None and len(messages) == len(self.items):
            messages, sizes = messages[:length], sizes[:length]
        # map() stops with the messages checked: their fields are the first ones kept
        return (
            tuple(map(len, messages)) == sizes
            and all(map(operator.is_, chain.from_iterable(map(dict.values, messages)), self.values))
            and all(map(operator.is_, chain.from_iterable(map(dict.keys, messages)), self.keys))
        )

    def handed_out(self) -> Decoded:
        """The same list with copies of its messages (the same field objects), for a reader
        to take: kept in place of this one, so that the reader's next value is known to
        extend it."""
        if not self.messages:
            return self
        items = _copies(self.items, all_records=len(self.messages) == len(self.items))
        messages = items if len(self.messages) == len(items) else _records(items)
        return Decoded(items, messages, self.sizes, self.keys, self.values)

    def prefix(self, length: int) -> list[Any]:
        """Copies of the first `length` items (the list a blob this one extends holds)."""
        if not self.messages:
            return list(self.items[:length])
        return list(_copies(self.items[:length], all_records=len(self.messages) == len(self.items)))

    def extended(self, tail: list[Any]) -> Decoded | None:
        """This list grown by `tail`, checking only the new items."""
        added = Decoded.of(tail)
        if added is None:
            return None
        return Decoded(
            self.items + added.items,
            self.messages + added.messages,
            self.sizes + added.sizes,
            self.keys + added.keys,
            self.values + added.values,
        )


@dataclass(frozen=True, slots=True)
class Lineage:
    """A kept list's blob and the blobs it extends, with the length of each one's list."""

    blob_key: int
    length: int
    parent: Lineage | None

    def lengths(self) -> dict[int, int]:
        found: dict[int, int] = {}
        node: Lineage | None = self
        while node is not None:
            found[node.blob_key] = node.length
            node = node.parent
        return found


def _copies(items: tuple[Any, ...], *, all_records: bool) -> tuple[Any, ...]:
    if all_records and all(kind.__new__ is dict.__new__ for kind in set(map(type, items))):
        # messages of classes built as dicts, and plain dicts: copied at C speed
        copies: tuple[Any, ...] = tuple(map(dict.__new__, map(type, items)))
        deque(map(dict.update, copies, items), maxlen=0)
        return copies
    return tuple(
        copy_message(i) if isinstance(i, Message) else dict(i) if type(i) is dict else i
        for i in items
    )


def _records(items: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(item for item in items if isinstance(item, dict))


def _shape(messages: Sequence[Message]) -> tuple[tuple[Any, ...], ...]:
    return (
        tuple(map(len, messages)),
        tuple(chain.from_iterable(map(dict.keys, messages))),
        tuple(chain.from_iterable(map(dict.values, messages))),
    )
