"""The checks of `ttcli verify` that read the rows the same way on every SQL backend: the
kept counts, and the invariants of the contract that rows can break."""

from __future__ import annotations

from ttcli.savers.sql.db import Db

#: a tool that wrote rows behind ttcli's back leaves the kept counts wrong
_COUNTS = """
SELECT thread_id, checkpoint_ns, checkpoints, real
FROM (
    SELECT t.thread_id, t.checkpoint_ns, t.checkpoints, (
        SELECT count(*) FROM checkpoints AS c WHERE c.thread_key = t.thread_key
    ) AS real
    FROM threads AS t
) AS counted
WHERE checkpoints != real
"""

#: invariant 4: a blob points only at older blobs (so every walk down a chain ends)
_NEWER_BASE = "SELECT blob_key, base_key FROM blobs WHERE base_key >= blob_key LIMIT 100"


def row_problems(conn: Db, child_before_parent: str) -> list[str]:
    """What is wrong in the rows; `child_before_parent` is the backend's query for invariant
    1 (thread id and hex checkpoint id of each child that does not sort after its parent)."""
    problems = [
        f"thread '{thread_id}' (namespace '{ns}') is recorded with {kept} checkpoints "
        f"but has {real}"
        for thread_id, ns, kept, real in conn.execute(_COUNTS)
    ]
    problems += [
        f"checkpoint {checkpoint_id} of thread '{thread_id}' does not sort after its parent"
        for thread_id, checkpoint_id in conn.execute(child_before_parent)
    ]
    problems += [
        f"stored value {key} extends stored value {base}, which is not older"
        for key, base in conn.execute(_NEWER_BASE)
    ]
    return problems
