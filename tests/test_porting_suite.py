"""The porting suite: each LangGraph program in tests/porting/ runs as written on LangGraph,
then with only its imports changed to ttcli's, on the memory and the SQLite saver; both give
the same results and histories."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver as LgInMemorySaver

import ttcli
from tests.conftest import SAVERS
from tests.oracle import normalise, plain
from ttcli.savers.sqlite import SqliteSaver

HERE = Path(__file__).parent / "porting"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.py") if p.stem != "__init__")

#: the only change a port makes: LangGraph's modules become ttcli
IMPORTS = (
    "from langgraph.graph.message import",
    "from langgraph.graph import",
    "from langgraph.types import",
    "from langgraph.config import",
    "from langgraph.checkpoint.memory import",
    "from langgraph.prebuilt import",
    "from langgraph.runtime import",
    "from langgraph.store.base import",
    "from langgraph.store.memory import",
)


def ported(name: str) -> types.ModuleType:
    """The program with its LangGraph imports changed to `from ttcli import ...`."""
    lines = (HERE / f"{name}.py").read_text().splitlines(keepends=True)
    source = "".join(
        "from ttcli import" + line[len(prefix) :]
        if (prefix := next((p for p in IMPORTS if line.startswith(p)), None))
        else line
        for line in lines
    )
    assert "langgraph" not in source.replace("LangGraph", ""), f"{name} still uses LangGraph"
    module = types.ModuleType(f"ported_{name}")
    sys.modules[module.__name__] = module  # where type hints are resolved
    exec(compile(source, f"ported/{name}.py", "exec"), module.__dict__)  # noqa: S102
    return module


def view(value: Any) -> Any:
    """What a program returned, comparable across runtimes: histories normalised, messages and
    interrupts as their fields."""
    if isinstance(value, Iterator) or hasattr(value, "__aiter__"):
        value = list(value)
    if isinstance(value, list) and value and all(hasattr(s, "next") for s in value):
        return plain(normalise(value))
    if isinstance(value, list | tuple):
        return type(value)(view(item) for item in value)
    if isinstance(value, dict):
        return {key: view(item) for key, item in value.items()}
    return plain(value)


@pytest.mark.parametrize("backend", SAVERS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_runs_the_same_with_only_its_imports_changed(
    name: str, backend: str, tmp_path: Path
) -> None:
    expected = view(importlib.import_module(f"tests.porting.{name}").main(LgInMemorySaver()))
    saver = ttcli.InMemorySaver() if backend == "memory" else SqliteSaver(tmp_path / "p.db")
    assert view(ported(name).main(saver)) == expected


def test_the_suite_covers_the_kinds_of_programs_the_docs_teach() -> None:
    assert len(PROGRAMS) >= 12
