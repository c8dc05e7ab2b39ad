"""Checkpoint and task ids.

Checkpoint ids are UUIDv6: the timestamp leads, so the string sorts in creation order and
the largest id of a thread is its latest checkpoint. As in LangGraph, the clock sequence is
the step. Task ids are a hash of where the task was planned, so a resumed run finds the
writes a task saved before a crash.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import uuid

_GREGORIAN_OFFSET = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01
_lock = threading.Lock()
_last_timestamp = 0


def checkpoint_id(step: int) -> str:
    """A new, time-sortable id; strictly increasing within this process."""
    global _last_timestamp
    with _lock:
        timestamp = max(time.time_ns() // 100 + _GREGORIAN_OFFSET, _last_timestamp + 1)
        _last_timestamp = timestamp
    value = (
        (timestamp >> 12) << 80
        | 0x6 << 76
        | (timestamp & 0xFFF) << 64
        | (0x8000 | (step & 0x3FFF)) << 48
        | secrets.randbits(48)
    )
    return str(uuid.UUID(int=value))


def task_id(checkpoint: str, namespace: str, step: int, name: str, *parts: str) -> str:
    """A deterministic id for the task `name` planned at `checkpoint`."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (checkpoint, namespace, str(step), name, *parts):
        digest.update(part.encode())
        digest.update(b"\x00")
    return str(uuid.UUID(bytes=digest.digest()))
