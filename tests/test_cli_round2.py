"""The command line, round two (issue 15): fan-out threads, pipes, refusals, wording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clitools import ttcli

FAN_OUT = "import ttcli\nfrom tests.graphs import map_reduce\ngraph = map_reduce(ttcli)\n"
ITEMS = json.dumps({"items": [1, 2, 3], "results": [], "total": 0})


@pytest.fixture
def fan_db(tmp_path: Path) -> Path:
    """A database holding thread f1, where `square` ran once per item (a Send fan-out)."""
    (tmp_path / "fan.py").write_text(FAN_OUT)
    path = tmp_path / "fan.db"
    result = ttcli(path, "run", f"{tmp_path / 'fan.py'}:graph", "-t", "f1", "--input", ITEMS)
    assert result.exit_code == 0, result.stderr
    return path


def test_reading_commands_work_on_a_fan_out_thread(fan_db: Path) -> None:
    table = ttcli(fan_db, "history", "-t", "f1")
    assert (table.exit_code, table.stderr) == (0, "")
    rows = [line.split()[1:5] for line in table.stdout.splitlines()[2:]]
    assert rows == [
        ["2", "loop", "-", "total"],
        ["1", "loop", "total", "square"],
        ["0", "loop", "square,square,square", "-"],
        ["-1", "input", "__start__", "__start__"],
    ]
    listed = ttcli(fan_db, "history", "-t", "f1", "--json")
    assert listed.exit_code == 0
    assert [e["next"] for e in json.loads(listed.stdout)][2] == ["square"] * 3
    tree = ttcli(fan_db, "tree", "-t", "f1")
    assert (tree.exit_code, tree.stderr, len(tree.stdout.splitlines())) == (0, "", 4)
    shown = ttcli(fan_db, "show", "latest~2", "-t", "f1", "--json")
    assert shown.exit_code == 0
    assert [t["result"] for t in json.loads(shown.stdout)["tasks"]] == [
        {"results": [1]},
        {"results": [4]},
        {"results": [9]},
    ]
