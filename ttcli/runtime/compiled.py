"""CompiledStateGraph: the runnable graph, with LangGraph's invoke/stream/state API."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ttcli.configs import RunnableConfig
from ttcli.errors import ConfigError
from ttcli.graph.constants import INTERRUPT
from ttcli.graph.state import schema_types
from ttcli.runtime import history, update
from ttcli.runtime.loop import Run
from ttcli.runtime.plan import GraphPlan
from ttcli.runtime.types import StateSnapshot
from ttcli.savers.base import BaseSaver

if TYPE_CHECKING:
    from ttcli.graph.builder import StateGraph

STREAM_MODES = ("values", "updates", "debug")


class CompiledStateGraph:
    """A StateGraph ready to run; with a checkpointer, every superstep is saved."""

    def __init__(
        self,
        builder: StateGraph,
        *,
        checkpointer: BaseSaver | None,
        interrupt_before: Sequence[str],
        interrupt_after: Sequence[str],
        name: str,
    ) -> None:
        self.builder = builder
        self.plan = GraphPlan(builder)
        self.checkpointer = checkpointer
        self.interrupt_before_nodes = tuple(interrupt_before)
        self.interrupt_after_nodes = tuple(interrupt_after)
        self.name = name

    @property
    def checkpointer(self) -> BaseSaver | None:
        return self._checkpointer

    @checkpointer.setter
    def checkpointer(self, saver: BaseSaver | None) -> None:
        # the state schema's own types may be rebuilt from what this saver stores (a saver
        # written elsewhere may have no serializer of ttcli's)
        serde = getattr(saver, "serde", None)
        if serde is not None:
            serde.register(*schema_types(self.builder.state_schema))
        self._checkpointer = saver

    @property
    def nodes(self) -> Mapping[str, Any]:
        return self.plan.nodes

    def stream(
        self,
        input: Any,  # noqa: A002 - LangGraph's name
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] = "values",
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
    ) -> Iterator[Any]:
        """Run the graph, yielding chunks; with several modes, (mode, chunk) pairs."""
        run = self._run(input, config, stream_mode, interrupt_before, interrupt_after)
        yield from self._chunks(run, stream_mode)

    def invoke(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str = "values",
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
    ) -> Any:
        """Run the graph to the end (or a breakpoint) and return the final state.

        A run paused by `interrupt()` returns the state plus `"__interrupt__"`: the
        interrupts it waits on, each answered with `invoke(Command(resume=...), config)`.
        """
        run = self._run(input, config, stream_mode, interrupt_before, interrupt_after)
        chunks = list(self._chunks(run, stream_mode))
        if stream_mode != "values":
            return chunks
        if not chunks:
            return None
        if run.interrupts:
            return {**chunks[-1], INTERRUPT: list(run.interrupts)}
        return chunks[-1]

    def _run(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None,
        stream_mode: str | Sequence[str],
        interrupt_before: Sequence[str] | None,
        interrupt_after: Sequence[str] | None,
    ) -> Run:
        for mode in _modes(stream_mode):
            if mode not in STREAM_MODES:
                raise ConfigError(
                    f"Unknown stream_mode {mode!r}; use one of {', '.join(STREAM_MODES)}"
                )
        return Run(
            self,
            input,
            config,
            interrupt_before=self.interrupt_before_nodes
            if interrupt_before is None
            else interrupt_before,
            interrupt_after=self.interrupt_after_nodes
            if interrupt_after is None
            else interrupt_after,
            modes=_modes(stream_mode),
        )

    @staticmethod
    def _chunks(run: Run, stream_mode: str | Sequence[str]) -> Iterator[Any]:
        modes = _modes(stream_mode)
        for mode, chunk in run.stream():
            if mode in modes:
                yield chunk if isinstance(stream_mode, str) else (mode, chunk)

    def get_state(self, config: RunnableConfig) -> StateSnapshot:
        return history.get_state(self.plan, self._saver(), config)

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        return history.get_state_history(
            self.plan, self._saver(), config, filter=filter, before=before, limit=limit
        )

    def update_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig:
        return update.update_state(self.plan, self._saver(), config, values, as_node)

    def _saver(self) -> BaseSaver:
        if self.checkpointer is None:
            raise ConfigError("No checkpointer set")
        return self.checkpointer


def _modes(stream_mode: str | Sequence[str]) -> tuple[str, ...]:
    return (stream_mode,) if isinstance(stream_mode, str) else tuple(stream_mode)
