"""`ttcli import`: a LangGraph SqliteSaver file, written by real LangGraph graphs, copied into
a ttcli database without importing anything it names."""

from __future__ import annotations

import dataclasses
import datetime
import json
import operator
import re
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from functools import reduce
from pathlib import Path
from typing import Annotated, Any, TypedDict, cast

import msgpack
import ormsgpack
import pydantic
import pytest

from tests.clitools import data, dump, ttcli
from tests.conftest import NewDb
from tests.pg import new_dsn

pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langgraph.channels.delta import DeltaChannel  # noqa: E402
from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.types import Command, Send, interrupt  # noqa: E402


class Fan(TypedDict):
    items: list[int]
    squares: Annotated[list[int], operator.add]


def _chat(saver: SqliteSaver) -> Any:
    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"echo: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder.compile(checkpointer=saver)


def _review(saver: SqliteSaver) -> Any:
    def review(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": "approve?"})
        return {"messages": [AIMessage(f"reviewer said {answer}")]}

    inner = StateGraph(MessagesState)
    inner.add_node("review", review)
    inner.add_edge(START, "review")
    outer = StateGraph(MessagesState)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    return outer.compile(checkpointer=saver)


def _fan(saver: SqliteSaver) -> Any:
    builder = StateGraph(Fan)
    builder.add_node("square", lambda arg: {"squares": [arg["n"] ** 2]})
    builder.add_node("start", lambda state: {})
    builder.add_edge(START, "start")
    builder.add_conditional_edges(
        "start", lambda state: [Send("square", {"n": n}) for n in state["items"]], ["square"]
    )
    builder.add_edge("square", END)
    return builder.compile(checkpointer=saver)


def _cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _fill(saver: Any) -> None:
    """The threads every LangGraph database of these tests holds."""
    chat = _chat(saver)
    chat.invoke({"messages": [("user", "hi")]}, _cfg("chat"))
    chat.invoke({"messages": [("user", "refund order 7")]}, _cfg("chat"))
    review = _review(saver)
    review.invoke({"messages": [("user", "order 7 broke")]}, _cfg("review"))
    review.invoke(Command(resume="yes"), _cfg("review"))
    review.invoke({"messages": [("user", "order 8 broke")]}, _cfg("paused"))
    _fan(saver).invoke({"items": [1, 2, 3], "squares": []}, _cfg("fan"))


@pytest.fixture
def langgraph_file(tmp_path: Path) -> Path:
    path = tmp_path / "langgraph.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        _fill(saver)
    return path


def _langgraph_postgres() -> str:
    dsn = new_dsn()
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        _fill(saver)
    return dsn


def _langgraph_saver(source: str) -> Any:
    """LangGraph's own saver on the source, to read what LangGraph reads there."""
    if source.startswith("postgresql://"):
        return PostgresSaver.from_conn_string(source)
    return SqliteSaver.from_conn_string(source)


def _plain(value: Any) -> Any:
    """A LangGraph value as the CLI's JSON shows it (messages by type, content and id)."""
    if isinstance(value, BaseMessage):
        return {"type": value.type, "content": value.content, "id": value.id}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _shown(value: Any) -> Any:
    if isinstance(value, dict) and {"type", "content", "id"} <= set(value):
        return {key: value[key] for key in ("type", "content", "id")}
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


def test_the_langgraph_file_is_only_read(
    langgraph_file: Path, tmp_path: Path, new_db: NewDb
) -> None:
    before = langgraph_file.read_bytes()
    assert ttcli(new_db("ttcli.db"), "import", str(langgraph_file)).exit_code == 0
    # same bytes, no journal left beside it
    assert langgraph_file.read_bytes() == before
    assert list(tmp_path.glob("langgraph.sqlite*")) == [langgraph_file]


@pytest.mark.parametrize("langgraph_on", ["sqlite", "postgres"])
def test_import_copies_every_thread_as_langgraph_reads_it(
    langgraph_file: Path, new_db: NewDb, langgraph_on: str
) -> None:
    """From LangGraph's SqliteSaver file or PostgresSaver database, into either backend."""
    source = str(langgraph_file) if langgraph_on == "sqlite" else _langgraph_postgres()
    target = new_db("ttcli.db")
    result = ttcli(target, "import", source)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("imported 4 threads (6 namespaces), ")
    threads = {
        (t["thread_id"], t["checkpoint_ns"]) for t in data(ttcli(target, "--json", "threads"))
    }
    assert {("chat", ""), ("review", ""), ("paused", ""), ("fan", "")} <= threads
    assert any(thread == "paused" and ns.startswith("sub:") for thread, ns in threads)
    with _langgraph_saver(source) as saver:
        for thread, graph in [("chat", _chat), ("review", _review), ("fan", _fan)]:
            expected = list(graph(saver).get_state_history(_cfg(thread)))
            history = data(ttcli(target, "--json", "history", "--thread", thread))
            assert [h["checkpoint_id"] for h in history] == [
                s.config["configurable"]["checkpoint_id"] for s in expected
            ]
            for state in expected:
                ref = state.config["configurable"]["checkpoint_id"]
                shown = data(ttcli(target, "--json", "show", ref, "--thread", thread))
                values = _shown(shown["values"])
                # LangGraph fills a list channel never written with its empty default
                wanted = {k: v for k, v in _plain(state.values).items() if v != [] or k in values}
                assert values == wanted
                parent = state.parent_config
                assert shown["parent_checkpoint_id"] == (
                    parent and parent["configurable"]["checkpoint_id"]
                )
                assert tuple(shown["next"]) == state.next
                assert shown["step"] == state.metadata["step"]
    verified = ttcli(target, "verify")
    assert verified.exit_code == 0, verified.stdout + verified.stderr


def test_import_keeps_interrupts_sends_and_pending_writes(
    langgraph_file: Path, new_db: NewDb
) -> None:
    target = new_db("ttcli.db")
    assert ttcli(target, "import", str(langgraph_file)).exit_code == 0
    paused = data(ttcli(target, "--json", "show", "latest", "--thread", "paused"))
    assert "approve?" in str(paused)
    fan = data(ttcli(target, "--json", "history", "--thread", "fan"))
    shown = [data(ttcli(target, "--json", "show", h["checkpoint_id"], "--thread", "fan"))
             for h in fan]  # fmt: skip
    assert "square" in str(shown)
    assert data(ttcli(target, "--json", "show", "latest", "--thread", "fan"))["values"][
        "squares"
    ] == [1, 4, 9]


def test_import_derives_what_each_node_wrote(langgraph_file: Path, new_db: NewDb) -> None:
    target = new_db("ttcli.db")
    assert ttcli(target, "import", str(langgraph_file)).exit_code == 0

    def writes(thread: str) -> list[tuple[str, list[str]]]:
        history = data(ttcli(target, "--json", "history", "--thread", thread))
        return [(h["source"], h["writes"]) for h in reversed(history)]

    latest = data(ttcli(target, "--json", "show", "latest", "--thread", "chat"))
    bot_wrote = data(ttcli(target, "--json", "history", "--thread", "chat", "--filter",
                           "writes=bot"))  # fmt: skip

    # as ttcli's runtime records them: the input under __start__, nothing for step 0
    assert writes("chat") == [
        ("input", ["__start__"]), ("loop", []), ("loop", ["bot"]),
        ("input", ["__start__"]), ("loop", []), ("loop", ["bot"]),
    ]  # fmt: skip
    assert [message["content"] for message in latest["returned"]["bot"]["messages"]] == [
        "echo: refund order 7"
    ]
    assert len(bot_wrote) == 2
    assert writes("fan")[-2:] == [("loop", ["start"]), ("loop", ["square"])]
    # the subgraph paused (no output, no checkpoint), then answered: its output, once
    assert [w for _, w in writes("review")] == [["__start__"], [], ["sub"]]


def test_what_langgraph_before_1_0_recorded_as_written_reads_as_ttcli_records_it(
    tmp_path: Path, new_db: NewDb
) -> None:
    """LangGraph before 1.0 kept `writes` in the metadata: the raw input (any value, or a map
    of channels) for an input checkpoint, `{node: output}` for the others."""
    from langgraph.checkpoint.base import empty_checkpoint

    path = tmp_path / "legacy.sqlite"
    inputs = {"text": "hello", "number": 1, "list": ["a", "b"], "channels": {"messages": ["hi"]}}
    inputs |= {"root": "to the root channel"}
    with SqliteSaver.from_conn_string(str(path)) as saver:
        for thread, given in inputs.items():
            first = saver.put(
                {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
                empty_checkpoint(),
                cast(Any, {"source": "input", "step": -1, "parents": {}, "writes": given}),
                {},
            )
            if thread == "root":  # a graph of one root channel: its task's write says nothing
                saver.put_writes(
                    first, [("__root__", given)], str(uuid.uuid4()), "~__pregel_pull, __start__"
                )
            saver.put(
                first,
                empty_checkpoint(),
                cast(
                    Any, {"source": "loop", "step": 0, "parents": {}, "writes": {"bot": {"n": 1}}}
                ),
                {},
            )
    target = new_db("ttcli.db")
    for where in (path, target):  # read in place, and imported
        if where == target:
            imported = ttcli(target, "import", str(path))
            assert imported.exit_code == 0, imported.stderr
        for thread, given in inputs.items():
            listed = ttcli(where, "--json", "history", "--thread", thread)
            assert listed.exit_code == 0, listed.stderr
            assert [h["writes"] for h in data(listed)] == [["bot"], ["__start__"]]
            shown = data(ttcli(where, "--json", "show", "latest~1", "--thread", thread))
            assert shown["returned"] == {"__start__": given}


def test_a_writes_key_of_the_callers_config_is_not_taken_for_the_input(
    tmp_path: Path, new_db: NewDb
) -> None:
    """LangGraph 1.x copies the caller's config metadata into every checkpoint's, so there
    `writes` is a user's key: the input is still what the `__start__` task wrote."""
    path = tmp_path / "langgraph.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        config = {"configurable": {"thread_id": "c"}, "metadata": {"writes": "nightly"}}
        _chat(saver).invoke({"messages": [("user", "hi")]}, cast(Any, config))
    target = new_db("ttcli.db")
    imported = ttcli(target, "import", str(path))
    assert imported.exit_code == 0, imported.stderr
    history = data(ttcli(target, "--json", "history", "--thread", "c"))
    assert history[-1]["source"] == "input" and history[-1]["writes"] == ["__start__"]
    first = history[-1]["checkpoint_id"]
    shown = data(ttcli(target, "--json", "show", first, "--thread", "c"))
    assert shown["returned"] == {"__start__": {"messages": [["user", "hi"]]}}


def test_a_thread_already_there_is_skipped_when_the_same_and_refused_when_not(
    langgraph_file: Path, new_db: NewDb
) -> None:
    """An import cut short goes on when run again: threads it finished are skipped. A thread
    the database holds otherwise (a pending write more in the source, or a checkpoint more
    in the database) is refused, nothing written."""
    target = new_db("ttcli.db")
    first = ttcli(target, "--json", "import", str(langgraph_file))
    assert first.exit_code == 0
    imported = data(first)["threads"]
    assert imported >= 2
    assert ttcli(target, "--json", "import", str(langgraph_file)).exit_code == 0
    _forge(langgraph_file, "zz-later", ormsgpack.packb([]))  # not imported yet
    again = ttcli(target, "--json", "import", str(langgraph_file))
    assert again.exit_code == 0, again.stderr
    assert (data(again)["threads"], data(again)["skipped"]) == (1, imported)
    threads = {t["thread_id"] for t in data(ttcli(target, "--json", "threads"))}
    assert len(threads) == imported + 1 and "zz-later" in threads
    with closing(sqlite3.connect(langgraph_file)) as conn, conn:  # the app wrote on since
        conn.execute(
            "INSERT INTO writes SELECT thread_id, checkpoint_ns, checkpoint_id, 'later-task', '', "
            "0, 'messages', 'msgpack', ? FROM checkpoints WHERE thread_id = 'zz-later' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (ormsgpack.packb([]),),
        )
    before = dump(target)
    written_on = ttcli(target, "import", str(langgraph_file))
    assert written_on.exit_code == 2, written_on.stdout
    assert "'zz-later' is already" in written_on.stderr
    assert dump(target) == before
    assert ttcli(target, "fork", "latest", "-t", "chat").exit_code == 0
    changed = dump(target)
    refused = ttcli(target, "import", str(langgraph_file))
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1 and "'chat' is already" in refused.stderr
    assert dump(target) == changed


def _forge(path: Path, thread: str, blob: bytes) -> None:
    """A copy of the chat thread under another id whose newest checkpoint holds `blob`."""
    conn = sqlite3.connect(path)
    with conn:
        rows = conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
            "metadata FROM checkpoints WHERE thread_id = 'chat' ORDER BY checkpoint_id"
        ).fetchall()
        for ns, cid, parent, kind, checkpoint, metadata in rows:
            conn.execute(
                "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)",
                (thread, ns, cid, parent, kind, checkpoint, metadata),
            )
        conn.execute(
            "INSERT INTO writes VALUES (?, '', ?, 'task', '', 0, 'messages', 'msgpack', ?)",
            (thread, rows[-1][1], blob),
        )
    conn.close()


def _ext(code: int, payload: Any) -> bytes:
    return ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(payload)))


