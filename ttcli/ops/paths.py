"""Paths into a state's values, as `history --where` and `blame` take them: `tool`,
`order.items`, `messages.-1.content` (dots between keys; a number indexes a list)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ttcli.errors import InputError

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


def parse(path: str) -> list[str]:
    """The keys of a dotted path.

    Raises:
        InputError: an empty path or an empty part (`a..b`).
    """
    parts = path.split(".")
    if not all(parts):
        raise InputError(f"invalid path {path!r}: use KEY or KEY.key.0 (dots between keys)")
    return parts


def get(value: Any, parts: Sequence[str]) -> Any:
    """The value at `parts` in `value`, or MISSING."""
    for part in parts:
        if isinstance(value, Mapping):
            value = value.get(part, MISSING)
        elif isinstance(value, list | tuple) and _index(part) is not None:
            index = _index(part)
            assert index is not None
            value = value[index] if -len(value) <= index < len(value) else MISSING
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def matches(values: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether every path of `where` holds its value in `values` (None matches a missing
    one, as metadata filters do; `true` never matches 1)."""
    for path, wanted in where.items():
        found = get(values, parse(path))
        found = None if found is MISSING else found
        if found != wanted or isinstance(found, bool) != isinstance(wanted, bool):
            return False
    return True


def _index(part: str) -> int | None:
    try:
        return int(part)
    except ValueError:
        return None
