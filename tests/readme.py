"""The README's shell sessions: every `$ ttcli ...` line run as typed, in a fresh folder, and
its output compared with what the README prints (ids and times aside).

`python -m tests.readme` writes the real output into README.md; `tests/test_docs.py` checks
that the README still says what the commands print.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"^```\n(.*?)^```\n", flags=re.M | re.S)
EXIT = re.compile(r"^\(exit (\d+)\)$")
VOLATILE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00"), "<time>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<interrupt id>"),
    (re.compile(r"\b[0-9a-f]{8}\b"), "<short id>"),
    (re.compile(r" +"), " "),
    # sizes move by a byte or two with the times stored
    (re.compile(r"\b\d+ bytes\b"), "<n> bytes"),
    (re.compile(r"(done|paused|failed|interrupted) \d+$"), r"\1 <bytes>"),
]


@dataclass
class Step:
    command: str
    output: list[str]
    exit_code: int = 0


def sessions(text: str) -> list[tuple[re.Match[str], list[Step]]]:
    """Each plain code block that holds `$ ` lines, with its steps."""
    found = []
    for block in BLOCK.finditer(text):
        steps: list[Step] = []
        for line in block[1].splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:], []))
            elif steps and (code := EXIT.match(line)):
                steps[-1].exit_code = int(code[1])
            elif steps:
                steps[-1].output.append(line)
        if steps:
            for step in steps:
                while step.output and not step.output[-1]:
                    step.output.pop()
            found.append((block, steps))
    return found


def folder(tmp: Path) -> dict[str, str]:
    """A fresh folder with the fixtures, as after a checkout; the environment to run in."""
    shutil.copytree(ROOT / "fixtures", tmp / "fixtures")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TTCLI_")}
    # the LangGraph file `ttcli import` reads is written here, as the README says (no
    # binary database is kept in the repository)
    subprocess.run([sys.executable, "-m", "fixtures.langgraph_chat"], cwd=tmp, check=True, env=env)
    return {**env, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def run(step: Step, cwd: Path, env: dict[str, str]) -> Step:
    """What the step's command prints (stdout and stderr, as a terminal shows them)."""
    words = shlex.split(step.command)
    if words[0] == "export":  # the session's environment changes; nothing is printed
        name, _, value = words[1].partition("=")
        env[name] = value
        return Step(step.command, [])
    if words[0] == "ttcli":
        words = [sys.executable, "-m", "ttcli", *words[1:]]
    done = subprocess.run(
        words, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return Step(step.command, done.stdout.rstrip("\n").splitlines(), done.returncode)


def stable(lines: list[str]) -> list[str]:
    """Lines without what changes from run to run: ids, times, column padding."""
    for pattern, mark in VOLATILE:
        lines = [pattern.sub(mark, line).rstrip() for line in lines]
    return lines


def render(steps: list[Step]) -> str:
    """A session as the README prints it: a blank line after each output."""
    lines: list[str] = []
    for step in steps:
        lines.append(f"$ {step.command}")
        lines += step.output + ([f"(exit {step.exit_code})"] if step.exit_code else [])
        lines += [""] if step.output or step.exit_code else []
    return "\n".join(lines[:-1] if lines[-1] == "" else lines) + "\n"


def rewrite(tmp: Path) -> None:
    """Run every session in order in `tmp` and put the real output in the README."""
    env = folder(tmp)
    text = README.read_text()
    pieces, at = [], 0
    for block, steps in sessions(text):
        ran = [run(step, tmp, env) for step in steps]
        pieces += [text[at : block.start(1)], render(ran)]
        at = block.end(1)
    README.write_text("".join(pieces) + text[at:])


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        rewrite(Path(scratch))
