"""StateGraph: declaring nodes, edges and branches, checked once at `compile()`."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ttcli.errors import GraphDefinitionError
from ttcli.graph.constants import END, RESERVED_CHARS, RESERVED_NODES, START
from ttcli.graph.state import annotated_input_schema, schema_channels

if TYPE_CHECKING:
    from ttcli.runtime.compiled import CompiledStateGraph
    from ttcli.savers.base import BaseSaver

#: a function, or an object with `invoke`/`ainvoke` (a Runnable, a compiled graph)
NodeFunc = Any
PathFunc = Callable[..., Any]


def is_node_action(action: Any) -> bool:
    """What `add_node` accepts: a callable, or an object with `invoke` or `ainvoke`."""
    return callable(action) or hasattr(action, "invoke") or hasattr(action, "ainvoke")


def node_name(action: Any) -> str:
    """The name `add_node(action)` gives a node: its `name`, its `__name__` or its class's."""
    name = getattr(action, "name", None) or getattr(action, "__name__", None)
    return name if isinstance(name, str) else type(action).__name__


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: `path(state)` names the next node(s), optionally through a map."""

    path: PathFunc
    path_map: dict[Hashable, str] | None = None
    name: str = "condition"


@dataclass
class StateGraph:
    """A graph whose nodes read and write one shared state.

    Example:
        builder = StateGraph(State)
        builder.add_node("a", node_a)
        builder.add_edge(START, "a")
        graph = builder.compile(checkpointer=InMemorySaver())
    """

    state_schema: type[Any]
    #: the type of the run's `context` (`invoke(..., context=...)`), which nodes read as
    #: `runtime.context`; a dict given for a dataclass or pydantic schema is made one
    context_schema: type[Any] | None = None
    #: the keys `invoke` takes (LangGraph's `input_schema`); the state schema's by default
    input_schema: type[Any] | None = field(default=None, kw_only=True)
    #: the keys `invoke` returns and `values` streams; the state schema's by default
    output_schema: type[Any] | None = field(default=None, kw_only=True)
    nodes: dict[str, NodeFunc] = field(default_factory=dict, init=False)
    edges: set[tuple[str, str]] = field(default_factory=set, init=False)
    waiting_edges: set[tuple[tuple[str, ...], str]] = field(default_factory=set, init=False)
    branches: dict[str, dict[str, Branch]] = field(default_factory=dict, init=False)
    retry_policies: dict[str, tuple[Any, ...]] = field(default_factory=dict, init=False)
    #: a node's own input schema, read from its first parameter's type (LangGraph's rule)
    node_schemas: dict[str, type[Any]] = field(default_factory=dict, init=False)
    #: nodes that run only once the run would otherwise end (`add_node(..., defer=True)`)
    deferred: set[str] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        self.channels = schema_channels(self.state_schema)
        for schema in (self.input_schema, self.output_schema):
            for key, channel in schema_channels(schema).items() if schema else ():
                self.channels.setdefault(key, channel)

    def add_node(
        self,
        node: NodeFunc,
        action: NodeFunc = None,
        *,
        metadata: dict[str, Any] | None = None,
        destinations: Sequence[str] | dict[str, str] | None = None,
        retry_policy: Any = None,
        input_schema: type[Any] | None = None,
        defer: bool = False,
    ) -> StateGraph:
        """Add a node; `add_node(func)` names it after the function.

        `retry_policy` (a `RetryPolicy`, or several: the first that applies to an error
        counts) runs a failing node again. `input_schema` is the schema whose keys the node
        reads (by default its first parameter's type, if it has one). A node added with
        `defer=True` runs only when no other node is due: once the branches leading to it
        (of different lengths, or fanned out with `Send`) have all finished. `metadata` and
        `destinations` are accepted as LangGraph accepts them; they only serve LangGraph's
        graph drawing.
        """
        if action is None:
            if not is_node_action(node):
                raise GraphDefinitionError(f"Node `{node}` needs a function: add_node(name, func)")
            action, node = node, node_name(node)
        if not isinstance(node, str):
            raise GraphDefinitionError(f"Node name must be a string, got {node!r}")
        if node in RESERVED_NODES:
            raise GraphDefinitionError(f"Node `{node}` is reserved.")
        for char in RESERVED_CHARS:
            if char in node:
                raise GraphDefinitionError(
                    f"'{char}' is a reserved character and is not allowed in the node names."
                )
        if node in self.nodes:
            raise GraphDefinitionError(f"Node `{node}` already present.")
        if not is_node_action(action):
            raise GraphDefinitionError(
                f"Node `{node}` action must be callable or have invoke/ainvoke, got {action!r}"
            )
        self.nodes[node] = action
        schema = input_schema or annotated_input_schema(action)
        if schema is not None and schema is not self.state_schema:
            self.node_schemas[node] = schema
            # its keys the state schema lacks are private channels, shared by the nodes
            for key, channel in schema_channels(schema).items():
                self.channels.setdefault(key, channel)
        if defer:
            self.deferred.add(node)
        if retry_policy is not None:
            many = isinstance(retry_policy, Sequence) and not hasattr(retry_policy, "_fields")
            self.retry_policies[node] = tuple(retry_policy) if many else (retry_policy,)
        return self

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> StateGraph:
        """`a -> b`; with a list of starts, `end_key` waits until all of them ran."""
        if isinstance(start_key, str):
            if start_key == END:
                raise GraphDefinitionError("END cannot be a start node")
            if end_key == START:
                raise GraphDefinitionError("START cannot be an end node")
            self.edges.add((start_key, end_key))
            return self
        starts = tuple(start_key)
        for start in starts:
            if start == END:
                raise GraphDefinitionError("END cannot be a start node")
        if end_key in (START, END):
            raise GraphDefinitionError(
                f"{'START' if end_key == START else 'END'} cannot be the end of a join edge"
            )
        self.waiting_edges.add((starts, end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: PathFunc,
        path_map: dict[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """After `source`, go where `path(state)` says: a node name, a list of them, or END."""
        if not callable(path):
            raise GraphDefinitionError(
                f"Conditional edge from `{source}` needs a callable path, got {path!r}"
            )
        name = getattr(path, "__name__", "condition")
        if name == "<lambda>":
            name = "condition"
        mapping: dict[Hashable, str] | None
        if isinstance(path_map, dict) or path_map is None:
            mapping = path_map
        else:  # a list of destinations maps each name to itself
            mapping = {name: name for name in path_map}
        branches = self.branches.setdefault(source, {})
        if name in branches:
            raise GraphDefinitionError(
                f"Branch with name `{name}` already exists for node `{source}`"
            )
        branches[name] = Branch(path, mapping, name)
        return self

    def add_sequence(self, nodes: Sequence[NodeFunc | tuple[str, NodeFunc]]) -> StateGraph:
        """Add nodes and chain them with edges, in order."""
        if not nodes:
            raise GraphDefinitionError("Sequence requires at least one node.")
        previous: str | None = None
        for item in nodes:
            name, action = item if isinstance(item, tuple) else (node_name(item), item)
            self.add_node(name, action)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> StateGraph:
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self, path: PathFunc, path_map: dict[Hashable, str] | Sequence[str] | None = None
    ) -> StateGraph:
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> StateGraph:
        return self.add_edge(key, END)

    def validate(self) -> None:
        """Raise GraphDefinitionError for any edge or branch naming an unknown node."""
        known = set(self.nodes)
        sources = (
            {start for start, _ in self.edges}
            | {s for starts, _ in self.waiting_edges for s in starts}
            | set(self.branches)
        )
        for source in sorted(sources):
            if source != START and source not in known:
                raise GraphDefinitionError(f"Found edge starting at unknown node '{source}'")
        if START not in sources:
            raise GraphDefinitionError(
                "Graph must have an entrypoint: add at least one edge from START to another node"
            )
        targets = {end for _, end in self.edges} | {end for _, end in self.waiting_edges}
        for target in sorted(targets):
            if target != END and target not in known:
                raise GraphDefinitionError(f"Found edge ending at unknown node `{target}`")
        for source, branches in self.branches.items():
            for branch in branches.values():
                for destination in (branch.path_map or {}).values():
                    if destination != END and destination not in known:
                        raise GraphDefinitionError(
                            f"At '{source}' node, '{branch.name}' branch "
                            f"found unknown target '{destination}'"
                        )

    def compile(
        self,
        checkpointer: BaseSaver | None = None,
        *,
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
        name: str | None = None,
        store: Any = None,
    ) -> CompiledStateGraph:
        """Check the graph and return a runnable one; nodes read `store` (an `InMemoryStore`)
        through a `store` parameter or `runtime.store`."""
        from ttcli.runtime.compiled import CompiledStateGraph

        self.validate()
        for node in [*(interrupt_before or ()), *(interrupt_after or ())]:
            if node != "*" and node not in self.nodes:
                raise GraphDefinitionError(f"Interrupt node `{node}` not found")
        return CompiledStateGraph(
            self,
            checkpointer=checkpointer,
            interrupt_before=tuple(interrupt_before or ()),
            interrupt_after=tuple(interrupt_after or ()),
            name=name or "LangGraph",
            store=store,
        )
