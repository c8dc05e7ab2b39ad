"""The saver contract on SQL tables, shared by the SQLite and the PostgreSQL backends.

One module a job: `statements` (the SQL both databases run), `rows` (threads, ids,
placement and children), `pending` (pending writes), `states` (decoding a row into a
checkpoint, with its cache), `put` (storing one), `deletion` (deleting rows and collecting the
values only they used), `copy` with `copy_page`, `copy_check`, `copy_memory` and `rekey`
(archive copies row by row, between any two databases), `names` and `blob_table` (the SQL
side of the backend-neutral encoding in `ttcli.savers.records` and `ttcli.savers.blobs`).
Each backend brings its connection and transactions, its schema and migrations, its
integrity checks, and the keys rows copied in may take.
"""
