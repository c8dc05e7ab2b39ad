"""Decoded list values kept between reads: a chat reads its history at every turn.

Only lists of immutable scalars and of messages whose fields are all immutable scalars are
kept; each reader gets copies, checked against what was stored before every reuse.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

from ttcli.savers import serde
from ttcli.values import Message, copy_message


@dataclass(frozen=True, slots=True)
class Decoded:
    """A list channel value as decoded, handed out as copies while it is intact.

    Only lists of immutable scalars and of messages whose fields are all immutable scalars
    are kept. Before every reuse each message's fields are checked to be the very objects
    they were (by identity, at C speed: an equal value of another type or sign, such as True
    for 1, is a change), so a message changed in place is never handed out again; and each
    reader gets messages of its own (copies), so what one reader changes no other sees.
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
        if all(map(serde.SCALARS.__contains__, map(type, value))):
            return cls(tuple(value), (), (), (), ())
        if all(map(isinstance, value, repeat(Message))) and all(
            map(serde.SCALARS.__contains__, map(type, chain.from_iterable(map(dict.values, value))))
        ):
            return cls(tuple(value), tuple(value), *_shape(value))
        return None

    def intact(self) -> bool:
        messages = self.messages
        return (
            tuple(map(len, messages)) == self.sizes
            and all(map(operator.is_, chain.from_iterable(map(dict.values, messages)), self.values))
            and all(map(operator.is_, chain.from_iterable(map(dict.keys, messages)), self.keys))
        )

    def handed_out(self) -> Decoded:
        """The same list with copies of its messages (the same field objects), for a reader
        to take: kept in place of this one, so that the reader's next value is known to
        extend it."""
        if not self.messages:
            return self
        if len(self.messages) == len(self.items) and all(
            kind.__new__ is dict.__new__ for kind in set(map(type, self.items))
        ):  # all messages of classes built as dicts are: copied at C speed
            items = tuple(map(dict.__new__, map(type, self.items)))
            deque(map(dict.update, items, self.items), maxlen=0)
            return Decoded(items, items, self.sizes, self.keys, self.values)
        items = tuple(copy_message(i) if isinstance(i, Message) else i for i in self.items)
        messages = tuple(item for item in items if isinstance(item, Message))
        return Decoded(items, messages, self.sizes, self.keys, self.values)

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


def _shape(messages: Sequence[Message]) -> tuple[tuple[Any, ...], ...]:
    return (
        tuple(map(len, messages)),
        tuple(chain.from_iterable(map(dict.keys, messages))),
        tuple(chain.from_iterable(map(dict.values, messages))),
    )
