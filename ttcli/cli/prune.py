"""`ttcli prune`: TTL retention with an optional archive; safe to run from cron."""

from __future__ import annotations

import sys
from contextlib import closing
from datetime import UTC, datetime
from typing import Any

import click

from ttcli.cli import render
from ttcli.cli.main import Env, output_options, pass_env
from ttcli.configs import CheckpointRef
from ttcli.errors import InputError
from ttcli.ops.durations import moment_before
from ttcli.ops.prune import (
    Progress,
    PrunePolicy,
    PruneReport,
    ThreadPlan,
    execute_prune,
    plan_prune,
    require_thread,
)
from ttcli.savers.locate import is_dsn, open_saver, require_lasting
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sqlite.saver import same_file


@click.command()
@click.option(
    "--older-than",
    metavar="DUR",
    help="Delete checkpoints older than DUR (90s, 30m, 12h, 7d, 2w or a date)...",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    metavar="N",
    help="...but keep each thread's newest N, so it stays resumable (--idle keeps none).",
)
@click.option(
    "--idle",
    metavar="DUR",
    help="Delete whole threads whose newest checkpoint, in every namespace, is older than DUR.",
)
@click.option("--thread", "-t", metavar="ID", help="Only this thread.")
@click.option("--prefix", default="", metavar="P", help="Only threads whose id starts with P.")
@click.option(
    "--archive",
    metavar="PATH",
    help="First copy what goes into the ttcli database at PATH (a file, or a "
    "postgresql:// DSN; not :memory: nor a file: URI), and check it; each page is on "
    "the disk there before its rows are deleted here.",
)
@click.option("--yes", is_flag=True, help="Delete. Without it, print the plan and change nothing.")
@click.option(
    "--vacuum", is_flag=True, help="Give the freed space back to the file system afterwards."
)
@output_options
@pass_env
def prune(
    env: Env, older_than: str | None, keep_last: int, idle: str | None, thread: str | None,
    prefix: str, archive: str | None, yes: bool, vacuum: bool,
) -> None:  # fmt: skip
    """Delete old checkpoints (TTL), optionally archiving them first. Every kept checkpoint
    reads exactly as before; history just ends earlier. Works in short batches, so the
    application can keep writing; re-running after a crash finishes the job.

    \b
    Example:
        ttcli prune --older-than 7d                      # the plan: what would go
        ttcli prune --older-than 7d --archive old.db --yes
        ttcli prune --idle 30d --prefix order: --yes --vacuum
        ttcli --db postgresql://app@db/agents prune --older-than 30d --archive cold.db --yes
    """
    if older_than is None and idle is None:
        raise click.UsageError("say what to delete: --older-than DUR and/or --idle DUR")
    if thread is not None and prefix:
        raise click.UsageError(
            "give --thread ID or --prefix P, not both: one thread, or the threads whose id "
            "starts with P"
        )
    if archive is not None:
        require_lasting("--archive", archive)
    now = datetime.now(UTC)
    policy = PrunePolicy(
        older_than=moment_before(older_than, now) if older_than else None,
        keep_last=keep_last,
        idle_since=moment_before(idle, now) if idle else None,
        thread=thread,
        prefix=prefix,
    )
    saver = env.saver()
    if thread is not None:
        require_thread(saver, thread)
    plans = plan_prune(saver, policy)
    if not yes:
        doomed = sum(p.count for p in plans)
        estimate = sum((saver.thread_bytes(_config(p)) or 0) * p.count // p.total for p in plans)
        threads = len({p.thread_id for p in plans})
        _print(env, PruneReport(threads, doomed, 0, plans), estimate, done=False)
        return
    # counted as rows and values are deleted, not by reading the threads before and after: a
    # 1,000,000-checkpoint thread costs nothing extra to account for
    report = _delete(saver, plans, archive, env.busy_timeout)
    if vacuum:
        saver.vacuum()
    _print(env, report, saver.deleted_bytes, done=True)


def _config(plan: ThreadPlan) -> dict[str, Any]:
    return CheckpointRef(plan.thread_id, plan.checkpoint_ns).to_config()


def _delete(
    saver: SqlSaver, plans: list[ThreadPlan], archive: str | None, busy_timeout: float
) -> PruneReport:
    if not sys.stderr.isatty():  # cron: no progress bar
        return _execute(saver, plans, archive, busy_timeout, None)
    total = sum(p.count for p in plans)
    with click.progressbar(length=total, label="pruning", file=sys.stderr) as bar:
        return _execute(
            saver, plans, archive, busy_timeout, lambda done, _: bar.update(done - bar.pos)
        )


def _execute(
    saver: SqlSaver,
    plans: list[ThreadPlan],
    archive: str | None,
    busy_timeout: float,
    progress: Progress | None,
) -> PruneReport:
    if archive is not None and not is_dsn(archive) and same_file(archive, saver.path):
        raise _into_itself(archive)  # refused before the file could be created
    if archive is None or not plans:  # nothing to archive: no archive file either
        return execute_prune(saver, plans, progress=progress)
    # the archive waits for its other writers as long as the database does (`--busy-timeout`)
    with closing(open_saver(archive, busy_timeout=busy_timeout)) as target:
        if saver.stores_in(target):
            raise _into_itself(target.path)  # as messages name it: no password
        return execute_prune(saver, plans, archive=target, progress=progress)


def _into_itself(archive: str) -> InputError:
    return InputError(
        f"--archive {archive} is the database being pruned, or a file of it (-wal, -shm, "
        "-journal): archive elsewhere"
    )


def _print(env: Env, report: PruneReport, size: int, *, done: bool) -> None:
    """The plan or the outcome, ending in one summary line in every format."""
    verb = "pruned" if done else "would prune"
    freed = "freed" if done else "about"
    summary = (
        f"{verb} {report.checkpoints} checkpoints in {report.threads} threads, "
        f"{freed} {size} bytes"
        + (f", {report.archived} archived" if report.archived else "")
        + (f", {report.left} changed meanwhile: left for the next run" if report.left else "")
    )
    plan = [
        {
            "thread_id": p.thread_id,
            "checkpoint_ns": p.checkpoint_ns,
            "delete": p.count,
            "keep": p.total - p.count,
        }
        for p in report.plans
    ]
    record = {
        "done": done,
        "threads": report.threads,
        "checkpoints": report.checkpoints,
        "bytes": size,
        "archived": report.archived,
        "left": report.left,
        "plan": plan,
    }
    lines = [
        f"  {p.thread_id}{f' [{p.checkpoint_ns}]' if p.checkpoint_ns else ''}: "
        f"delete {p.count}, keep {p.total - p.count}"
        for p in report.plans
    ]
    render.document(env, record, [*([] if done else lines), summary])
    if not done and report.checkpoints:
        click.echo("nothing was deleted: add --yes to delete", err=True)
