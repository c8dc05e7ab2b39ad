"""Reading values given on the command line: JSON (inline, @file or -) and KEY=VALUE pairs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ttcli.errors import InputError


def json_value(text: str, what: str) -> Any:
    """JSON given inline, as `@path/to/file.json`, or as `-` for standard input.

    Raises:
        InputError: unreadable file or malformed JSON, naming which option it was.
    """
    source = text
    if text == "-":
        source = sys.stdin.read()
    elif text.startswith("@"):
        try:
            source = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read {what} from {text[1:]}: {exc.strerror}") from None
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON in {what}: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def assignments(items: Sequence[str], what: str) -> dict[str, Any]:
    """KEY=VALUE pairs; VALUE is read as JSON when it is JSON (3, true, "x", [1]) and as
    text otherwise, so `source=loop` needs no quotes."""
    found: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"invalid {what} {item!r}: use KEY=VALUE")
        found[key] = _json_or_text(value)
    return found


def json_or_text(text: str, what: str) -> Any:
    """Like `json_value`, except that inline text which is not JSON is taken as a string
    (`--value yes`)."""
    if text == "-" or text.startswith("@"):
        return json_value(text, what)
    return _json_or_text(text)


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
