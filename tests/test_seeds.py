"""The seed documents' examples run unchanged except for imports and print what the seeds say."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures"


def run_seed(name: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    runpy.run_path(str(FIXTURES / name), run_name="__main__")
    return capsys.readouterr().out.splitlines()


def test_seed_000_prints_history_with_writes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_seed("seed_000_history.py", capsys) == [
        "4",
        "loop 2 {'step': 2} () {'b': {'step': 2}}",
        "loop 1 {'step': 1} ('b',) {'a': {'step': 1}}",
        "loop 0 {'step': 0} ('a',) None",
        "input -1 {} ('__start__',) {'__start__': {'step': 0}}",
    ]


def test_seed_002_messages_history(capsys: pytest.CaptureFixture[str]) -> None:
    lines = run_seed("seed_002_messages.py", capsys)
    assert lines[0] == "共 3 个检查点"
    assert [
        line for line in lines if line.startswith(("step:", "source:", "next:", "messages 数量"))
    ] == [
        "step: 1",
        "source: loop",
        "next: ()",
        "messages 数量: 2",
        "step: 0",
        "source: loop",
        "next: ('chat',)",
        "messages 数量: 1",
        "step: -1",
        "source: input",
        "next: ('__start__',)",
        "messages 数量: 0",
    ]
    assert lines.count("  - human: 你好") == 2
    assert lines.count("  - ai: 你好，我是助手。") == 1
    writes = [line for line in lines if line.startswith("writes:")]
    assert writes[0].startswith(
        "writes: {'chat': {'messages': [AIMessage(content='你好，我是助手。', id='"
    )
    assert writes[1] == "writes: None"
    assert writes[2].startswith(
        "writes: {'__start__': {'messages': [HumanMessage(content='你好', id='"
    )
    assert "  ✏️ chat 写入: [ai] 你好，我是助手。" in lines
    assert "  ✅ 图执行完毕" in lines
    assert lines[-1] == "你好，我是助手。"
