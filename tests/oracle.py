"""The LangGraph oracle: one LangGraph-shaped `api` namespace per runtime, and the helpers
that compare what a scenario gives on each (ids and timestamps normalised away)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import langgraph.config as lg_config
import langgraph.graph as lg
import langgraph.types as lg_types
import pytest
from langgraph.checkpoint.memory import InMemorySaver as LgInMemorySaver

import ttcli
from tests.conftest import SAVERS
from tests.pg import new_dsn
from ttcli.savers.sqlite import SqliteSaver

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# each name a scenario uses: (ttcli's, LangGraph's)
_API: dict[str, tuple[Any, Any]] = {
    "StateGraph": (ttcli.StateGraph, lg.StateGraph),
    "START": (ttcli.START, lg.START),
    "END": (ttcli.END, lg.END),
    "Saver": (ttcli.InMemorySaver, LgInMemorySaver),
    "interrupt": (ttcli.interrupt, lg_types.interrupt),
    "Command": (ttcli.Command, lg_types.Command),
    "Send": (ttcli.Send, lg_types.Send),
    "MessagesState": (ttcli.MessagesState, lg.MessagesState),
    "add_messages": (ttcli.add_messages, lg.add_messages),
    "get_stream_writer": (ttcli.get_stream_writer, lg_config.get_stream_writer),
}
TTCLI = SimpleNamespace(name="ttcli", **{name: pair[0] for name, pair in _API.items()})
LANGGRAPH = SimpleNamespace(name="langgraph", **{name: pair[1] for name, pair in _API.items()})


def cfg(thread: str = "t", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **configurable}}


def normalise(history: list[Any]) -> list[dict[str, Any]]:
    """Ids become positions in the history; parents point at positions."""
    position = {snap.config["configurable"]["checkpoint_id"]: i for i, snap in enumerate(history)}
    rows = []
    for snap in history:
        parent = snap.parent_config["configurable"]["checkpoint_id"] if snap.parent_config else None
        metadata = {k: v for k, v in (snap.metadata or {}).items() if k != "writes"}
        rows.append(
            {
                "values": snap.values,
                "next": snap.next,
                "metadata": metadata,
                "parent": position.get(parent, parent and "outside"),
                "tasks": [
                    (t.name, t.path, t.result, t.error, plain(t.interrupts)) for t in snap.tasks
                ],
                "interrupts": plain(snap.interrupts),
            }
        )
    return rows


def plain(value: Any) -> Any:
    """Interrupts as their values: their ids are hashes, and LangGraph's hash is another.

    Messages (LangChain's or ttcli's) as their fields, a generated id as `<uuid>`.
    """
    if isinstance(getattr(value, "type", None), str) and hasattr(value, "content"):
        return message_fields(value)
    if hasattr(value, "value") and hasattr(value, "id"):
        return ("Interrupt", plain(value.value))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(plain(v) for v in value)
    return value


def message_fields(message: Any) -> tuple[Any, ...]:
    message_id = message.id
    # None too: LangGraph's add_messages gives a task's returned message its id in place, so
    # the task's recorded result has it or not depending on when the write was saved
    if message_id is None or isinstance(message_id, str) and _UUID.match(message_id):
        message_id = "<uuid>"
    tool_calls = [(c["name"], c["args"], c["id"]) for c in getattr(message, "tool_calls", [])]
    return (message.type, message.content, message_id, getattr(message, "name", None), tool_calls)


def history_of(app: Any, thread: str = "t", **kwargs: Any) -> list[dict[str, Any]]:
    return normalise(list(app.get_state_history(cfg(thread), **kwargs)))


def ttcli_api(backend: str, tmp_path: Path) -> SimpleNamespace:
    """The ttcli namespace whose `Saver()` makes a fresh saver of `backend` each call."""
    files = itertools.count()

    def saver() -> Any:
        if backend == "memory":
            return ttcli.InMemorySaver()
        if backend == "postgres":
            return ttcli.PostgresSaver(new_dsn())
        return SqliteSaver(tmp_path / f"{next(files)}.db")

    return SimpleNamespace(**{**vars(TTCLI), "Saver": saver})


Scenario = Callable[[SimpleNamespace], Any]


def same_as_langgraph(scenarios: list[Scenario]) -> Callable[..., None]:
    """A test that runs each scenario on LangGraph and on ttcli (each saver) and compares."""

    @pytest.mark.parametrize("backend", SAVERS)
    @pytest.mark.parametrize("scenario", scenarios, ids=[s.__name__ for s in scenarios])
    def test_same_as_langgraph(scenario: Scenario, backend: str, tmp_path: Path) -> None:
        assert scenario(ttcli_api(backend, tmp_path)) == scenario(LANGGRAPH)

    return test_same_as_langgraph
