"""Structural diff of two states: what was added, removed, changed or appended, and where."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Change:
    """One difference, at a path like `messages[3].content`."""

    path: str
    #: added, removed, changed, or appended (a list item after the old list's end)
    kind: str
    old: Any = None
    new: Any = None


def diff_values(old: Any, new: Any, path: str = "") -> list[Change]:
    """Every difference between `old` and `new`, depth first, in key and index order."""
    if old is new or old == new:
        return []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        changes = []
        for key in [*old, *(k for k in new if k not in old)]:
            where = _key_path(path, key)
            if key not in new:
                changes.append(Change(where, "removed", old=old[key]))
            elif key not in old:
                changes.append(Change(where, "added", new=new[key]))
            else:
                changes.extend(diff_values(old[key], new[key], where))
        return changes
    if _is_list(old) and _is_list(new):
        changes = []
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            changes.extend(diff_values(a, b, f"{path}[{index}]"))
        # a list that grew past its old end is the common case (messages): say "appended"
        kind = "appended" if not changes else "added"
        changes.extend(Change(f"{path}[{i}]", kind, new=new[i]) for i in range(len(old), len(new)))
        changes.extend(
            Change(f"{path}[{i}]", "removed", old=old[i]) for i in range(len(new), len(old))
        )
        return changes
    return [Change(path or "(root)", "changed", old=old, new=new)]


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"
