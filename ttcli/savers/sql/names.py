"""The `names` table: channel, node and task path names stored once (see records.Names)."""

from __future__ import annotations

from ttcli.errors import CorruptValueError
from ttcli.savers.serde import Serializer
from ttcli.savers.sql.db import Db


class SqlNames:
    """Channel, node and task path names interned in the `names` table, and the serializer
    the rows that use them are encoded with."""

    def __init__(self, conn: Db, serde: Serializer) -> None:
        self.conn = conn
        self.serde = serde
        self._keys: dict[str, int] = {}
        self._names: dict[int, str] = {}

    def key(self, name: str) -> int:
        """The key of a name, adding it (call inside a write transaction)."""
        found = self._keys.get(name)
        if found is None:
            self._load()
            found = self._keys.get(name)
        if found is None:
            (found,) = self.conn.execute(
                "INSERT INTO names (name) VALUES (?) RETURNING name_key", (name,)
            ).fetchall()[0]
            self._keys[name], self._names[found] = found, name
        return found

    def _load(self) -> None:
        for found, name in self.conn.execute("SELECT name_key, name FROM names"):
            self._names[found] = name
            self._keys.setdefault(name, found)

    def name(self, key: int) -> str:
        if key not in self._names:
            self._load()
        try:
            return self._names[key]
        except KeyError:
            raise CorruptValueError(f"name {key} is missing from the names table") from None

    def forget(self) -> None:
        """Drop cached keys (after a rollback they may not exist)."""
        self._keys.clear()
        self._names.clear()
