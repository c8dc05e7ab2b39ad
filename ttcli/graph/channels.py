"""Channels: the slots a state is made of, each with its own rule for taking writes.

A channel instance holds one value for one run; `restore` makes a fresh instance from a
checkpoint, so the declared channels of a graph are never mutated.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Self

from ttcli.errors import InvalidUpdateError


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Channel(ABC):
    """One slot of state. `update` takes all writes of one superstep at once."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.value: Any = MISSING

    @abstractmethod
    def update(self, values: Sequence[Any]) -> bool:
        """Apply one superstep's writes; True if the channel changed."""

    def is_available(self) -> bool:
        return self.value is not MISSING

    def get(self) -> Any:
        return self.value

    def checkpoint(self) -> Any:
        return self.value

    def consume(self) -> bool:
        """Called when a node triggered by this channel ran; True if that changed it."""
        return False

    def finish(self) -> bool:
        """Called when a superstep triggers no node (the run would end); True if that
        changed the channel (a deferred node's trigger becomes available)."""
        return False

    def restore(self, value: Any = MISSING) -> Self:
        # a shallow copy, as copy.copy makes of a plain object at a tenth of its cost (every
        # read of a checkpoint restores each of the graph's channels)
        cls = type(self)
        fresh = cls.__new__(cls)
        fresh.__dict__ = self.__dict__.copy()
        fresh.value = self.initial() if value is MISSING else value
        return fresh

    def initial(self) -> Any:
        return MISSING

    def copy(self) -> Self:
        return self.restore(copy.copy(self.value) if self.is_available() else MISSING)


class LastValue(Channel):
    """Keeps the last value written; two writes in one superstep are a conflict."""

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) > 1:
            raise InvalidUpdateError(
                f"At key '{self.key}': Can receive only one value per step. "
                "Use an Annotated key to handle multiple values."
            )
        self.value = values[-1]
        return True


class ReducerChannel(Channel):
    """Folds every write into the value with a reducer, e.g. `operator.add`."""

    def __init__(
        self,
        key: str,
        reducer: Callable[[Any, Any], Any],
        default: Callable[[], Any] | None,
        normalize: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__(key)
        self.reducer = reducer
        self.default = default
        #: applied once to each written value, before it is saved (e.g. message ids)
        self.normalize = normalize

    def initial(self) -> Any:
        return self.default() if self.default is not None else MISSING

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        for value in values:
            self.value = value if self.value is MISSING else self.reducer(self.value, value)
        return True


class EphemeralValue(Channel):
    """Holds a value for the superstep after it was written, then clears itself."""

    def __init__(self, key: str, guard: bool = True) -> None:
        super().__init__(key)
        self.guard = guard

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            if self.value is MISSING:
                return False
            self.value = MISSING
            return True
        if self.guard and len(values) > 1:
            raise InvalidUpdateError(
                f"EphemeralValue {self.key!r} can receive only one value per step"
            )
        self.value = self.kept(values)
        return True

    def kept(self, values: Sequence[Any]) -> Any:
        return values[-1]


class BarrierChannel(Channel):
    """Waits until every named source wrote once; the trigger of a join edge."""

    def __init__(self, key: str, names: Sequence[str]) -> None:
        super().__init__(key)
        self.names = frozenset(names)

    def initial(self) -> Any:
        return []

    def update(self, values: Sequence[Any]) -> bool:
        seen = set(self.value)
        for name in values:
            if name not in self.names:
                raise InvalidUpdateError(
                    f"At key '{self.key}': value {name!r} is not one of {sorted(self.names)}"
                )
            seen.add(name)
        changed = len(seen) != len(self.value)
        # stored sorted so checkpoints are deterministic and msgpack-friendly
        self.value = sorted(seen)
        return changed

    def is_available(self) -> bool:
        return set(self.value) == self.names

    def get(self) -> Any:
        return None

    def checkpoint(self) -> Any:
        return self.value if self.value else MISSING

    def consume(self) -> bool:
        if set(self.value) == self.names:
            self.value = []
            return True
        return False


class Topic(EphemeralValue):
    """Collects every value written in a superstep, for the next one only (Sends)."""

    def __init__(self, key: str) -> None:
        super().__init__(key, guard=False)

    def kept(self, values: Sequence[Any]) -> Any:
        return list(values)


class LastValueAfterFinish(Channel):
    """The trigger of a deferred node (`add_node(..., defer=True)`): written like a plain
    trigger, but available only once the run would otherwise end. Stored as [value, finished]."""

    finished = False

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        self.value, self.finished = values[-1], False
        return True

    def is_available(self) -> bool:
        return self.finished and self.value is not MISSING

    def checkpoint(self) -> Any:
        return MISSING if self.value is MISSING else [self.value, self.finished]

    def restore(self, value: Any = MISSING) -> Self:
        fresh = super().restore()
        fresh.finished = False
        if value is not MISSING:
            fresh.value, fresh.finished = value
        return fresh

    def copy(self) -> Self:
        return self.restore(self.checkpoint())

    def consume(self) -> bool:
        if not self.finished:
            return False
        self.value, self.finished = MISSING, False
        return True

    def finish(self) -> bool:
        if self.finished or self.value is MISSING:
            return False
        self.finished = True
        return True


class BarrierAfterFinish(BarrierChannel):
    """The join into a deferred node: available once every source wrote and the run would
    otherwise end. Stored as [sources seen, finished]."""

    finished = False

    def update(self, values: Sequence[Any]) -> bool:
        changed = super().update(values)
        if changed:
            self.finished = False
        return changed

    def is_available(self) -> bool:
        return self.finished and super().is_available()

    def checkpoint(self) -> Any:
        return [self.value, self.finished] if self.value else MISSING

    def restore(self, value: Any = MISSING) -> Self:
        fresh = super().restore()
        fresh.finished = False
        if value is not MISSING:
            fresh.value, fresh.finished = list(value[0]), value[1]
        return fresh

    def copy(self) -> Self:
        return self.restore(self.checkpoint())

    def consume(self) -> bool:
        if not self.is_available():
            return False
        self.value, self.finished = [], False
        return True

    def finish(self) -> bool:
        if self.finished or not super().is_available():
            return False
        self.finished = True
        return True
