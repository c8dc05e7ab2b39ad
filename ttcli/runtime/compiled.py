"""CompiledStateGraph: the runnable graph, with LangGraph's invoke/stream/state API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ttcli.configs import RunnableConfig
from ttcli.errors import ConfigError
from ttcli.graph.constants import INTERRUPT
from ttcli.graph.state import schema_types
from ttcli.runtime import history, update
from ttcli.runtime.aio import in_thread, running_loop
from ttcli.runtime.commands import GraphInterrupt, current_scratchpad
from ttcli.runtime.loop import Run
from ttcli.runtime.plan import GraphPlan
from ttcli.runtime.settings import RunSettings, coerce_context
from ttcli.runtime.store import BaseStore
from ttcli.runtime.subgraphs import SUBGRAPH, node_names, subgraph_input
from ttcli.runtime.types import StateSnapshot
from ttcli.savers.base import BaseSaver, to_thread

if TYPE_CHECKING:
    import asyncio  # only named: see runtime/aio.py

    from ttcli.graph.builder import StateGraph

STREAM_MODES = ("values", "updates", "debug", "custom", "messages")


class RunOptions(TypedDict, total=False):
    """The keyword options of invoke/stream (and their async twins) besides `stream_mode`."""

    interrupt_before: Sequence[str] | None
    interrupt_after: Sequence[str] | None
    #: "sync" (the default), "async" or "exit": see runtime/recorder.py
    durability: str | None
    #: stream subgraphs' chunks too, as (namespace, chunk) or (namespace, mode, chunk)
    subgraphs: bool
    #: what nodes read as `runtime.context` (of the graph's `context_schema`)
    context: Any


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
        store: BaseStore | None = None,
    ) -> None:
        self.builder = builder
        #: what nodes read as `store` and `runtime.store` (a subgraph without one: its parent's)
        self.store = store
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
        stream_mode: str | Sequence[str] = "updates",
        **options: Unpack[RunOptions],
    ) -> Iterator[Any]:
        """Run the graph, yielding chunks; with several modes, (mode, chunk) pairs."""
        run = self._run(input, config, stream_mode, options)
        yield from self._chunks(run, stream_mode)

    async def astream(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] = "updates",
        **options: Unpack[RunOptions],
    ) -> AsyncIterator[Any]:
        """`stream` for async callers: async nodes run on the caller's event loop, and the
        saver's work on worker threads, so the loop is never blocked by either."""
        run = self._run(input, config, stream_mode, options, loop=running_loop())
        async for chunk in in_thread(self._chunks(run, stream_mode)):
            yield chunk

    def invoke(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str = "values",
        **options: Unpack[RunOptions],
    ) -> Any:
        """Run the graph to the end (or a breakpoint) and return the final state.

        A run paused by `interrupt()` returns the state plus `"__interrupt__"`: the
        interrupts it waits on, each answered with `invoke(Command(resume=...), config)`.
        """
        run = self._run(input, config, stream_mode, options)
        return _outcome(run, stream_mode, list(self._chunks(run, stream_mode)))

    async def ainvoke(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str = "values",
        **options: Unpack[RunOptions],
    ) -> Any:
        """`invoke` for async callers (see `astream`)."""
        run = self._run(input, config, stream_mode, options, loop=running_loop())
        chunks = [chunk async for chunk in in_thread(self._chunks(run, stream_mode))]
        return _outcome(run, stream_mode, chunks)

    def _run(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None,
        stream_mode: str | Sequence[str],
        options: RunOptions,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Run:
        modes = _modes(stream_mode)
        for mode in modes:
            if mode not in STREAM_MODES:
                raise ConfigError(
                    f"Unknown stream_mode {mode!r}; use one of {', '.join(STREAM_MODES)}"
                )
        saver, durability = self.checkpointer, options.get("durability")
        context, store = options.get("context"), self.store
        scratchpad = current_scratchpad()
        link = scratchpad.link if scratchpad is not None and saver is None else None
        if scratchpad is not None and link is not None:  # run inside a task: a subgraph
            link = link.repeated(scratchpad.subgraph_calls)
            scratchpad.subgraph_calls += 1
            saver, config, input = (
                link.saver,
                link.config(config),
                subgraph_input(link, input, self.plan),
            )
            loop, durability = loop or link.loop, durability or link.durability
            context = options.get("context", link.context)
            store = store or link.store
            modes = tuple(dict.fromkeys([*modes, *(link.modes or ())]))
        before, after = options.get("interrupt_before"), options.get("interrupt_after")
        settings = RunSettings(
            saver=saver,
            interrupt_before=tuple(self.interrupt_before_nodes if before is None else before),
            interrupt_after=tuple(self.interrupt_after_nodes if after is None else after),
            modes=modes,
            durability=durability,
            loop=loop,
            link=link,
            subgraphs=bool(options.get("subgraphs")),
            context=coerce_context(self.builder.context_schema, context),
            store=store,
        )
        return Run(self, input, config, settings)

    @staticmethod
    def _chunks(run: Run, stream_mode: str | Sequence[str]) -> Iterator[Any]:
        """The chunks the caller asked for; a subgraph's also go up to its parent's stream."""
        modes, single = _modes(stream_mode), isinstance(stream_mode, str)
        subgraphs = run.forwarding and run.link is None
        for mode, chunk in run.stream():
            if run.link is not None:
                run.link.pass_up(mode, chunk)
            namespace: tuple[str, ...] = ()
            if mode == SUBGRAPH:
                if not subgraphs:
                    continue
                namespace, mode, chunk = chunk
            if mode not in modes:
                continue
            found = chunk if single else (mode, chunk)
            if subgraphs:
                found = (namespace, found) if single else (namespace, *found)
            yield found
        if run.link is not None and run.interrupts:
            raise GraphInterrupt(run.interrupts, bubbled=True)  # the parent's task pauses on them

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        plan = self._plan_for(config)
        return history.get_state(plan, self._saver(), config, subgraphs=subgraphs)

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        return history.get_state_history(
            self._plan_for(config), self._saver(), config, filter=filter, before=before, limit=limit
        )

    def update_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig:
        return update.update_state(self._plan_for(config), self._saver(), config, values, as_node)

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        return await to_thread(self.get_state, config, subgraphs=subgraphs)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        snapshots = self.get_state_history(config, filter=filter, before=before, limit=limit)
        async for snapshot in in_thread(snapshots):
            yield snapshot

    async def aupdate_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig:
        return await to_thread(self.update_state, config, values, as_node)

    def _plan_for(self, config: RunnableConfig) -> GraphPlan:
        """The plan of the graph whose checkpoints `config`'s namespace holds."""
        plan = self.plan
        namespace = ((config or {}).get("configurable") or {}).get("checkpoint_ns") or ""
        for node in node_names(namespace):
            inner = plan.subgraphs.get(node)
            if inner is None:
                raise ConfigError(f"Subgraph {node!r} not found in namespace {namespace!r}")
            plan = inner.plan
        return plan

    def _saver(self) -> BaseSaver:
        """The saver to read or update state in; called by a node, once its run's saves
        handed off in the background (durability="async") are committed."""
        if self.checkpointer is None:
            raise ConfigError("No checkpointer set")
        scratchpad = current_scratchpad()
        link = scratchpad.link if scratchpad is not None else None
        if link is not None and link.committer is not None:
            link.committer.flush()
        return self.checkpointer


def _outcome(run: Run, stream_mode: str, chunks: list[Any]) -> Any:
    """What invoke returns: the last state's output keys (with the interrupts it waits on),
    or the chunks."""
    if stream_mode != "values":
        return chunks
    if not chunks:
        return None
    keys = run.plan.output_keys
    last = {key: value for key, value in chunks[-1].items() if key in keys}
    if run.interrupts:
        return {**last, INTERRUPT: list(run.interrupts)}
    return last


def _modes(stream_mode: str | Sequence[str]) -> tuple[str, ...]:
    return (stream_mode,) if isinstance(stream_mode, str) else tuple(stream_mode)
