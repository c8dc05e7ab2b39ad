"""Shared fixtures: one `saver` fixture runs a test against every saver backend."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.clitools import FAN_OUT, GRAPHS, ORDER, ORDER_AGENT, REVIEW, Target, ttcli
from tests.graphs import linear
from tests.pg import new_dsn
from ttcli import END, START, StateGraph
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver
from ttcli.savers.memory import InMemorySaver
from ttcli.savers.postgres import PostgresSaver
from ttcli.savers.sqlite import SqliteSaver

SAVERS = ["memory", "sqlite", "postgres"]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ttcli.db"


@pytest.fixture(params=SAVERS, ids=SAVERS)
def saver(request: pytest.FixtureRequest, db_path: Path) -> Iterator[BaseSaver]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "postgres":
        with PostgresSaver.from_conn_string(new_dsn()) as postgres_saver:
            yield postgres_saver
    else:
        with SqliteSaver.from_conn_string(db_path) as sqlite_saver:
            yield sqlite_saver


BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The database backend a command-line test runs on: each such test runs on both."""
    return str(request.param)


NewDb = Callable[[str], Target]


@pytest.fixture
def new_db(backend: str, tmp_path: Path) -> NewDb:
    """Makes an empty database of the test's backend: a file named so, or a DSN."""
    return lambda name: new_dsn() if backend == "postgres" else tmp_path / name


ARCHIVES = ["to-sqlite", "to-postgres"]


@pytest.fixture(params=ARCHIVES)
def new_archive(request: pytest.FixtureRequest, tmp_path: Path) -> NewDb:
    """Makes an empty archive database: an archiving test runs with SQLite files and with
    PostgreSQL databases as its archives, whichever backend it prunes (`new_db`)."""
    return lambda name: new_dsn() if request.param == "to-postgres" else tmp_path / name


@pytest.fixture
def archive_db(new_archive: NewDb) -> Target:
    """An empty archive database (see `new_archive`)."""
    return new_archive("archive.db")


def exists(target: Target) -> bool:
    """Whether a database was created (a DSN's always is)."""
    return not isinstance(target, Path) or target.exists()


@pytest.fixture
def db(new_db: NewDb) -> Target:
    """A database holding thread order:123, where the agent cancelled instead of refunding."""
    path = new_db("ttcli.db")
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


ITEMS = json.dumps({"items": [1, 2, 3], "results": [], "total": 0})


@pytest.fixture
def fan_db(tmp_path: Path, new_db: NewDb) -> Target:
    """A database holding thread f1, where `square` ran once per item (a Send fan-out)."""
    (tmp_path / "fan.py").write_text(FAN_OUT)
    path = new_db("fan.db")
    result = ttcli(path, "run", f"{tmp_path / 'fan.py'}:graph", "-t", "f1", "--input", ITEMS)
    assert result.exit_code == 0, result.stderr
    return path


@pytest.fixture(scope="session")
def long_dbs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Target]:
    """The long thread's database of a backend, made the first time a test asks for it."""
    made: dict[str, Target] = {}

    def of(backend: str) -> Target:
        if backend not in made:
            target: Target = (
                new_dsn() if backend == "postgres" else tmp_path_factory.mktemp("long") / "long.db"
            )
            with closing(open_saver(target)) as saver:
                api = SimpleNamespace(StateGraph=StateGraph, START=START, END=END)
                graph = linear(api).compile(checkpointer=saver)
                for x in range(1000):
                    graph.invoke({"x": x}, {"configurable": {"thread_id": "long"}})
            made[backend] = target
        return made[backend]

    return of


@pytest.fixture
def long_db(backend: str, long_dbs: Callable[[str], Target]) -> Target:
    """Thread `long` on the test's backend: 3,000 checkpoints (1,000 runs of a -> b), made
    once a run and shared by the tests, which only read it."""
    return long_dbs(backend)


@pytest.fixture
def paused_db(new_db: NewDb) -> Target:
    """Thread `t`, paused at the review workflow's question."""
    path = new_db("paused.db")
    request = json.dumps({"request": "refund 7", "plan": "", "log": []})
    assert ttcli(path, "run", REVIEW, "-t", "t", "--input", request).exit_code == 4
    return path
