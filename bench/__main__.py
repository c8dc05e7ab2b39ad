"""`make bench`: every benchmark, ttcli and LangGraph measured in the same run; the table is
printed and written to bench/RESULTS.md with the machine and the versions."""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from tabulate import tabulate

from bench import chat, prune, scale, startup, supersteps

RESULTS = Path(__file__).with_name("RESULTS.md")
ANALYSIS = Path(__file__).with_name("analysis.md")


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        rows = (
            supersteps.main(Path(workdir))
            + chat.main(Path(workdir))
            + prune.main(Path(workdir))
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
    sys.exit(main())