def test_a_name_in_the_file_is_never_imported(
    langgraph_file: Path, tmp_path: Path, new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    touched = tmp_path / "imported"
    (tmp_path / "sentinel_import.py").write_text(f"open({str(touched)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    blobs = [
        _ext(5, ["sentinel_import", "Model", {"x": 1}, "model_validate_json"]),
        _ext(2, ["sentinel_import", "Data", {"x": 1}]),
        _ext(0, ["sentinel_import", "Thing", 1]),
        _ext(3, ["sentinel_import", "Thing", "x", "fromisoformat"]),
    ]
    for number, blob in enumerate(blobs):
        _forge(langgraph_file, f"forged{number}", blob)
    target = new_db("ttcli.db")
    assert ttcli(target, "import", str(langgraph_file)).exit_code == 0
    assert not touched.exists()
    shown = data(ttcli(target, "--json", "show", "latest", "--thread", "forged0"))
    assert "sentinel_import.Model" in str(shown)
    assert not touched.exists()


@pytest.mark.parametrize(
    "blob",
    [
        b"\xc1\xc1",
        _ext(42, ["x", "y", 1]),
        _ext(5, "not a tuple"),
        _ext(0, ["decimal", "Decimal", "abc"]),
        _ext(0, ["uuid", "UUID", 123]),
        _ext(1, ["datetime", "date", [0, 0, 0]]),
        _ext(3, ["datetime", "datetime", "nope", "fromisoformat"]),
    ],
    ids=["not-msgpack", "unknown-ext", "not-a-tuple", "decimal", "uuid", "date", "datetime"],
)
def test_a_corrupt_blob_stops_the_import_without_half_a_thread(
    langgraph_file: Path, new_db: NewDb, blob: bytes
) -> None:
    _forge(langgraph_file, "zz-broken", blob)
    target = new_db("ttcli.db")
    result = ttcli(target, "import", str(langgraph_file))
    assert result.exit_code == 6
    assert result.stderr.count("\n") == 1 and "zz-broken" in result.stderr
    threads = {t["thread_id"] for t in data(ttcli(target, "--json", "threads"))}
    assert "zz-broken" not in threads and "chat" in threads


@pytest.mark.parametrize(
    "thread_id", [b"chat-as-bytes", b"caf\xe9"], ids=["stored-as-blob", "text-not-utf-8"]
)
def test_a_thread_id_that_is_not_text_stops_the_import(
    langgraph_file: Path, new_db: NewDb, thread_id: bytes
) -> None:
    """LangGraph writes thread ids as text: one stored as a BLOB, or as text that is not
    UTF-8, is named (exit 6), not skipped without a word nor a crash."""
    with closing(sqlite3.connect(langgraph_file)) as conn, conn:
        cast = "CAST(? AS TEXT)" if b"\xe9" in thread_id else "?"
        conn.execute(
            "INSERT INTO checkpoints SELECT " + cast + ", checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
            "WHERE thread_id = 'chat'",
            (thread_id,),
        )
    target = new_db("ttcli.db")
    result = ttcli(target, "import", str(langgraph_file))
    assert (result.exit_code, result.stderr.count("\n")) == (6, 1), result.stderr
    assert "thread id" in result.stderr
    assert ttcli(target, "threads").exit_code == 3  # no database made


def test_a_file_that_is_not_a_langgraph_file(tmp_path: Path, new_db: NewDb) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    target = new_db("ttcli.db")
    result = ttcli(target, "import", str(other))
    assert result.exit_code == 6 and "not a LangGraph" in result.stderr
    missing = ttcli(target, "import", str(tmp_path / "missing.sqlite"))
    assert missing.exit_code == 3


@dataclasses.dataclass
class Order:
    number: int
    note: str


class Customer(pydantic.BaseModel):
    name: str
    vip: bool = False


class Rich(TypedDict):
    order: Any
    customer: Any
    at: Any
    key: Any
    tags: Any


def test_classes_become_inert_data_and_standard_types_are_rebuilt(
    tmp_path: Path, new_db: NewDb
) -> None:
    path = tmp_path / "langgraph.sqlite"
    at = datetime.datetime(2026, 12, 1, 6, 0, tzinfo=datetime.UTC)
    key = uuid.UUID("12345678-1234-5678-1234-567812345678")
    builder = StateGraph(Rich)
    builder.add_node("fill", lambda state: {"order": Order(7, "broke"), "tags": {"a"}})
    builder.add_edge(START, "fill")
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = builder.compile(checkpointer=saver)
        start: Any = {"customer": Customer(name="Ada"), "at": at, "key": key}
        graph.invoke(start, _cfg("rich"))
    target = new_db("ttcli.db")
    assert ttcli(target, "import", str(path)).exit_code == 0
    values = data(ttcli(target, "--json", "show", "latest", "--thread", "rich"))["values"]
    assert values["order"] == {"$type": f"{__name__}.Order", "data": {"number": 7, "note": "broke"}}
    assert values["customer"]["$type"] == f"{__name__}.Customer"
    assert values["customer"]["data"] == {"name": "Ada", "vip": False}
    assert values["at"] == at.isoformat()
    assert values["key"] == str(key)
    assert values["tags"] == ["a"]
    assert ttcli(target, "verify").exit_code == 0


def test_a_pickled_value_is_not_read(langgraph_file: Path, new_db: NewDb) -> None:
    conn = sqlite3.connect(langgraph_file)
    with conn:
        conn.execute("UPDATE checkpoints SET type = 'pickle' WHERE thread_id = 'fan'")
    conn.close()
    target = new_db("ttcli.db")
    result = ttcli(target, "import", str(langgraph_file))
    assert result.exit_code == 6 and "'pickle'" in result.stderr
    threads = {t["thread_id"] for t in data(ttcli(target, "--json", "threads"))}
    assert "fan" not in threads and "chat" in threads


def _same_activity(output: str) -> str:
    # a thread's last activity is the newest checkpoint's time: its `ts` in memory, the
    # time in its id in a ttcli file (LangGraph makes the two a few microseconds apart)
    return re.sub(r'"last_activity": "[^"]*"', '"last_activity": "…"', output)


READING = [
    ["threads"],
    ["history", "--thread", "chat"],
    ["show", "latest", "--thread", "review"],
    ["show", "latest", "--thread", "paused"],
    ["tree", "--thread", "fan"],
    ["diff", "latest~2", "latest", "--thread", "chat"],
    ["blame", "messages", "--thread", "chat"],
    ["verify"],
]


@pytest.fixture(params=["sqlite", "postgres"])
def langgraph_db(request: pytest.FixtureRequest, langgraph_file: Path) -> str:
    """The LangGraph database of `_fill`: a SqliteSaver file or a PostgresSaver database."""
    return str(langgraph_file) if request.param == "sqlite" else _langgraph_postgres()


def _langgraph_kind(source: str) -> str:
    return "PostgresSaver database" if source.startswith("postgresql://") else "SqliteSaver file"


def _shown_db(source: str) -> str:
    """The database as ttcli's messages name it (a DSN without its password or options)."""
    if not source.startswith("postgresql://"):
        return source
    from ttcli.savers.postgres.connection import display_name

    return display_name(source)


def _langgraph_rows(source: str) -> Any:
    """Everything in a LangGraph database, to show a command left it as it was."""
    if not source.startswith("postgresql://"):
        return Path(source).read_bytes()
    import psycopg

    with psycopg.connect(source) as conn:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3, 4").fetchall()
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
        ]


