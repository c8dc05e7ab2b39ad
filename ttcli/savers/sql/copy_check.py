"""Checking one page of an archive copy before it commits: every copied row read back from
the target and compared, by name, with the source's; pending writes and blobs too. A page
that does not compare raises, and its transaction rolls back: nothing is deleted."""

from __future__ import annotations

import uuid
from typing import Any

from ttcli.errors import StorageError
from ttcli.savers.records import unpack_parent
from ttcli.savers.sql.copy_page import READ_BACK, TABLED, Page, fetch_blobs, translated_pending
from ttcli.savers.sql.params import chunks
from ttcli.savers.sql.rekey import rekey_pending, rekey_state


class PageCheck:
    """The check of one copied page."""

    def __init__(self, page: Page) -> None:
        self.page, self.c, self.serde = page, page.c, page.serde

    def check(self, rows: list[Any], unchecked: bytes | None) -> bytes | None:
        """Read the copied rows back from the target and compare them, by name, with the
        source's; and the pending writes of checkpoints the target keeps in `writes`.

        Returns the checkpoint whose pending writes can only be compared with the next page
        (its child, which holds some of them, is copied there)."""
        copied = set(self.page.copied)
        wanted = {row[0]: row for row in rows if row[0] in copied}
        if wanted:
            bounds = (self.page.target_key, min(wanted), max(wanted))
            found = self.page.tconn.execute(READ_BACK, bounds).fetchall()
            stored = {row[0]: row for row in found}
            for checkpoint_id, row in wanted.items():
                if not self._same_row(row, stored.get(checkpoint_id)):
                    self._fail(checkpoint_id)
            # only the rows copied now: the target's other checkpoints in the range may be
            # ones the source no longer has (archived and deleted by an earlier prune)
            tabled = [
                t for t in self.page.tconn.execute(TABLED, bounds).fetchall() if t[0] in copied
            ]
        else:
            tabled = []
        carried = None
        last = rows[-1][0]
        for checkpoint_id in [*([] if unchecked is None else [unchecked]), *(t for (t,) in tabled)]:
            if checkpoint_id == last and not self._settled(checkpoint_id):
                carried = checkpoint_id
                continue
            # as stored, as the copy wrote them: the application's classes rebuild nothing
            page, source, target = self.page, self.c.source.deletion, self.c.target.deletion
            theirs = source.stored_pending.merged(page.sconn, page.source_key, checkpoint_id)
            ours = target.stored_pending.merged(page.tconn, page.target_key, checkpoint_id)
            if self._writes(translated_pending(self.c, theirs)) != self._writes(ours):
                self._fail(checkpoint_id)
        self._check_blobs()
        return carried

    def _writes(self, pending: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Pending writes as compared: each value by its encoding, for a value that is not
        equal to itself (a float NaN a node wrote) is still the same value."""
        return sorted(
            (task, path, idx, channel, self.serde.dumps(entry))
            for task, (path, writes) in pending.items()
            for idx, (channel, entry) in writes.items()
        )

    def _same_row(self, theirs: Any, ours: Any) -> bool:
        if ours is None or tuple(ours[1:7]) != tuple(theirs[1:7]):
            return False
        checkpoint_id = theirs[0]
        if checkpoint_id in self.page.verbatim:  # same keys: the same bytes read the same
            # (so the source's state, decoded by the copy, is this one's: not decoded again)
            return (
                ours[7] == theirs[7]
                and ours[8] in (None, theirs[8])
                and self._has_parent(checkpoint_id, ours[1], self.page.raws[checkpoint_id])
            )
        stored = self.serde.loads(ours[7])
        if not self._has_parent(checkpoint_id, ours[1], stored):
            return False
        if checkpoint_id in self.page.full:
            page = self.page
            resolved = self.c.target.deletion.stored_states.resolve(
                page.tconn, page.target_key, checkpoint_id
            )
            expected_state = self.page.translated(checkpoint_id)
            return (
                resolved is not None
                and all(
                    self.serde.same(getattr(resolved, field), getattr(expected_state, field))
                    for field in ("channels", "versions_seen", "updated", "writes")
                )
                and ours[8] is None
            )
        if checkpoint_id in self.page.expected:  # same names: what was meant to be written
            state, pending = self.page.expected[checkpoint_id]
            return self.serde.same(stored, state) and (
                ours[8] is None
                if pending is None
                else self.serde.same(self.serde.loads(ours[8]), pending)
            )
        source_name, target_name = self.c.source.names.name, self.c.target.names.name
        expected = rekey_state(self.serde.loads(theirs[7]), source_name, self.c.entry)
        if not self.serde.same(rekey_state(stored, target_name), expected):
            return False
        if ours[8] is None:  # the parent's writes stayed behind, or went to `writes`
            return True
        return self.serde.same(
            rekey_pending(self.serde.loads(ours[8]), target_name),
            rekey_pending(self.serde.loads(theirs[8]), source_name, self.c.entry),
        )

    def _has_parent(self, checkpoint_id: bytes, stored_parent: bytes | None, state: Any) -> bool:
        """Whether a row of the target is a full state, or a delta with its parent beside it."""
        if not state[0]:
            return True
        parent = unpack_parent(checkpoint_id, stored_parent)
        return parent is not None and (parent in self.page.inserted or self.page.in_target(parent))

    def _settled(self, checkpoint_id: bytes) -> bool:
        """Whether the checkpoint's pending writes are all in the target already: its child
        that holds them is not waiting to be copied in the next page."""
        following = self.page.sconn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_key = ? AND checkpoint_id > ? "
            "ORDER BY checkpoint_id LIMIT 1",
            (self.page.source_key, checkpoint_id),
        ).fetchone()
        return following is None or following[0] >= self.page.below

    def _check_blobs(self) -> None:
        for chunk in chunks(self.page.new_blobs):
            stored = fetch_blobs(self.page.tconn, [row[0] for row in chunk])
            for key, base, is_record, data in chunk:
                if stored.get(key) != (base, is_record, data):
                    raise StorageError(
                        f"archive check failed for stored value {key} of thread "
                        f"'{self.c.ref.thread_id}': nothing was deleted"
                    )

    def _fail(self, checkpoint_id: bytes) -> None:
        raise StorageError(
            f"archive check failed for checkpoint '{uuid.UUID(bytes=checkpoint_id)}' of thread "
            f"'{self.c.ref.thread_id}': nothing was deleted"
        )
