"""Output: tables for people, and json, jsonl and csv whose shape scripts can rely on."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import io
import json
import math
import os
import re
import sys
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import click

from ttcli.cli.main import PICTURES, Env
from ttcli.ops.inspect import Asked, Entry, Waiting

if TYPE_CHECKING:
    from ttcli.ops.pictures import Picture
    from ttcli.ops.subgraphs import Subgraph


def jsonable(value: Any) -> Any:
    """Any stored value as JSON data: types become their plain form, never an error, and
    never invalid JSON: NaN and the infinities become {"$float": "NaN"}, and a mapping whose
    keys would collide as text ({1: .., "1": ..}) becomes {"$map": [[key, value], ...]}."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": "NaN" if math.isnan(value) else f"{'-' if value < 0 else ''}Infinity"}
    if isinstance(value, float):
        return value
    if isinstance(value, Mapping):
        return _mapping(value)
    if isinstance(value, list | tuple):
        return list(map(jsonable, value))
    if isinstance(value, set | frozenset):
        return sorted(map(jsonable, value), key=repr)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"$type": type(value).__name__, **fields}
    if hasattr(value, "model_dump"):
        return {"$type": type(value).__name__, **jsonable(value.model_dump())}
    return repr(value)


def _mapping(value: Mapping[Any, Any]) -> dict[str, Any]:
    keys = [str(k) for k in value]
    if len(set(keys)) == len(keys):
        return dict(zip(keys, map(jsonable, value.values()), strict=True))
    return {"$map": [[jsonable(k), jsonable(v)] for k, v in value.items()]}


def to_json(value: Any, *, indent: int | None = 2) -> str:
    text = json.dumps(jsonable(value), indent=indent, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: JSON's \udcxx escapes print anywhere
        return json.dumps(jsonable(value), indent=indent, allow_nan=False)
    return text


#: control characters (escape sequences start with one), bidi overrides and lone
#: surrogates: printed as escapes, so that no stored text can drive the terminal
_UNSAFE = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def safe(text: str) -> str:
    """Text for a terminal: unsafe characters as Python escapes (\\x1b, \\u202e)."""
    return _UNSAFE.sub(lambda found: ascii(found[0])[1:-1], text)


def compact(value: Any, width: int = 60) -> str:
    """A value as JSON on one line, cut to `width` characters."""
    text = to_json(value, indent=None)
    return text if len(text) <= width else text[: width - 1] + "…"


def color_enabled() -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def style(text: str, **styles: Any) -> str:
    return click.style(text, **styles) if color_enabled() else text


def rows(
    env: Env,
    records: Sequence[Mapping[str, Any]],
    headers: Sequence[str],
    cells: Sequence[Sequence[Any]],
    *,
    fields: Sequence[str],
    empty: str,
) -> None:
    """A list of records: `cells` (short forms) under `headers` in a table, `records` (full)
    otherwise. CSV has the header `fields` (the records' keys) even with no records, and
    an empty table says `empty` on stderr, leaving stdout empty for scripts."""
    _no_picture(env)
    if env.format == "json":
        click.echo(to_json(list(records)))
    elif env.format == "jsonl":
        for record in records:
            click.echo(to_json(record, indent=None))
    elif env.format == "csv":
        import csv  # imported here: the start-up of a table or JSON does without it

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(fields)
        for record in records:
            writer.writerow([_csv_cell(record.get(name)) for name in fields])
        click.echo(buffer.getvalue(), nl=False)
    elif cells:
        from tabulate import tabulate  # imported here: only tables need it

        shown = [[safe(str(cell)) for cell in row] for row in cells]
        click.echo(tabulate(shown, headers=list(headers), disable_numparse=True))
    elif empty:
        click.echo(empty, err=True)


def document(
    env: Env, record: Mapping[str, Any], lines: Sequence[str], *, escaped: bool = False
) -> None:
    """One record: `lines` for people (made `safe` unless the caller did it, keeping its
    colours), the record itself for scripts."""
    _no_picture(env)
    if env.format == "json":
        click.echo(to_json(record))
    elif env.format == "jsonl":
        click.echo(to_json(record, indent=None))
    elif env.format == "csv":  # field,value
        fields = ["field", "value"]
        rows(env, [dict(zip(fields, item, strict=True)) for item in record.items()], [], [],
             fields=fields, empty="")  # fmt: skip
    else:
        click.echo("\n".join(lines if escaped else map(safe, lines)))


def _no_picture(env: Env) -> None:
    if env.format in PICTURES:  # given to the group, before a command that does not draw
        raise click.UsageError(f"--format {env.format} draws tree and graph only")


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):  # as JSON writes them
        return "true" if value else "false"
    if value is None or isinstance(value, int | float | str):
        return value
    return to_json(value, indent=None)


def asked_record(found: Asked) -> dict[str, Any]:
    return {"id": found.id, "value": found.value}


def waiting_record(waits: Sequence[Waiting]) -> list[dict[str, Any]]:
    """What a paused thread waits on, in one shape for `run --json` and `show --json`."""
    return [{"node": w.node, "interrupts": [asked_record(a) for a in w.interrupts]} for w in waits]


def waiting_lines(waits: Sequence[Waiting]) -> list[str]:
    """What a paused thread waits on, for people: each question, and the id `resume --id`
    takes when several wait."""
    lines = []
    for wait in waits:
        lines.append(f"waiting: {wait.node}")
        lines += [f"  asks: {compact(a.value, 90)} (id {a.id})" for a in wait.interrupts]
    return lines


def picture(env: Env, drawn: Picture) -> None:
    """A picture in the format asked for (mermaid or dot)."""
    from ttcli.ops.pictures import DRAWERS  # here: `history` and `show` never load it

    click.echo(DRAWERS[env.format](drawn), nl=False)


def entry_record(e: Entry) -> dict[str, Any]:
    """A checkpoint as `history` (and `show`, `tree`) give it to scripts."""
    return {
        "checkpoint_id": e.checkpoint_id,
        "parent_checkpoint_id": e.parent_id,
        "step": e.step,
        "source": e.source,
        "next": list(e.next),
        "writes": e.writes,
        "created_at": e.created_at,
        "metadata": e.extra,
    }


def subgraph_record(sub: Subgraph) -> dict[str, Any]:
    """A subgraph run by a task, as `show` and `tree` give it to scripts."""
    return {
        "checkpoint_ns": sub.checkpoint_ns,
        "task_name": sub.task_name,
        "task_id": sub.task_id,
        "parent_checkpoint_id": sub.parent_checkpoint_id,
        "checkpoints": sub.checkpoints,
        "latest_checkpoint_id": sub.latest.checkpoint_id,
    }
