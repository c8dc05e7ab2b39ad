"""What row copies into one database remember from one page, and one prune, to the next."""

from __future__ import annotations

from collections import OrderedDict
from weakref import WeakKeyDictionary


class CopyMemory:
    """Where each source's blobs were copied in this database, and the largest blob key it
    may have used before the first copy (see `copy_page.Page._key_floor`).

    All of it is forgotten whenever it may have become untrue: a write transaction of the
    target rolled back (the copied rows are gone), another connection changed the database
    (it may have deleted them), or its saver deleted blobs. A forgotten blob is copied again.
    """

    def __init__(self) -> None:
        self.floor: int | None = None
        #: by source saver: its blob keys and the keys they were copied under here
        self._blobs: WeakKeyDictionary[object, OrderedDict[int, int]] = WeakKeyDictionary()
        #: by source saver: its blob keys copied here under the same key
        self._kept_keys: WeakKeyDictionary[object, set[int]] = WeakKeyDictionary()

    def blobs(self, source: object) -> OrderedDict[int, int]:
        """The source's map, to use within one transaction of the target (a copy asks again
        on every page: between two, another Python thread may have made it forget)."""
        return self._blobs.setdefault(source, OrderedDict())

    def kept_keys(self, source: object) -> set[int]:
        """The source's blob keys that blobs copied from them took here unchanged: a blob
        found under such a key with the same bytes is that copy. Any other blob with the same
        key and bytes may be another thread's, which a thread must never share (deleting one
        thread deletes what it alone points at)."""
        return self._kept_keys.setdefault(source, set())

    def forget(self) -> None:
        # replaced, not cleared: a copy may be looking the old maps up meanwhile
        self.floor = None
        self._blobs = WeakKeyDictionary()
        self._kept_keys = WeakKeyDictionary()
