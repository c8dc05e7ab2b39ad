"""`git blame` for state: which checkpoint, step and node last wrote each part of a value.

Walks from a checkpoint to its parents, as far as it takes: a part was written at the
oldest checkpoint from which it has held its value without a break (items of a list by
their index, entries of a mapping by their key).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ttcli.errors import NotFoundError
from ttcli.ops import paths
from ttcli.ops.inspect import state_values
from ttcli.savers.base import BaseSaver, CheckpointTuple


@dataclass(frozen=True, slots=True)
class Blame:
    """Who wrote one part of a value."""

    #: the part: `tool`, `log[1]`, `order.id`
    part: str
    value: Any
    checkpoint_id: str
    step: int
    source: str
    #: the nodes whose returns wrote it (those that returned the key; all of the step's
    #: writers when none did, as after a Send; `input` for what a run was given)
    nodes: list[str]


def blame(saver: BaseSaver, saved: CheckpointTuple, path: str) -> list[Blame]:
    """Who wrote each part of the value at `path` (a state key, dotted for nested parts) in
    `saved`.

    Raises:
        InputError: `path` is not a path; NotFoundError: `saved` holds nothing there.
    """
    keys = paths.parse(path)
    value = _at(saved, keys)
    if value is paths.MISSING:
        found = ", ".join(state_values(saved.checkpoint["channel_values"])) or "none"
        raise NotFoundError(f"checkpoint has no value at {path!r}; its state keys: {found}")
    parts = _parts(path, value)
    written: dict[str, CheckpointTuple] = {}
    current = saved
    while len(written) < len(parts):
        parent = saver.get_tuple(current.parent_config) if current.parent_config else None
        before = _at(parent, keys) if parent is not None else paths.MISSING
        for name, (sub, held) in parts.items():
            if name not in written and not _same(paths.get(before, sub), held):
                written[name] = current  # it holds its value since `current`
        current = parent or current
    return [_line(name, held, written[name], keys[0]) for name, (_, held) in parts.items()]


def _at(saved: CheckpointTuple, keys: list[str]) -> Any:
    return paths.get(state_values(saved.checkpoint["channel_values"]), keys)


def _parts(path: str, value: Any) -> dict[str, tuple[list[str], Any]]:
    """The parts blamed one by one: list items, mapping entries, or the value whole."""
    if isinstance(value, list | tuple):
        return {f"{path}[{i}]": ([str(i)], item) for i, item in enumerate(value)}
    if isinstance(value, Mapping) and value:
        return {f"{path}.{key}": ([str(key)], item) for key, item in value.items()}
    return {path: ([], value)}


def _same(old: Any, new: Any) -> bool:
    # True == 1 in Python; in a state they are different values
    return old is not paths.MISSING and old == new and type(old) is type(new)


def _line(part: str, value: Any, saved: CheckpointTuple, key: str) -> Blame:
    writes = saved.metadata.get("writes")
    writers = dict(writes) if isinstance(writes, Mapping) else {}
    nodes = [n for n, ret in writers.items() if isinstance(ret, Mapping) and key in ret]
    return Blame(
        part=part,
        value=value,
        checkpoint_id=saved.checkpoint["id"],
        step=int(saved.metadata.get("step", 0)),
        source=str(saved.metadata.get("source", "")),
        # a loop checkpoint that records no writes took its values from the input
        nodes=nodes
        or list(writers)
        or (["input"] if saved.metadata.get("source") == "loop" else []),
    )
