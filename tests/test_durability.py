"""durability="async" (a background committer, group commit) against "sync": the same
histories, all committed when a run returns, pauses, fails or is stopped; a save that fails
raised in the run; a run killed mid-way leaves a prefix of its history, every parent there."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from tests.clitools import Target, data, ttcli
from tests.conftest import SAVERS, NewDb
from tests.oracle import TTCLI, cfg, history_of, plain, ttcli_api
from tests.test_subgraphs import inner_graph, outer_graph, thread_view
from ttcli import Command, InMemorySaver, interrupt
from ttcli.configs import RunnableConfig
from ttcli.savers.base import Checkpoint
from ttcli.savers.locate import open_saver

DURABILITIES = ["sync", "async"]
ROOT = Path(__file__).parent.parent
SEED = 20261201


def peeking(api: Any) -> Any:
    """START -> pre -> peek -> post: `peek` reads its own thread's state and history mid-run
    (as a tool node may), then asks a question."""
    made: dict[str, Any] = {}

    def peek(state: Any) -> dict[str, Any]:
        now = made["app"].get_state(cfg())
        steps = [s.metadata["step"] for s in made["app"].get_state_history(cfg())]
        return {"log": [f"peek:{now.values['log']}:{steps}:{interrupt('go?')}"]}

    made["app"] = outer_graph(api, peek)
    return made["app"]


def with_subgraph(api: Any) -> Any:
    """START -> pre -> child (a subgraph: two steps, the second asks) -> post."""
    return outer_graph(api, inner_graph(api, []))


def loops(api: Any, durability: str) -> Any:
    app = graphs.counter_loop(api, until=40).compile(checkpointer=api.Saver())
    first = app.invoke({"n": 0, "trail": []}, cfg(), durability=durability)
    app.update_state(cfg(), {"n": 30})
    again = app.invoke(None, cfg(), durability=durability)
    return first, again, history_of(app)


def fails_and_recovers(api: Any, durability: str) -> Any:
    app = graphs.fan_out(api, fail={"c"}).compile(checkpointer=api.Saver())
    with pytest.raises(ValueError, match="boom in c"):
        app.invoke({"log": []}, cfg(), durability=durability)
    failed = history_of(app)
    return failed, app.invoke(None, cfg(), durability=durability), history_of(app)


def pauses_and_resumes(api: Any, durability: str) -> Any:
    app = peeking(api)
    paused = plain(app.invoke({"log": [], "x": 0}, cfg(), durability=durability))
    paused_history = history_of(app)
    done = app.invoke(Command(resume="yes"), cfg(), durability=durability)
    return paused, paused_history, done, history_of(app)


def subgraphs(api: Any, durability: str) -> Any:
    app = with_subgraph(api)
    streamed = app.stream({"log": []}, cfg(), subgraphs=True, durability=durability)
    chunks = [  # namespaces as their nodes: task ids differ between runs
        ([part.split(":")[0] for part in namespace], plain(chunk)) for namespace, chunk in streamed
    ]
    paused = thread_view(app)
    state = app.get_state(cfg(), subgraphs=True)
    done = app.invoke(Command(resume="A"), cfg(), durability=durability)
    inner_values = [t.state.values for t in state.tasks if t.state is not None]
    return chunks, paused, inner_values, done, thread_view(app)


def stopped_early(api: Any, durability: str) -> Any:
    app = graphs.counter_loop(api, until=20).compile(checkpointer=api.Saver())
    seen = []
    for chunk in app.stream({"n": 0, "trail": []}, cfg(), durability=durability):
        seen.append(chunk)
        if len(seen) == 5:
            break
    return seen, history_of(app)


def asynchronous(api: Any, durability: str) -> Any:
    async def main() -> Any:
        app = with_subgraph(api)
        first = [c async for c in app.astream({"log": []}, cfg(), durability=durability)]
        done = await app.ainvoke(Command(resume="B"), cfg(), durability=durability)
        return plain(first), done, thread_view(app)

    return asyncio.run(main())


def parallel_subgraphs(api: Any, durability: str) -> Any:
    """Two parallel tasks each run a subgraph of 8 steps: their saves interleave."""
    inner = graphs.counter_loop(api, until=8).compile()

    def side(name: str) -> Any:
        return lambda state: {"log": [f"{name}:{inner.invoke({'n': 0, 'trail': []})['n']}"]}

    builder = api.StateGraph(graphs.LogState)
    for name in ("left", "right"):
        builder.add_node(name, side(name))
        builder.add_edge(api.START, name)
    app = builder.compile(checkpointer=api.Saver())
    return app.invoke({"log": []}, cfg(), durability=durability), thread_view(app)


SCENARIOS = [
    loops,
    fails_and_recovers,
    pauses_and_resumes,
    subgraphs,
    parallel_subgraphs,
    stopped_early,
    asynchronous,
]


@pytest.mark.parametrize("backend", SAVERS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_async_stores_the_history_sync_does(
    scenario: Callable[[Any, str], Any], backend: str, tmp_path: Path
) -> None:
    api = ttcli_api(backend, tmp_path)
    assert scenario(api, "async") == scenario(api, "sync")


def test_grouped_async_saves_keep_each_threads_count(new_db: NewDb) -> None:
    """A committer commits several supersteps, of a run and of its subgraphs' threads, in
    one transaction: each thread's kept count is its history's length when the run ends."""
    db = new_db("counts.db")
    with closing(open_saver(db)) as saver:
        app = with_subgraph(SimpleNamespace(**{**vars(TTCLI), "Saver": lambda: saver}))
        app.invoke({"log": []}, cfg(), durability="async")
        app.invoke(Command(resume="A"), cfg(), durability="async")
        loop = graphs.counter_loop(TTCLI, until=60).compile(checkpointer=saver)
        loop.invoke({"n": 0, "trail": []}, cfg("loop"), durability="async")
        lengths = {}
        for graph, thread in ((app, "t"), (loop, "loop")):
            history = list(graph.get_state_history(cfg(thread)))
            lengths[(thread, "")] = len(history)
            for task in (task for snap in history for task in snap.tasks if task.state):
                namespace = task.state["configurable"]["checkpoint_ns"]
                lengths[(thread, namespace)] = len(list(graph.get_state_history(task.state)))
    verified = ttcli(db, "verify")
    assert verified.exit_code == 0, verified.output
    threads = data(ttcli(db, "threads", "--json"))
    assert {(t["thread_id"], t["checkpoint_ns"]): t["checkpoints"] for t in threads} == lengths
    assert len(lengths) == 3 and lengths[("loop", "")] == 62


def seen_elsewhere(db: Target, graph: Callable[[Any], Any], thread: str) -> Any:
    """A thread's history as another connection reads it (what is committed)."""
    with closing(open_saver(db)) as saver:
        return history_of(graph(TTCLI).compile(checkpointer=saver), thread)


