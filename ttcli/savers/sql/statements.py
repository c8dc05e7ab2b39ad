"""The SQL of the format: statements as named-parameter constants, and the list query."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import ConfigError
from ttcli.savers.rules import validate_filter
from ttcli.savers.sql.ids import id_bytes, require_id

#: one key of a metadata filter as a WHERE clause and its parameters (named after `n`, the
#: key's position): `source` and `step` are columns, the rest is JSON in each database's terms;
#: None where the database's JSON cannot compare it exactly (it is matched once decoded)
MetadataMatch = Callable[[int, str, Any], tuple[str, dict[str, Any]] | None]

THREAD = """
SELECT thread_key
FROM threads
WHERE thread_id = :thread_id
  AND checkpoint_ns = :checkpoint_ns
"""

NEW_THREAD = """
INSERT INTO threads (thread_id, checkpoint_ns)
VALUES (:thread_id, :checkpoint_ns)
RETURNING thread_key
"""

_COLUMNS = """
SELECT c.thread_key, t.thread_id, t.checkpoint_ns, c.checkpoint_id, c.parent_id, c.created_at,
       c.source, c.step, c.metadata, c.state"""

_FROM = """
FROM checkpoints AS c
JOIN threads AS t USING (thread_key)
"""

#: checkpoint rows: (thread_key, thread_id, checkpoint_ns, checkpoint_id, parent_id,
#: created_at, source, step, metadata, state)
SELECT = _COLUMNS + _FROM

#: a checkpoint row as SELECT gives it, then what its pending writes are read from (see
#: pending.py): the row right after it (its id, parent and the writes moved into it) and its
#: `writes` row; one statement, where three ran one after the other
WITH_PENDING = (
    _COLUMNS
    + """,
       n.checkpoint_id, n.parent_id, n.parent_writes, w.tasks"""
    + _FROM
    + """LEFT JOIN checkpoints AS n
  ON n.thread_key = c.thread_key
 AND n.checkpoint_id = (
    SELECT f.checkpoint_id
    FROM checkpoints AS f
    WHERE f.thread_key = c.thread_key
      AND f.checkpoint_id > c.checkpoint_id
    ORDER BY f.checkpoint_id
    LIMIT 1
 )
LEFT JOIN writes AS w
  ON w.thread_key = c.thread_key
 AND w.checkpoint_id = c.checkpoint_id
"""
)

#: the thread a CheckpointRef names, by its key looked up first (as THREAD does)
_OF_THREAD = """WHERE c.thread_key = (
    SELECT k.thread_key
    FROM threads AS k
    WHERE k.thread_id = :thread_id
      AND k.checkpoint_ns = :checkpoint_ns
)
"""

BY_REF = WITH_PENDING + _OF_THREAD + "  AND c.checkpoint_id = :checkpoint_id\n"

LATEST_BY_REF = WITH_PENDING + _OF_THREAD + "ORDER BY c.checkpoint_id DESC\nLIMIT 1\n"


def by_keys(count: int) -> str:
    """Checkpoint rows as WITH_PENDING gives them, of one thread (`:thread_key`) by ids
    (`:id0`, `:id1`... of `count`)."""
    ids = ", ".join(f":id{n}" for n in range(count))
    return WITH_PENDING + f"WHERE c.thread_key = :thread_key\n  AND c.checkpoint_id IN ({ids})\n"


#: the states of a checkpoint and those just before it in its thread (its ancestors, in a
#: history without forks): (checkpoint_id, parent_id, state), newest first
STATES_FROM = """
SELECT checkpoint_id, parent_id, state
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id <= :checkpoint_id
ORDER BY checkpoint_id DESC
LIMIT :limit
"""

COUNT = "UPDATE threads SET checkpoints = checkpoints + :change WHERE thread_key = :thread_key"

INSERT_CHECKPOINT = """
INSERT INTO checkpoints (
    thread_key, checkpoint_id, parent_id, source, step, writers, metadata, created_at, state,
    parent_writes
)
VALUES (
    :thread_key, :checkpoint_id, :parent_id, :source, :step, :writers, :metadata, :created_at,
    :state, :parent_writes
)
"""

LATEST_ID = """
SELECT checkpoint_id
FROM checkpoints
WHERE thread_key = :thread_key
ORDER BY checkpoint_id DESC
LIMIT 1
"""

NEXT = """
SELECT checkpoint_id, parent_id, parent_writes
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id > :checkpoint_id
ORDER BY checkpoint_id
LIMIT 1
"""

BEFORE_ID = """
SELECT checkpoint_id
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id < :checkpoint_id
ORDER BY checkpoint_id DESC
LIMIT 1
"""

AFTER_ID = """
SELECT checkpoint_id
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id > :checkpoint_id
ORDER BY checkpoint_id
LIMIT 1
"""

DELETE_PENDING = """
DELETE FROM writes
WHERE thread_key = :thread_key
  AND checkpoint_id = :checkpoint_id
