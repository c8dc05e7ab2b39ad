"""A prune that deletes the checkpoint a run is working from (issue 11, finding 13).

With several writers on one thread, `--keep-last` keeps the thread's newest checkpoints, not
the one a slower run is working from. The documented behaviour: a run whose checkpoint was
pruned under it fails when it next writes against it, with one line naming the checkpoint
and exit 3, and nothing half-written: the step it was running is not stored at all, every
checkpoint left reads whole, and the thread goes on from its newest checkpoint.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.clitools import Target, ttcli
from tests.conftest import NewDb
from ttcli.errors import CheckpointNotFoundError
from ttcli.savers.locate import open_saver

GRAPH = textwrap.dedent(
    """
    import operator
    from contextlib import closing
    from datetime import UTC, datetime, timedelta
    from typing import Annotated, TypedDict
    from ttcli import StateGraph, START, END
    from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
    from ttcli.savers.locate import open_saver

    DB = {db!r}

    class S(TypedDict):
        log: Annotated[list, operator.add]

    def meanwhile(state):
        # another writer updates the thread, then a prune keeps only its newest checkpoint:
        # the one this run is working from goes
        with closing(open_saver(DB)) as other:
            config = {{"configurable": {{"thread_id": "t"}}}}
            builder.compile(checkpointer=other).update_state(config, {{"log": ["other"]}})
            policy = PrunePolicy(older_than=datetime.now(UTC) + timedelta(seconds=1))
            execute_prune(other, plan_prune(other, policy))
        return {{"log": ["a"]}}

    builder = StateGraph(S)
    builder.add_node("a", meanwhile)
    builder.add_node("b", lambda state: {{"log": ["b"]}})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    """
)


@pytest.fixture
def db(new_db: NewDb) -> Target:
    return new_db("ttcli.db")


@pytest.fixture
def graph_file(tmp_path: Path, db: Target) -> Path:
    path = tmp_path / "pruned_under_run.py"
    path.write_text(GRAPH.format(db=str(db)))
    return path


def test_a_run_whose_checkpoint_is_pruned_under_it_fails_with_exit_3(
    db: Target, graph_file: Path
) -> None:
    result = ttcli(db, "run", f"{graph_file}:builder", "--thread", "t", "--input", '{"log": []}')
    assert result.exit_code == 3, result.stdout
    assert result.stderr.startswith("Error: checkpoint '") and result.stderr.endswith(
        "' not found in thread 't'\n"
    )
    assert result.stderr.count("\n") == 1
    # nothing half-written: only the other writer's checkpoint is left, and it reads whole
    with closing(open_saver(db)) as saver:
        (left,) = saver.list({"configurable": {"thread_id": "t"}})
        assert left.metadata["source"] == "update"
        assert left.checkpoint["channel_values"]["log"] == ["other"]
        assert saver.integrity_problems() == []
    assert ttcli(db, "verify").exit_code == 0
    # and the thread goes on from there
    again = ttcli(db, "history", "-t", "t", "--json")
    assert again.exit_code == 0, again.stderr


def test_the_library_raises_checkpoint_not_found(db: Target, graph_file: Path) -> None:
    spec = importlib.util.spec_from_file_location("pruned_under_run", graph_file)
    assert spec is not None and spec.loader is not None
    module = sys.modules["pruned_under_run"] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        run_and_fail(module.builder, db)
    finally:
        del sys.modules["pruned_under_run"]


def run_and_fail(builder: Any, db: Target) -> None:
    with closing(open_saver(db)) as saver:
        app = builder.compile(checkpointer=saver)
        with pytest.raises(CheckpointNotFoundError, match="not found in thread 't'"):
            app.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
