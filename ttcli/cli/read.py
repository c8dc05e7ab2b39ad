"""Commands that only read: history, show, diff, threads, tree, verify. None loads a graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ttcli.cli import render
from ttcli.cli.main import (
    Env,
    Failure,
    output_options,
    pass_env,
    thread_options,
)
from ttcli.cli.params import assignments
from ttcli.configs import CheckpointRef
from ttcli.ops import inspect
from ttcli.ops.refs import resolve, short_ids

if TYPE_CHECKING:
    from ttcli.ops.subgraphs import Subgraph
    from ttcli.ops.verify import Finding


@click.command()
@thread_options
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only checkpoints whose metadata KEY equals VALUE (repeatable; a.b reaches nested "
    'keys); writes=NODE: the checkpoints NODE wrote; writes=\'["a","b"]\': those a and b '
    "wrote, no other node; writes.NODE.KEY=VALUE: NODE wrote VALUE at KEY (reads what it "
    "wrote).",
)
@click.option(
    "--where",
    "wheres",
    multiple=True,
    metavar="PATH=VALUE",
    help="Only checkpoints whose state holds VALUE at PATH (repeatable; a.b.0 reaches nested "
    "keys and list items; reads the values).",
)
@click.option("--before", metavar="REF", help="Only checkpoints older than REF.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="At most N checkpoints.")
@output_options
@pass_env
def history(
    env: Env, thread: str, ns: str, filters: tuple[str, ...], wheres: tuple[str, ...],
    before: str | None, limit: int | None,
) -> None:  # fmt: skip
    """List a thread's checkpoints, newest first, without reading any stored value (except
    with --where, which looks into the state, and a filter on what a node wrote).

    \b
    Example:
        ttcli history --thread order:123 --filter source=loop --limit 5
        ttcli history --thread order:123 --filter writes=plan
        ttcli history --thread order:123 --filter writes.plan.tool=cancel_order
        ttcli history --thread order:123 --where tool=cancel_order   # when did it go wrong?
    """
    saver, ref = env.reader(thread), CheckpointRef(thread, ns)
    older = resolve(saver, ref, before) if before else None
    entries = inspect.history(
        saver, ref, filter=assignments(filters, "--filter"), before=older, limit=limit,
        where=assignments(wheres, "--where"),
    )  # fmt: skip
    empty = f"no checkpoints in thread '{thread}' match"
    render.rows(env, *_history_table(entries), fields=ENTRY_FIELDS, empty=empty)


def _history_table(
    entries: list[inspect.Entry],
) -> tuple[list[dict[str, Any]], list[str], list[list[Any]]]:
    """Records for scripts; headers and short cells for people."""
    short = short_ids(i for e in entries for i in (e.checkpoint_id, e.parent_id))
    headers = ["checkpoint", "step", "source", "next", "writes", "created_at", "parent"]
    cells = [
        [short[e.checkpoint_id], e.step, e.source, ",".join(e.next) or "-",
         ",".join(e.writes) or "-", e.created_at, short.get(e.parent_id or "", "-")]
        for e in entries
    ]  # fmt: skip
    return [render.entry_record(e) for e in entries], headers, cells


ENTRY_FIELDS = [
    "checkpoint_id", "parent_checkpoint_id", "step", "source", "next", "writes", "created_at",
    "metadata",
]  # fmt: skip


@click.command()
@click.argument("ref", default="latest")
@thread_options
@click.option("--channel", metavar="NAME", help="Print only this state key's value.")
@output_options
@pass_env
def show(env: Env, ref: str, thread: str, ns: str, channel: str | None) -> None:
    """Show one checkpoint in full: values, next, metadata and writes, tasks (results,
    errors, interrupts), parent and children. REF defaults to latest.

    \b
    Example:
        ttcli show latest~2 --thread order:123
        ttcli show 1f1ec8c4-6bcd --thread order:123 --channel messages --json
    """
    saver = env.reader(thread)
    detail = inspect.describe(saver, resolve(saver, CheckpointRef(thread, ns), ref))
    if channel is not None:
        if channel not in detail.values:
            keys = ", ".join(detail.values) or "none"
            raise Failure(
                f"checkpoint has no value for {channel!r}; it has: {keys}",
                3,
            )
        render.document(
            env, {channel: detail.values[channel]}, [render.to_json(detail.values[channel])]
        )
        return
    from ttcli.ops import subgraphs  # here: history's start-up does without it

    below = [
        sub
        for sub in subgraphs.below(saver, CheckpointRef(thread, ns))
        if sub.parent_checkpoint_id == detail.entry.checkpoint_id
    ]
    render.document(env, _detail_record(detail, below), _detail_lines(detail, below))


def _detail_record(d: inspect.Detail, below: list[Subgraph]) -> dict[str, Any]:
    return {
        **render.entry_record(d.entry),
        "thread_id": d.thread_id,
        "checkpoint_ns": d.checkpoint_ns,
        "children": d.children,
        "values": d.values,
        "returned": d.writes,
        "waiting": render.waiting_record(_waits(d)),
        "tasks": [
            {
                "id": t.id or None,
                "name": t.name,
                "path": t.path or None,
                "result": t.result,
                "error": t.error,
                "interrupts": [render.asked_record(i) for i in t.interrupts],
                "answers": t.answers,
                "waiting": t.waiting,
                "subgraphs": [render.subgraph_record(sub) for sub in below if sub.task_id == t.id],
            }
            for t in d.tasks
        ],
    }


def _waits(d: inspect.Detail) -> list[inspect.Waiting]:
    """What a checkpoint waits on, if nothing came after it."""
    return [] if d.children else inspect.waiting(d.tasks)


def _detail_lines(d: inspect.Detail, below: list[Subgraph]) -> list[str]:
    e = d.entry
    lines = [
        f"checkpoint  {e.checkpoint_id}",
        f"thread      {d.thread_id}"
        + (f" (namespace {d.checkpoint_ns})" if d.checkpoint_ns else ""),
        f"step        {e.step} ({e.source})",
        f"created     {e.created_at}",
        f"parent      {e.parent_id or '-'}",
        f"children    {', '.join(d.children) or '-'}",
        f"next        {', '.join(e.next) or '- (done)'}",
        *render.waiting_lines(_waits(d)),
    ]
    lines += [f"metadata    {k}: {render.compact(v)}" for k, v in e.extra.items()]
    lines.append("writes      " + ("-" if not d.writes else ""))
    lines += [f"  {node}: {render.compact(value, 90)}" for node, value in (d.writes or {}).items()]
    lines.append("values")
    lines += [f"  {key}: {render.compact(value, 90)}" for key, value in d.values.items()]
    lines.append("tasks       " + ("-" if not d.tasks else ""))
    for t in d.tasks:
        state = (
            "waiting for an answer"
            if t.waiting
            else "error"
            if t.error and t.result is None
            else "done"
            if t.result is not None
            else "due"
        )
        lines.append(f"  {t.name} [{state}]")
        lines += [f"    result: {render.compact(t.result, 80)}"] if t.result else []
        lines += [f"    error: {t.error}"] if t.error else []
        if not t.waiting:  # what a waiting task asks is said once, above
            lines += [f"    asked: {render.compact(i.value, 80)} (id {i.id})" for i in t.interrupts]
        lines += [_subgraph_line(sub) for sub in below if sub.task_id == t.id]
    return lines


def _subgraph_line(sub: Subgraph) -> str:
    latest = sub.latest
    return render.safe(
        f"    subgraph: --ns {sub.checkpoint_ns}  ({sub.checkpoints} checkpoints; latest "
        f"{latest.checkpoint_id[-8:]}, step {latest.step}, next {','.join(latest.next) or '-'})"
    )


@click.command()
@click.argument("ref_a")
@click.argument("ref_b", default="latest")
@thread_options
@click.option(
    "--exit-code",
    is_flag=True,
    help="Exit 1 if the checkpoints differ (like git diff --exit-code): in their values, "
    "their next nodes or their writes, each of which it prints.",
)
@output_options
@pass_env
def diff(env: Env, ref_a: str, ref_b: str, thread: str, ns: str, exit_code: bool) -> None:
    """Compare two checkpoints: state keys added, removed or changed (nested paths, list
    items appended), and their next nodes and writes. REF_B defaults to latest.

    \b
    Example:
        ttcli diff latest~1 latest --thread order:123
        ttcli diff 1f1ec8c4-6bcd latest --thread order:123 --exit-code --json
    """
    saver, ref = env.reader(thread), CheckpointRef(thread, ns)
    a, b = (inspect.describe(saver, resolve(saver, ref, r)) for r in (ref_a, ref_b))
    from ttcli.ops.diff import diff_values  # here: `history` and `show` never load it

    changes = diff_values(a.values, b.values)
    steps = {
        "next": (list(a.entry.next), list(b.entry.next)),
        "writes": (a.entry.writes, b.entry.writes),
    }
    differs = bool(changes) or any(old != new for old, new in steps.values())
    record = {
        "from": a.entry.checkpoint_id,
        "to": b.entry.checkpoint_id,
        "changes": [{"path": c.path, "kind": c.kind, "old": c.old, "new": c.new} for c in changes],
        **{key: {"from": old, "to": new} for key, (old, new) in steps.items()},
    }
    render.document(env, record, _diff_lines(record, changes, steps))
    if exit_code and differs:
        click.get_current_context().exit(1)


_MARKS = {"added": "+", "appended": "+", "removed": "-", "changed": "~"}


def _diff_lines(record: dict[str, Any], changes: list[Any], steps: dict[str, Any]) -> list[str]:
    lines = [f"from {record['from']}", f"to   {record['to']}"]
    for c in changes:
        if c.kind == "changed":
            lines.append(f"~ {c.path}: {render.compact(c.old)} -> {render.compact(c.new)}")
        else:
            value = c.old if c.kind == "removed" else c.new
            label = " (appended)" if c.kind == "appended" else ""
            lines.append(f"{_MARKS[c.kind]} {c.path}{label}: {render.compact(value, 90)}")
    lines += [] if changes else ["values: no difference"]
    lines += [
        f"{key}: {', '.join(old) or '-'} -> {', '.join(new) or '-'}"
        for key, (old, new) in steps.items()
        if old != new
    ]
    return lines


@click.command()
@click.option("--prefix", default="", metavar="P", help="Only threads whose id starts with P.")
@click.option(
    "--bytes", "sizes", is_flag=True,
    help="Also the bytes each thread takes (reads every checkpoint of the thread).",
)  # fmt: skip
@output_options
@pass_env
def threads(env: Env, prefix: str, sizes: bool) -> None:
    """List threads: checkpoints, last step, last activity, status (done, paused, failed,
    interrupted), and with --bytes the bytes each takes in the file.

    \b
    Example:
        ttcli threads --prefix order:
        ttcli threads --bytes --format csv > threads.csv
    """
    found = inspect.threads(env.reader(), prefix, sizes=sizes)
    columns = ["thread", "ns", "checkpoints", "last step", "last activity", "status"]
    records = [
        {
            "thread_id": t.thread_id,
            "checkpoint_ns": t.checkpoint_ns,
            "checkpoints": t.checkpoints,
            "last_step": t.last_step,
            "last_activity": t.last_activity,
            "status": t.status,
        }
        | ({"bytes": t.bytes} if sizes else {})
        for t in found
    ]
    table = [
        [t.thread_id, t.checkpoint_ns or "-", t.checkpoints, t.last_step, t.last_activity, t.status]
        + (["-" if t.bytes is None else t.bytes] if sizes else [])
        for t in found
    ]
    fields = [*THREAD_FIELDS, *(["bytes"] if sizes else [])]
    render.rows(
        env, records, columns + (["bytes"] if sizes else []), table, fields=fields,
        empty=f"no threads whose id starts with {prefix!r}" if prefix else "no threads",
    )  # fmt: skip


THREAD_FIELDS = [
    "thread_id", "checkpoint_ns", "checkpoints", "last_step", "last_activity", "status"
]  # fmt: skip


@click.command()
@output_options
@pass_env
def verify(env: Env) -> None:
    """Check the database: SQLite's integrity check (a file), SQL objects ttcli did not
    create, each thread's kept count and the rows' invariants, then every checkpoint, its
    values and pending writes decoded. Reports values of types that are not rebuilt (kept as
    data; nothing is ever imported) and exits 6 if anything is broken or forged.

    \b
    Example:
        ttcli verify --db agent.db
        ttcli verify --db postgresql://app@db.internal/agents
    """
    from ttcli.ops import verify as checks  # here: `history` and `show` never load it

    report = checks.verify(env.reader())
    render.rows(
        env,
        [vars_of(f) for f in report.findings],
        ["thread", "checkpoint", "where", "finding", "problem"],
        [
            [f.thread_id, f.checkpoint_id, f.where, f.what, "yes" if f.problem else "no"]
            for f in report.findings
        ],
        fields=FINDING_FIELDS,
        empty="",
    )
    summary = (
        f"checked {report.checkpoints} checkpoints in {report.threads} threads: "
        f"{len(report.problems)} problems"
    )
    click.echo(summary, err=env.format != "table")
    if report.problems:
        click.get_current_context().exit(6)


FINDING_FIELDS = ["thread_id", "checkpoint_id", "where", "what", "problem"]


def vars_of(finding: Finding) -> dict[str, Any]:
    return {k: getattr(finding, k) for k in FINDING_FIELDS}
