"""Checkpoint refs, git style: a full id, a unique prefix, `latest`, each optionally `~N`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ttcli.configs import CheckpointRef
from ttcli.errors import AmbiguousRefError, CheckpointNotFoundError, InputError, ThreadNotFoundError
from ttcli.savers.base import BaseSaver, CheckpointTuple

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
            "or latest, optionally followed by ~N"
        )
    head = _base(saver, ref, found["base"].lower(), text)
    back = int(found["back"] or 0)
    for done in range(back):
        parent = saver.get_tuple(head.parent_config) if head.parent_config else None
        if parent is None:
            reason = "its first checkpoint" if head.parent_config is None else "a pruned checkpoint"
            raise CheckpointNotFoundError(
                text,
                ref.thread_id,
                f"{back} back from {found['base']} passes {reason} after {done}",
            )
        head = parent
    return head


def _base(saver: BaseSaver, ref: CheckpointRef, base: str, text: str) -> CheckpointTuple:
    if base in ("latest", "head"):
        head = saver.get_tuple(ref.to_config())
        if head is None:
            raise ThreadNotFoundError(ref.thread_id)
        return head
    exact = saver.get_tuple(ref.at(base).to_config()) if len(base) == 36 else None
    if exact is not None:
        return exact
    candidates = [c.checkpoint["id"] for c in saver.list_metadata(ref.to_config())]
    if not candidates and saver.get_tuple(ref.to_config()) is None:
        raise ThreadNotFoundError(ref.thread_id)
    matches = [c for c in candidates if c.startswith(base)]
    if not matches:
        raise CheckpointNotFoundError(text, ref.thread_id)
    if len(matches) > 1:
        raise AmbiguousRefError(text, ref.thread_id, matches)
    found = saver.get_tuple(ref.at(matches[0]).to_config())
    assert found is not None
    return found


def short_ids(ids: Sequence[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix of each id (at least `minimum` characters) that no other id shares,
    as git abbreviates hashes; such a prefix works as a ref."""
    ordered = sorted({i for i in ids if i})
    found = {}
    for index, checkpoint_id in enumerate(ordered):
        length = minimum
        # in sorted order the ids sharing the longest prefix with this one are its neighbours
        for neighbour in ordered[max(index - 1, 0) : index + 2]:
            if neighbour != checkpoint_id:
                length = max(length, _shared(checkpoint_id, neighbour) + 1)
        found[checkpoint_id] = checkpoint_id[:length]
    return found


def _shared(a: str, b: str) -> int:
    """Length of the common prefix."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))
