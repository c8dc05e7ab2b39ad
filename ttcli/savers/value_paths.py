"""Paths into a value, as an error names where a part sits: `messages[3].tool_calls[0]`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any


def walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every part of a value with its path, depth first, each after its own parts (so that
    the first of them an encoder fails on is the deepest)."""
    for child_path, child in parts(value, path):
        yield from walk(child, child_path)
    yield path, value


def parts(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """The direct parts of a map, a sequence, a set or a dataclass, with their paths."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield (
                (
                    f"{path}.{key}"
                    if isinstance(key, str) and key.isidentifier()
                    else f"{path}[{key!r}]"
                ),
                item,
            )
    elif isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            yield f"{path}[{index}]", item
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield f"{path}.{field.name}", getattr(value, field.name)
