"""Decoded list values kept between reads: a chat reads its history at every turn.

Only lists of immutable scalars, and of messages or plain dicts whose keys and fields are all
immutable scalars, are kept; each reader gets copies (unless no one holds the messages it
would copy any more), and a message changed in place is never taken for what was stored (see
`Decoded`).
"""

from __future__ import annotations

import operator
import sys
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain, islice
from typing import Any

from ttcli.savers import serde
from ttcli.savers.msgpack_frames import array_header
from ttcli.values import (
    Message,
    changes_counted,
    copy_message,
    made_unchanged,
    message_changes,
)

_PLAIN = frozenset({dict})
#: `Decoded.intact` of the messages themselves: the change count is read as it looks
_NOW = -1


@dataclass(frozen=True, slots=True)
class Grown:
    """The first `length` items of a list that is only ever appended to. The lists of a
    chat's checkpoints extend one another: they share one such list, so that keeping the
    next one costs its new items only, not a copy of the history (nor the garbage
    collector's walks over that copy)."""

    shared: list[Any]
    length: int

    @classmethod
    def of(cls, items: Iterable[Any]) -> Grown:
        return cls.whole(list(items))

    @classmethod
    def whole(cls, shared: list[Any]) -> Grown:
        """All of a list no one else holds."""
        return cls(shared, len(shared))

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[Any]:
        return islice(self.shared, self.length)

    def plus(self, more: Sequence[Any]) -> Grown:
        # the shared list, unless another value grew it past this one's items
        shared = self.shared if len(self.shared) == self.length else self.shared[: self.length]
        shared.extend(more)
        return Grown(shared, len(shared))

    def first(self, length: int) -> Iterator[Any]:
        return islice(self.shared, min(length, self.length))

    def copy(self, length: int | None = None) -> list[Any]:
        """The items (with `length`, the first ones) as a list of their own."""
        return self.shared[: self.length if length is None else min(length, self.length)]


