-- ttcli database format, version 7.
--
-- One SQLite file holds any number of threads. Every checkpoint (a thread's state at one
-- superstep boundary) is a row of `checkpoints`; the values it holds are stored once per
-- change in `blobs`: a channel that did not change points at its parent's blob, and a list
-- that only grew is an append blob holding just the new items and a link to the list it
-- extends. Small values are kept inline, and a checkpoint's bookkeeping (versions) is stored
-- as a delta from its parent, with a full copy at least every 16 checkpoints of a lineage.
--
-- Values are msgpack (https://msgpack.org). Types beyond plain msgpack are ext types:
--   1 tuple, 2 set, 3 frozenset (array payloads), 4 datetime, 5 date, 6 time (ISO-8601 text),
--   7 timedelta [days, seconds, microseconds], 8 UUID (16 bytes), 9 Decimal (text),
--   10 enum [type name, value], 11 object [type name, {field: value}] (dataclass, pydantic
--   model, namedtuple), 12 chat message [type, content, id, {other fields} or nil] where the
--   type is 0 human, 1 ai, 2 system, 3 tool, 4 remove or the type's name, and an id that is a
--   UUID is stored as its 16 bytes, 13 reference to a blob (integer blob_key), 14 Send
--   [node name, argument] (a fan-out writes one per task; before version 7, an ext 11).
-- Ext types nest at most 16 deep (ttcli refuses to write or read more: msgpack decodes each
-- level in a call of its own). A reader must never import or call the type names found in
-- ext 10 and 11: ttcli rebuilds only classes the application registered and otherwise
-- returns {"$type": name, ...}.
-- ttcli's own Interrupt and Command are ext 11 under the names ttcli.runtime.commands.*.
--
-- The view `checkpoint_list` at the end shows checkpoints in LangGraph's terms (text ids,
-- ISO times, the full metadata as JSON, less keys whose value is null) for sqlite3,
-- sqlite-utils and datasette users.
--
-- ttcli applies this file to a new database and migrates older versions forward; a file whose
-- user_version is newer than the one below is refused, never guessed at. A file holds only
-- these SQL objects: `ttcli verify` lists any other, a file where one of these tables is
-- something else (a view) is refused, and so is writing to a file with a trigger on one of
-- them (it would run on ttcli's own writes). Commands that only read never write to the file.
--
-- Invariants (the contract's, in ttcli/savers/base.py; `ttcli verify` checks each one a file
-- can break, and reports every SQL object this file does not define):
--   1. within a thread a child's id sorts after its parent's: the largest id is the latest
--      checkpoint, and a child is always a later row than its parent;
--   2. a committed checkpoint row never changes what it reads as, and goes only by a delete
--      or a prune; its pending writes only grow;
--   3. a blob's base_key and a record's references name older blobs (smaller keys), so every
--      chain ends; an append chain gets a full copy before it grows long;
--   4. a state delta's parent row exists (deleting a parent rewrites its children in full);
--   5. an interrupt's answer (a __resume__ write) is stored once.

PRAGMA user_version = 7;

-- A thread of checkpoints in one namespace ('' for the root graph).
CREATE TABLE threads (
    thread_key     INTEGER PRIMARY KEY,
    thread_id      TEXT NOT NULL,
    checkpoint_ns  TEXT NOT NULL DEFAULT '',
    info           TEXT,              -- JSON: what ttcli records about the thread, e.g. the
                                      -- graph TARGET `ttcli run` ran ({"target": "app.py:graph"});
                                      -- on the row of namespace '' (added in version 2)
    checkpoints    INTEGER NOT NULL DEFAULT 0,  -- how many rows of `checkpoints` the thread has,
                                      -- kept by every insert and delete, so that listing
                                      -- threads does not count them (added in version 4)
    UNIQUE (thread_id, checkpoint_ns)
);

-- Channel, node and task path names, stored once; rows refer to them by key. A name may
-- appear under two keys (two processes added it at once); both mean the same name.
CREATE TABLE names (
    name_key  INTEGER PRIMARY KEY,
    name      TEXT NOT NULL
);

-- One row per checkpoint. Ids are UUIDv6 (16 bytes): time-ordered, so the largest id of a
-- thread is its latest checkpoint, ORDER BY checkpoint_id DESC is newest first, and the id
-- carries the creation time (see the view below).
CREATE TABLE checkpoints (
    thread_key     INTEGER NOT NULL REFERENCES threads (thread_key),
    checkpoint_id  BLOB NOT NULL,
    parent_id      BLOB,              -- the parent's id without the leading bytes it shares
                                      -- with checkpoint_id (the view shows it whole); NULL for
                                      -- a root; may name a pruned checkpoint
    source         TEXT NOT NULL,     -- metadata.source: input, loop, update or fork
    step           INTEGER NOT NULL,  -- metadata.step
    writers        TEXT,              -- JSON list of the nodes in metadata.writes, or NULL
    metadata       TEXT,              -- JSON of the other metadata keys (user keys, and parents
                                      -- unless it is {}); a null under source, parents or
                                      -- writes marks a key the metadata does not have (a user
                                      -- key's null is its value); NULL if there are none
    created_at     INTEGER,           -- microseconds since 1970, only if not the id's time
    state          BLOB NOT NULL,     -- msgpack [depth, channels, versions_seen, updated,
                                      -- writes]:
                                      --   depth 0: channels {name_key: [version] or [version,
                                      --   value]} and versions_seen {name_key: {name_key:
                                      --   version}} in full; depth n > 0: only what changed
                                      --   since the parent (nil: removed), n steps from a full one;
                                      --   updated [name_key] or nil; writes [[node_key, value] or
                                      --   [node_key, 0, channel_key] (the value that updated
                                      --   channel holds)] (metadata.writes) or nil. A value is
                                      --   inline msgpack or an ext-13 reference to a blob.
                                      --   A delta's parent has a smaller depth (readers
                                      --   refuse any other, and a depth over 1024).
    parent_writes  BLOB,              -- the parent's pending writes (encoded as writes.tasks),
                                      -- moved here from `writes` when this checkpoint was stored
                                      -- as the child of the thread's latest checkpoint; writes
                                      -- made to the parent later are in `writes`
    PRIMARY KEY (thread_key, checkpoint_id)
) WITHOUT ROWID;

-- Pending writes: what each task planned at a checkpoint wrote, saved as soon as the task
-- finished (the only task of a superstep: with the checkpoint it leads to, in one transaction).
-- A resumed run reuses them instead of running the task again; history shows them as the
-- tasks' results and errors. Writes are applied in (task_path, task_id, idx) order. Once the
-- superstep's checkpoint is stored they move into its row (parent_writes), so this table holds
-- only the writes of checkpoints still running, paused or failed.
CREATE TABLE writes (
    thread_key     INTEGER NOT NULL,
    checkpoint_id  BLOB NOT NULL,     -- the checkpoint the tasks were planned from
    tasks          BLOB NOT NULL,     -- msgpack {task_id: [task_path_key, [[idx, channel_key,
                                      -- value]]]}; a task id that is a UUID as 16 bytes; idx < 0
                                      -- for special channels: -1 __error__, -2 __scheduled__,
                                      -- -3 __interrupt__, -4 __resume__
    PRIMARY KEY (thread_key, checkpoint_id)
) WITHOUT ROWID;

-- Stored values. Read on its own a blob is `value`; as a channel value, a blob with a
-- `base_key` is an append: the list at `base_key` (read the same way) extended by the items
-- in `value`. A blob holding a pending write's list may later get its `base_key` set (once),
-- when that write is what a list channel appended; read on its own it is unchanged, and no
-- checkpoint reads it as a channel value (such blobs are never shared by pending writes or
-- record parts). A record (is_record = 1) is a map whose large entries are ext-13
-- references, or a single reference, so that equal values share one blob. Blobs belong to
-- one thread. A blob points only at older blobs: base_key and a record's references are
-- smaller than blob_key, so chains never loop; and a chain of appends is at most 1,000,000
-- blobs long (a full copy comes first). Readers refuse anything else as damage.
-- A blob with a `base_key` whose `value` is a msgpack map, not a list, is a map delta (added
-- in version 6): {0: {key: value}, 1: [deleted key]}, the map at `base_key` with those keys
-- deleted, then those set (a new key goes last). Read on its own or as a channel value it is
-- the whole map; it is never adopted, so pending writes, record parts and channel values may
-- share it. A chain of map deltas gets a full copy every 32 blobs.
CREATE TABLE blobs (
    blob_key   INTEGER PRIMARY KEY,
    base_key   INTEGER REFERENCES blobs (blob_key),
    is_record  INTEGER NOT NULL DEFAULT 0,
    value      BLOB NOT NULL
);

-- Blobs that deleted checkpoints pointed at and that are not yet collected. A prune deletes a
-- thread's checkpoints in short batches and collects the blobs nothing kept needs once, with
-- its last batch; a crash in between leaves the debt here for the next deletion in the thread
-- to collect (added in version 3).
CREATE TABLE blob_debt (
    thread_key  INTEGER NOT NULL,
    blob_key    INTEGER NOT NULL,
    PRIMARY KEY (thread_key, blob_key)
) WITHOUT ROWID;

-- Children that are not the row right after their parent: forks, updates of a past checkpoint,
-- replays, and any checkpoint stored among older ones. A checkpoint's children are then the
-- next row of its thread (when that row names it as parent) and its rows here: two index
-- steps however long the thread is (added in version 5).
CREATE TABLE branches (
    thread_key     INTEGER NOT NULL,
    parent_id      BLOB NOT NULL,     -- the parent's whole id
    checkpoint_id  BLOB NOT NULL,
    PRIMARY KEY (thread_key, parent_id, checkpoint_id)
) WITHOUT ROWID;

-- Checkpoints in LangGraph's terms: text ids, ISO-8601 times, the whole metadata as JSON.
-- (h: the id in hex; p: the parent's id in hex; micros: created_at, or the time in the id:
-- its 60-bit UUIDv6 timestamp counts 100 ns since 1582-10-15.)
CREATE VIEW checkpoint_list AS
WITH c AS (
SELECT *,
hex(checkpoint_id) AS h,
CASE WHEN parent_id IS NOT NULL
THEN hex(substr(checkpoint_id, 1, 16 - length(parent_id))) || hex(parent_id) END AS p
FROM checkpoints
), d AS (
SELECT *, coalesce(created_at,
(((((((((((((((instr('123456789ABCDEF', substr(h, 1, 1))) * 16 + instr('123456789ABCDEF', substr(h, 2, 1))) * 16 + instr('123456789ABCDEF', substr(h, 3, 1))) * 16 + instr('123456789ABCDEF', substr(h, 4, 1))) * 16 + instr('123456789ABCDEF', substr(h, 5, 1))) * 16 + instr('123456789ABCDEF', substr(h, 6, 1))) * 16 + instr('123456789ABCDEF', substr(h, 7, 1))) * 16 + instr('123456789ABCDEF', substr(h, 8, 1))) * 16 + instr('123456789ABCDEF', substr(h, 9, 1))) * 16 + instr('123456789ABCDEF', substr(h, 10, 1))) * 16 + instr('123456789ABCDEF', substr(h, 11, 1))) * 16 + instr('123456789ABCDEF', substr(h, 12, 1))) * 16 + instr('123456789ABCDEF', substr(h, 14, 1))) * 16 + instr('123456789ABCDEF', substr(h, 15, 1))) * 16 + instr('123456789ABCDEF', substr(h, 16, 1))) / 10 - 12219292800000000
) AS micros
FROM c
)
SELECT
thread_id,
checkpoint_ns,
lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21)) AS checkpoint_id,
lower(substr(p, 1, 8) || '-' || substr(p, 9, 4) || '-' || substr(p, 13, 4) || '-' || substr(p, 17, 4) || '-' || substr(p, 21)) AS parent_checkpoint_id,
strftime('%Y-%m-%dT%H:%M:%S', micros / 1000000, 'unixepoch') || '.' || printf('%06d', micros % 1000000) || '+00:00' AS created_at,
source,
step,
json_patch(json_object('source', source, 'step', step, 'parents', json('{}'), 'writes', json(writers)), coalesce(metadata, '{}')) AS metadata
FROM d JOIN threads USING (thread_key);