"""

PENDING = """
SELECT tasks
FROM writes
WHERE thread_key = :thread_key
  AND checkpoint_id = :checkpoint_id
"""

BRANCH = """
INSERT INTO branches (thread_key, parent_id, checkpoint_id)
VALUES (:thread_key, :parent_id, :checkpoint_id)
ON CONFLICT DO NOTHING
"""

SET_PENDING = """
INSERT INTO writes (thread_key, checkpoint_id, tasks)
VALUES (:thread_key, :checkpoint_id, :tasks)
ON CONFLICT (thread_key, checkpoint_id) DO UPDATE SET tasks = excluded.tasks
"""

THREADS = """
SELECT thread_id, checkpoint_ns, checkpoints, latest
FROM (
    SELECT t.thread_id, t.checkpoint_ns, t.checkpoints, (
        SELECT c.checkpoint_id FROM checkpoints AS c
        WHERE c.thread_key = t.thread_key
        ORDER BY c.checkpoint_id DESC
        LIMIT 1
    ) AS latest
    FROM threads AS t
    WHERE t.thread_id >= :prefix AND (:upper IS NULL OR t.thread_id < :upper)
) AS found
WHERE latest IS NOT NULL
ORDER BY thread_id, checkpoint_ns
"""

#: a checkpoint row's bytes, as SQL over a row of `checkpoints` (the 8 stands for the step)
ROW_SIZE = (
    "length(checkpoint_id) + coalesce(length(parent_id), 0) + length(source) + 8 "
    "+ coalesce(length(writers), 0) + coalesce(length(metadata), 0) + length(state) "
    "+ coalesce(length(parent_writes), 0)"
)
#: the bytes of the rows of `checkpoints` a WHERE clause (to follow) selects
ROW_BYTES = f"coalesce(sum({ROW_SIZE}), 0) FROM checkpoints"


def list_query(
    config: RunnableConfig | None,
    filter_: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
    match: MetadataMatch,
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The query `list` runs, its parameters, and the filter's keys it leaves out (`match`,
    the database's SQL for one metadata filter key, has none for them)."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if config is not None:
        ref = CheckpointRef.from_config(config)
        clauses += ["t.thread_id = :thread_id", "t.checkpoint_ns = :checkpoint_ns"]
        params.update(thread_id=ref.thread_id, checkpoint_ns=ref.checkpoint_ns)
        if ref.checkpoint_id is not None:
            clauses.append("c.checkpoint_id = :checkpoint_id")
            params["checkpoint_id"] = id_bytes(ref.checkpoint_id) or b""
    if before is not None:
        before_id = CheckpointRef.from_config(before).checkpoint_id
        if before_id is None:
            raise ConfigError("`before` needs a config with a checkpoint_id")
        clauses.append("c.checkpoint_id < :before")
        params["before"] = require_id(before_id)
    left: dict[str, Any] = {}
    for n, (key, value) in enumerate(validate_filter(filter_).items()):
        matched = match(n, key, value)
        if matched is None:
            left[key] = value
            continue
        clauses.append(matched[0])
        params.update(matched[1])
    query = SELECT
    if clauses:
        query += "WHERE " + "\n  AND ".join(clauses) + "\n"
    query += "ORDER BY c.checkpoint_id DESC\n"
    if limit is not None:
        query += "LIMIT :limit\n"
        params["limit"] = int(limit)
    return query, params, left
