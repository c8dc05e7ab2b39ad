"""Reading values given on the command line: JSON (inline, @file or -) and KEY=VALUE pairs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from ttcli.configs import unicode_error
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
            with open(text[1:], encoding="utf-8") as file:
                source = file.read()
        except OSError as exc:
            raise InputError(f"cannot read {what} from {text[1:]}: {exc.strerror}") from None
    try:
        found = _loads(source, what)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON in {what}: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    return _storable(found, what)


def _loads(text: str, what: str) -> Any:
    """Raises: JSONDecodeError: not JSON. InputError: JSON no database stores."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # a number of more than 4,300 digits
        raise InputError(
            f"{what} holds an integer of thousands of digits, which no database stores: "
            "give it as a string"
        ) from None


def _storable(value: Any, what: str) -> Any:
    """`value`, if a database can hold it: JSON can spell a lone surrogate (`"\\udcff"`),
    which no UTF-8 file holds, and integers of any size, which msgpack does not."""
    exc = unicode_error(value)
    if exc is not None:
        bad = ascii(exc.object[exc.start : exc.end])[1:-1]
        raise InputError(f"{what} holds text that is not valid Unicode ({bad})")
    big = _first_big_integer(value)
    if big is not None:
        raise InputError(
            f"{what} holds the integer {big}, outside the range a database stores "
            "(-2**63 to 2**64-1): give it as a string"
        )
    return value


def _first_big_integer(value: Any) -> int | None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not -(2**63) <= item < 2**64:
            return item
    return None


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
        return _storable(_loads(text, what), what)
    except json.JSONDecodeError:
        return text
