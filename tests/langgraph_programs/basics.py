"""Chats, interrupts, Send, time travel and typed states."""

from __future__ import annotations

import datetime as dt
import operator
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel

from tests.langgraph_programs.runner import Runner, cfg
from tests.langgraph_programs.states import Customer, Order, Review, Tier


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
