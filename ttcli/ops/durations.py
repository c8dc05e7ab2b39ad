"""Durations and dates on the command line: `90s`, `30m`, `12h`, `7d`, `2w`, or an ISO date."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ttcli.errors import InputError

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION = re.compile(r"^(\d+)([smhdw])$")


def moment_before(text: str, now: datetime) -> datetime:
    """The moment `text` names: a duration back from `now`, or an ISO date/time (UTC unless
    it says otherwise).

    Raises:
        InputError: neither a duration nor a date.
    """
    found = _DURATION.match(text.strip())
    if found:
        amount, unit = found.groups()
        try:
            return now - timedelta(**{_UNITS[unit]: int(amount)})
        except (OverflowError, ValueError):  # beyond year 1
            raise InputError(
                f"invalid duration {text!r}: it reaches back before the year 1"
            ) from None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"invalid duration {text!r}: use a number and a unit (90s, 30m, 12h, 7d, 2w) "
            "or an ISO date such as 2026-11-01"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
