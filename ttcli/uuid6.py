"""Time-ordered checkpoint ids (UUIDv6), shared by the runtime and the file format.

The timestamp leads the id, so ids sort in creation order and the largest id of a thread is
its latest checkpoint; the checkpoint's creation time is read back from its id. As in
LangGraph, the clock sequence field carries the step.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import random

GREGORIAN_OFFSET = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01
_lock = threading.Lock()
_last_timestamp = 0
#: the last id this process made, and its timestamp: a run's next checkpoint is made after
#: it, and its time is read from it, without parsing it back
_made: tuple[str | None, int] = (None, 0)
#: where node bits come from (`_node_bits`)
_node_random: random.Random | None = None


def new_id(step: int, *, after: str | None = None) -> str:
    """A fresh id: greater than the previous one this process made from its clock, and than
    `after` (the parent's id, or the thread's latest), so a child sorts after its parent even
    when the process that wrote the parent had a clock running ahead of ours."""
    global _last_timestamp, _made
    floor = _timestamp(after) if after else 0
    with _lock:
        now = max(time.time_ns() // 100 + GREGORIAN_OFFSET, _last_timestamp + 1)
        _last_timestamp = now
    # a parent from a clock ahead of ours moves this id only, not the process's clock: the
    # next thread's ids carry the right time again
    timestamp = max(now, floor + 1)
    made = _format(timestamp, 0x8000 | (step & 0x3FFF), _node_bits())
    _made = (made, timestamp)
    return made


def _node_bits() -> int:
    """Random node bits: they only have to differ between processes. Not os.urandom, whose
    system call lets another thread take the GIL at every checkpoint (with
    durability="async", the committer's): a generator of ttcli's own, seeded from it once
    (and again in a forked child), so that a program seeding `random` neither changes the
    bits nor sees its own numbers change. Made with the first id, as importing `random`
    costs every command-line start 1 ms (`secrets` 3 ms)."""
    global _node_random
    if _node_random is None:
        with _lock:
            if _node_random is None:
                import random

                made = random.Random()
                if hasattr(os, "register_at_fork"):
                    os.register_at_fork(after_in_child=made.seed)
                _node_random = made
    return _node_random.getrandbits(48)


def _timestamp(checkpoint_id: str) -> int:
    """The 60-bit UUIDv6 timestamp of an id, so that an id made one tick later sorts after
    it; for a UUID of another version (v1, v4, v7...), the largest timestamp whose ids do
    not sort after it (0 for an id that is not a UUID)."""
    made, timestamp = _made
    if checkpoint_id == made:
        return timestamp
    canonical = canonical_bytes(checkpoint_id)
    if canonical is not None:  # the runtime's own ids: no UUID object to build
        raw = int.from_bytes(canonical, "big")
    else:
        try:
            raw = uuid.UUID(checkpoint_id).int
        except (TypeError, ValueError, AttributeError):
            return 0
    if (raw >> 76) & 0xF == 6:
        return _timestamp_of(raw)
    # the next id's first 48 bits are then larger than this one's (the clock's last tick at most)
    return min((((raw >> 80) + 1) << 12) - 1, (1 << 60) - 2)


def _timestamp_of(raw: int) -> int:
    return (raw >> 80) << 12 | (raw >> 64) & 0xFFF


def id_micros(checkpoint_id: str | bytes) -> int | None:
    """Microseconds since 1970 at which a UUIDv6 id was made; None for other ids."""
    made, timestamp = _made
    if checkpoint_id == made:
        return (timestamp - GREGORIAN_OFFSET) // 10
    if isinstance(checkpoint_id, str):  # the runtime's own ids: no UUID object to build
        checkpoint_id = canonical_bytes(checkpoint_id) or checkpoint_id
    if isinstance(checkpoint_id, bytes) and len(checkpoint_id) == 16:
        raw = int.from_bytes(checkpoint_id, "big")
    else:
        try:
            raw = uuid.UUID(checkpoint_id).int  # type: ignore[arg-type]
        except (TypeError, ValueError, AttributeError):
            return None
    if (raw >> 76) & 0xF != 6:  # the version
        return None
    return (_timestamp_of(raw) - GREGORIAN_OFFSET) // 10


def id_time(checkpoint_id: str) -> datetime:
    micros = id_micros(checkpoint_id)
    if micros is None:
        raise ValueError(f"{checkpoint_id!r} is not a UUIDv6 checkpoint id")
    return datetime.fromtimestamp(micros / 1_000_000, UTC)


def lowest_id_at(moment: datetime) -> str:
    """The smallest id made at or after `moment`: `id < lowest_id_at(t)` means made before t.

    Raises:
        ValueError: a moment before 1970 or past the clock's range (no id names it; a
            malformed one would sort above every real id).
    """
    micros = round(moment.timestamp() * 1_000_000)
    timestamp = micros * 10 + GREGORIAN_OFFSET
    if micros < 0 or timestamp >= 1 << 60:
        raise ValueError(f"{moment.isoformat()} is outside the id clock's range (1970 to 5236)")
    return _format(timestamp, 0, 0)


def _format(timestamp: int, clock_seq: int, node: int) -> str:
    value = (timestamp >> 12) << 80 | 0x6 << 76 | (timestamp & 0xFFF) << 64 | clock_seq << 48 | node
    return dashed(f"{value:032x}")


def dashed(digits: str) -> str:
    """32 hex digits in the 8-4-4-4-12 form of a UUID (as str(UUID) gives, without parsing)."""
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def bytes_text(data: bytes) -> str:
    """A UUID's 16 bytes in its 8-4-4-4-12 form, as `dashed(data.hex())` gives it (in half
    the time: every id a listing or a read hands out is made so)."""
    return f"{data[:4].hex()}-{data[4:10].hex('-', 2)}-{data[10:].hex()}"


def canonical_bytes(text: str) -> bytes | None:
    """The 16 bytes of a UUID written in canonical form (lowercase, dashed), else None: only
    then does turning the bytes back into text give the same text."""
    if len(text) != 36 or text[8] != "-" or text[13] != "-" or text[18] != "-" or text[23] != "-":
        return None
    if text != text.lower():
        return None
    try:
        found = bytes.fromhex(text.replace("-", ""))
    except ValueError:
        return None
    return found if len(found) == 16 else None


def canonical_id(found: Any) -> Any:
    """A UUID id as ttcli's databases hand it back (lowercase, dashed), whatever its spelling
    (`{...}`, upper case); any other value as it is. One id spelled two ways is one id: it
    reads back, and is found, as the databases keep it."""
    if isinstance(found, str) and canonical_bytes(found) is None:
        try:
            return str(uuid.UUID(found))
        except ValueError:
            pass
    return found
