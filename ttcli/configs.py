"""RunnableConfig helpers shared by the runtime and the savers.

LangGraph passes `{"configurable": {"thread_id": ..., "checkpoint_ns": ..., "checkpoint_id": ...}}`
dicts everywhere; ttcli accepts them at the public boundary and reads them once into a
`CheckpointRef`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ttcli.errors import ConfigError

RunnableConfig = dict[str, Any]

MISSING_THREAD = (
    "Checkpointer requires one or more of the following 'configurable' keys: "
    "thread_id, checkpoint_ns, checkpoint_id"
)


#: the longest thread id or namespace, in UTF-8 bytes: PostgreSQL indexes the two together,
#: and an index entry holds at most ~2,700 bytes; every saver keeps the same limit, so that a
#: thread can move between them
MAX_TEXT_BYTES = 1024


def check_text(text: str, what: str) -> None:
    """A thread id, namespace or prefix must be text a file can store (UTF-8): a lone
    surrogate (bytes in another encoding, as Python passes them on from a command line) is
    a usage error, on every saver; and so is one over `MAX_TEXT_BYTES`."""
    size = len(text)
    if not text.isascii():
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise ConfigError(
                f"{what} {text!r} is not UTF-8 text (bytes in another encoding?): give it in UTF-8"
            ) from None
    if size > MAX_TEXT_BYTES:
        raise ConfigError(
            f"{what} {text[:20]!r}... is {size:,} bytes long, over the {MAX_TEXT_BYTES:,} a "
            "database indexes: use a shorter one (a hash of it, say)"
        )


def unicode_error(value: Any) -> UnicodeEncodeError | None:
    """What in JSON data `value` is text no UTF-8 file holds (a lone surrogate, which JSON
    may spell `"\\udcff"`), or None. Data that is not JSON's is left to its own encoder."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc
    except (TypeError, ValueError):
        pass
    return None


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """Where a checkpoint lives: thread, namespace and (optionally) its id."""

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str | None = None

    def __post_init__(self) -> None:
        # the usual short ASCII texts pass without a call (refs are made at every put)
        thread_id, namespace = self.thread_id, self.checkpoint_ns
        if not (thread_id.isascii() and len(thread_id) <= MAX_TEXT_BYTES):
            check_text(thread_id, "thread id")
        if not (namespace.isascii() and len(namespace) <= MAX_TEXT_BYTES):
            check_text(namespace, "checkpoint namespace")

    @classmethod
    def from_config(cls, config: RunnableConfig | None) -> CheckpointRef:
        configurable = (config or {}).get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if thread_id is None:
            raise ConfigError(MISSING_THREAD)
        return cls(
            thread_id=str(thread_id),
            checkpoint_ns=str(configurable.get("checkpoint_ns") or ""),
            checkpoint_id=configurable.get("checkpoint_id") or None,
        )

    def at(self, checkpoint_id: str | None) -> CheckpointRef:
        return CheckpointRef(self.thread_id, self.checkpoint_ns, checkpoint_id)

    def to_config(self) -> RunnableConfig:
        return self.config_at(self.checkpoint_id)

    def config_at(self, checkpoint_id: str | None) -> RunnableConfig:
        """`at(checkpoint_id).to_config()`, without making (and checking) another ref."""
        configurable: dict[str, Any] = {
            "thread_id": self.thread_id,
            "checkpoint_ns": self.checkpoint_ns,
        }
        if checkpoint_id is not None:
            configurable["checkpoint_id"] = checkpoint_id
        return {"configurable": configurable}
