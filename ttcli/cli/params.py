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
        found = json.loads(source)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON in {what}: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    return _unicode(found, what)


def _unicode(value: Any, what: str) -> Any:
    """`value`, if its text is all valid Unicode: JSON can spell a lone surrogate
    (`"\\udcff"`), which no UTF-8 file or database can hold."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ascii(exc.object[exc.start : exc.end])[1:-1]
        raise InputError(f"{what} holds text that is not valid Unicode ({bad})") from None
    return value


def assignments(items: Sequence[str], what: str) -> dict[str, Any]:
    """KEY=VALUE pairs; VALUE is read as JSON when it is JSON (3, true, "x", [1]) and as
    text otherwise, so `source=loop` needs no quotes."""
    found: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"invalid {what} {item!r}: use KEY=VALUE")
        found[key] = _json_or_text(value, what)
    return found


def json_or_text(text: str, what: str) -> Any:
    """Like `json_value`, except that inline text which is not JSON is taken as a string
    (`--value yes`)."""
    if text == "-" or text.startswith("@"):
        return json_value(text, what)
    return _json_or_text(text, what)


def _json_or_text(text: str, what: str) -> Any:
    try:
        return _unicode(json.loads(text), what)
    except json.JSONDecodeError:
        return text
