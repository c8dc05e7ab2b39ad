"""How `list` filters on metadata in SQLite: JSON functions over the metadata columns."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping
from typing import Any

from ttcli.savers.rules import is_json

#: the integers SQLite binds as INTEGER
INT64 = (-(2**63), 2**63 - 1)
#: whether `->` gives a JSON value's text as written (SQLite 3.38 and later)
JSON_TEXT = sqlite3.sqlite_version_info >= (3, 38)

#: the full metadata of a checkpoint row as JSON: the columns put into the other keys, unless
#: a null there marks them absent (`json_patch`, as the checkpoint_list view has it, would
#: drop every null, a user's nested ones too)
METADATA_SQL = """json_insert(
    coalesce(c.metadata, '{}'),
    '$.source', c.source, '$.step', c.step, '$.parents', json('{}'), '$.writes', json(c.writers)
)"""


def sqlite_match(n: int, key: str, value: Any) -> tuple[str, dict[str, Any]] | None:
    """One metadata filter key as SQLite SQL (see `statements.MetadataMatch`); None for a
    map or a list, which SQLite's JSON compares as text (key order, 1 and 1.0 would count)."""
    if not is_json(value):
        return "0", {}  # metadata is JSON: a value it cannot hold matches none of it
    if isinstance(value, Mapping | list | tuple):
        return None
    # the key is bound as a JSON path, never pasted into the SQL text
    path = "$" + "".join(f'."{part}"' for part in key.split("."))
    return filter_clause(n, key, value), {f"path{n}": path, f"value{n}": filter_value(value)}


def filter_clause(n: int, key: str, value: Any) -> str:
    # source and step are columns: compared as they are, without building each row's JSON
    if key == "source" and isinstance(value, str) and value:  # "" is also an absent source
        return f"c.source = :value{n}"
    if key == "step" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"c.step = :value{n}"
    extract = f"json_extract({METADATA_SQL}, :path{n})"
    kind = f"json_type({METADATA_SQL}, :path{n})"
    if value is None:
        return f"{extract} IS NULL"
    if isinstance(value, bool):
        return f"{kind} = :value{n}"
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1] and JSON_TEXT:
        # SQLite reads such an integer as a REAL, equal to its neighbours: compare its text
        return f"{kind} = 'integer' AND ({METADATA_SQL} -> :path{n}) = :value{n}"
    if isinstance(value, int | float):
        return f"{kind} IN ('integer', 'real') AND {extract} = :value{n}"
    return f"{kind} = 'text' AND {extract} = :value{n}"


def filter_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        # SQLite binds no wider integer: as text (the `step` column compares it as a number)
        return str(value) if JSON_TEXT else beyond_int64(value)
    return value


def beyond_int64(value: int) -> float:
    """Before SQLite 3.38, a wider integer compared as the REAL SQLite reads it as."""
    try:
        return float(value)
    except OverflowError:  # beyond any REAL too: it matches nothing stored
        return math.inf if value > 0 else -math.inf