@pytest.mark.parametrize("args", READING, ids=[" ".join(args[:2]) for args in READING])
def test_the_reading_commands_read_a_langgraph_database_as_imported(
    langgraph_db: str, tmp_path: Path, new_db: NewDb, args: list[str]
) -> None:
    imported = new_db("ttcli.db")
    assert ttcli(imported, "import", langgraph_db).exit_code == 0
    before = _langgraph_rows(langgraph_db)

    found = ttcli(langgraph_db, "--json", *args)
    expected = ttcli(imported, "--json", *args)

    assert found.exit_code == 0, found.stderr
    note = f"note: {_shown_db(langgraph_db)} is a LangGraph {_langgraph_kind(langgraph_db)}, "
    note += "read-only\n"
    assert found.stderr == note + expected.stderr
    assert _same_activity(found.stdout) == _same_activity(expected.stdout)
    # never changed: same rows (a file: same bytes, no journal left beside it)
    assert _langgraph_rows(langgraph_db) == before
    assert list(tmp_path.glob("langgraph.sqlite*")) == [tmp_path / "langgraph.sqlite"]


def test_the_reading_commands_read_a_subgraphs_namespace(langgraph_file: Path) -> None:
    threads = data(ttcli(langgraph_file, "--json", "threads", "--prefix", "paused"))
    (ns,) = [t["checkpoint_ns"] for t in threads if t["checkpoint_ns"]]
    inner = data(ttcli(langgraph_file, "--json", "show", "latest", "--thread", "paused",
                       "--ns", ns))  # fmt: skip
    assert [task["interrupts"][0]["value"] for task in inner["tasks"]] == [{"question": "approve?"}]


