"""The saver contract on one SQLite file, in the format of `schema.sql`.

One module a job: `connection` (the file, transactions, what other processes changed),
`sql` (the statements), `rows` (threads, ids, placement and children), `pending` (pending
writes), `states` (decoding a row into a checkpoint, with its cache), `put` (storing one),
`deletion` (deleting rows and collecting the values only they used), `copy` (archive copies
row by row), `names` and `blob_table` (the SQL side of the backend-neutral encoding in
`ttcli.savers.records` and `ttcli.savers.blobs`), `migrations`; `saver` implements the
contract by delegating to them.
"""

from ttcli.savers.sqlite.saver import DEFAULT_BUSY_TIMEOUT, SqliteSaver

__all__ = ["DEFAULT_BUSY_TIMEOUT", "SqliteSaver"]
