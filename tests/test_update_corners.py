"""update_state's corner cases, on LangGraph and on ttcli: an update as a task that is due,
an update as END after a failed step, an answer given when no interrupt waits, and history
from a config that names a checkpoint."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from tests.oracle import Scenario, cfg, history_of, plain, same_as_langgraph


def update_as_a_due_task(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver(), interrupt_before=["b"])
    app.invoke({"x": 1, "log": []}, cfg())
    paused = app.get_state(cfg())
    app.update_state(cfg(), {"x": 7}, as_node="b")
    failing = graphs.fan_out(api, fail={"c"}).compile(checkpointer=api.Saver())
    with pytest.raises(ValueError, match="boom in c"):
        failing.invoke({"log": []}, cfg("f"))
    app_c = failing.update_state(cfg("f"), {"log": ["fixed c"]}, as_node="c")
    return (
        history_of(app),
        len(list(app.get_state_history(paused.config))),
        (
            failing.get_state(app_c).values,
            history_of(failing, "f"),
            failing.invoke(None, cfg("f")),
        ),
    )


def update_as_end(api: SimpleNamespace) -> Any:
    failing = graphs.fan_out(api, fail={"c"}).compile(checkpointer=api.Saver())
    with pytest.raises(ValueError, match="boom in c"):
        failing.invoke({"log": []}, cfg())
    ended = failing.get_state(failing.update_state(cfg(), None, as_node=api.END))
    after = failing.invoke(None, cfg())
    paused = graphs.linear(api).compile(checkpointer=api.Saver(), interrupt_before=["b"])
    paused.invoke({"x": 1, "log": []}, cfg("p"))
    at_breakpoint = paused.get_state(paused.update_state(cfg("p"), None, as_node=api.END))
    nothing = paused.invoke(None, cfg("p"))
    return (
        (ended.values, ended.next, after, history_of(failing)),
        (at_breakpoint.values, at_breakpoint.next, nothing, history_of(paused, "p")),
    )


def answer_before_the_question(api: SimpleNamespace) -> Any:
    app = graphs.review(api).compile(checkpointer=api.Saver())
    app.invoke({"plan": "", "log": []}, cfg())
    app.update_state(cfg(), {"log": ["edited"]}, as_node="planner")
    answered = plain(app.invoke(api.Command(resume="yes"), cfg()))
    unused = graphs.linear(api).compile(checkpointer=api.Saver(), interrupt_before=["b"])
    unused.invoke({"x": 1, "log": []}, cfg("u"))
    ignored = unused.invoke(api.Command(resume="never asked"), cfg("u"))
    return answered, history_of(app), ignored, history_of(unused, "u")


SCENARIOS: list[Scenario] = [update_as_a_due_task, update_as_end, answer_before_the_question]

test_same_as_langgraph = same_as_langgraph(SCENARIOS)
