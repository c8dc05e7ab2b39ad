"""Reading rows back: a checkpoint's resolved state (deltas applied), cached, and a row as
the CheckpointTuple the contract hands out."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import CorruptValueError
from ttcli.savers.base import NOT_LOADED, Checkpoint, CheckpointTuple, PendingWrite
from ttcli.savers.blobs import BlobStore
from ttcli.savers.records import KEYFRAME_DEPTH, Names, State, metadata_of, unpack_parent
from ttcli.savers.serde import Ref
from ttcli.savers.sql import statements as sql
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.ids import id_text
from ttcli.savers.sql.pending import PendingWrites, in_order
from ttcli.savers.sql.transactions import Transactions
from ttcli.uuid6 import id_micros

STATE_CACHE_MAX = 1024  # resolved checkpoint states kept for delta decoding
#: the deepest delta a reader accepts (writers store a full state every KEYFRAME_DEPTH)
STATE_DEPTH_MAX = 1024

#: a checkpoint row's (parent_id, state)
StateRow = Sequence[Any]


class States:
    """Resolved checkpoint states, and rows turned into CheckpointTuples."""

    def __init__(
        self, connection: Transactions[Db], names: Names, blobs: BlobStore, pending: PendingWrites
    ) -> None:
        self.names, self.blobs, self.pending = names, blobs, pending
        self._cache: OrderedDict[tuple[int, bytes], State] = OrderedDict()
        # another connection may have deleted a thread whose key a new thread now has,
        # holding copies with the same checkpoint ids (blob keys are never reused, so the
        # value caches stay right)
        connection.on_other_writer.append(self.clear)
        connection.on_rollback.append(self.clear)

    def clear(self) -> None:
        self._cache.clear()

    def drop(self, thread_key: int, checkpoint_id: bytes) -> None:
        self._cache.pop((thread_key, checkpoint_id), None)

    def keep(self, thread_key: int, checkpoint_id: bytes, state: State) -> None:
        self._cache[(thread_key, checkpoint_id)] = state
        if len(self._cache) > STATE_CACHE_MAX:
            self._cache.popitem(last=False)

    def resolve(
        self, conn: Db, thread_key: int, checkpoint_id: bytes, stored: StateRow | None = None
    ) -> State | None:
        """A checkpoint's resolved state (deltas applied), or None if it does not exist;
        `stored`: its (parent_id, state) if the caller read its row in this transaction."""
        cached = self._cache.get((thread_key, checkpoint_id))
        if cached is not None:
            self._cache.move_to_end((thread_key, checkpoint_id))
            return cached
        rows, state = self._deltas(conn, thread_key, checkpoint_id, stored)
        if not rows:
            return None
        for key, data in reversed(rows):  # oldest first: each applies to its parent's state
            state = State.decode(data, self.names, state)
            self.keep(thread_key, key, state)
        return state

    def _deltas(
        self, conn: Db, thread_key: int, checkpoint_id: bytes, stored: StateRow | None
    ) -> tuple[list[tuple[bytes, bytes]], State | None]:
        """The rows (id, state) from the checkpoint up its parents to a full state or a
        cached one (returned too, or None).

        Each parent is nearer a full state than its child (a smaller depth, at most
        STATE_DEPTH_MAX): so the walk ends, however the rows were forged.
        """
        rows: list[tuple[bytes, bytes]] = []
        key: bytes | None = checkpoint_id
        depth = STATE_DEPTH_MAX + 1  # the child's: none yet
        near: dict[bytes, StateRow] = {}  # rows read ahead
        while key is not None:
            cached = self._cache.get((thread_key, key)) if rows else None
            if cached is not None:
                _check_depth(cached.depth, depth)
                return rows, cached
            if stored is not None and not rows:
                row: StateRow | None = stored
            elif (row := near.get(key)) is None:
                # the state and as many of its ancestors as it may need, in one statement
                near = self._states_from(conn, thread_key, key, min(depth, KEYFRAME_DEPTH))
                row = near.get(key)
            if row is None:
                return rows, None  # a delta without its parent does not decode
            depth = _check_depth(State.depth_of(row[1]), depth)
            rows.append((key, row[1]))
            key = unpack_parent(key, row[0]) if depth else None
        return rows, None

    @staticmethod
    def _states_from(conn: Db, thread_key: int, key: bytes, count: int) -> dict[bytes, StateRow]:
        """(parent_id, state) of the checkpoint `key` and of the `count` - 1 before it in its
        thread, by id."""
        params = {"thread_key": thread_key, "checkpoint_id": key, "limit": count}
        return {row[0]: row[1:] for row in conn.execute(sql.STATES_FROM, params).fetchall()}

    def tuple(
        self, conn: Db, row: Sequence[Any], *, values: bool = True, writes: bool | None = None
    ) -> CheckpointTuple:
        """A row as a CheckpointTuple: as `sql.WITH_PENDING` gives it, or (without `values`)
        as `sql.SELECT` does, with what nodes wrote read only if `writes` says so (it follows
        `values` by default); a row that is not what ttcli writes is an error naming the
        checkpoint."""
        try:
            return self._read(conn, row, values=values, writes=values if writes is None else writes)
        except (CorruptValueError, TypeError, ValueError, KeyError, IndexError) as exc:
            raw = row[3] if len(row) > 3 else b""
            name = id_text(raw) if isinstance(raw, bytes) and len(raw) == 16 else repr(raw)
            detail = (
                str(exc) if isinstance(exc, CorruptValueError) else f"{type(exc).__name__}: {exc}"
            )
            raise CorruptValueError(
                f"checkpoint {name} of thread '{row[1]}' does not read: {detail}; "
                "`ttcli verify` lists what else is damaged"
            ) from None

    def _read(self, conn: Db, row: Sequence[Any], *, values: bool, writes: bool) -> CheckpointTuple:
        (thread_key, thread_id, ns, checkpoint_id, parent_id, created_at,
         source, step, other, stored) = row[:10]  # fmt: skip
        state = self.resolve(conn, thread_key, checkpoint_id, (parent_id, stored))
        assert state is not None
        load_write = self.blobs.load_value if writes else _skip
        written = None if state.writes is None else {n: load_write(e) for n, e in state.writes}
        pending: list[PendingWrite] = []
        if values:
            pending = [
                (task_id, channel, self.blobs.load_value(entry))
                for task_id, _path, channel, entry in in_order(self.pending.of_row(row))
            ]
        ref = CheckpointRef(thread_id, ns)
        checkpoint = self._checkpoint(checkpoint_id, created_at, state, values=values)
        parent = unpack_parent(checkpoint_id, parent_id)
        return CheckpointTuple(
            config=ref.config_at(checkpoint["id"]),
            checkpoint=checkpoint,
            metadata=metadata_of(source, step, other, written),
            parent_config=ref.config_at(id_text(parent)) if parent else None,
            pending_writes=pending if values else None,
        )

    def _checkpoint(
        self, checkpoint_id: bytes, created_at: int | None, state: State, *, values: bool
    ) -> Checkpoint:
        load = self.blobs.load
        micros = created_at if created_at is not None else id_micros(checkpoint_id) or 0
        return Checkpoint(
            v=1,
            id=id_text(checkpoint_id),
            ts=datetime.fromtimestamp(micros / 1_000_000, UTC).isoformat(),
            channel_values={
                name: load(entry[1]) if values or not _stored_apart(entry[1]) else NOT_LOADED
                for name, entry in state.channels.items()
                if len(entry) == 2
            },
            channel_versions={n: e[0] for n, e in state.channels.items() if e[0] is not None},
            # copies: the resolved state is cached and callers may change what they get
            versions_seen={node: dict(seen) for node, seen in state.versions_seen.items()},
            updated_channels=None if state.updated is None else list(state.updated),
        )


def _check_depth(depth: int, child: int) -> int:
    """A state's depth (deltas from a full state), refused unless nearer a full state than
    its child's (so walking up parents ends) and at most STATE_DEPTH_MAX."""
    if depth > STATE_DEPTH_MAX or depth < 0:
        raise CorruptValueError(
            f"checkpoint state is {depth} deltas from a full state; ttcli never stores more "
            f"than {STATE_DEPTH_MAX}"
        )
    if depth >= child:
        raise CorruptValueError(
            f"checkpoint state is a delta on a parent {depth} deltas from a full state, no "
            f"nearer than itself ({child}): a loop of parents or forged rows"
        )
    return depth


def _skip(entry: Any) -> None:
    return None


def _stored_apart(entry: Any) -> bool:
    return isinstance(entry, Ref) or (
        type(entry) is dict and any(isinstance(v, Ref) for v in entry.values())
    )
