"""The `blobs` table: the SQL side of `ttcli.savers.blobs` (see `BlobRows` there)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ttcli.savers.sql.db import Db
from ttcli.savers.sql.params import chunks

_INSERT = """
INSERT INTO blobs (base_key, is_record, value)
VALUES (:base_key, :is_record, :value)
RETURNING blob_key
"""

_CHAIN = """
WITH RECURSIVE chain (blob_key, base_key, is_record, value, depth) AS (
    SELECT blob_key, base_key, is_record, value, 0
    FROM blobs
    WHERE blob_key = :blob_key
    UNION ALL
    SELECT b.blob_key, b.base_key, b.is_record, b.value, chain.depth + 1
    FROM blobs AS b
    JOIN chain ON b.blob_key = chain.base_key
    WHERE chain.base_key < chain.blob_key
      AND chain.depth < :max_depth
)
SELECT blob_key, base_key, is_record, value
FROM chain
ORDER BY depth DESC
"""

_ONE = """
SELECT base_key, is_record, value
FROM blobs
WHERE blob_key = :blob_key
"""


class SqlBlobRows:
    """Blob rows of one connection; callers hold the transaction."""

    def __init__(self, conn: Db) -> None:
        self.conn = conn

    def insert(self, data: bytes, base_key: int | None, is_record: bool) -> int:
        params = {"base_key": base_key, "is_record": int(is_record), "value": data}
        (blob_key,) = self.conn.execute(_INSERT, params).fetchall()[0]
        return int(blob_key)

    def one(self, blob_key: int) -> tuple[int | None, int, bytes] | None:
        return self.conn.execute(_ONE, {"blob_key": blob_key}).fetchone()  # type: ignore[no-any-return]

    def chain(self, blob_key: int, limit: int) -> list[tuple[int, int | None, int, bytes]]:
        # the walk follows only links to older blobs and stops after `limit`: a loop or an
        # endless chain ends with its oldest row still naming a base (the caller's damage)
        params = {"blob_key": blob_key, "max_depth": limit}
        return self.conn.execute(_CHAIN, params).fetchall()

    def many(self, keys: Sequence[int]) -> Iterator[tuple[int, int | None, int, bytes]]:
        for chunk in chunks(keys):
            marks = ",".join("?" * len(chunk))
            yield from self.conn.execute(
                "SELECT blob_key, base_key, is_record, value FROM blobs "
                f"WHERE blob_key IN ({marks})",
                chunk,
            )

    def adopt(self, blob_key: int, base_key: int) -> bool:
        cursor = self.conn.execute(
            "UPDATE blobs SET base_key = :base_key WHERE blob_key = :blob_key AND base_key IS NULL",
            {"base_key": base_key, "blob_key": blob_key},
        )
        return cursor.rowcount == 1
