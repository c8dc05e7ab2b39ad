"""What `ttcli verify` checks in a PostgreSQL database beyond decoding every value: objects of
ttcli's schema that are missing or of another kind, triggers on its tables, the kept counts,
and the invariants of the contract that the rows can break."""

from __future__ import annotations

from ttcli.savers.postgres.connection import PgDb
from ttcli.savers.postgres.migrations import OBJECTS

_OBJECTS = """
SELECT c.relname, CASE c.relkind WHEN 'v' THEN 'view' WHEN 'r' THEN 'table'
       WHEN 'p' THEN 'table' ELSE c.relkind::text END
FROM pg_class AS c
WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
  AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
"""

_TRIGGERS = """
SELECT t.tgname, c.relname
FROM pg_trigger AS t
JOIN pg_class AS c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal
  AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
"""

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

#: invariant 1: a child sorts after its parent (the parent id is stored without the
#: leading bytes it shares with the child's)
_CHILD_BEFORE_PARENT = """
SELECT t.thread_id, encode(c.checkpoint_id, 'hex')
FROM checkpoints AS c
JOIN threads AS t USING (thread_key)
WHERE c.parent_id IS NOT NULL
  AND substring(c.checkpoint_id FROM 1 FOR 16 - length(c.parent_id)) || c.parent_id
      >= c.checkpoint_id
LIMIT 100
"""

#: invariant 4: a blob points only at older blobs (so every walk down a chain ends)
_NEWER_BASE = "SELECT blob_key, base_key FROM blobs WHERE base_key >= blob_key LIMIT 100"


def integrity_problems(conn: PgDb) -> list[str]:
    kinds = dict(conn.execute(_OBJECTS).fetchall())
    problems = [
        f"{name} is a {kinds[name]}, where ttcli has a {kind}"
        if name in kinds
        else f"{kind} {name} is missing"
        for name, kind in OBJECTS.items()
        if kinds.get(name) != kind
    ]
    problems += [
        f"trigger {name} on {table} is not part of ttcli's schema"
        for name, table in conn.execute(_TRIGGERS)
        if table in OBJECTS
    ]
    if problems:
        return problems
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
