"""What `ttcli verify` checks in a file beyond decoding every value: SQLite's own integrity
check, SQL objects that schema.sql does not define, the kept counts, and the invariants of
the contract that a file can break."""

from __future__ import annotations

import sqlite3

from ttcli.savers.sqlite.migrations import foreign_objects

_COUNTS = """
SELECT thread_id, checkpoint_ns, checkpoints, (
    SELECT count(*) FROM checkpoints AS c WHERE c.thread_key = t.thread_key
) AS real
FROM threads AS t
WHERE checkpoints != real
"""

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


#: invariant 4: a blob points only at older blobs (so every walk down a chain ends)
_NEWER_BASE = """
SELECT blob_key, base_key
FROM blobs
WHERE base_key >= blob_key
LIMIT 100
"""


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    found = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    if found != ["ok"]:
        return [f"integrity check: {text}" for text in found]
    # a tool that wrote rows behind ttcli's back leaves the kept counts wrong
    problems = foreign_objects(conn)
    problems += [
        f"thread '{thread_id}' (namespace '{ns}') is recorded with {kept} checkpoints "
        f"but has {real}"
        for thread_id, ns, kept, real in conn.execute(_COUNTS)
    ]
    problems += [
        f"checkpoint {checkpoint_id} of thread '{thread_id}' does not sort after its parent"
        for thread_id, checkpoint_id in conn.execute(_CHILD_BEFORE_PARENT)
    ]
    problems += [
        f"stored value {key} extends stored value {base}, which is not older"
        for key, base in conn.execute(_NEWER_BASE)
    ]
    return problems
