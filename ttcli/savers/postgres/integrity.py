"""What `ttcli verify` checks in a PostgreSQL database beyond decoding every value: objects of
ttcli's schema that are missing or of another kind, triggers on its tables, the kept counts,
and the invariants of the contract that the rows can break."""

from __future__ import annotations

from ttcli.savers.postgres.connection import PgDb
from ttcli.savers.postgres.migrations import OBJECTS, OBJECTS_SQL
from ttcli.savers.sql.integrity import row_problems

_TRIGGERS = """
SELECT t.tgname, c.relname
FROM pg_trigger AS t
JOIN pg_class AS c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal
  AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
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


def integrity_problems(conn: PgDb) -> list[str]:
    kinds = dict(conn.execute(OBJECTS_SQL).fetchall())
    problems = [
        f"{name} is a {kinds[name]}, where ttcli has a {kind}"
        if name in kinds
        else f"{kind} {name} is missing"
        for name, kind in OBJECTS.items()
        if kinds.get(name) != kind
    ]
    if problems:  # the rows cannot be read as ttcli's
        return problems
    problems += [
        f"trigger {name} on {table} is not part of ttcli's schema"
        for name, table in conn.execute(_TRIGGERS)
        if table in OBJECTS
    ]
    return problems + row_problems(conn, _CHILD_BEFORE_PARENT)
