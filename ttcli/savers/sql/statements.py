"""The SQL of the format: statements as named-parameter constants, and the list query."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import ConfigError
from ttcli.savers.rules import validate_filter
from ttcli.savers.sql.ids import id_bytes, require_id

#: the full metadata of a checkpoint row as JSON, as the checkpoint_list view shows it
METADATA_SQL = """json_patch(
    json_object(
        'source', c.source, 'step', c.step, 'parents', json('{}'), 'writes', json(c.writers)
    ),
    coalesce(c.metadata, '{}')
)"""

THREAD = """
SELECT thread_key
FROM threads
WHERE thread_id = :thread_id
  AND checkpoint_ns = :checkpoint_ns
"""

NEW_THREAD = """
INSERT INTO threads (thread_id, checkpoint_ns)
VALUES (:thread_id, :checkpoint_ns)
"""

SELECT = """
SELECT c.thread_key, t.thread_id, t.checkpoint_ns, c.checkpoint_id, c.parent_id, c.created_at,
       c.source, c.step, c.metadata, c.state
FROM checkpoints AS c
JOIN threads AS t USING (thread_key)
"""

BY_ID = (
    SELECT
    + """
WHERE c.thread_key = :thread_key
  AND c.checkpoint_id = :checkpoint_id
"""
)

LATEST = (
    SELECT
    + """
WHERE c.thread_key = :thread_key
ORDER BY c.checkpoint_id DESC
LIMIT 1
"""
)

STATE = """
SELECT parent_id, state, parent_writes
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id = :checkpoint_id
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
SELECT max(checkpoint_id)
FROM checkpoints
WHERE thread_key = :thread_key
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
SELECT max(checkpoint_id)
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id < :checkpoint_id
"""

AFTER_ID = """
SELECT min(checkpoint_id)
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id > :checkpoint_id
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
INSERT OR IGNORE INTO branches (thread_key, parent_id, checkpoint_id)
VALUES (:thread_key, :parent_id, :checkpoint_id)
"""

SET_PENDING = """
INSERT OR REPLACE INTO writes (thread_key, checkpoint_id, tasks)
VALUES (:thread_key, :checkpoint_id, :tasks)
"""

THREADS = """
SELECT t.thread_id, t.checkpoint_ns, t.checkpoints, (
    SELECT max(c.checkpoint_id) FROM checkpoints AS c
    WHERE c.thread_key = t.thread_key
) AS latest
FROM threads AS t
WHERE t.thread_id >= :prefix AND (:upper IS NULL OR t.thread_id < :upper)
    AND latest IS NOT NULL
ORDER BY t.thread_id, t.checkpoint_ns
"""

#: a checkpoint row's bytes, as SQL over `checkpoints` (the 8 stands for the step)
ROW_BYTES = (
    "coalesce(sum(length(checkpoint_id) + coalesce(length(parent_id), 0) + length(source) + 8 "
    "+ coalesce(length(writers), 0) + coalesce(length(metadata), 0) + length(state) "
    "+ coalesce(length(parent_writes), 0)), 0) FROM checkpoints"
)


def list_query(
    config: RunnableConfig | None,
    filter_: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> tuple[str, dict[str, Any]]:
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
    for n, (key, value) in enumerate(validate_filter(filter_).items()):
        clauses.append(filter_clause(n, key, value))
        # the key is bound as a JSON path, never pasted into the SQL text
        params[f"path{n}"] = "$" + "".join(f'."{part}"' for part in key.split("."))
        params[f"value{n}"] = filter_value(value)
    query = SELECT
    if clauses:
        query += "WHERE " + "\n  AND ".join(clauses) + "\n"
    query += "ORDER BY c.checkpoint_id DESC\n"
    if limit is not None:
        query += "LIMIT :limit\n"
        params["limit"] = int(limit)
    return query, params


def filter_clause(n: int, key: str, value: Any) -> str:
    # source and step are columns: compared as they are, without building each row's JSON
    if key == "source" and isinstance(value, str):
        return f"c.source = :value{n}"
    if key == "step" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"c.step = :value{n}"
    extract = f"json_extract({METADATA_SQL}, :path{n})"
    kind = f"json_type({METADATA_SQL}, :path{n})"
    if value is None:
        return f"{extract} IS NULL"
    if isinstance(value, bool):
        return f"{kind} = :value{n}"
    if isinstance(value, int | float):
        return f"{kind} IN ('integer', 'real') AND {extract} = :value{n}"
    if isinstance(value, str):
        return f"{kind} = 'text' AND {extract} = :value{n}"
    return f"{kind} IN ('object', 'array') AND {extract} = json(:value{n})"


def filter_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, int | float | str):
        return value
    return json.dumps(value, separators=(",", ":"))
