"""The saver contract on one SQLite file, in the format of `schema.sql`.

The contract's code is `ttcli.savers.sql`'s, shared with PostgreSQL; here is what only SQLite
has: `connection` (the file, transactions, what other processes changed), `migrations`,
`integrity`, `metadata_filter`, `errors`, and `saver`, which opens the file and adds vacuuming
and the keys rows copied in take.
"""

from ttcli.savers.sqlite.saver import DEFAULT_BUSY_TIMEOUT, SqliteSaver

__all__ = ["DEFAULT_BUSY_TIMEOUT", "SqliteSaver"]
