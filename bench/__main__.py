"""`make bench`: every benchmark, ttcli and LangGraph measured in the same run; the table is
printed and written to bench/RESULTS.md with the machine and the versions."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from types import ModuleType

from tabulate import tabulate

from bench import chat, families, long_chat, prune, scale, startup, supersteps

RESULTS = Path(__file__).with_name("RESULTS.md")
ANALYSIS = Path(__file__).with_name("analysis.md")


def in_own_process(module: ModuleType, workdir: Path) -> list[tuple[str, str, str, str]]:
    """Run a benchmark module in a fresh process, as a cron `ttcli prune` runs: not inside
    this one, whose heap (LangGraph, the chat run) slows every collection of the garbage
    collector."""
    done = subprocess.run(
        [sys.executable, "-m", module.__name__, str(workdir)],
        check=True, capture_output=True, text=True, cwd=Path(__file__).parent.parent,
    )  # fmt: skip
    return [tuple(row) for row in json.loads(done.stdout)]


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        rows = (
            supersteps.main(Path(workdir))
            + chat.main(Path(workdir))
            + families.main(Path(workdir))
            + in_own_process(long_chat, Path(workdir))
            + in_own_process(prune, Path(workdir))
            + scale.main(Path(workdir))
            + startup.main(Path(workdir))
        )
    machine = (
        f"python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} cores), "
        f"ttcli {version('ttcli')}, langgraph {version('langgraph')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}"
    )
    table = tabulate(
        rows, headers=["measure", "ttcli", "langgraph", "ratio ttcli/langgraph"],
        disable_numparse=True,
    )  # fmt: skip
    print(machine)
    print(table)
    RESULTS.write_text(
        "# Benchmark results\n\n"
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine}.\n\n"
        f"```\n{table}\n```\n\n{ANALYSIS.read_text()}"
    )


if __name__ == "__main__":
    main()
