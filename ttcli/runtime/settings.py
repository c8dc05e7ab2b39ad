"""What one run is asked to do, besides its input: read once from invoke/stream's arguments."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import ConfigError
from ttcli.runtime.subgraphs import ParentLink
from ttcli.savers.base import BaseSaver

if TYPE_CHECKING:
    import asyncio  # only named: see runtime/aio.py

DEFAULT_RECURSION_LIMIT = 10007  # LangGraph 1.2's default


@dataclass(frozen=True)
class RunSettings:
    """The options of one invoke/stream call (or its async twin)."""

    saver: BaseSaver | None
    interrupt_before: tuple[str, ...] = ()
    interrupt_after: tuple[str, ...] = ()
    modes: tuple[str, ...] = ("values",)
    #: the event loop of an async caller, on which async nodes run
    loop: asyncio.AbstractEventLoop | None = None
    durability: str | None = None
    #: the run this one is a subgraph of, if it is one
    link: ParentLink | None = None
    #: the caller streams subgraphs' chunks too
    subgraphs: bool = False
    #: what nodes read as `runtime.context`
    context: Any = None
    #: what nodes read as `store` and `runtime.store`
    store: Any = None

    @property
    def forwarding(self) -> bool:
        """Whether subgraphs pass their chunks up to this run's stream."""
        return self.subgraphs or (self.link is not None and self.link.modes is not None)


def coerce_context(schema: type[Any] | None, context: Any) -> Any:
    """The run's context: a dict given for a dataclass or pydantic schema is made one (as
    LangGraph does); anything else is taken as it is."""
    if context is None or schema is None or not isinstance(context, dict):
        return context
    if dataclasses.is_dataclass(schema) or hasattr(schema, "model_validate"):
        return schema(**context)
    return context


def recursion_limit(config: RunnableConfig) -> int:
    limit: Any = config.get("recursion_limit", DEFAULT_RECURSION_LIMIT)
    if not isinstance(limit, int) or limit < 1:
        raise ConfigError("recursion_limit must be at least 1")
    return limit


def where(config: RunnableConfig, *, checked: bool) -> CheckpointRef:
    """The thread a run is on (which a run that saves nothing need not name)."""
    if checked:
        return CheckpointRef.from_config(config)
    configurable = config.get("configurable") or {}
    return CheckpointRef(
        str(configurable.get("thread_id", "")), configurable.get("checkpoint_ns") or ""
    )
