"""The README's "Using ttcli with LangGraph" example runs, and the commands it shows print
what it shows (ids and times aside)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clitools import ttcli

ROOT = Path(__file__).parent.parent


def _section(title: str) -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index(f"\n## {title}\n")
    return readme[start : readme.index("\n## ", start + 1)]


def _masked(text: str) -> str:
    """Output without what changes from run to run: ids, times, column widths."""
    text = re.sub(r"\b[0-9a-f]{8}(?:-[0-9a-f-]*)?\b", "ID", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.+]+", "TIME", text)
    text = re.sub(r"^[- ]+$", "---", text, flags=re.M)
    return re.sub(r"[ \t]+", " ", text).strip()


def test_the_langgraph_example_runs_and_reads_as_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    section = _section("Using ttcli with LangGraph")
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    # the first session reads chat.db; the second (ttcli run on a LangGraph app) is what
    # test_langgraph_cli.py checks
    session = re.findall(r"```\n(\$ .*?)```", section, flags=re.S)[0]
    monkeypatch.chdir(tmp_path)

    exec(compile(code, "README.md", "exec"), {})

    printed = capsys.readouterr().out
    assert printed == "['hi', 'echo: hi', 'refund order 7', 'echo: refund order 7']\n6\n"
    commands = re.findall(r"^\$ ttcli (.*)\n((?:(?!\$ ).*\n)*)", session, flags=re.M)
    assert len(commands) == 2
    for command, shown in commands:
        args = shlex.split(command)
        assert args[:2] == ["--db", "chat.db"]
        result = ttcli(tmp_path / "chat.db", *args[2:])
        assert result.exit_code == 0, result.stderr
        assert _masked(result.stdout) == _masked(shown)


def test_only_ttcli_langgraph_imports_langgraph_or_langchain() -> None:
    script = """
import importlib, pathlib, sys
import ttcli
root = pathlib.Path(ttcli.__file__).parent
for path in sorted(root.rglob("*.py")):
    name = ".".join(("ttcli", *path.relative_to(root).with_suffix("").parts))
    if not name.startswith(("ttcli.langgraph", "ttcli.__main__")):
        importlib.import_module(name.removesuffix(".__init__"))
print(sorted({m.split(".")[0] for m in sys.modules if m.startswith(("langgraph", "langchain"))}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
