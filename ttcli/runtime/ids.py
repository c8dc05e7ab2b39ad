"""Task ids: a hash of where the task was planned.

The same task planned again from the same checkpoint gets the same id, so a resumed run
finds the writes the task saved before a crash or a failing sibling.
"""

from __future__ import annotations

import hashlib

from ttcli.uuid6 import dashed


def task_id(checkpoint: str, namespace: str, step: int, name: str, *parts: str) -> str:
    """A deterministic id for the task `name` planned at `checkpoint`."""
    # each part ends in a NUL byte; hashed in one call (one update per part cost more)
    text = "\x00".join((checkpoint, namespace, str(step), name, *parts)) + "\x00"
    return dashed(hashlib.blake2b(text.encode(), digest_size=16).hexdigest())
