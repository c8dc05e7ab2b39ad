"""How PostgreSQL runs `list` on one thread: by the thread's key looked up first, so the
newest checkpoints come off the primary key without reading the rest of the thread
(`history --limit 20` at a million checkpoints as at a thousand)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from psycopg import ClientCursor

from tests.pg import new_dsn
from ttcli.configs import CheckpointRef
from ttcli.savers.postgres import PostgresSaver
from ttcli.savers.postgres.connection import THREAD_BY_KEY, psycopg_sql
from ttcli.savers.postgres.metadata_filter import postgres_match
from ttcli.savers.sql.statements import list_query
from ttcli.uuid6 import id_time, new_id

CHECKPOINTS = 2000


@pytest.fixture
def saver() -> Iterator[PostgresSaver]:
    with PostgresSaver.from_conn_string(new_dsn()) as postgres_saver:
        yield postgres_saver


@pytest.mark.parametrize(
    "filter_, before", [(None, None), ({"source": "update"}, None), (None, "1" * 32)]
)
def test_list_of_a_thread_selects_it_by_key(filter_: Any, before: str | None) -> None:
    config = CheckpointRef("t").to_config()
    before_config = None if before is None else CheckpointRef("t").at(before).to_config()
    query, _, _ = list_query(config, filter_, before_config, 20, postgres_match)
    rewritten = psycopg_sql(query)
    assert psycopg_sql(THREAD_BY_KEY) in rewritten
    assert "t.thread_id =" not in rewritten


def put_thread(saver: PostgresSaver, thread_id: str, count: int) -> list[str]:
    ref, parent, ids = CheckpointRef(thread_id), None, []
    with saver.batch():
        for step in range(count):
            checkpoint_id = new_id(step)
            checkpoint = {
                "v": 1, "id": checkpoint_id, "ts": id_time(checkpoint_id).isoformat(),
                "channel_values": {"n": step}, "channel_versions": {"n": step + 1},
                "versions_seen": {}, "updated_channels": ["n"],
            }  # fmt: skip
            metadata = {"source": "loop", "step": step, "parents": {}, "writes": None}
            saver.put(ref.at(parent).to_config(), checkpoint, metadata, {"n": step + 1})  # type: ignore[arg-type]
            parent = checkpoint_id
            ids.append(checkpoint_id)
    return ids


def plan_nodes(plan: dict[str, Any]) -> Iterator[str]:
    yield plan["Node Type"]
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def test_the_newest_of_a_long_thread_are_read_without_a_sort(saver: PostgresSaver) -> None:
    ids = put_thread(saver, "long", CHECKPOINTS)
    put_thread(saver, "short", 3)
    saver.connection.vacuum()  # the planner's statistics, as autovacuum keeps them
    config = CheckpointRef("long").to_config()
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(config, limit=20)] == (
        ids[::-1][:20]
    )
    query, params, _ = list_query(config, None, None, 20, postgres_match)
    with saver.connection.read() as conn:
        assert conn.conn is not None
        explain = ClientCursor(conn.conn).mogrify(psycopg_sql(query), params)
        rows = conn.execute(f"EXPLAIN (FORMAT JSON) {explain}").fetchall()
    plan = rows[0][0]
    nodes = list(plan_nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]))
    assert "Sort" not in nodes, nodes
