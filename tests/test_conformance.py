"""The same graphs on ttcli and on LangGraph 1.2.22 (the test oracle) give the same histories.

Each scenario is written once against a LangGraph-shaped `api` namespace and run on both;
histories are compared after normalising what legitimately differs (ids, timestamps, and the
`writes` metadata key that LangGraph 1.x no longer produces).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from tests.oracle import Scenario, cfg, history_of, plain, same_as_langgraph


def linear_run(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver())
    result = app.invoke({"x": 1, "log": []}, cfg())
    return result, history_of(app)


def fan_out_run(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = graphs.fan_out(api, calls).compile(checkpointer=api.Saver())
    return app.invoke({"log": []}, cfg()), sorted(calls), history_of(app)


def conditional_loop(api: SimpleNamespace) -> Any:
    app = graphs.counter_loop(api, until=4).compile(checkpointer=api.Saver())
    return app.invoke({"n": 0, "trail": []}, cfg()), history_of(app)


def router_paths(api: SimpleNamespace) -> Any:
    app = graphs.router(api).compile(checkpointer=api.Saver())
    results = [
        app.invoke({"kind": kind, "log": []}, cfg(kind)) for kind in ("left", "both", "none")
    ]
    return results, [history_of(app, kind) for kind in ("left", "both", "none")]


def history_queries(api: SimpleNamespace) -> Any:
    app = graphs.fan_out(api).compile(checkpointer=api.Saver())
    app.invoke({"log": []}, cfg())
    full = list(app.get_state_history(cfg()))
    step1 = next(s for s in full if s.metadata["step"] == 1)
    queries: dict[str, Any] = {
        "loop": {"filter": {"source": "loop"}},
        "step1": {"filter": {"step": 1}},
        "none_found": {"filter": {"source": "loop", "step": 99}},
        "missing_is_none": {"filter": {"missing": None}},
        "before_limit": {"before": step1.config, "limit": 2},
        "limit": {"limit": 3},
    }
    return {
        name: [
            (s.metadata["source"], s.metadata["step"]) for s in app.get_state_history(cfg(), **kw)
        ]
        for name, kw in queries.items()
    }


def update_latest_and_past(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = graphs.linear(api, calls).compile(checkpointer=api.Saver())
    app.invoke({"x": 1, "log": []}, cfg())
    on_latest = app.update_state(cfg(), {"x": 5}, as_node="a")
    after_latest = app.get_state(on_latest)
    resumed = app.invoke(None, cfg())
    step0 = next(s for s in app.get_state_history(cfg()) if s.metadata["step"] == 0)
    forked = app.update_state(step0.config, {"x": 100})
    after_fork = app.get_state(forked)
    rerun = app.invoke(None, forked)
    return (
        after_latest.values,
        after_latest.next,
        resumed,
        after_fork.values,
        after_fork.next,
        after_fork.metadata["source"],
        rerun,
        calls,
        history_of(app),
    )


def update_default_as_node(api: SimpleNamespace) -> Any:
    app = graphs.fan_out(api).compile(checkpointer=api.Saver())
    fresh = app.update_state(cfg("fresh"), {"log": ["seed"]})
    fresh_state = app.get_state(fresh)
    app.invoke({"log": []}, cfg())
    after_b_c = next(s for s in app.get_state_history(cfg()) if s.metadata["step"] == 2)
    try:
        app.update_state(after_b_c.config, {"log": ["x"]})
        ambiguous = None
    except Exception as exc:
        ambiguous = (type(exc).__name__, str(exc))
    try:
        app.update_state(cfg(), {"log": ["x"]}, as_node="nope")
        unknown = None
    except Exception as exc:
        unknown = (type(exc).__name__, str(exc))
    return fresh_state.values, fresh_state.next, fresh_state.metadata["step"], ambiguous, unknown


def update_as_start_clears_pending(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver())
    app.invoke({"x": 1, "log": []}, cfg())
    step1 = next(s for s in app.get_state_history(cfg()) if s.metadata["step"] == 1)
    as_start = app.get_state(app.update_state(step1.config, {"x": 7}, as_node=api.START))
    as_b = app.get_state(app.update_state(step1.config, {"x": 7}, as_node="b"))
    return as_start.values, as_start.next, as_b.values, as_b.next


def replay(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = graphs.linear(api, calls).compile(checkpointer=api.Saver())
    app.invoke({"x": 1, "log": []}, cfg())
    by_step = {s.metadata["step"]: s for s in app.get_state_history(cfg())}
    calls.clear()
    from_step0 = app.invoke(None, by_step[0].config)
    after_step0 = list(calls)
    from_final = app.invoke(None, by_step[2].config)
    from_input = app.invoke(None, by_step[-1].config)
    return from_step0, after_step0, from_final, from_input, calls, history_of(app)


def two_invokes(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver())
    app.invoke({"x": 1, "log": []}, cfg())
    second = app.invoke({"x": 3}, cfg())
    again = app.invoke(None, cfg())
    return second, again, history_of(app)


def streams(api: SimpleNamespace) -> Any:
    app = graphs.fan_out(api).compile(checkpointer=api.Saver())
    values = list(app.stream({"log": []}, cfg("v"), stream_mode="values"))
    updates = list(app.stream({"log": []}, cfg("u"), stream_mode="updates"))
    multi = list(app.stream({"log": []}, cfg("m"), stream_mode=["values", "updates"]))
    debug = [
        (event["type"], event["step"], event["payload"].get("name"), event["payload"].get("next"))
        for event in app.stream({"log": []}, cfg("d"), stream_mode="debug")
    ]
    sort_key = repr
    return (
        values,
        sorted(updates, key=sort_key),
        sorted(multi, key=sort_key),
        sorted(debug, key=sort_key),
    )


def metadata_user_keys(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver())
    config = {
        "configurable": {
            "thread_id": "m",
            "user_id": "u1",
            "n": 3,
            "obj": {"a": 1},
            "__hidden": "h",
        },
        "metadata": {"tag": "T"},
    }
    app.invoke({"x": 1, "log": []}, config)
    found = list(app.get_state_history(cfg("m"), filter={"user_id": "u1", "source": "loop"}))
    return [{k: v for k, v in s.metadata.items() if k != "writes"} for s in found]


def parallel_failure_resume(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = graphs.fan_out(api, calls, fail={"c"}).compile(checkpointer=api.Saver())
    with pytest.raises(ValueError, match="boom in c"):
        app.invoke({"log": []}, cfg())
    live = app.get_state(cfg())
    record = history_of(app)
    calls.clear()
    result = app.invoke(None, cfg())
    return (
        live.values,
        live.next,
        [(t.name, t.result, t.error) for t in live.tasks],
        record,
        result,
        calls,
        history_of(app),
    )


def recursion_limit(api: SimpleNamespace) -> Any:
    outcomes = []
    for until, limit in [(4, 5), (5, 5), (9, 5)]:
        app = graphs.counter_loop(api, until=until).compile(checkpointer=api.Saver())
        try:
            outcomes.append(
                app.invoke({"n": 0, "trail": []}, {**cfg(f"{until}"), "recursion_limit": limit})
            )
        except RecursionError as exc:
            outcomes.append(
                ("recursion", str(exc).splitlines()[0], len(history_of(app, f"{until}")))
            )
    return outcomes


def no_checkpointer(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile()
    result = app.invoke({"x": 1, "log": []})
    errors = []
    for call in (
        lambda: app.get_state(cfg()),
        lambda: list(app.get_state_history(cfg())),
        lambda: app.update_state(cfg(), {"x": 1}),
    ):
        with pytest.raises(ValueError) as info:
            call()
        errors.append(str(info.value))
    saved = graphs.linear(api).compile(checkpointer=api.Saver())
    with pytest.raises(ValueError) as missing_thread:
        saved.invoke({"x": 1, "log": []})
    with pytest.raises(Exception) as empty:
        saved.invoke(None, cfg("nothing-here"))
    return result, errors, str(missing_thread.value), (type(empty.value).__name__, str(empty.value))


def breakpoints(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver(), interrupt_before=["b"])
    first = app.invoke({"x": 1, "log": []}, cfg())
    paused = app.get_state(cfg())
    resumed = app.invoke(None, cfg())
    after = graphs.linear(api).compile(checkpointer=api.Saver(), interrupt_after=["a"])
    stopped = after.invoke({"x": 1, "log": []}, cfg("after"))
    finished = after.invoke(None, cfg("after"))
    per_call = graphs.linear(api).compile(checkpointer=api.Saver())
    per_call_first = per_call.invoke({"x": 1, "log": []}, cfg("call"), interrupt_before=["a"])
    return (
        first,
        paused.next,
        resumed,
        history_of(app),
        stopped,
        finished,
        history_of(after, "after"),
        per_call_first,
        history_of(per_call, "call"),
    )


def missing_thread_state(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver())
    snap = app.get_state(cfg("nope"))
    return tuple(snap)


def approval(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = graphs.review(api, calls).compile(checkpointer=api.Saver())
    paused = plain(app.invoke({"plan": "", "log": []}, cfg()))
    waiting = app.get_state(cfg())
    waiting_view = (waiting.next, plain(waiting.interrupts), plain(waiting.tasks[0].interrupts))
    updates = plain(list(app.stream(api.Command(resume="yes"), cfg(), stream_mode="updates")))
    return paused, waiting_view, updates, calls, history_of(app)


def parallel_interrupts(api: SimpleNamespace) -> Any:
    app = graphs.two_questions(api).compile(checkpointer=api.Saver())
    first = plain(list(app.stream({"log": []}, cfg(), stream_mode="values")))
    # the two questions come in the order their tasks happen to finish, on either runtime
    first = [first[0], *sorted(first[1:], key=repr)]
    pending = app.get_state(cfg()).interrupts
    with pytest.raises(RuntimeError) as plain_resume:
        app.invoke(api.Command(resume="x"), cfg())
    q1 = next(i for i in pending if i.value == "q1?")
    partly = plain(app.invoke(api.Command(resume={q1.id: "A"}), cfg()))
    live = app.get_state(cfg())
    record = list(app.get_state_history(cfg()))[0]
    views = [
        (live.next, live.values, plain(live.interrupts)),
        (record.next, record.values, plain(record.interrupts)),
    ]
    (q2,) = live.interrupts
    asked_first = plain(app.invoke(api.Command(resume={q2.id: "B"}), cfg()))
    asked_second = plain(app.invoke(api.Command(resume="one"), cfg()))
    done = app.invoke(api.Command(resume="two"), cfg())
    return (
        first, str(plain_resume.value), partly, views, asked_first, asked_second, done,
        history_of(app),
    )  # fmt: skip


def replay_before_an_answer(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = graphs.review(api, calls).compile(checkpointer=api.Saver())
    app.invoke({"plan": "", "log": []}, cfg())
    app.invoke(api.Command(resume="yes"), cfg())
    before = next(s for s in app.get_state_history(cfg()) if s.next == ("review",))
    calls.clear()
    again = plain(app.invoke(None, before.config))
    return again, calls, app.get_state(cfg()).next, history_of(app)


def send_map_reduce(api: SimpleNamespace) -> Any:
    app = graphs.map_reduce(api).compile(checkpointer=api.Saver())
    result = app.invoke({"items": [1, 2, 3], "results": []}, cfg())
    updates = list(app.stream({"items": [4], "results": []}, cfg("u"), stream_mode="updates"))
    return result, sorted(map(repr, updates)), history_of(app)


def command_from_nodes(api: SimpleNamespace) -> Any:
    app = graphs.commands(api).compile(checkpointer=api.Saver())
    return app.invoke({"log": []}, cfg()), history_of(app)


def command_as_input(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver(), interrupt_before=["b"])
    app.invoke({"x": 1, "log": []}, cfg())
    resumed = app.invoke(api.Command(update={"x": 50}), cfg())
    paused_view = next(s for s in app.get_state_history(cfg()) if s.next == ("b",))
    jumped = graphs.linear(api).compile(checkpointer=api.Saver(), interrupt_before=["b"])
    jumped.invoke({"x": 1, "log": []}, cfg("goto"))
    went = jumped.invoke(api.Command(update={"log": ["jump"]}, goto="b"), cfg("goto"))
    return resumed, paused_view.values, history_of(app), went, history_of(jumped, "goto")


def update_with_pending_writes(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = graphs.fan_out(api, calls, fail={"c"}).compile(checkpointer=api.Saver())
    with pytest.raises(ValueError):
        app.invoke({"log": []}, cfg())
    updated = app.get_state(app.update_state(cfg(), {"log": ["fixed"]}, as_node="a"))
    calls.clear()
    result = app.invoke(None, cfg())
    return updated.values, updated.next, result, sorted(calls), history_of(app)


SCENARIOS: list[Scenario] = [
    linear_run,
    fan_out_run,
    conditional_loop,
    router_paths,
    history_queries,
    update_latest_and_past,
    update_default_as_node,
    update_as_start_clears_pending,
    replay,
    two_invokes,
    streams,
    metadata_user_keys,
    parallel_failure_resume,
    recursion_limit,
    no_checkpointer,
    breakpoints,
    missing_thread_state,
    approval,
    parallel_interrupts,
    replay_before_an_answer,
    send_map_reduce,
    command_from_nodes,
    command_as_input,
    update_with_pending_writes,
]


test_same_as_langgraph = same_as_langgraph(SCENARIOS)
