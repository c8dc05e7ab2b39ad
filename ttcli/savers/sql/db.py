"""What the SQL parts need of a database connection: the part of DB-API that sqlite3 and the
PostgreSQL adapter both offer. Statements use `?` or `:name` parameters (the PostgreSQL
adapter rewrites them) and only SQL both databases run."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

Params = Sequence[Any] | Mapping[str, Any]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor: ...


def scalar(conn: Db, sql: str, parameters: Params = ()) -> Any:
    """The first column of the first row, or None when there is no row."""
    row = conn.execute(sql, parameters).fetchone()
    return None if row is None else row[0]
