"""Real LangGraph graphs run the same on TtcliSaver as on LangGraph's own InMemorySaver, in
sync and async apps, and the ttcli command line reads what TtcliSaver wrote."""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import operator
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel

from tests.clitools import data, ttcli
from ttcli.langgraph import TtcliSaver


class Tier(enum.Enum):
    GOLD = "gold"


@dataclass
class Order:
    order_id: str
    total: float


class Customer(BaseModel):
    name: str
    tier: Tier


SERDE = JsonPlusSerializer(
    allowed_msgpack_modules=[(__name__, "Tier"), (__name__, "Order"), (__name__, "Customer")]
)


class Runner:
    """Runs a compiled graph the sync way or the async way (`ainvoke`, `aget_state`...)."""

    def __init__(self, graph: Any, mode: str) -> None:
        self.graph, self.mode = graph, mode

    def invoke(self, value: Any, config: Any, **options: Any) -> Any:
        if self.mode == "sync":
            return self.graph.invoke(value, config, **options)
        return asyncio.run(self.graph.ainvoke(value, config, **options))

    def stream(self, value: Any, config: Any, mode: str) -> list[Any]:
        if self.mode == "sync":
            return list(self.graph.stream(value, config, stream_mode=mode))

        async def collect() -> list[Any]:
            return [chunk async for chunk in self.graph.astream(value, config, stream_mode=mode)]

        return asyncio.run(collect())

    def state(self, config: Any) -> Any:
        if self.mode == "sync":
            return self.graph.get_state(config, subgraphs=True)
        return asyncio.run(self.graph.aget_state(config, subgraphs=True))

    def update(self, config: Any, values: Any, as_node: str) -> Any:
        if self.mode == "sync":
            return self.graph.update_state(config, values, as_node=as_node)
        return asyncio.run(self.graph.aupdate_state(config, values, as_node=as_node))

    def history(self, config: Any) -> list[Any]:
        if self.mode == "sync":
            return list(self.graph.get_state_history(config))

        async def collect() -> list[Any]:
            return [snap async for snap in self.graph.aget_state_history(config)]

        return asyncio.run(collect())


def cfg(thread: str, **configurable: Any) -> Any:
    return {"configurable": {"thread_id": thread, **configurable}}


