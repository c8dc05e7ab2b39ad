"""`ttcli history --limit 20` and `ttcli show` as whole processes, against
`python -c "import sqlite3"` in the same virtualenv: the editable install the benchmarks run
in, and a normal (non-editable) install of a wheel built from this tree into a virtualenv of
its own (the editable hook slows every interpreter start, which flatters the ratio).

Bytecode is compiled (as `pip install` does), PYTHONDONTWRITEBYTECODE and PYTHONPATH are
unset; the best of REPEAT runs is kept to filter out noise.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPEAT = 20
ROOT = Path(__file__).parent.parent
#: `ttcli run` of the order agent: its four nodes, on a new input to the same thread each time
RUN = [
    "run", str(ROOT / "fixtures" / "order_agent.py") + ":graph",
    "--input", '{"request": "refund order 1", "tool_result": "", "log": []}',
]  # fmt: skip


def best_ms(command: list[str], env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, env=env, check=True)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def wheel_install(workdir: Path, env: dict[str, str]) -> Path:
    """A virtualenv with ttcli installed from a wheel of this tree; its bin directory."""
    source = workdir / "source"
    shutil.copytree(ROOT / "ttcli", source / "ttcli", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "schema.sql"):
        shutil.copy(ROOT / name, source / name)
    quiet = {"check": True, "env": env, "stdout": subprocess.DEVNULL}
    wheels = workdir / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        **quiet,  # type: ignore[arg-type]
    )
    venv = workdir / "wheel-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], **quiet)  # type: ignore[arg-type]
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *map(str, wheels.glob("*.whl"))], **quiet)  # type: ignore[arg-type]
    return venv / "bin"


def measure(bin_dir: Path, db: Path, env: dict[str, str], label: str) -> list[tuple[str, ...]]:
    python, script = str(bin_dir / "python"), str(bin_dir / "ttcli")
    floor = best_ms([python, "-c", "import sqlite3"], env)
    click_floor = best_ms([python, "-c", "import click, msgpack, sqlite3"], env)
    history = best_ms([script, "history", "--db", str(db), "-t", "o", "--limit", "20"], env)
    show = best_ms([script, "show", "--db", str(db), "-t", "o"], env)
    run = best_ms([script, *RUN, "--db", str(db), "-t", f"run-{label}"], env)
    return [
        (f"startup, {label}: python -c 'import sqlite3' (ms)", f"{floor:.1f}", "", ""),
        (
            f"startup, {label}: python -c 'import click, msgpack, sqlite3' (ms)",
            f"{click_floor:.1f}",
            "",
            f"{click_floor / floor:.2f}x the floor",
        ),
        (
            f"startup, {label}: ttcli history --limit 20 (ms; target <= 2x)",
            f"{history:.1f}",
            "",
            f"{history / floor:.2f}x the floor",
        ),
        (
            f"startup, {label}: ttcli show (ms; target <= 2x)",
            f"{show:.1f}",
            "",
            f"{show / floor:.2f}x the floor",
        ),
        (
            f"startup, {label}: ttcli run of the order agent (ms; loads the graph and the "
            "runtime, not a target)",
            f"{run:.1f}",
            "",
            f"{run / floor:.2f}x the floor",
        ),
    ]


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    import ttcli

    compileall.compile_dir(Path(ttcli.__file__).parent, quiet=1)
    # nor a PYTHONPATH: the source tree on it would make pip skip the wheel, the tree's
    # egg-info saying ttcli is installed, and the timings load the tree's modules
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    }
    db = workdir / "startup.db"
    script = Path(sys.executable).with_name("ttcli")
    subprocess.run(
        [str(script), *RUN, "--db", str(db), "-t", "o"], env=env, check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    installed = wheel_install(workdir, env)
    rows = measure(installed, db, env, "pip install") + measure(
        Path(sys.executable).parent, db, env, "editable"
    )
    return [(a, b, c, d) for a, b, c, d in rows]
