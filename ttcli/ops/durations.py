"""Durations and dates on the command line: `90s`, `30m`, `12h`, `7d`, `2w`, or an ISO date.

A bound names a moment between 1970 (the id clock cannot name an earlier one) and now:
anything else is a typo, refused before anything is read or deleted.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ttcli.errors import InputError

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION = re.compile(r"^(\d+)([smhdw])$")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def moment_before(text: str, now: datetime) -> datetime:
    """The moment `text` names: a duration back from `now`, or an ISO date/time (UTC unless
    it says otherwise).

    Raises:
        InputError: neither a duration nor a date, or a moment before 1970 or after `now`.
    """
    try:
        moment = _moment(text.strip(), now)
    except ValueError:
        raise InputError(
            f"invalid duration {text!r}: use a number and a unit (90s, 30m, 12h, 7d, 2w) "
            "or an ISO date such as 2026-11-01"
        ) from None
    if moment < EPOCH:
        raise InputError(f"{text!r} is before 1970: no checkpoint is that old (a typo?)")
    if moment > now:
        raise InputError(f"{text!r} is in the future: every checkpoint would match (a typo?)")
    return moment


def _moment(text: str, now: datetime) -> datetime:
    found = _DURATION.match(text)
    if not found:
        moment = datetime.fromisoformat(text)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    amount, unit = found.groups()
    try:
        return now - timedelta(**{_UNITS[unit]: int(amount)})
    except OverflowError:  # longer than the calendar: surely before 1970
        return datetime(1, 1, 1, tzinfo=UTC)