def test_everything_is_committed_when_a_run_returns_pauses_fails_or_stops(
    new_db: NewDb,
) -> None:
    db = new_db("runs.db")
    with closing(open_saver(db)) as saver:
        ran = graphs.fan_out(TTCLI, fail={"c"}).compile(checkpointer=saver)
        with pytest.raises(ValueError, match="boom in c"):
            ran.invoke({"log": []}, cfg("failed"), durability="async")
        assert seen_elsewhere(db, graphs.fan_out, "failed") == history_of(ran, "failed")
        ran.invoke(None, cfg("failed"), durability="async")
        assert seen_elsewhere(db, graphs.fan_out, "failed") == history_of(ran, "failed")
        asked = graphs.review(TTCLI).compile(checkpointer=saver)
        asked.invoke({"plan": "", "log": []}, cfg("paused"), durability="async")
        assert seen_elsewhere(db, graphs.review, "paused") == history_of(asked, "paused")
        assert history_of(asked, "paused")[0]["interrupts"]
        for chunk in ran.stream({"log": []}, cfg("stopped"), durability="async"):
            if "b" in chunk:
                break
        assert seen_elsewhere(db, graphs.fan_out, "stopped") == history_of(ran, "stopped")
        assert [row["metadata"]["step"] for row in history_of(ran, "stopped")] == [1, 0, -1]


