"""The saver contract on PostgreSQL, in the format of `schema-postgres.sql`.

The contract's code is `ttcli.savers.sql`'s, shared with SQLite; here are only what differs:
`connection` (a psycopg pool, transactions, noticing other writers), `migrations`,
`metadata_filter` (jsonb), `integrity` and `errors`. Needs the `postgres` extra.
"""

from ttcli.savers.postgres.saver import PostgresSaver

__all__ = ["PostgresSaver"]
