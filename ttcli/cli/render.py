"""Output: tables for people, and json, jsonl and csv whose shape scripts can rely on."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import enum
import io
import json
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import click

from ttcli.cli.main import Env


def jsonable(value: Any) -> Any:
    """Any stored value as JSON data: types become their plain form, never an error."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [jsonable(v) for v in value]
        return sorted(items, key=repr)
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


def to_json(value: Any, *, indent: int | None = 2) -> str:
    return json.dumps(jsonable(value), indent=indent, ensure_ascii=False)


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
    if env.format == "json":
        click.echo(to_json(list(records)))
    elif env.format == "jsonl":
        for record in records:
            click.echo(to_json(record, indent=None))
    elif env.format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(fields)
        for record in records:
            writer.writerow([_csv_cell(record.get(name)) for name in fields])
        click.echo(buffer.getvalue(), nl=False)
    elif cells:
        from tabulate import tabulate  # imported here: only tables need it

        click.echo(tabulate(cells, headers=list(headers), disable_numparse=True))
    elif empty:
        click.echo(empty, err=True)


def document(env: Env, record: Mapping[str, Any], lines: Sequence[str]) -> None:
    """One record: `lines` for people, the record itself for scripts."""
    if env.format == "json":
        click.echo(to_json(record))
    elif env.format == "jsonl":
        click.echo(to_json(record, indent=None))
    elif env.format == "csv":  # field,value
        fields = ["field", "value"]
        rows(env, [dict(zip(fields, item, strict=True)) for item in record.items()], [], [],
             fields=fields, empty="")  # fmt: skip
    else:
        click.echo("\n".join(lines))


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):  # as JSON writes them
        return "true" if value else "false"
    if value is None or isinstance(value, int | float | str):
        return value
    return to_json(value, indent=None)
