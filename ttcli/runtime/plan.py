"""The executable form of a StateGraph: channels, and per node its triggers and writers.

Every edge becomes a write to a trigger channel (`branch:to:b`, or the barrier of a join),
so scheduling is one rule: a node runs when one of its triggers has a version it has not
seen yet. This is LangGraph's Pregel model, which is what makes histories line up.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ttcli.configs import RunnableConfig
from ttcli.errors import InvalidUpdateError
from ttcli.graph.builder import Branch, StateGraph
from ttcli.graph.channels import (
    BarrierAfterFinish,
    BarrierChannel,
    Channel,
    EphemeralValue,
    LastValueAfterFinish,
    Topic,
)
from ttcli.graph.constants import END, START, TASKS, branch_channel, join_channel
from ttcli.graph.state import read_input, schema_channels, state_builder
from ttcli.runtime.commands import Command, ParentCommand, Send
from ttcli.runtime.nodes import NodeCall, node_call, resolve, takes_config
from ttcli.runtime.subgraphs import find_subgraph

if TYPE_CHECKING:
    import asyncio  # only named: see runtime/aio.py

Write = tuple[str, Any]


@dataclass(frozen=True)
class NodeSpec:
    """A node as the runtime sees it."""

    name: str
    triggers: tuple[str, ...]
    #: runs the node to completion: (state, config, event loop of an async caller) -> output
    call: NodeCall | None
    #: writes made after every run: the node's plain and join edges
    edge_writes: tuple[Write, ...]
    branches: tuple[Branch, ...]
    #: RetryPolicy objects: how a failing run of the node is retried
    retry: tuple[Any, ...] = ()


class GraphPlan:
    """Channels and node specs compiled from a StateGraph."""

    def __init__(self, builder: StateGraph) -> None:
        self.schema = builder.state_schema
        #: every state channel: the state schema's keys, then nodes' private ones
        self.state_keys: dict[str, Channel] = dict(builder.channels)
        #: the keys `values` streams: the state schema's
        self.shown_keys = tuple(schema_channels(builder.state_schema))
        #: the keys `invoke` returns
        self.output_keys = frozenset(schema_channels(builder.output_schema or builder.state_schema))
        #: the keys an input may write
        self.input_keys = {
            key: self.state_keys[key]
            for key in schema_channels(builder.input_schema or builder.state_schema)
        }
        #: nodes that read a schema of their own: its keys
        self.node_keys = {
            name: tuple(schema_channels(schema)) for name, schema in builder.node_schemas.items()
        }
        #: makes the state a node reads from its keys' values, by node (None: the state's)
        self.node_states = {
            name: state_builder(schema) for name, schema in builder.node_schemas.items()
        }
        self.build_state = state_builder(self.schema)
        self.channels: dict[str, Channel] = dict(builder.channels)
        self.channels[START] = EphemeralValue(START)
        self.channels[TASKS] = Topic(TASKS)
        joins: dict[str, list[str]] = {}
        for starts, end in sorted(builder.waiting_edges):
            channel = join_channel(starts, end)
            barrier = BarrierAfterFinish if end in builder.deferred else BarrierChannel
            self.channels[channel] = barrier(channel, starts)
            joins.setdefault(end, []).append(channel)
        self.nodes: dict[str, NodeSpec] = {}
        #: the compiled graphs nodes run as subgraphs, by node name
        self.subgraphs: dict[str, Any] = {
            name: found
            for name, action in builder.nodes.items()
            if (found := find_subgraph(action)) is not None
        }
        for name in [START, *builder.nodes]:
            trigger = START if name == START else branch_channel(name)
            if name in builder.deferred:
                self.channels[trigger] = LastValueAfterFinish(trigger)
            elif name != START:
                self.channels[trigger] = EphemeralValue(trigger, guard=False)
            action = builder.nodes.get(name)
            self.nodes[name] = NodeSpec(
                name=name,
                triggers=(trigger, *joins.get(name, ())),
                call=None if action is None else node_call(action),
                edge_writes=_edge_writes(builder, name),
                branches=tuple(builder.branches.get(name, {}).values()),
                retry=builder.retry_policies.get(name, ()),
            )

    @functools.cached_property
    def sorted_triggers(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(node, its trigger channels sorted), by node name: the order tasks are planned in."""
        return tuple(
            (name, tuple(sorted(self.nodes[name].triggers))) for name in sorted(self.nodes)
        )

    @functools.cached_property
    def triggers(self) -> frozenset[str]:
        """The channels that trigger nodes: a superstep that updates none of them would be
        the run's last, so deferred nodes' triggers become available then."""
        return frozenset(chan for spec in self.nodes.values() for chan in spec.triggers)

    def restore(self, channel_values: Mapping[str, Any]) -> dict[str, Channel]:
        """Fresh channel instances holding a checkpoint's values."""
        from ttcli.graph.channels import MISSING

        return {
            name: spec.restore(channel_values.get(name, MISSING))
            for name, spec in self.channels.items()
        }

    def values(self, channels: Mapping[str, Channel]) -> dict[str, Any]:
        """The state keys that hold a value."""
        return self.read(channels, self.shown_keys)

    def read(self, channels: Mapping[str, Channel], keys: Iterable[str]) -> dict[str, Any]:
        return {key: channels[key].get() for key in keys if channels[key].is_available()}

    def node_input(self, name: str, channels: Mapping[str, Channel]) -> Any:
        """What node `name` reads: its own schema's keys, or the state."""
        build = self.node_states.get(name)
        if build is None:
            return self.build_state(self.values(channels))
        return build(self.read(channels, self.node_keys[name]))

    def node_writes(
        self,
        name: str,
        output: Any,
        channels: Mapping[str, Channel],
        config: RunnableConfig,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> tuple[dict[str, Any] | None, list[Write]]:
        """What node `name` writes when it returns `output`.

        Returns:
            The state keys it updates (None if it returned None), and every write: those
            keys, then its edges and branches.
        """
        spec = self.nodes[name]
        goto: list[Write] = []
        if isinstance(output, Command):
            if output.graph == Command.PARENT:
                raise ParentCommand(output)
            if output.graph is not None:
                raise InvalidUpdateError(
                    f"Node '{name}' returned Command(graph={output.graph!r}); "
                    "use graph=Command.PARENT or None"
                )
            updates = read_input(self.schema, output.update, self.state_keys)
            goto = self.goto_writes(f"Node '{name}'", output.destinations())
        else:
            updates = read_input(self.schema, output, self.state_keys)
        writes: list[Write] = list(updates.items())
        writes.extend(spec.edge_writes)
        writes.extend(goto)
        if spec.branches:
            state = self._fresh_state(channels, updates)
            for branch in spec.branches:
                writes.extend(self._branch_writes(name, branch, state, config, loop))
        return (None if output is None else updates), writes

    def goto_writes(self, who: str, destinations: list[str | Send]) -> list[Write]:
        """Writes that start the named nodes (or Sends) in the next superstep."""
        writes: list[Write] = []
        for destination in destinations:
            if isinstance(destination, Send):
                self._check_node(who, destination.node)
                writes.append((TASKS, destination))
            elif destination != END:
                self._check_node(who, destination)
                writes.append((branch_channel(destination), None))
        return writes

    def _check_node(self, who: str, destination: Any) -> None:
        if destination not in self.nodes or destination == START:
            raise InvalidUpdateError(
                f"{who} named unknown node {destination!r}; expected one of "
                f"{sorted(n for n in self.nodes if n != START)} or END"
            )

    def _fresh_state(self, channels: Mapping[str, Channel], updates: Mapping[str, Any]) -> Any:
        """The state a branch sees: its own node's writes applied, as in LangGraph, on
        copies of the channels (the values shallow copies, as `Channel.copy` makes them)."""
        written = {key: channels[key].copy() for key in updates}
        for key, value in updates.items():
            written[key].update([value])
        values = {}
        for key in self.shown_keys:
            channel = written[key] if key in written else channels[key]
            if channel.is_available():
                values[key] = channel.get() if key in written else copy.copy(channel.get())
        return self.build_state(values)

    def _branch_writes(
        self,
        name: str,
        branch: Branch,
        state: Any,
        config: RunnableConfig,
        loop: asyncio.AbstractEventLoop | None,
    ) -> list[Write]:
        path = branch.path
        result = resolve(path(state, config) if takes_config(path) else path(state), loop)
        picks = result if isinstance(result, list | tuple) else [result]
        destinations = [
            pick if isinstance(pick, Send) else _resolve(name, branch, pick) for pick in picks
        ]
        return self.goto_writes(f"Branch '{branch.name}' of node '{name}'", destinations)


def _resolve(name: str, branch: Branch, pick: Hashable) -> Any:
    if branch.path_map is None:
        return pick
    try:
        return branch.path_map[pick]
    except (KeyError, TypeError):
        raise InvalidUpdateError(
            f"Branch '{branch.name}' of node '{name}' returned {pick!r}, "
            f"which is not in its path map {sorted(map(str, branch.path_map))}"
        ) from None


def _edge_writes(builder: StateGraph, name: str) -> tuple[Write, ...]:
    writes: list[Write] = [
        (branch_channel(end), None)
        for start, end in sorted(builder.edges)
        if start == name and end != END
    ]
    writes.extend(
        (join_channel(starts, end), name)
        for starts, end in sorted(builder.waiting_edges)
        if name in starts
    )
    return tuple(writes)
