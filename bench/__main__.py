"""`make bench`: every benchmark, ttcli and LangGraph measured in the same run."""

from __future__ import annotations

import platform
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from tabulate import tabulate

from bench import chat, startup, supersteps


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        rows = (
            supersteps.main(Path(workdir)) + chat.main(Path(workdir)) + startup.main(Path(workdir))
        )
    print(
        f"python {platform.python_version()} on {platform.machine()}, "
        f"ttcli {version('ttcli')}, langgraph {version('langgraph')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}"
    )
    headers = ["measure", "ttcli", "langgraph", "ratio ttcli/langgraph"]
    print(tabulate(rows, headers=headers, disable_numparse=True))


if __name__ == "__main__":
    sys.exit(main())
