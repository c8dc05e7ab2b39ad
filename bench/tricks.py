"""What each compaction trick of the SQLite format pays: `python -m bench.tricks`.

Each trick is switched off on its own in a copy of the `ttcli` package (a small edit of its
source, listed below), and the 300-turn chat and the 1,000-step loop run on that copy in a
process of their own: the chat file's size (exact) and the time per chat turn and per loop
superstep (the best of the rounds).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).parent.parent
ROUNDS = 3

#: trick -> edits (file under ttcli/savers, text, replacement) that switch it off
VARIANTS: dict[str, list[tuple[str, str, str]]] = {
    "all tricks (as shipped)": [],
    "no state deltas": [("records.py", "KEYFRAME_DEPTH = 16", "KEYFRAME_DEPTH = 1")],
    "no parent-id packing": [
        (
            "records.py",
            "        return None\n    shared = 0",
            "        return None\n    return parent",
        )
    ],
    "no held or moved pending writes": [
        ("sqlite/put.py", "            held.thread_key == thread_key\n", "            False\n"),
        (
            "sqlite/put.py",
            "        elif follows:  # the parent is the latest: all its writes are in `writes`",
            "        elif False:",
        ),
        ("sqlite/pending.py", "if latest and self.connection.in_batch:", "if False:"),
    ],
    "no decoded-list cache": [("blobs.py", "DECODED_MAX = 16", "DECODED_MAX = 0")],
}

_MEASURE = """
import json, sys, tempfile
from pathlib import Path
from bench import chat, supersteps
work = Path(tempfile.mkdtemp())
turn = chat.run("ttcli", chat.ttcli_app, work)
step = supersteps.per_step(supersteps.ttcli_app, work / "loop.db")
print(json.dumps({"size": turn["size"], "turn": turn["turn"], "read": turn["read"], "step": step}))
"""


def measure(package: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE],
        cwd=package, capture_output=True, text=True,
        env={"PYTHONPATH": f"{package}:{ROOT}", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"{package.name} failed:\n{done.stderr}")
    found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def variant_copy(workdir: Path, name: str, edits: list[tuple[str, str, str]]) -> Path:
    """A copy of the ttcli package with one trick switched off."""
    package = workdir / name.replace(" ", "-")
    shutil.copytree(ROOT / "ttcli", package / "ttcli")
    for file, text, replacement in edits:
        path = package / "ttcli" / "savers" / file
        source = path.read_text()
        if text not in source:
            raise SystemExit(f"{name}: {file} no longer contains {text!r}: update bench/tricks.py")
        path.write_text(source.replace(text, replacement))
    return package


def main() -> None:
    best: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        copies = {n: variant_copy(Path(workdir), n, e) for n, e in VARIANTS.items()}
        for _ in range(ROUNDS):  # rounds interleave the variants: the machine's load is shared
            for name, package in copies.items():
                found = measure(package)
                kept = best.setdefault(name, found)
                for key, value in found.items():
                    kept[key] = min(kept[key], value)
    shipped = best["all tricks (as shipped)"]
    rows = [
        (
            name,
            f"{found['size']:,.0f} ({found['size'] / shipped['size'] - 1:+.1%})",
            f"{found['size'] / 90_000:.2f}",
            f"{found['turn'] * 1e3:.2f}",
            f"{found['read'] * 1e3:.2f}",
            f"{found['step'] * 1e3:.3f}",
        )
        for name, found in best.items()
    ]
    headers = ["variant", "chat file (bytes)", "x raw", "turn (ms)", "read (ms)", "step (ms)"]
    print(tabulate(rows, headers=headers, disable_numparse=True))


if __name__ == "__main__":
    main()
