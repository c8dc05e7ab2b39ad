"""The package as users install it: a wheel in a fresh virtualenv creates databases and runs
the demo, and its reading commands load only what they use; the schema it carries is the
documented one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PACKAGED = ROOT / "ttcli" / "savers"


@pytest.mark.parametrize("name", ["schema.sql", "schema-postgres.sql"])
def test_the_packaged_schema_is_the_documented_one(name: str) -> None:
    assert not (PACKAGED / name).is_symlink()  # a wheel does not carry a symlink's target
    assert (PACKAGED / name).read_text() == (ROOT / name).read_text()


def test_runtime_dependencies_are_ranges_and_exclude_test_tools() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert all("==" not in d for d in project["dependencies"])
    names = [d.split(">")[0].split("<")[0] for d in project["dependencies"]]
    assert names == ["click", "msgpack", "tabulate"]
    assert any(d.startswith("sqlite-utils") for d in project["optional-dependencies"]["dev"])


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_wheel_in_a_fresh_virtualenv_runs_the_demo(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy, so that building leaves the checkout alone
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.db")
    shutil.copytree(ROOT / "ttcli", source / "ttcli", ignore=ignore)
    for name in ("pyproject.toml", "README.md", "schema.sql"):
        shutil.copy(ROOT / name, source / name)
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", "dist", ".", cwd=source)
    assert "Deprecat" not in built, built
    (wheel,) = (source / "dist").glob("ttcli-*.whl")
    fresh = tmp_path / "fresh"
    run(sys.executable, "-m", "venv", "--without-pip", fresh, cwd=tmp_path)
    python = fresh / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", wheel, cwd=tmp_path)
    demo = tmp_path / "demo"  # the fixtures beside, not the source: ttcli comes from the wheel
    shutil.copytree(ROOT / "fixtures", demo / "fixtures", ignore=ignore)
    env = {**os.environ, "TTCLI_DB": str(demo / "ttcli.db"), "PYTHONPATH": ""}
    out = run(python, "-m", "fixtures.demo", cwd=demo, env=env)
    assert '  reply: "Done: order 123 refunded: 42.00 EUR."' in out
    where = run(python, "-c", "import ttcli; print(ttcli.__file__)", cwd=demo, env=env)
    assert where.startswith(str(fresh))
    assert run(fresh / "bin" / "ttcli", "--version", cwd=demo, env=env) == "ttcli, version 0.1.0\n"
    # the reading commands import neither pathlib nor urllib.parse (which loads ipaddress)
    # nor csv: milliseconds of each start (issue 16). Only an installed wheel can tell: the
    # editable install's import hook loads them in every interpreter.
    for command in ("history", "show"):
        script = (
            "import atexit, sys; from ttcli.cli import cli; atexit.register(lambda: "
            "print(*sorted(sys.modules), file=sys.stderr)); "
            f"cli([{command!r}, '--thread', 'order:123'])"
        )
        done = subprocess.run(
            [python, "-c", script], cwd=demo, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0 and "respond" in done.stdout, done.stderr  # it read the file
        loaded = done.stderr.split()
        assert not {"pathlib", "urllib.parse", "csv"} & set(loaded), command