def chat(builder_saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    def bot(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        reply = AIMessage(f"echo: {last.content}", id=f"ai-{len(state['messages'])}")
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    run = Runner(builder.compile(checkpointer=builder_saver), mode)
    config = cfg("chat", user_id="u1")
    outputs = [run.invoke({"messages": [HumanMessage(t, id=f"h{i}")]}, config)
               for i, t in enumerate(["hi", "refund order 7", "thanks"])]  # fmt: skip
    return [outputs, run.history(config)]


class Review(TypedDict):
    plan: str
    log: Annotated[list[str], operator.add]


def interrupt_resume(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    def review(state: Review) -> dict[str, Any]:
        answer = interrupt({"question": "approve?", "plan": state["plan"]})
        return {"log": [f"reviewer said {answer}"]}

    builder = StateGraph(Review)
    builder.add_node("draft", lambda s: {"plan": "refund", "log": ["drafted"]})
    builder.add_node("review", review)
    builder.add_node("act", lambda s: {"log": [f"done: {s['plan']}"]})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "act")
    run = Runner(builder.compile(checkpointer=saver), mode)
    paused = run.invoke({"plan": "", "log": []}, cfg("review"))
    asked = [i.value for i in paused["__interrupt__"]]
    done = run.invoke(Command(resume="yes"), cfg("review"))
    return [asked, done, run.history(cfg("review"))]


class Fan(TypedDict):
    items: list[int]
    results: Annotated[list[int], operator.add]


def send_fan_out(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    def fan(state: Fan) -> list[Send]:
        return [Send("square", {"item": item}) for item in state["items"]]

    builder = StateGraph(Fan)
    builder.add_node("start", lambda s: {})
    builder.add_node("square", lambda s: {"results": [s["item"] ** 2]})
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", fan, ["square"])
    builder.add_edge("square", END)
    run = Runner(builder.compile(checkpointer=saver), mode)
    out = run.invoke({"items": [1, 2, 3], "results": []}, cfg("fan"))
    return [sorted(out["results"]), run.history(cfg("fan"))]


class Account(TypedDict):
    customer: Customer
    orders: list[Order]
    seen: set[str]
    since: dt.datetime
    key: uuid.UUID
    log: Annotated[list[str], operator.add]


def time_travel(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    when = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)

    def load(state: Account) -> dict[str, Any]:
        return {"orders": [Order("7", 42.0)], "seen": {"7"}, "log": ["load"]}

    builder = StateGraph(Account)
    builder.add_node("load", load)
    builder.add_node("bill", lambda s: {"log": [f"bill {s['customer'].name}"]})
    builder.add_edge(START, "load")
    builder.add_edge("load", "bill")
    run = Runner(builder.compile(checkpointer=saver), mode)
    start = {"customer": Customer(name="Ann", tier=Tier.GOLD), "orders": [], "seen": set(),
             "since": when, "key": uuid.UUID(int=1), "log": []}  # fmt: skip
    run.invoke(start, cfg("travel"))
    before_bill = run.history(cfg("travel"))[1].config
    fixed = run.update(before_bill, {"customer": Customer(name="Bob", tier=Tier.GOLD)}, "load")
    run.invoke(None, fixed)
    run.invoke(None, before_bill)  # a replay of the old branch: a fork
    return [run.history(cfg("travel"))]


def subgraph_interrupt(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    def ask(state: Review) -> dict[str, Any]:
        return {"log": [f"inner got {interrupt('ok?')}"]}

    inner = StateGraph(Review)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(Review)
    outer.add_node("pre", lambda s: {"log": ["pre"]})
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "pre")
    outer.add_edge("pre", "sub")
    run = Runner(outer.compile(checkpointer=saver), mode)
    found: list[Any] = []
    for durability in ("sync", "async", "exit"):  # when LangGraph writes: each step, or at exit
        config = cfg(f"sub-{durability}")
        run.invoke({"plan": "", "log": []}, config, durability=durability)
        paused = run.state(config)
        inner_state = paused.tasks[0].state
        done = run.invoke(Command(resume="yes"), config, durability=durability)
        found += [paused.next, inner_state.values, inner_state.next, done, run.history(config)]
    return found


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"order {order_id} refunded"


def tool_calling_agent(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage("", id="m1", tool_calls=[
                    {"name": "refund", "args": {"order_id": "7"}, "id": "call-1"}
                ]),
                AIMessage("Done: order 7 refunded.", id="m2"),
            ]
        )
    )  # fmt: skip

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"], config)]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([refund]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    run = Runner(builder.compile(checkpointer=saver), mode)
    out = run.invoke({"messages": [HumanMessage("refund order 7", id="h1")]}, cfg("agent"))
    return [out, run.history(cfg("agent"))]


def command_to_parent(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    def escalate(state: Review) -> Command[str]:
        return Command(graph=Command.PARENT, goto="human", update={"log": ["escalated"]})

    inner = StateGraph(Review)
    inner.add_node("escalate", escalate)
    inner.add_edge(START, "escalate")
    outer = StateGraph(Review)
    outer.add_node("sub", inner.compile(), destinations=("human",))
    outer.add_node("human", lambda s: {"log": ["human took over"]})
    outer.add_edge(START, "sub")
    run = Runner(outer.compile(checkpointer=saver), mode)
    out = run.invoke({"plan": "", "log": []}, cfg("parent"))
    return [out, run.history(cfg("parent"))]


class Ticket(BaseModel):
    title: str
    tags: list[str] = []
    customer: Customer | None = None


@dataclass
class Draft:
    text: str
    versions: Annotated[list[str], operator.add]


def typed_states_streamed(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """A pydantic state and a dataclass state, streamed (`stream`/`astream`)."""
    tickets = StateGraph(Ticket)
    tickets.add_node("tag", lambda t: {"tags": [*t.tags, "refund"]})
    tickets.add_node("assign", lambda t: {"customer": Customer(name="Ann", tier=Tier.GOLD)})
    tickets.add_edge(START, "tag")
    tickets.add_edge("tag", "assign")
    drafts = StateGraph(Draft)
    drafts.add_node("write", lambda d: {"text": d.text + "!", "versions": [d.text]})
    drafts.add_edge(START, "write")
    found: list[Any] = []
    for name, builder, start in (
        ("tickets", tickets, {"title": "broken"}),
        ("drafts", drafts, {"text": "hello", "versions": []}),
    ):
        run = Runner(builder.compile(checkpointer=saver), mode)
        found += [run.stream(start, cfg(name), "updates"), run.stream(None, cfg(name), "values")]
        found += [run.history(cfg(name))]
    return found


SCENARIOS: dict[str, Callable[[BaseCheckpointSaver[Any], str], list[Any]]] = {
    "chat": chat,
    "interrupt_resume": interrupt_resume,
    "send_fan_out": send_fan_out,
    "time_travel": time_travel,
    "subgraph_interrupt": subgraph_interrupt,
    "tool_calling_agent": tool_calling_agent,
    "command_to_parent": command_to_parent,
    "typed_states_streamed": typed_states_streamed,
}


def normalise(found: Any) -> Any:
    """Histories with ids as positions, and without what differs between two runs (times,
    task and interrupt ids, derived from checkpoint ids, and random message ids)."""
    return _without_uuids(_normalise(found))


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _without_uuids(found: Any) -> Any:
    # a random message id, or none: LangGraph sends a task's writes to the saver from a
    # background thread while add_messages gives the same message objects their ids, so
    # whether a pending ToolMessage has one depends on timing, whatever the saver
    return re.sub(r"\bid='ID', ", "", re.sub(UUID, "ID", repr(found)))


def _normalise(found: Any) -> Any:
    if isinstance(found, list) and found and hasattr(found[0], "next"):
        ids = {snap.config["configurable"]["checkpoint_id"]: i for i, snap in enumerate(found)}
        return [
            {
                "values": repr(snap.values),
                "next": snap.next,
                "metadata": snap.metadata,
                "parent": snap.parent_config
                and ids.get(snap.parent_config["configurable"]["checkpoint_id"]),
                "tasks": [
                    (t.name, t.error, [i.value for i in t.interrupts], repr(t.result))
                    for t in snap.tasks
                ],  # fmt: skip
                "interrupts": [i.value for i in snap.interrupts],
            }
            for snap in found
        ]
    return repr(found)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "app.db"


@pytest.mark.parametrize("name", SCENARIOS, ids=str)
def test_same_as_langgraphs_own_saver(name: str, mode: str, db: Path) -> None:
    expected = SCENARIOS[name](InMemorySaver(serde=SERDE), mode)
    with TtcliSaver(db, serde=SERDE) as saver:
        found = SCENARIOS[name](saver, mode)

    assert [normalise(part) for part in found] == [normalise(part) for part in expected]
    _every_thread_reads(db)


def _every_thread_reads(db: Path) -> None:
    """Every reading command works on every thread and namespace the graph left."""
    assert ttcli(db, "verify").exit_code == 0  # typed data is noted, not a problem
    for thread in data(ttcli(db, "threads", "--json")):
        where = ["--thread", thread["thread_id"], "--ns", thread["checkpoint_ns"]]
        history = data(ttcli(db, "history", *where, "--json"))
        assert len(history) == thread["checkpoints"]
        for args in (["show", "latest"], ["tree"], ["show", history[-1]["checkpoint_id"]]):
            assert ttcli(db, *args, *where).exit_code == 0, args
        if len(history) > 1:
            assert ttcli(db, "diff", "latest~1", "latest", *where).exit_code == 0


def test_the_cli_reads_what_ttcli_saver_wrote(db: Path) -> None:
    with TtcliSaver(db) as saver:
        chat(saver, "sync")
        interrupt_resume(saver, "sync")

    history = data(ttcli(db, "history", "--thread", "chat", "--json"))
    shown = data(ttcli(db, "show", "latest", "--thread", "chat", "--json"))
    waiting = data(ttcli(db, "show", "latest~2", "--thread", "review", "--json"))
    threads = data(ttcli(db, "threads", "--json"))

    assert [(c["step"], c["source"], c["next"]) for c in history][:3] == [
        (7, "loop", []),
        (6, "loop", ["bot"]),
        (5, "input", ["__start__"]),
    ]
    assert history[0]["metadata"] == {"user_id": "u1"}
    assert shown["values"]["messages"][:2] == [
        {"type": "human", "content": "hi", "id": "h0"},
        {"type": "ai", "content": "echo: hi", "id": "ai-1"},
    ]
    assert [t["name"] for t in waiting["tasks"]] == ["review"]
    asked = waiting["tasks"][0]["interrupts"][0]["value"]
    assert asked == {"question": "approve?", "plan": "refund"}
    assert {t["thread_id"]: t["status"] for t in threads} == {"chat": "done", "review": "done"}


def test_the_cli_reads_a_subgraphs_namespace(db: Path) -> None:
    with TtcliSaver(db) as saver:
        subgraph_interrupt(saver, "sync")

    threads = data(ttcli(db, "threads", "--prefix", "sub-sync", "--json"))
    (ns,) = [t["checkpoint_ns"] for t in threads if t["checkpoint_ns"]]
    inner = data(ttcli(db, "history", "--thread", "sub-sync", "--ns", ns, "--json"))

    assert ns.startswith("sub:")
    assert [(c["step"], c["source"], c["next"]) for c in inner] == [
        (1, "loop", []),
        (0, "loop", ["ask"]),
        (-1, "input", ["__start__"]),
    ]
