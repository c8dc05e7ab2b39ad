"""A store for what outlives a thread (LangGraph's `InMemoryStore`): values by namespace and
key, which nodes read through a `store` parameter or `runtime.store` when the graph is
compiled with `compile(store=...)`.

Like LangGraph's in-memory store, it keeps nothing after the process ends, and it has no
semantic search: `search` lists a namespace prefix's items, filtered by their values.
"""

from __future__ import annotations

import datetime as dt
import operator
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

#: a filter value given as {"$gt": 3}: LangGraph's comparison operators
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Item:
    """A stored value with where it is and when it was written."""

    __slots__ = ("value", "key", "namespace", "created_at", "updated_at")

    def __init__(
        self,
        *,
        value: dict[str, Any],
        key: str,
        namespace: tuple[str, ...],
        created_at: dt.datetime,
        updated_at: dt.datetime,
    ) -> None:
        self.value, self.key, self.namespace = value, key, tuple(namespace)
        self.created_at, self.updated_at = created_at, updated_at

    def dict(self) -> dict[str, Any]:
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Item) and self.dict() == other.dict()

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.dict().items())})"


class SearchItem(Item):
    """An item `search` found; `score` is None (there is no semantic search)."""

    __slots__ = ("score",)

    def __init__(self, item: Item) -> None:
        super().__init__(value=item.value, key=item.key, namespace=item.namespace,
                         created_at=item.created_at, updated_at=item.updated_at)  # fmt: skip
        self.score: float | None = None


class BaseStore(ABC):
    """What nodes may call on a store (LangGraph's `BaseStore`), sync and async."""

    @abstractmethod
    def get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        """The item under the key, or None."""

    @abstractmethod
    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None) -> None:
        """Store `value` under the key (replacing what was there); None deletes it."""

    @abstractmethod
    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Forget the key (nothing happens if it is not there)."""

    @abstractmethod
    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        limit: int = 10,
        offset: int = 0,
    ) -> list[SearchItem]:
        """The items under the namespace prefix whose values match `filter` (a value, or
        {"$gt": ...} and the other comparisons), in the order they were first written."""

    async def aget(self, namespace: tuple[str, ...], key: str) -> Item | None:
        return self.get(namespace, key)

    async def aput(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None
    ) -> None:
        self.put(namespace, key, value)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        self.delete(namespace, key)

    async def asearch(
        self, namespace_prefix: tuple[str, ...], /, **options: Any
    ) -> list[SearchItem]:
        return self.search(namespace_prefix, **options)


class InMemoryStore(BaseStore):
    """Items in a dict, by namespace then key, in the order they were first written.

    Args:
        clock: gives the times items are written at (injectable for tests).
    """

    def __init__(self, *, clock: Callable[[], dt.datetime] = _utc_now) -> None:
        self.clock = clock
        self._items: dict[tuple[str, ...], dict[str, Item]] = {}
        self._lock = threading.Lock()  # nodes run on worker threads

    def get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        with self._lock:
            return self._items.get(_checked(namespace), {}).get(str(key))

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None) -> None:
        if value is None:
            self.delete(namespace, key)
            return
        now = self.clock()
        with self._lock:
            items = self._items.setdefault(_checked(namespace), {})
            before = items.get(str(key))
            created = before.created_at if before is not None else now
            items[str(key)] = Item(value=value, key=str(key), namespace=namespace,
                                   created_at=created, updated_at=now)  # fmt: skip

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        with self._lock:
            self._items.get(_checked(namespace), {}).pop(str(key), None)

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        limit: int = 10,
        offset: int = 0,
    ) -> list[SearchItem]:
        with self._lock:
            found = [
                SearchItem(item)
                for namespace, items in self._items.items()
                if namespace[: len(namespace_prefix)] == tuple(namespace_prefix)
                for item in items.values()
                if _matches(item.value, filter or {})
            ]
        return found[offset : offset + limit]

    def list_namespaces(self, *, prefix: tuple[str, ...] = (), limit: int = 100) -> list[Any]:
        with self._lock:
            names = [
                ns for ns, items in self._items.items() if items and ns[: len(prefix)] == prefix
            ]
        return sorted(names)[:limit]


def _checked(namespace: tuple[str, ...]) -> tuple[str, ...]:
    if not namespace or not all(isinstance(label, str) and label for label in namespace):
        raise ValueError(f"Namespace labels must be non-empty strings, got {namespace!r}")
    if any("." in label for label in namespace):
        raise ValueError(f"Namespace labels cannot contain periods ('.'), got {namespace!r}")
    return tuple(namespace)


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    for key, condition in wanted.items():
        if isinstance(condition, Mapping) and condition and set(condition) <= set(_OPERATORS):
            if key not in value:
                return False
            if not all(_OPERATORS[op](value[key], arg) for op, arg in condition.items()):
                return False
        elif value.get(key) != condition:
            return False
    return True
