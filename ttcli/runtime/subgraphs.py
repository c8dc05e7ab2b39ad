"""Subgraphs: a graph run by a node of another graph, saved in the same thread.

A compiled graph used as a node, or invoked inside a node's function, runs as a subgraph when
it has no checkpointer of its own: it saves to its parent's checkpointer, in the parent's
thread, under the namespace `<node>:<task id>` (nested ones join theirs with `|`), with steps
from -1 and `parents` metadata naming the checkpoint each enclosing graph was at. Re-running
the same task (a resume) finds the subgraph's checkpoints there and continues from them; a
new parent checkpoint gives new task ids, so a replay starts the subgraph afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.runtime.commands import Command, current_scratchpad
from ttcli.savers.base import BaseSaver

if TYPE_CHECKING:
    import asyncio  # only named: see runtime/aio.py

    from ttcli.runtime.committer import Committer
    from ttcli.runtime.compiled import CompiledStateGraph
    from ttcli.runtime.plan import GraphPlan

#: separates the levels of a nested namespace, and a node's name from its task id
NS_SEP = "|"
NS_END = ":"
#: a chunk forwarded from a subgraph: ("subgraph", (namespace tuple, mode, payload))
SUBGRAPH = "subgraph"


@dataclass(frozen=True)
class ParentLink:
    """What a graph run inside a task takes from the run of that task."""

    saver: BaseSaver | None
    thread_id: str
    #: the subgraph's namespace: the parent's, then `<node>:<task id>`
    namespace: str
    #: metadata `parents` of the subgraph's checkpoints: {namespace: checkpoint id}
    parents: Mapping[str, str]
    durability: str | None
    #: the parent run's committer, with durability="async": the subgraph's saves go there
    #: too, and its reads wait for it
    committer: Committer | None
    loop: asyncio.AbstractEventLoop | None
    #: the stream modes to pass up, when the caller streams subgraphs; else None
    modes: tuple[str, ...] | None
    forward: Callable[[tuple[str, Any]], None] | None
    #: the parent run's answer given when no interrupt waited: a question in here may take it
    spare: list[Any] = field(default_factory=list)
    #: the ids of the messages chat models streamed as tokens in this stream, all graphs'
    streamed: set[str] = field(default_factory=set)
    #: the parent run's `context`, which a subgraph's nodes read too
    context: Any = None
    #: the parent run's store, for a subgraph compiled without one
    store: Any = None

    @property
    def segment(self) -> str:
        """This subgraph's part of the namespace: `<node>:<task id>`, then `|<n>` for the
        n-th other subgraph run by the same task."""
        parts = self.namespace.split(NS_SEP)
        last = parts.pop()
        return last if NS_END in last else f"{parts[-1]}{NS_SEP}{last}"

    def repeated(self, count: int) -> ParentLink:
        """The link of the `count`-th subgraph run by the same task (counting from 0): each
        saves apart, as in LangGraph."""
        return self if count == 0 else replace(self, namespace=f"{self.namespace}{NS_SEP}{count}")

    def config(self, config: RunnableConfig | None) -> RunnableConfig:
        """The subgraph's config: the caller's, in the parent's thread and the task's namespace."""
        configurable = {
            **((config or {}).get("configurable") or {}),
            "thread_id": self.thread_id,
            "checkpoint_ns": self.namespace,
        }
        configurable.pop("checkpoint_id", None)
        return {**(config or {}), "configurable": configurable}

    def pass_up(self, mode: str, payload: Any) -> None:
        """Hand a chunk of the subgraph's stream to the parent's, under this namespace."""
        if self.forward is None or self.modes is None:
            return
        if mode == SUBGRAPH:
            namespace, inner_mode, inner = payload
            self.forward((SUBGRAPH, ((self.segment, *namespace), inner_mode, inner)))
        elif mode in self.modes:
            self.forward((SUBGRAPH, ((self.segment,), mode, payload)))


def task_namespace(parent: str, node: str, task_id: str) -> str:
    segment = f"{node}{NS_END}{task_id}"
    return f"{parent}{NS_SEP}{segment}" if parent else segment


def child_parents(link: ParentLink | None, at: CheckpointRef) -> dict[str, str]:
    """The `parents` metadata of a subgraph run by a task planned at `at`: the enclosing
    graphs' checkpoints, by namespace."""
    parents = dict(link.parents) if link is not None else {}
    if at.checkpoint_id is not None:
        parents[at.checkpoint_ns] = at.checkpoint_id
    return parents


def node_names(namespace: str) -> list[str]:
    """The nodes a namespace passes through, outermost first."""
    segments = namespace.split(NS_SEP) if namespace else []
    return [segment.split(NS_END, 1)[0] for segment in segments if NS_END in segment]


def subgraph_input(link: ParentLink, given: Any, plan: GraphPlan) -> Any:
    """What a subgraph starts from: `given` the first time its task runs; when the task runs
    again (a resume), nothing new, or the parent's answer to the interrupt it is waiting on."""
    if link.saver is None:
        return given
    from ttcli.runtime.history import get_state

    if link.committer is not None:
        link.committer.flush()
    ref = CheckpointRef(link.thread_id, link.namespace)
    if link.saver.get_tuple(ref.to_config()) is None:
        return given
    if not get_state(plan, link.saver, ref.to_config()).next:
        return None  # it ran to its end before: the answer is for another subgraph
    scratchpad = current_scratchpad()
    answered, answer = scratchpad.take_answer() if scratchpad else (False, None)
    return Command(resume=answer) if answered else None


def find_subgraph(action: Any) -> CompiledStateGraph | None:
    """The compiled graph a node runs: the node itself, or one its function reaches through
    its closure or its module's globals (as LangGraph finds them)."""
    from ttcli.runtime.compiled import CompiledStateGraph

    if isinstance(action, CompiledStateGraph):
        return action
    candidates = [_contents(cell) for cell in getattr(action, "__closure__", None) or ()]
    code, names = getattr(action, "__code__", None), getattr(action, "__globals__", {})
    if code is not None:
        candidates += [names[name] for name in code.co_names if name in names]
    return next((c for c in candidates if isinstance(c, CompiledStateGraph)), None)


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None