@dataclass(slots=True)
class Decoded:
    """A list channel value as decoded, handed out to readers while it is intact.

    Only lists of immutable scalars, and of messages or plain dicts (both "messages" here)
    whose keys and fields are all immutable scalars, are kept, and each reader gets messages
    of its own (copies), so what one reader changes no other sees: the next reader gets the
    very messages the last one had only when nothing holds them but the saver (the last
    run's result was dropped), see `handed_out`. A message changed in place is never handed out
    again nor taken for what was stored:

    * `Message`s count their changes in place (`message_changes`): while the count has not
      moved since they were last known as kept, they are, without looking at them; copies
      of them are, if they were made while no message was being changed (another thread's
      change may be made and not yet counted), else compared; and a list encoded while a
      message was being changed, or the count moved, is not kept (a message may have been
      changed and changed back as it was encoded: `encoded_kept`);
    * other messages (plain dicts) are handed out as copies of copies that no reader ever
      gets (`originals`);
    * else, and before a put takes a list for the kept one grown, a list of plain dicts is
      encoded again and compared with its encoding as kept (`data`), and any other list's
      fields are checked to be the very objects they were (by identity, at C speed): either
      way an equal value of another type or sign, such as True for 1, is a change.
    """

    #: the messages last handed out or stored (a put that extends them finds them by identity)
    items: Grown
    #: the messages as kept: `items` when their changes are counted, else copies of their own
    originals: Grown
    #: per message its number of fields, then all their keys and values, in order
    sizes: Grown
    keys: Grown
    values: Grown
    #: the classes of the messages
    kinds: frozenset[type]
    #: `message_changes()` when the messages were last known to be as kept
    seen: int
    #: a list of plain dicts as kept (its originals), encoded (`_encoded`): checking that
    #: it is intact by encoding it again, at C speed, costs a third of walking its fields,
    #: and a reader's value that encodes the same (bytearray for bytes) is harmless, for
    #: readers get copies of the originals
    data: bytes | None

    @classmethod
    def of(cls, value: Any, *, private: bool = False) -> Decoded | None:
        """The list `value` kept, if it is one that is kept; `private` if no one else holds
        it (just decoded): its copies then need no comparing with it."""
        # checked at C speed: this runs for every list a chat stores or reads
        if type(value) is not list:
            return None
        seen = message_changes()  # before looking: a change made meanwhile moves it
        kinds = frozenset(map(type, value))
        if kinds <= serde.SCALARS:
            items = Grown.of(value)
            return cls(items, items, *_shape(()), frozenset(), seen, None)
        if (
            all(kind is dict or issubclass(kind, Message) for kind in kinds)
            and all(map(serde.SCALARS.__contains__, map(type, _flat(dict.values, value))))
            and all(map(serde.SCALARS.__contains__, map(type, _flat(dict.keys, value))))
        ):
            items = Grown.of(value)
            originals = _originals(kinds, items)
            data = _encoded(originals.copy()) if kinds == _PLAIN else None
            kept = cls(items, originals, *_shape(value), kinds, seen, data)
            return kept if private else _copied_as_seen(kept)
        return None

    def intact(self, length: int | None = None, *, made_at: int | None = _NOW) -> bool:
        """Whether every message handed out or stored is as it was kept (with `length`,
        those among the first `length` items). `made_at`: the items are copies just made
        (`made_unchanged`) of messages readers hold, at that change count (None: while a
        message was being changed, so that a copy may hold a change not yet counted)."""
        if not self.kinds:
            return True  # immutable scalars
        now = message_changes()  # before looking (see `of`)
        counted = now if made_at == _NOW else made_at
        if counted == self.seen and _all_counted(self.kinds):
            return True  # all are messages whose changes are counted, and none changed
        if self.data is not None and length is None:
            return _encoded(self.items.copy()) == self.data
        count = len(self.items) if length is None else length
        # map() stops with the messages checked: their fields are the first ones kept
        found = (
            all(map(operator.eq, map(len, self.items.first(count)), self.sizes))
            and all(map(operator.is_, _flat(dict.values, self.items.first(count)), self.values))
            and all(map(operator.is_, _flat(dict.keys, self.items.first(count)), self.keys))
        )
        if found and length is None:
            self.seen = now
        return found

    def handed_out(self) -> Decoded | None:
        """The same list with messages no one else holds (copies sharing the field objects,
        or see below), for a reader to take: kept in place of this one, so that the reader's
        next value is known to extend it. None if a message was changed in place.

        Messages whose changes are counted that nothing else holds any more (the reader they
        went to dropped them) are handed out themselves, not copied: no one is left whom a
        change by the next reader could reach. This is what keeps a long chat's turn from
        growing with its history, in a service that drops each turn's result."""
        if not self.kinds:
            return self
        if (
            self.originals is self.items
            and _held_by_the_saver_only(self.items)
            and _fields_only(self.kinds)
        ):
            return self if self.intact() else None
        copies, made_at = made_unchanged(
            lambda: Grown.whole(_copies(self.kinds, self.originals.copy()))
        )
        if self.originals is not self.items:  # copies of what no reader ever got
            return replace(self, items=copies)
        # copied first, then compared: what another thread changes meanwhile in the
        # messages handed out before is never taken for what was stored
        handed = replace(self, items=copies, originals=copies)
        return handed if handed.intact(made_at=made_at) else None

    def prefix(self, length: int) -> list[Any] | None:
        """Copies of the first `length` items (the list a blob this one extends holds); None
        if one of them was changed in place."""
        copies, made_at = made_unchanged(lambda: _copies(self.kinds, self.originals.copy(length)))
        if self.originals is self.items:  # copied first, then compared (see `handed_out`)
            if not replace(self, items=Grown.whole(copies)).intact(length, made_at=made_at):
                return None
        return copies

    def extended(self, added: Decoded) -> Decoded | None:
        """This list grown by the items `added`, checking only them."""
        tail = added.items.copy()
        if bool(self.kinds) != bool(added.kinds) and self.items and tail:
            return None  # scalars and messages: not kept
        kinds = self.kinds | added.kinds
        items = self.items.plus(tail)
        own = self.originals is not self.items and added.originals is not added.items
        if own:  # both copies of their own, compared when made: no reader's among them
            originals = self.originals.plus(added.originals.shared)
        else:  # messages whose changes are counted (or none yet) meet others: copied
            # (from the originals: a plain dict's value a reader replaced by one that
            # encodes the same, bytearray for bytes, is no original)
            originals = (
                items
                if _all_counted(kinds)
                else Grown.whole(_copies(kinds, [*self.originals, *added.originals]))
            )
        grown = Decoded(
            items,
            originals,
            self.sizes.plus(added.sizes.shared),
            self.keys.plus(added.keys.shared),
            self.values.plus(added.values.shared),
            kinds,
            min(self.seen, added.seen),
            _joined(self.data, len(self.items), added.data, len(tail)),
        )
        # copies just made of messages the readers hold: compared after (see `of`)
        return grown if originals is items or own else _copied_as_seen(grown)


