"""The saver's parts, as the jobs that use several of them (put, deletion) receive them."""

from __future__ import annotations

from ttcli.savers.blobs import BlobStore
from ttcli.savers.records import Names
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.pending import PendingWrites
from ttcli.savers.sql.rows import Rows
from ttcli.savers.sql.states import States
from ttcli.savers.sql.transactions import Transactions


class OnParts:
    """A job done on the saver's parts: the file, rows, pending writes, states, values and
    names of one SqliteSaver."""

    def __init__(
        self,
        connection: Transactions[Db],
        rows: Rows,
        pending: PendingWrites,
        states: States,
        blobs: BlobStore,
        names: Names,
    ) -> None:
        self.connection, self.rows, self.pending = connection, rows, pending
        self.states, self.blobs, self.names = states, blobs, names