@pytest.mark.parametrize(
    "args",
    [["fork", "latest", "--thread", "chat", "--to-thread", "copy"],
     ["update", "--thread", "chat", "--as-node", "bot", "--set", "messages=[]"],
     ["prune", "--older-than", "0s", "--yes"]],
    ids=["fork", "update", "prune"],
)  # fmt: skip
def test_a_command_that_writes_refuses_a_langgraph_database(
    langgraph_db: str, args: list[str]
) -> None:
    before = _langgraph_rows(langgraph_db)
    result = ttcli(langgraph_db, *args)
    assert result.exit_code == 6
    assert result.stderr == (
        f"Error: {_shown_db(langgraph_db)} is a LangGraph {_langgraph_kind(langgraph_db)}, which "
        f"ttcli reads but never writes: copy it into a ttcli database with 'ttcli --db NEW.db "
        f"import {'DSN' if langgraph_db.startswith('postgresql://') else langgraph_db}'\n"
    )
    assert _langgraph_rows(langgraph_db) == before


def test_reading_a_forged_langgraph_file_imports_nothing(
    langgraph_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touched = tmp_path / "imported"
    (tmp_path / "sentinel_import.py").write_text(f"open({str(touched)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _forge(langgraph_file, "forged", _ext(2, ["sentinel_import", "Data", {"x": 1}]))
    shown = ttcli(langgraph_file, "--json", "show", "latest", "--thread", "forged")
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(langgraph_file.read_bytes())
    _forge(broken, "zz-broken", b"\xc1\xc1")
    failed = ttcli(broken, "history", "--thread", "zz-broken")
    other = ttcli(broken, "history", "--thread", "chat")  # only the thread asked for is read

    assert "sentinel_import.Data" in shown.stdout and not touched.exists()
    assert failed.exit_code == 6
    assert failed.stderr.splitlines()[-1].startswith("Error: checkpoint ")
    assert "zz-broken" in failed.stderr and failed.stderr.count("\n") == 2  # the note, the error
    assert other.exit_code == 0


def test_a_file_of_many_threads_imports_smaller_and_verifies(tmp_path: Path, new_db: NewDb) -> None:
    from fixtures.langgraph_threads import write  # the README's 500 threads, fewer here

    source, target = tmp_path / "langgraph.sqlite", new_db("ttcli.db")
    write(source, 40)

    found = data(ttcli(target, "--json", "import", str(source)))
    verified = ttcli(target, "verify")

    assert (found["threads"], found["checkpoints"]) == (40, 40 * 9)
    assert found["bytes_before"] > 4 * found["bytes_after"]
    assert verified.exit_code == 0
    assert verified.stdout == "checked 360 checkpoints in 40 threads: 0 problems\n"


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_file_sqlite_keeps_beside_the_source_is_not_the_target(
    langgraph_file: Path, db: Path | str, suffix: str
) -> None:
    """SQLite deletes or overwrites a source's -wal, -shm or -journal: a database made there
    would be lost after the import said it was done. Both kinds of source, by any spelling."""
    sources: list[Path | str] = [langgraph_file]
    if isinstance(db, Path):
        sources.append(db)
    for source in sources:
        before = data(ttcli(source, "--json", "threads"))
        target = Path(f"{source}{suffix}")
        for spelling in (str(target), str(target.parent / ".." / target.parent.name / target.name)):
            result = ttcli(spelling, "import", str(source))
            assert result.exit_code == 2, result.stderr
            assert result.stderr.count("\n") == 1 and suffix in result.stderr
            assert not target.exists()
        assert data(ttcli(source, "--json", "threads")) == before


@pytest.mark.parametrize("target", [":memory:", "file::memory:", ""])
def test_a_target_that_keeps_nothing_is_refused(langgraph_file: Path, target: str) -> None:
    result = ttcli(target, "import", str(langgraph_file))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "names no lasting database" in result.stderr


def test_an_import_that_fails_creates_no_target(langgraph_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    target = tmp_path / "ttcli.db"
    assert ttcli(target, "import", str(tmp_path / "missing.sqlite")).exit_code == 3
    too_long = ttcli(target, "import", "x" * 300)  # longer than a file name may be: as --db
    assert too_long.exit_code == 6 and "File name too long" in too_long.stderr, too_long.stderr
    assert ttcli(target, "import", str(other)).exit_code == 6
    with closing(sqlite3.connect(langgraph_file)) as conn, conn:  # its thread ids do not read
        conn.execute("UPDATE checkpoints SET thread_id = CAST(thread_id AS BLOB)")
    assert ttcli(target, "import", str(langgraph_file)).exit_code == 6
    assert not target.exists()


def _forge_checkpoint(path: Path, thread: str, change: Any) -> None:
    """A copy of the chat thread under another id whose newest checkpoint (its blob and its
    metadata, decoded) `change` alters in place."""
    _forge(path, thread, ormsgpack.packb(None))
    with closing(sqlite3.connect(path)) as conn, conn:
        cid, blob, metadata = conn.execute(
            "SELECT checkpoint_id, checkpoint, metadata FROM checkpoints WHERE thread_id = ? "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (thread,),
        ).fetchone()
        checkpoint = msgpack.unpackb(blob, strict_map_key=False)  # ext values kept as they are
        meta = json.loads(metadata)
        change(checkpoint, meta)
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ?, metadata = ? WHERE thread_id = ? "
            "AND checkpoint_id = ?",
            (msgpack.packb(checkpoint), json.dumps(meta), thread, cid),
        )


FORGED_CHECKPOINTS = {
    "versions-not-a-map": lambda c, m: c.update(channel_versions=[1, 2]),
    "version-a-map": lambda c, m: c["channel_versions"].update(messages={"x": 1}),
    "seen-not-maps": lambda c, m: c.update(versions_seen={"agent": 5}),
    "values-not-a-map": lambda c, m: c.update(channel_values=[1]),
    "value-key-not-text": lambda c, m: c["channel_values"].update({7: "x"}),
    "ts-not-text": lambda c, m: c.update(ts=5),
    "id-not-text": lambda c, m: c.update(id=5),
    "id-not-a-uuid": lambda c, m: c.update(id="abc"),
    "updated-not-a-list": lambda c, m: c.update(updated_channels=5),
    "step-not-an-int": lambda c, m: m.update(step="x"),
    "source-not-text": lambda c, m: m.update(source=3),
    "lone-surrogate": lambda c, m: m.update(note="\ud800"),
    "tasks-not-sends": lambda c, m: c["channel_values"].update(__pregel_tasks=5),
    "version-nan": lambda c, m: c["channel_versions"].update(messages=float("nan")),
    "versions-numbers-and-text": lambda c, m: c["versions_seen"].update(x={"messages": 1}),
    "step-beyond-64-bits": lambda c, m: m.update(step=2**63),
    # stored, it would fail every filtered read (SQLite's JSON functions nest 1,000 levels)
    "metadata-nested-too-deep": lambda c, m: m.update(
        x=reduce(lambda v, _: [v], range(600), cast(Any, []))
    ),
}


@pytest.mark.parametrize("change", FORGED_CHECKPOINTS.values(), ids=FORGED_CHECKPOINTS.keys())
def test_a_checkpoint_of_forged_structure_is_named_not_a_crash(
    langgraph_file: Path, new_db: NewDb, change: Any
) -> None:
    """A checkpoint whose fields are not what LangGraph writes is exit 6 in one line naming
    it, read or imported; nothing of it is imported."""
    _forge_checkpoint(langgraph_file, "zz-forged", change)
    target = new_db("ttcli.db")
    imported = ttcli(target, "import", str(langgraph_file))
    shown = ttcli(langgraph_file, "--json", "show", "latest", "--thread", "zz-forged")
    listed = ttcli(langgraph_file, "history", "--thread", "zz-forged")
    for result in (imported, shown, listed):
        assert result.exit_code == 6, result.output
        assert "zz-forged" in result.stderr.splitlines()[-1]
        assert "Traceback" not in result.output
    assert "zz-forged" not in {t["thread_id"] for t in data(ttcli(target, "--json", "threads"))}


@pytest.mark.parametrize("command", ["import", "history", "threads"])
def test_a_langgraph_file_another_process_holds_locked_is_busy(
    langgraph_file: Path, tmp_path: Path, command: str
) -> None:
    """A writer holding the file's lock (an exclusive lock keeps out even WAL readers) is
    waited for --busy-timeout, then exit 5 "busy" (retry), not "not a LangGraph file"."""
    holder = sqlite3.connect(langgraph_file, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        if command == "import":
            result = ttcli(
                tmp_path / "new.db", "import", str(langgraph_file), "--busy-timeout", "0.1"
            )
        else:
            result = (
                ttcli(langgraph_file, command, "-t", "chat", "--busy-timeout", "0.1")
                if (command == "history")
                else ttcli(langgraph_file, command, "--busy-timeout", "0.1")
            )
    finally:
        holder.close()
    assert result.exit_code == 5, result.output
    assert "busy" in result.stderr.splitlines()[-1] and "Traceback" not in result.output
    assert not (tmp_path / "new.db").exists()
    assert ttcli(tmp_path / "new.db", "import", str(langgraph_file)).exit_code == 0


@pytest.mark.parametrize("spell", [str.upper, lambda i: "{" + i + "}"], ids=["upper", "braced"])
def test_ids_spelled_otherwise_import_canonical_and_an_import_run_again_skips_them(
    langgraph_file: Path, new_db: NewDb, spell: Any
) -> None:
    """A UUID is one id however it is spelled: stored upper case or braced (by hand, or by
    another tool), it is read and imported lowercase and dashed, and found there again."""
    with closing(sqlite3.connect(langgraph_file)) as conn, conn:
        conn.create_function("spell", 1, lambda i: None if i is None else spell(i))
        rows = conn.execute(
            "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = 'chat' "
            "ORDER BY checkpoint_id"
        ).fetchall()
        for cid, blob in rows:
            checkpoint = msgpack.unpackb(blob, strict_map_key=False)
            checkpoint["id"] = spell(cid)
            conn.execute(
                "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
                (msgpack.packb(checkpoint), cid),
            )
        conn.execute(
            "UPDATE checkpoints SET checkpoint_id = spell(checkpoint_id), "
            "parent_checkpoint_id = spell(parent_checkpoint_id) WHERE thread_id = 'chat'"
        )
        conn.execute(
            "UPDATE writes SET checkpoint_id = spell(checkpoint_id) WHERE thread_id = 'chat'"
        )
    read = data(ttcli(langgraph_file, "--json", "history", "-t", "chat"))
    assert [r["checkpoint_id"] for r in read] == [str(uuid.UUID(i)) for i, _ in rows][::-1]
    target = new_db("ttcli.db")
    assert ttcli(target, "import", str(langgraph_file)).exit_code == 0
    again = ttcli(target, "--json", "import", str(langgraph_file))
    assert again.exit_code == 0, again.stderr
    assert data(again)["threads"] == 0
    assert data(ttcli(target, "--json", "history", "-t", "chat")) == read


def test_one_id_stored_twice_in_two_spellings_is_named_not_merged(
    langgraph_file: Path, new_db: NewDb
) -> None:
    """LangGraph compares ids as text, so a file may hold one checkpoint as 'A...' and 'a...':
    reading or importing that thread is exit 6 naming it, never one row silently kept."""
    with closing(sqlite3.connect(langgraph_file)) as conn, conn:
        conn.execute(
            "INSERT INTO checkpoints SELECT thread_id, checkpoint_ns, upper(checkpoint_id), "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
            "WHERE thread_id = 'chat' ORDER BY checkpoint_id DESC LIMIT 1"
        )
    target = new_db("ttcli.db")
    for result in (
        ttcli(target, "import", str(langgraph_file)),
        ttcli(langgraph_file, "history", "-t", "chat"),
    ):
        assert result.exit_code == 6, result.output
        assert (
            "thread 'chat' in " in result.stderr
            and "twice, its id spelled two ways" in (result.stderr.splitlines()[-1])
        )
    assert "chat" not in {t["thread_id"] for t in data(ttcli(target, "--json", "threads"))}


class _Items(TypedDict):
    items: Annotated[list[int], DeltaChannel(operator.add)]


def test_the_first_checkpoint_of_a_delta_channel_reads_and_imports(
    tmp_path: Path, new_db: NewDb
) -> None:
    """LangGraph's DeltaChannel, run with durability="exit", writes a checkpoint whose
    metadata is `{"step": -2}` alone: a file LangGraph wrote reads and imports as it is."""
    builder = StateGraph(_Items)
    builder.add_node("a", lambda s: {"items": [1]})
    builder.add_edge(START, "a")
    builder.add_edge("a", END)
    path = tmp_path / "delta.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        builder.compile(checkpointer=saver).invoke({"items": [0]}, _cfg("d"), durability="exit")
    read = data(ttcli(path, "--json", "history", "-t", "d"))
    assert [row["step"] for row in read] == [1, -2]
    target = new_db("ttcli.db")
    assert ttcli(target, "import", str(path)).exit_code == 0
    assert data(ttcli(target, "--json", "history", "-t", "d")) == read
    assert data(ttcli(target, "--json", "import", str(path)))["skipped"] == 1


SPILL = """
import os, sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size=1")  # uncommitted pages go to the file itself
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE checkpoints SET checkpoint_ns = 'uncommitted' WHERE thread_id = 'chat'")
for i in range(300):
    conn.execute("INSERT INTO writes VALUES ('zz', '', 'x', 't', '', ?, 'c', 'bytes', ?)",
                 (i, os.urandom(4000)))
print("spilled", flush=True)
time.sleep(30)
"""


def test_a_rollback_journal_file_mid_write_is_busy_not_read_uncommitted(
    langgraph_file: Path, tmp_path: Path
) -> None:
    """A LangGraph file in rollback-journal mode whose writer has spilled uncommitted pages
    into it is waited for, then exit 5; what the writer had not committed is never read."""
    with closing(sqlite3.connect(langgraph_file)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    with subprocess.Popen(
        [sys.executable, "-c", SPILL, str(langgraph_file)], stdout=subprocess.PIPE, text=True
    ) as writer:
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "spilled\n"
            target = tmp_path / "new.db"
            imported = ttcli(target, "import", str(langgraph_file), "--busy-timeout", "0.2")
            listed = ttcli(langgraph_file, "threads", "--busy-timeout", "0.2")
        finally:
            writer.kill()
    for result in (imported, listed):
        assert result.exit_code == 5, result.output
        assert "busy" in result.stderr.splitlines()[-1]
    assert not target.exists()
    threads = data(ttcli(langgraph_file, "--json", "threads"))
    assert "uncommitted" not in {t["checkpoint_ns"] for t in threads}


@pytest.mark.parametrize(
    "change",
    [
        "jsonb_set(checkpoint, '{channel_values}', '[1]')",
        "jsonb_set(checkpoint, '{channel_versions}', '[1, 2]')",
        "jsonb_set(checkpoint, '{ts}', '5')",
    ],
    ids=["values-not-an-object", "versions-not-an-object", "ts-not-text"],
)
def test_a_forged_langgraph_postgres_checkpoint_is_named_not_a_crash(
    tmp_path: Path, change: str
) -> None:
    import psycopg

    dsn = _langgraph_postgres()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE checkpoints SET checkpoint = {change} WHERE thread_id = 'chat'")
    for result in (
        ttcli(tmp_path / "new.db", "import", dsn),
        ttcli(dsn, "history", "-t", "chat"),
    ):
        assert result.exit_code == 6, result.output
        assert "thread 'chat'" in result.stderr.splitlines()[-1]


def test_a_thread_id_longer_than_a_database_stores_is_named(
    langgraph_file: Path, tmp_path: Path
) -> None:
    """LangGraph stores thread ids of any length, ttcli up to 1,024 bytes: exit 6 naming the
    file and the id, nothing imported (it was exit 2 'thread prefix ... use a shorter one')."""
    with closing(sqlite3.connect(langgraph_file)) as conn, conn:
        for table in ("checkpoints", "writes"):
            conn.execute(
                f"UPDATE {table} SET thread_id = ? WHERE thread_id = 'chat'", ("x" * 1100,)
            )
    target = tmp_path / "new.db"
    for result in (ttcli(target, "import", str(langgraph_file)), ttcli(langgraph_file, "threads")):
        assert (result.exit_code, result.stderr.splitlines()[-1]) == (
            6,
            f"Error: {langgraph_file} holds thread 'xxxxxxxxxxxxxxxxxxxx'... of 1,100 bytes, "
            "over the 1,024 a ttcli database stores: nothing was imported",
        )
    assert not target.exists()
