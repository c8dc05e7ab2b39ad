"""What `ttcli verify` checks in a file beyond decoding every value: SQLite's own integrity
check, SQL objects that schema.sql does not define, the kept counts, and the invariants of
the contract that a file can break."""

from __future__ import annotations

import sqlite3

from ttcli.savers.sql.integrity import row_problems
from ttcli.savers.sqlite.migrations import foreign_objects

#: invariant 1: a child sorts after its parent (the parent id is stored without the
#: leading bytes it shares with the child's)
_CHILD_BEFORE_PARENT = """
SELECT t.thread_id, lower(hex(c.checkpoint_id))
FROM checkpoints AS c
JOIN threads AS t USING (thread_key)
WHERE c.parent_id IS NOT NULL
  AND CAST(substr(c.checkpoint_id, 1, 16 - length(c.parent_id)) || c.parent_id AS BLOB)
      >= c.checkpoint_id
LIMIT 100
"""


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    found = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    if found != ["ok"]:
        return [f"integrity check: {text}" for text in found]
    return foreign_objects(conn) + row_problems(conn, _CHILD_BEFORE_PARENT)
