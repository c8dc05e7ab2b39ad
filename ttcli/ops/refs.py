"""Checkpoint refs, git style: a full id, a unique prefix of one or a short id (the end of
one), `latest`, each optionally `~N`."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import AmbiguousRefError, CheckpointNotFoundError, InputError, ThreadNotFoundError
from ttcli.savers.base import BaseSaver, CheckpointTuple
from ttcli.uuid6 import dashed

#: characters in a short id; and the fewest a ref matched against the end of ids may have
SHORT = 8
SHORT_MINIMUM = 4

_REF = re.compile(r"^(?P<base>[0-9a-fA-F-]+|latest|HEAD)(?:~(?P<back>\d+))?$")


def resolve(saver: BaseSaver, ref: CheckpointRef, text: str) -> CheckpointTuple:
    """The checkpoint `text` names in the thread `ref`.

    Raises:
        InputError: `text` is not a ref at all.
        ThreadNotFoundError / CheckpointNotFoundError: nothing matches.
        AmbiguousRefError: a prefix that several checkpoints start with.
    """
    found = _REF.match(text.strip())
    if found is None:
        raise InputError(
            f"invalid checkpoint ref {text!r}: use a checkpoint id, a unique prefix of one, "
            "a short id, or latest, optionally followed by ~N"
        )
    head = _base(saver, ref, found["base"].lower(), text)
    back = int(found["back"] or 0)
    for done in range(back):
        # parents are found by id, without reading any stored value; only the one named is
        parent = saver.list_metadata(head.parent_config) if head.parent_config else []
        if not parent:
            reason = "its first checkpoint" if head.parent_config is None else "a pruned checkpoint"
            raise CheckpointNotFoundError(
                text,
                ref.thread_id,
                f"{back} back from {found['base']} passes {reason} after {done}",
            )
        head = parent[0]
    return _full(saver, head.config) if back else head


def _base(saver: BaseSaver, ref: CheckpointRef, base: str, text: str) -> CheckpointTuple:
    if base in ("latest", "head"):
        head = saver.get_tuple(ref.to_config())
        if head is None:
            raise ThreadNotFoundError(ref.thread_id)
        return head
    exact = saver.get_tuple(ref.at(base).to_config()) if len(base) == 36 else None
    if exact is not None:
        return exact
    matches, total = _with_prefix(saver, ref, base.replace("-", ""))
    if SHORT_MINIMUM <= len(base) <= SHORT and "-" not in base:  # a short id: an id's end
        extra = [c for c in saver.ids_ending(ref.to_config(), base) if c not in matches]
        matches, total = matches + extra, total + len(extra)
    if not matches:
        if saver.get_tuple(ref.to_config()) is None:
            raise ThreadNotFoundError(ref.thread_id)
        raise CheckpointNotFoundError(text, ref.thread_id)
    if total > 1:
        raise AmbiguousRefError(text, ref.thread_id, matches, total=total)
    return _full(saver, ref.at(matches[0]).to_config())


def _with_prefix(saver: BaseSaver, ref: CheckpointRef, digits: str) -> tuple[list[str], int]:
    """Up to 6 ids that start with these hex digits, and how many do: an id range, read
    through the thread's id index (the ids below the first id after the range)."""
    if not 0 < len(digits) <= 32 or any(c not in "0123456789abcdef" for c in digits):
        return [], 0
    low = dashed(digits.ljust(32, "0"))
    above = int(digits.ljust(32, "f"), 16) + 1
    after = dashed(f"{above:032x}") if above < 1 << 128 else None
    found = saver.checkpoint_ids(ref.to_config(), below=after, limit=6)
    matches = [c for c in found if c >= low]
    if len(matches) < 6:
        return matches, len(matches)
    config = ref.to_config()
    total = saver.count_checkpoints(config, below=after) - saver.count_checkpoints(
        config, below=low
    )
    return matches, total


def _full(saver: BaseSaver, config: RunnableConfig) -> CheckpointTuple:
    found = saver.get_tuple(config)
    assert found is not None
    return found


def short_ids(ids: Iterable[str | None]) -> dict[str, str]:
    """The short id of each checkpoint id: its last 8 hex digits, which are random (the
    first ones are the time, which neighbours share), and work as a ref."""
    return {i: i[-SHORT:] for i in ids if i}
