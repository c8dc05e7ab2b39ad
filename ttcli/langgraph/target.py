"""A LangGraph graph as the command line runs it: `ttcli run app.py:graph` on a LangGraph
`StateGraph` or compiled graph runs it on LangGraph, storing through `TtcliSaver`, and
`update`, `replay` and `resume` go on with it.

`LangGraphTarget` offers what the command line uses of a ttcli compiled graph (`stream`,
`get_state`, `update_state`, `plan.state_keys`, `checkpointer`), with values given to the
graph as LangGraph's and values shown as ttcli's (messages as dicts), as stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Interrupt

from ttcli.langgraph.saver import TtcliSaver
from ttcli.savers.base import BaseSaver


class LangGraphTarget:
    """A LangGraph graph compiled with a `TtcliSaver` on the command line's saver."""

    def __init__(self, found: Any, saver: BaseSaver) -> None:
        compiled = isinstance(found, CompiledStateGraph)
        self._builder: StateGraph[Any] = found.builder if compiled else found
        # a compiled graph's breakpoints are kept
        self._before = found.interrupt_before_nodes if compiled else None
        self._after = found.interrupt_after_nodes if compiled else None
        #: what `--input` and `--set` may name
        self.plan = SimpleNamespace(state_keys=list(self._builder.channels))
        self.checkpointer = saver

    @property
    def checkpointer(self) -> BaseSaver:
        return self._saver

    @checkpointer.setter
    def checkpointer(self, saver: BaseSaver) -> None:
        self._saver, self._bridge = saver, TtcliSaver.on(saver)
        self._graph = self._builder.compile(
            checkpointer=self._bridge, interrupt_before=self._before, interrupt_after=self._after
        )

    @property
    def nodes(self) -> Any:
        """The graph's nodes by name (the command line checks `--as-node` against them)."""
        return self._graph.nodes

    def stream(self, given: Any, config: Any, **options: Any) -> Iterator[Any]:
        values = self._bridge.values
        for chunk in self._graph.stream(values.to_langgraph(given), config, **options):
            yield values.to_ttcli(chunk)

    def get_state(self, config: Any) -> Any:
        snapshot = self._graph.get_state(config)
        to_ttcli = self._bridge.values.to_ttcli
        return snapshot._replace(
            values=to_ttcli(snapshot.values),
            tasks=tuple(
                task._replace(
                    result=to_ttcli(task.result),
                    interrupts=tuple(
                        Interrupt(value=to_ttcli(i.value), id=i.id) for i in task.interrupts
                    ),
                )
                for task in snapshot.tasks
            ),
        )

    def update_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        return self._graph.update_state(config, values, as_node=as_node)
