"""Checking a database: the storage's own consistency check (SQLite's, SQL objects the
format does not define, kept counts, blob links), then every checkpoint decoded.

Nothing found in a file is imported or run: a value of a type that is not rebuilt reads as
`{"$type": name, ...}`. `verify` reports such values, and flags as problems the ones that
name modules no state has any business holding (a forged file trying to reach a shell).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import TtcliError
from ttcli.savers.base import BaseSaver

#: modules a stored type name should never come from: names a forged file uses for code execution
DANGEROUS = frozenset({
    "builtins", "code", "codecs", "commands", "ctypes", "functools", "importlib", "io", "marshal",
    "nt", "operator", "os", "pickle", "posix", "pty", "runpy", "shutil", "socket", "subprocess",
    "sys", "types", "webbrowser",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Finding:
    thread_id: str
    checkpoint_id: str
    #: where in the checkpoint (values.x[2], writes.node, pending task/channel)
    where: str
    what: str
    #: True for what makes the file unsafe or unreadable; False for a note
    problem: bool


@dataclass
class Report:
    threads: int = 0
    checkpoints: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.problem]


def verify(saver: BaseSaver) -> Report:
    report = Report()
    for text in saver.integrity_problems():
        report.findings.append(Finding("-", "-", "file", text, True))
    for summary in saver.list_threads():
        report.threads += 1
        ref = CheckpointRef(summary.thread_id, summary.checkpoint_ns)
        for checkpoint_id in saver.checkpoint_ids(ref.to_config()):
            report.checkpoints += 1
            report.findings.extend(_check(saver, ref.at(checkpoint_id)))
    return report


def _check(saver: BaseSaver, ref: CheckpointRef) -> list[Finding]:
    def found(where: str, what: str, problem: bool) -> Finding:
        return Finding(ref.thread_id, str(ref.checkpoint_id), where, what, problem)

    try:
        saved = saver.get_tuple(ref.to_config())
        writes = saver.get_writes(ref.to_config())
    except TtcliError as exc:
        return [found("checkpoint", str(exc), True)]
    if saved is None:
        return [found("checkpoint", "listed but does not read back", True)]
    parts: list[tuple[str, Any]] = [("values", saved.checkpoint["channel_values"])]
    parts.append(("writes", saved.metadata.get("writes")))
    parts += [(f"pending[{task_id}].{channel}", value) for task_id, _, channel, value in writes]
    return [
        found(where, what, problem)
        for prefix, value in parts
        for where, what, problem in _markers(value, prefix)
    ]


def _markers(value: Any, path: str) -> Iterator[tuple[str, str, bool]]:
    if isinstance(value, dict):
        if "$undecodable" in value:
            yield path, f"undecodable value: {value['$undecodable']}", True
            return
        name = value.get("$type")
        if isinstance(name, str) and ("data" in value or "value" in value):
            module = name.split(".", 1)[0]
            if module in DANGEROUS:
                yield path, f"value claims type {name}: forged (never imported)", True
            else:
                yield path, f"value of type {name}, kept as data (not registered here)", False
        for key, item in value.items():
            yield from _markers(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _markers(item, f"{path}[{index}]")
    elif is_dataclass(value) and not isinstance(value, type):  # a Send's argument, say
        for each in fields(value):
            yield from _markers(getattr(value, each.name), f"{path}.{each.name}")
