"""How `list` filters on metadata in PostgreSQL: jsonb over the metadata columns, with the
meaning SQLite's JSON functions give the same filter."""

from __future__ import annotations

import json
from typing import Any

from ttcli.savers.rules import is_json

#: the full metadata of a checkpoint row (a null in `metadata` marks an absent key)
METADATA_SQL = """((jsonb_build_object(
    'source', c.source, 'step', c.step, 'parents', '{}'::jsonb, 'writes', c.writers::jsonb
) || coalesce(c.metadata::jsonb, '{}'::jsonb)) - ARRAY(
    SELECT e.key FROM jsonb_each(coalesce(c.metadata::jsonb, '{}'::jsonb)) AS e
    WHERE e.value = 'null'::jsonb
))"""


def postgres_match(n: int, key: str, value: Any) -> tuple[str, dict[str, Any]]:
    """One metadata filter key as PostgreSQL SQL (see `statements.MetadataMatch`)."""
    if not is_json(value):
        return "FALSE", {}  # metadata is JSON: a value it cannot hold matches none of it
    bound: dict[str, Any] = {f"value{n}": value}
    if key == "source" and isinstance(value, str) and value:  # "" is also an absent source
        return f"c.source = :value{n}", bound
    if key == "step" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"c.step = :value{n}", bound
    # the key is bound as a path, never pasted into the SQL text
    parts = key.split(".")
    paths = {f"path{n}": parts}
    found = f"({METADATA_SQL} #> :path{n})"
    if len(parts) > 1:  # through maps only, as on the other savers (`#>` also indexes lists)
        paths |= {f"up{n}_{i}": parts[:i] for i in range(1, len(parts))}
        maps = " AND ".join(
            f"jsonb_typeof({METADATA_SQL} #> :up{n}_{i}) = 'object'" for i in range(1, len(parts))
        )
        found = f"(CASE WHEN {maps} THEN {found} END)"
    bound |= paths
    if value is None:
        return f"({found} IS NULL OR {found} = 'null'::jsonb)", paths
    if isinstance(value, str):
        return f"jsonb_typeof({found}) = 'string' AND {found} #>> '{{}}' = :value{n}", bound
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"jsonb_typeof({found}) = 'number' AND ({found})::numeric = :value{n}", bound
    bound[f"value{n}"] = json.dumps(value, separators=(",", ":"))
    return f"{found} = (:value{n})::jsonb", bound