def encoded_kept(value: Any, encode: Callable[[], bytes]) -> tuple[Decoded | None, bytes]:
    """`value` encoded by `encode`, with the list kept of it taken just before (`Decoded.of`,
    see `still_as_kept`); None for it if a message was being changed in place meanwhile: what
    was encoded is then not known."""
    (kept, data), made_at = made_unchanged(lambda: (Decoded.of(value), encode()))
    return (kept if made_at is not None else None), data


def still_as_kept(kept: Decoded | None, value: list[Any], stored: bytes) -> Decoded | None:
    """`kept`, taken from the list `value` before it was encoded as `stored`, if the list
    still holds the same items, as they were then, and so as encoded; else None (another
    thread changed the list or a message meanwhile: what was kept is not what was stored).
    Copies of their own (plain dicts) must encode as `stored` too: a value another thread
    changed and changed back meanwhile may have been encoded in between (for messages whose
    changes are counted, `encoded_kept` gave no `kept` then)."""
    if kept is None or len(value) != len(kept.items):
        return None
    if not all(map(operator.is_, value, kept.items)) or not kept.intact():
        return None
    if kept.originals is not kept.items:
        encoded = kept.data if kept.data is not None else _encoded(kept.originals.copy())
        if encoded != stored:
            return None
    return kept


def _copied_as_seen(kept: Decoded) -> Decoded | None:
    """`kept`, if its copies of their own (`originals`), made after its items were looked
    at, hold the very fields looked at: copied first, then compared (another thread may
    change an item in between)."""
    if kept.originals is kept.items:
        return kept
    copies = replace(kept, items=kept.originals, data=None)
    return kept if copies.intact() else None


def _encoded(items: list[Any]) -> bytes | None:
    """A list encoded; None if it does not encode (then it is not taken for any other)."""
    try:
        return serde.packer().pack(items)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - any failure: the list is checked field by field
        return None


def _joined(data: bytes | None, length: int, more: bytes | None, added: int) -> bytes | None:
    """The encoding of a list of `length` items encoded as `data`, grown by `added` items
    encoded as the list `more`."""
    if length == 0:
        return more
    if data is None or more is None:
        return None
    start, tail = len(array_header(length)), len(array_header(added))
    return b"".join([array_header(length + added), data[start:], more[tail:]])


def _held_by_the_saver_only(items: Grown) -> bool:
    """Whether no reference to any of the items, strong or weak, is held but the one in the
    kept list, by CPython's reference counts (exact while the GIL serializes them; on an
    interpreter without them, or without the GIL, never assumed)."""
    return (
        _ALONE is not None
        and all(map(_ALONE.__eq__, map(sys.getrefcount, items)))
        and not any(map(weakref.getweakrefcount, items))
    )


def _fields_only(kinds: Iterable[type]) -> bool:
    """Whether messages of these classes hold nothing but their fields (no attributes of
    their own, in a `__dict__` or in slots, which a reader could set and the next one would
    find)."""
    return all(
        kind.__dictoffset__ == 0 and kind.__basicsize__ == Message.__basicsize__ for kind in kinds
    )


def _alone() -> int | None:
    """What `sys.getrefcount` gives, called as `_held_by_the_saver_only` calls it, for an
    object held by one list only; None where counts cannot be trusted."""
    gil = getattr(sys, "_is_gil_enabled", lambda: True)
    if sys.implementation.name != "cpython" or not gil():
        return None
    return next(map(sys.getrefcount, Grown.whole([object()])))


_ALONE = _alone()


def _all_counted(kinds: Iterable[type]) -> bool:
    return all(map(changes_counted, kinds))


def _originals(kinds: frozenset[type], items: Grown) -> Grown:
    """The items themselves if all their changes are counted, else copies of their own."""
    return items if _all_counted(kinds) else Grown.whole(_copies(kinds, items.copy()))


def _copies(kinds: frozenset[type], items: list[Any]) -> list[Any]:
    if not kinds:
        return list(items)
    # all messages: copied at C speed
    if kinds == _PLAIN:
        return list(map(dict.copy, items))
    if all(kind.__new__ is dict.__new__ for kind in kinds):
        copies: list[Any] = list(map(dict.__new__, map(type, items)))
        deque(map(dict.update, copies, items), maxlen=0)
        return copies
    return list(map(copy_message, items))


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


def _flat(
    view: Callable[[dict[Any, Any]], Iterable[Any]], messages: Iterable[Any]
) -> Iterator[Any]:
    return chain.from_iterable(map(view, messages))


def _shape(messages: Iterable[Message]) -> tuple[Grown, Grown, Grown]:
    messages = list(messages)
    return (
        Grown.of(map(len, messages)),
        Grown.of(_flat(dict.keys, messages)),
        Grown.of(_flat(dict.values, messages)),
    )
