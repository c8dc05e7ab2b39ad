"""Checkpoint refs, git style: a full id, a unique prefix of one or a short id (the end of
one), `latest`, each optionally `~N`."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ttcli.configs import CheckpointRef
from ttcli.errors import AmbiguousRefError, CheckpointNotFoundError, InputError, ThreadNotFoundError
from ttcli.savers.base import BaseSaver, CheckpointTuple

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
    candidates = saver.checkpoint_ids(ref.to_config())  # ids only: nothing is decoded
    if not candidates and saver.get_tuple(ref.to_config()) is None:
        raise ThreadNotFoundError(ref.thread_id)
    # a short id is the end of one (its random part); anything else, the start
    tail = len(base) >= SHORT_MINIMUM and "-" not in base
    matches = [c for c in candidates if c.startswith(base) or (tail and c.endswith(base))]
    if not matches:
        raise CheckpointNotFoundError(text, ref.thread_id)
    if len(matches) > 1:
        raise AmbiguousRefError(text, ref.thread_id, matches)
    found = saver.get_tuple(ref.at(matches[0]).to_config())
    assert found is not None
    return found


def short_ids(ids: Iterable[str | None]) -> dict[str, str]:
    """The short id of each checkpoint id: its last 8 hex digits, which are random (the
    first ones are the time, which neighbours share), and work as a ref."""
    return {i: i[-SHORT:] for i in ids if i}
