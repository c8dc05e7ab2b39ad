"""`ttcli history --limit 20` as a whole process, against `python -c "import sqlite3"`.

Both run in the same virtualenv, with bytecode compiled (as `pip install` does) and
PYTHONDONTWRITEBYTECODE unset; the best of REPEAT runs is kept to filter out noise.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import time
from pathlib import Path

REPEAT = 20


def best_ms(command: list[str], env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, env=env, check=True)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    import ttcli

    compileall.compile_dir(Path(ttcli.__file__).parent, quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    db = workdir / "startup.db"
    script = Path(sys.executable).with_name("ttcli")
    order = Path(__file__).parent.parent / "fixtures" / "order_agent.py"
    subprocess.run(
        [str(script), "run", f"{order}:graph", "--db", str(db), "-t", "o", "--input",
         '{"request": "refund order 1", "tool_result": "", "log": []}'],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    floor = best_ms([sys.executable, "-c", "import sqlite3"], env)
    click_floor = best_ms([sys.executable, "-c", "import click, msgpack, sqlite3"], env)
    history = best_ms([str(script), "history", "--db", str(db), "-t", "o", "--limit", "20"], env)
    return [
        ("startup: python -c 'import sqlite3' (ms)", f"{floor:.1f}", "", ""),
        (
            "startup: python -c 'import click, msgpack, sqlite3' (ms)",
            f"{click_floor:.1f}",
            "",
            f"{click_floor / floor:.2f}x the floor",
        ),
        (
            "startup: ttcli history --limit 20 (ms; target <= 1.5x)",
            f"{history:.1f}",
            "",
            f"{history / floor:.2f}x the floor",
        ),
    ]
