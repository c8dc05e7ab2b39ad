"""Task ids: a hash of where the task was planned.

The same task planned again from the same checkpoint gets the same id, so a resumed run
finds the writes the task saved before a crash or a failing sibling.
"""

from __future__ import annotations

import hashlib

from ttcli.uuid6 import dashed


def task_id(checkpoint: str, namespace: str, step: int, name: str, *parts: str) -> str:
    """A deterministic id for the task `name` planned at `checkpoint`."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (checkpoint, namespace, str(step), name, *parts):
        digest.update(part.encode())
        digest.update(b"\x00")
    return dashed(digest.hexdigest())
