"""Two savers on one database (two processes, say), on SQLite and PostgreSQL: what one
deletes and stores again, the other does not go on reading from what it remembered; and a
read that fails inside a batch fails the batch, not quietly drops it."""

from __future__ import annotations

from contextlib import closing

from tests.conftest import NewDb
from tests.test_saver_contract import config
from ttcli.errors import StorageError
from ttcli.savers.base import BaseSaver, Checkpoint
from ttcli.savers.locate import open_saver
from ttcli.uuid6 import new_id

LINES = [f"message number {i} " + "y" * 60 for i in range(5)]


def _put(
    saver: BaseSaver, parent: str | None, step: int, lines: list[str], thread: str = "t"
) -> str:
    checkpoint = Checkpoint(
        v=1,
        id=new_id(step),
        ts="2026-12-01T00:00:00+00:00",
        channel_values={"log": lines, "big": "z" * 300},
        channel_versions={"log": step + 2, "big": 1},
        versions_seen={},
        updated_channels=["log"],
    )
    metadata = {"source": "loop", "step": step, "parents": {}}
    saver.put(config(thread, parent), checkpoint, metadata, {"log": step + 2})
    return checkpoint["id"]


def test_a_checkpoint_deleted_and_stored_again_by_another_saver_is_read_anew(
    new_db: NewDb,
) -> None:
    db = new_db("two.db")
    with closing(open_saver(db)) as one, closing(open_saver(db)) as other:
        root = _put(one, None, -1, LINES[:3])
        head = _put(one, root, 0, LINES[:4])
        saved = one.get_tuple(config("t", head))  # `one` knows the head now
        assert saved is not None
        _put(other, None, -1, ["another thread"], thread="u")  # newer values than the head's
        other.delete_checkpoints(config("t"), [head])  # its values are collected
        other.put(config("t", root), saved.checkpoint, saved.metadata, {"log": 2})  # back
        child = _put(one, head, 1, LINES)  # appends to the head's list
    with closing(open_saver(db)) as fresh:
        read = fresh.get_tuple(config("t", child))
        assert read is not None and read.checkpoint["channel_values"]["log"] == LINES
        assert fresh.integrity_problems() == []


def test_a_read_that_fails_in_a_batch_is_never_a_silent_loss(new_db: NewDb) -> None:
    """A negative limit: SQLite reads every row, PostgreSQL refuses it, and on PostgreSQL
    the refusal ends the transaction: the batch must then fail, and say so."""
    db = new_db("batch.db")
    with closing(open_saver(db)) as saver:
        root = _put(saver, None, -1, LINES[:1])
        head = ""
        try:
            with saver.batch():
                head = _put(saver, root, 0, LINES[:2])
                try:
                    list(saver.list(config("t"), limit=-1))
                except StorageError:
                    pass  # the caller goes on, as if the read did not matter
        except StorageError:
            assert saver.get_tuple(config("t", head)) is None  # all or nothing, and said
        else:
            assert saver.get_tuple(config("t", head)) is not None  # stored whole
