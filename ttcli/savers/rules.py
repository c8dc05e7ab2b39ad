"""Rules every saver applies the same way: metadata filters, the invariants a write must
keep (see the contract's docstring in base.py), and copying one checkpoint between savers."""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ttcli.configs import CheckpointRef
from ttcli.errors import AnswerConflictError, ConfigError, InvalidFilterError, SerializationError
from ttcli.savers.records import metadata_json, node_writes, source_and_step
from ttcli.uuid6 import canonical_bytes

if TYPE_CHECKING:
    from ttcli.savers.base import BaseSaver, CheckpointTuple, TaskWrite

FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def validate_filter(filter_: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check metadata filter keys before any saver sees them.

    Keys are plain names, optionally dotted for nested fields (`a.b`); anything else is
    rejected rather than ignored, so a filter never silently matches everything.
    """
    checked = dict(filter_ or {})
    for key in checked:
        if not isinstance(key, str) or not FILTER_KEY.match(key):
            raise InvalidFilterError(
                f"Invalid filter key: {key!r}. Filter keys must contain only alphanumeric "
                "characters, underscores, dots, and hyphens."
            )
    return checked


def split_writes(filter_: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A checked filter's keys on `writes` (what each node returned), apart from the others:
    the SQL savers store those outputs as values, their metadata columns hold only the
    nodes' names, so they match them on the decoded metadata (`metadata_matches`)."""
    on_writes = {k: v for k, v in filter_.items() if _on_writes(k)}
    return {k: v for k, v in filter_.items() if k not in on_writes}, on_writes


def _on_writes(key: str) -> bool:
    return key == "writes" or key.startswith("writes.")


def metadata_matches(metadata: Mapping[str, Any], filter_: Mapping[str, Any]) -> bool:
    """Equality on (dotted) metadata keys, as JSON has it (`json_equal`); a None filter
    value matches a missing key. Metadata is JSON, so a value JSON cannot hold matches none
    of it; what nodes wrote (`writes`) is any value, compared as such."""
    for key, wanted in filter_.items():
        value: Any = metadata
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if not (_on_writes(key) or is_json(wanted)) or not json_equal(value, wanted):
            return False
    return True


def is_json(value: Any) -> bool:
    """Whether JSON holds the value as it is: text, a finite number, a bool, null, and maps
    (text keys) and lists of them, their subclasses too (a StrEnum is text); walked with a
    stack of its own, as `json_equal`."""
    values = [value]
    while values:
        item = values.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            values += item.values()
        elif isinstance(item, list | tuple):
            values += item
        elif isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif not (item is None or isinstance(item, str | int)):
            return False
    return True


def json_equal(value: Any, wanted: Any) -> bool:
    """Equality of JSON values: a bool is no number (True is not 1, as in the SQL
    databases' filters), at every level of maps and lists; a tuple is a list. Walked in
    order with a stack of its own: metadata nests up to METADATA_DEPTH_MAX levels, what
    nodes wrote deeper."""
    pairs: list[tuple[Any, Any]] = [(value, wanted)]
    while pairs:
        ours, theirs = pairs.pop()
        if type(ours) is bool or type(theirs) is bool:
            if type(ours) is not type(theirs) or ours != theirs:
                return False
        elif isinstance(ours, Mapping) and isinstance(theirs, Mapping):
            if len(ours) != len(theirs) or ours.keys() != theirs.keys():
                return False
            pairs += [(ours[key], theirs[key]) for key in reversed(list(ours))]
        elif isinstance(ours, list | tuple) and isinstance(theirs, list | tuple):
            if len(ours) != len(theirs):
                return False
            pairs += zip(reversed(ours), reversed(theirs), strict=True)
        elif not ours == theirs:
            return False
    return True


def check_child_id(checkpoint_id: str, parent_id: str | None) -> None:
    """Invariant 1: within a thread a child's id sorts after its parent's."""
    if parent_id is None or (
        # the runtime's own ids (canonical text) sort as their bytes do: no parsing
        len(checkpoint_id) == len(parent_id) == 36
        and checkpoint_id > parent_id
        and checkpoint_id == checkpoint_id.lower()
        and parent_id == parent_id.lower()
    ):
        return
    if not _sort_key(checkpoint_id) > _sort_key(parent_id):
        raise ConfigError(
            f"checkpoint {checkpoint_id} must sort after its parent {parent_id}: make its id "
            "with ttcli.uuid6.new_id(step, after=parent_id)"
        )


def refuse_stored(checkpoint_id: str, thread_id: str) -> None:
    """Invariant 2: a stored checkpoint never changes, so a `put` of its id again is refused.

    Raises:
        ConfigError: always (the caller found the id stored).
    """
    raise ConfigError(
        f"checkpoint {checkpoint_id} is already stored in thread '{thread_id}', and a stored "
        "checkpoint never changes: give the new one an id of its own (ttcli.uuid6.new_id)"
    )


def checkpoint_time(ts: str) -> datetime:
    """A checkpoint's `ts` as a time in UTC (a time without a zone is UTC). A `ts` that is
    not ISO 8601, or that is outside the years 1 to 9999 once in UTC (`0001-01-01T00:00+14:00`),
    is refused when it is written: stored, it could never be read back."""
    try:
        moment = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        raise SerializationError(f"checkpoint ts {ts!r} is not an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        raise SerializationError(
            f"checkpoint ts {ts!r} is outside the years 1 to 9999 in UTC"
        ) from None


def _sort_key(checkpoint_id: str) -> tuple[int, str]:
    """How an id sorts where it is stored: a UUID in any spelling (braces, upper case,
    `urn:uuid:`, no dashes) by its 16 bytes, as SQLite keeps it; anything else as text."""
    canonical = canonical_bytes(checkpoint_id) if isinstance(checkpoint_id, str) else None
    if canonical is not None:  # the runtime's own ids: no UUID object to build
        return int.from_bytes(canonical, "big"), ""
    try:
        return uuid.UUID(checkpoint_id).int, ""
    except (TypeError, ValueError, AttributeError):
        return -1, str(checkpoint_id)


def merged_answers(stored: Any, sent: Any, thread_id: str) -> Any:
    """Invariant 5: an interrupt's answer is stored once. A task's `__resume__` write is the
    list of its answers, one per `interrupt()` call in order; the list to store is the longer
    of the two when one starts with the other (sending an answer again is harmless), and two
    lists that differ are two people's different answers: the first stays."""
    if not isinstance(stored, list) or not isinstance(sent, list):
        return sent
    shorter, longer = sorted((stored, sent), key=len)
    if longer[: len(shorter)] == shorter:
        return longer
    given = next(a for a, b in zip(stored, sent, strict=False) if a != b)
    raise AnswerConflictError(given, thread_id)


def copy_checkpoint(
    source: BaseSaver,
    saved: CheckpointTuple,
    target: BaseSaver,
    target_ref: CheckpointRef,
    *,
    extra_metadata: Mapping[str, Any] | None = None,
) -> bool:
    """Store one checkpoint (same id, values, metadata, parent and pending writes) in
    `target` under `target_ref`'s thread. Returns False if it was there already; a copy
    interrupted halfway (say, between the checkpoint and its writes) completes when run again.
    """
    read = _with_writes(source, saved)
    if read is None:
        return False  # deleted (pruned) since it was read: there is nothing to copy
    saved, written = read
    at = target_ref.at(saved.checkpoint["id"]).to_config()
    copied = target.get_tuple(at) is None
    if copied:
        parent = target.ref(saved.parent_config).checkpoint_id if saved.parent_config else None
        metadata = {**saved.metadata, **(extra_metadata or {})}
        # no change hints: the target compares channel versions with the parent it has
        target.put(target_ref.at(parent).to_config(), saved.checkpoint, metadata, {})
    present = {task_id for task_id, *_ in target.get_writes(at)}
    tasks: dict[str, tuple[str, list[tuple[str, Any]]]] = {}
    for task_id, path, channel, value in written:
        tasks.setdefault(task_id, (path, []))[1].append((channel, value))
    for task_id, (path, writes) in tasks.items():
        if task_id not in present:
            target.put_writes(at, writes, task_id, path)
    return copied


def _with_writes(
    source: BaseSaver, saved: CheckpointTuple
) -> tuple[CheckpointTuple, list[TaskWrite]] | None:
    """The checkpoint with its pending writes as they were read together: a checkpoint read
    a while ago (a lineage, a thread's list) may have been pruned or answered since, and its
    writes must not then be taken for none. None if it is gone."""
    for _ in range(3):
        written = source.get_writes(saved.config)
        if [(t, c, v) for t, _p, c, v in written] == list(saved.pending_writes or ()):
            break
        fresh = source.get_tuple(saved.config)
        if fresh is None:
            return None
        saved = fresh
    return saved, written


def check_metadata(metadata: Mapping[str, Any]) -> None:
    """Metadata is JSON in the SQL databases, where a NaN or an infinity would break every
    filtered list, its `source` and `step` are columns there, and its `writes` a map by
    node: refused on every saver, as SerializationError."""
    source_and_step(metadata)
    node_writes(metadata)
    metadata_json({k: v for k, v in metadata.items() if k != "writes"})
