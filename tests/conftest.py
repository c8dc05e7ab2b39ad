"""Shared fixtures: one `saver` fixture runs a test against every saver backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clitools import GRAPHS, ORDER, ORDER_AGENT, ttcli
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


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database holding thread order:123, where the agent cancelled instead of refunding."""
    path = tmp_path / "ttcli.db"
    result = ttcli(
        path, "run", ORDER_AGENT, "--thread", "order:123", "--input", json.dumps(ORDER), "--json"
    )
    assert result.exit_code == 0, result.stderr
    return path


@pytest.fixture
def graphs_file(tmp_path: Path) -> Path:
    path = tmp_path / "graphs.py"
    path.write_text(GRAPHS)
    return path
