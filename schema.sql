-- ttcli database format, version 1.
--
-- One SQLite file holds any number of threads. Every checkpoint (a thread's state at one
-- superstep boundary) is a row of `checkpoints`; the state values it holds live in `blobs`,
-- stored once per change: a channel that did not change points at the same blob as the
-- parent checkpoint, and a list that only grew is stored as an `append` blob holding just the
-- new items plus a link to the blob of the list it extends.
--
-- Values are msgpack (https://msgpack.org). Types beyond plain msgpack are ext types:
--   1 tuple, 2 set, 3 frozenset (array payloads), 4 datetime, 5 date, 6 time (ISO-8601 text),
--   7 timedelta [days, seconds, microseconds], 8 UUID (16 bytes), 9 Decimal (text),
--   10 enum [type name, value], 11 object [type name, {field: value}] (dataclass, pydantic
--   model, namedtuple), 12 chat message {type, content, id, ...}, 13 blob reference (integer
--   blob_key; only inside `record` blobs).
-- A reader must never import or call the type names found in ext 10 and 11: ttcli rebuilds
-- only classes registered by the application and otherwise returns {"$type": name, ...}.
--
-- The views at the end present the tables in LangGraph's terms for sqlite3, sqlite-utils and
-- datasette users (text checkpoint ids, ISO timestamps, JSON metadata).
--
-- ttcli applies this file to a new database and migrates older versions forward; a file whose
-- user_version is newer than the one below is refused rather than guessed at.

PRAGMA user_version = 1;

-- A thread of checkpoints in one namespace ('' for the root graph; subgraphs get their own).
CREATE TABLE threads (
    thread_key     INTEGER PRIMARY KEY,         -- compact key the other tables use
    thread_id      TEXT NOT NULL,               -- the application's thread id, e.g. 'order:123'
    checkpoint_ns  TEXT NOT NULL DEFAULT '',    -- checkpoint namespace
    UNIQUE (thread_id, checkpoint_ns)
);

-- One row per checkpoint.
CREATE TABLE checkpoints (
    checkpoint_key  INTEGER PRIMARY KEY,        -- compact key the other tables use
    thread_key      INTEGER NOT NULL REFERENCES threads (thread_key),
    checkpoint_id   BLOB NOT NULL,              -- UUIDv6 as 16 bytes: time-ordered, so the
                                                -- largest id of a thread is its latest checkpoint
    parent_id       BLOB,                       -- the parent's checkpoint_id; NULL for a root.
                                                -- It may name a pruned checkpoint.
    created_at      INTEGER NOT NULL,           -- microseconds since 1970-01-01 UTC
    metadata        TEXT NOT NULL,              -- JSON: source, step, parents, user keys, and
                                                -- writes as the list of node names that wrote
    state           BLOB NOT NULL               -- msgpack map: "c" {channel: [version, blob_key
                                                -- or nil]}, "s" versions seen {node: {channel:
                                                -- version}}, "u" updated channels, "w" writes
                                                -- {node: blob_key or nil} (what each node returned)
);

-- Lookup by id and "latest of a thread" (largest id), newest-first history, and `before`.
CREATE UNIQUE INDEX checkpoints_by_thread ON checkpoints (thread_key, checkpoint_id);

-- Stored values. A blob is read on its own as `value`; as a channel value, a blob with a
-- `base_key` is an append: the list stored at `base_key` (read the same way) extended by the
-- items in `value`.
CREATE TABLE blobs (
    blob_key    INTEGER PRIMARY KEY,
    thread_key  INTEGER NOT NULL REFERENCES threads (thread_key),
    base_key    INTEGER REFERENCES blobs (blob_key),  -- the list this append extends, or NULL
    is_record   INTEGER NOT NULL DEFAULT 0,           -- 1: a map whose large entries are blob
                                                      -- references (ext 13), stored separately
                                                      -- so that equal values share one blob
    value       BLOB NOT NULL                         -- msgpack
);

-- Deleting and garbage-collecting a thread's blobs.
CREATE INDEX blobs_by_thread ON blobs (thread_key);

-- Pending writes: what each task of a superstep wrote, saved as soon as the task finished,
-- against the checkpoint the task was planned from. A resumed run reuses them instead of
-- running the task again; history shows them as the tasks' results and errors.
CREATE TABLE writes (
    checkpoint_key  INTEGER NOT NULL REFERENCES checkpoints (checkpoint_key),
    task_id         TEXT NOT NULL,               -- deterministic id of the task
    idx             INTEGER NOT NULL,            -- position in the task's writes; negative for
                                                 -- special channels (-1 __error__,
                                                 -- -2 __scheduled__, -3 __interrupt__, -4 __resume__)
    task_path       TEXT NOT NULL DEFAULT '',    -- e.g. '~__pregel_pull, a'; writes are applied
                                                 -- in (task_path, task_id, idx) order
    channel         TEXT NOT NULL,               -- the channel written
    value           BLOB,                        -- the value written (msgpack), if small
    blob_key        INTEGER REFERENCES blobs (blob_key),  -- else where it is stored
    PRIMARY KEY (checkpoint_key, task_id, idx)
) WITHOUT ROWID;

-- Checkpoints as LangGraph names them, for SQL users.
CREATE VIEW checkpoint_list AS
SELECT
    t.thread_id,
    t.checkpoint_ns,
    lower(
        substr(hex(c.checkpoint_id), 1, 8) || '-' || substr(hex(c.checkpoint_id), 9, 4) || '-' ||
        substr(hex(c.checkpoint_id), 13, 4) || '-' || substr(hex(c.checkpoint_id), 17, 4) || '-' ||
        substr(hex(c.checkpoint_id), 21)
    ) AS checkpoint_id,
    lower(
        substr(hex(c.parent_id), 1, 8) || '-' || substr(hex(c.parent_id), 9, 4) || '-' ||
        substr(hex(c.parent_id), 13, 4) || '-' || substr(hex(c.parent_id), 17, 4) || '-' ||
        substr(hex(c.parent_id), 21)
    ) AS parent_checkpoint_id,
    strftime('%Y-%m-%dT%H:%M:%f', c.created_at / 1000000.0, 'unixepoch') || 'Z' AS created_at,
    json_extract(c.metadata, '$.source') AS source,
    json_extract(c.metadata, '$.step') AS step,
    json_extract(c.metadata, '$.writes') AS writes,
    c.metadata
FROM checkpoints AS c
JOIN threads AS t USING (thread_key);
