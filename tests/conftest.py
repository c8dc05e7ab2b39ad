"""Shared fixtures: one `saver` fixture runs a test against every saver backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ttcli.savers.base import BaseSaver
from ttcli.savers.memory import InMemorySaver
from ttcli.savers.sqlite import SqliteSaver

SAVERS = ["memory", "sqlite"]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ttcli.db"


@pytest.fixture(params=SAVERS, ids=SAVERS)
def saver(request: pytest.FixtureRequest, db_path: Path) -> Iterator[BaseSaver]:
    if request.param == "memory":
        yield InMemorySaver()
    else:
        with SqliteSaver.from_conn_string(db_path) as sqlite_saver:
            yield sqlite_saver