def test_an_async_run_inside_the_callers_batch_saves_in_it(new_db: NewDb) -> None:
    """The batch holds the saver until it ends: a committer thread could never commit, and
    the run waited for it forever. The run saves as "sync" would, in the caller's batch."""
    db = new_db("batch.db")
    saver = open_saver(db)
    app = graphs.counter_loop(TTCLI, until=5).compile(checkpointer=saver)
    done: list[Any] = []

    def run() -> None:
        with saver.batch():
            done.append(app.invoke({"n": 0, "trail": []}, cfg("b"), durability="async"))

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(timeout=60)
    # (left open if it hangs: closing would wait for the batch too)
    assert not runner.is_alive(), "the run waited on its committer inside the batch"
    with closing(saver):
        assert done and done[0]["n"] == 5
        app.invoke({"n": 0, "trail": []}, cfg("s"), durability="sync")
    assert seen_elsewhere(db, graphs.counter_loop, "b") == seen_elsewhere(
        db, graphs.counter_loop, "s"
    )


class FailingSaver(InMemorySaver):
    """Refuses to store a checkpoint where `channel` holds `value` (a disk gone full)."""

    def __init__(self, channel: str, value: Any) -> None:
        super().__init__()
        self.channel, self.value = channel, value

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, *args: Any, **kwargs: Any) -> Any:
        if checkpoint["channel_values"].get(self.channel) == self.value:
            raise OSError("disk full")
        return super().put(config, checkpoint, *args, **kwargs)


@pytest.mark.parametrize("durability", DURABILITIES)
def test_a_failed_save_is_raised_in_the_run(durability: str) -> None:
    saver = FailingSaver("n", 5)
    app = graphs.counter_loop(TTCLI, until=30).compile(checkpointer=saver)
    threads = set(threading.enumerate())
    with pytest.raises(OSError, match="disk full"):
        app.invoke({"n": 0, "trail": []}, cfg(), durability=durability)
    assert set(threading.enumerate()) == threads  # none left running
    # the history ends where the save failed (step 5), as durability="sync" ends it
    assert [row["values"].get("n") for row in history_of(app)] == [4, 3, 2, 1, 0, None]
    saver.value = None
    assert app.invoke(None, cfg(), durability=durability)["n"] == 30


@pytest.mark.parametrize("durability", DURABILITIES)
def test_a_failed_save_of_a_subgraph_is_raised_in_astream(durability: str) -> None:
    app = with_subgraph(TTCLI)
    app.checkpointer = FailingSaver("y", 1)  # the subgraph's first step

    async def main() -> None:
        with pytest.raises(OSError, match="disk full"):
            async for _ in app.astream({"log": []}, cfg(), durability=durability):
                pass

    asyncio.run(main())
    assert [row["metadata"]["step"] for row in history_of(app)] == [1, 0, -1]


STEPS = 150  # a run is about 1,000 SQL statements
CRASHING = """
import sys
import ttcli
from tests import graphs
from tests.workers import kill_at
from ttcli.savers.locate import open_saver

db, kill = sys.argv[1], int(sys.argv[2])
kill_at(kill)
app = graphs.counter_loop(ttcli, until=int(sys.argv[3])).compile(checkpointer=open_saver(db))
config = {"configurable": {"thread_id": "t"}}
started = app.get_state(config).values
app.invoke(None if started else {"n": 0, "trail": []}, config, durability="async")
"""


def test_a_killed_async_run_leaves_a_prefix_of_its_history(new_db: NewDb) -> None:
    rng = random.Random(SEED)
    db = new_db("crash.db")
    expected = graphs.counter_loop(TTCLI, until=STEPS).compile(checkpointer=InMemorySaver())
    expected.invoke({"n": 0, "trail": []}, cfg())
    whole = history_of(expected)[::-1]
    kills = 0
    for kill in [*(rng.randint(20, 250) for _ in range(4)), 0]:
        done = subprocess.run(
            [sys.executable, "-c", CRASHING, str(db), str(kill), str(STEPS)],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode in (0, -9), done.stderr
        kills += done.returncode == -9
        verified = ttcli(db, "verify")
        assert verified.exit_code == 0, verified.output
        with closing(open_saver(db)) as saver:
            stored = history_of(graphs.counter_loop(TTCLI).compile(checkpointer=saver))[::-1]
        # oldest first: each checkpoint's parent is the one before it, all as a whole run has them
        parents = [None, *range(len(stored) - 1, 0, -1)][: len(stored)]
        assert [row["parent"] for row in stored] == parents
        assert [(row["values"], row["metadata"]["step"]) for row in stored] == [
            (row["values"], row["metadata"]["step"]) for row in whole[: len(stored)]
        ]
    assert kills >= 3
    assert stored == whole
