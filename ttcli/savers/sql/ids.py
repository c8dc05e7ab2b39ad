"""Checkpoint ids and times as this format stores them: 16 bytes and microseconds."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from ttcli.errors import ConfigError
from ttcli.savers.rules import checkpoint_time
from ttcli.uuid6 import bytes_text


def micros(ts: str) -> int:
    delta = checkpoint_time(ts) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def id_bytes(checkpoint_id: str) -> bytes | None:
    # the canonical form every id this saver hands out has, parsed without building a UUID
    if isinstance(checkpoint_id, str) and len(checkpoint_id) == 36 and checkpoint_id[8] == "-":
        try:
            return bytes.fromhex(checkpoint_id.replace("-", ""))
        except ValueError:
            pass
    try:
        return uuid.UUID(checkpoint_id).bytes
    except (TypeError, ValueError, AttributeError):
        return None


def require_id(checkpoint_id: str) -> bytes:
    found = id_bytes(checkpoint_id)
    if found is None:
        raise ConfigError(f"checkpoint id {checkpoint_id!r} is not a UUID")
    return found


def id_text(data: bytes) -> str:
    if len(data) != 16:
        raise ValueError(f"a checkpoint id has 16 bytes, not {len(data)}")
    return bytes_text(data)
