"""TTL retention: choosing what goes (a pure policy) and deleting it, archived first if asked.

The deletion contract (SPEC §5): every kept checkpoint reads exactly as before (values, next,
tasks, metadata), pending writes of kept checkpoints stay, history simply ends earlier. With
an archive, what goes is first copied into another ttcli database and checked there; a crash
at any moment loses nothing, and running the same prune again finishes the job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ttcli.configs import CheckpointRef
from ttcli.errors import StorageError, ThreadNotFoundError
from ttcli.ops.copy import copy_checkpoint
from ttcli.ops.fork import last_activity
from ttcli.ops.inspect import threads_with_prefix
from ttcli.savers.base import BaseSaver, CheckpointTuple, ThreadSummary
from ttcli.uuid6 import lowest_id_at

BATCH_SIZE = 500  # checkpoints per delete transaction, so concurrent writers are not starved


@dataclass(frozen=True, slots=True)
class PrunePolicy:
    """What to delete. Times are absolute: the caller turns "7d" into now - 7 days."""

    #: checkpoints created before this go, except each thread's newest `keep_last`
    older_than: datetime | None = None
    keep_last: int = 1
    #: whole threads whose newest checkpoint is older than this go
    idle_since: datetime | None = None
    #: only this thread, or only threads whose id starts with `prefix`
    thread: str | None = None
    prefix: str = ""

    def __post_init__(self) -> None:
        if self.keep_last < 0:
            raise ValueError("keep_last must be 0 or more")


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    """What a prune does to one thread (in one namespace).

    Ids are time-ordered, so what a policy selects is always the checkpoints below some id:
    the plan holds that bound and a count, never the ids, and a prune of a 1,000,000-checkpoint
    thread needs no more memory than one of 1,000.
    """

    thread_id: str
    checkpoint_ns: str
    #: the checkpoints whose id is below this one go
    below: str
    #: how many go
    count: int
    #: how many the thread has now
    total: int


@dataclass
class PruneReport:
    """What a prune did (or, for a plan, would do)."""

    threads: int = 0
    checkpoints: int = 0
    archived: int = 0
    plans: list[ThreadPlan] = field(default_factory=list)


Progress = Callable[[int, int], None]  # (checkpoints done, checkpoints in total)


def plan_prune(saver: BaseSaver, policy: PrunePolicy) -> list[ThreadPlan]:
    """The threads and checkpoints `policy` selects; nothing is changed."""
    if policy.older_than is None and policy.idle_since is None:
        return []
    plans = []
    for summary in _threads(saver, policy):
        config = CheckpointRef(summary.thread_id, summary.checkpoint_ns).to_config()
        below = _bound(saver, summary, policy)
        count = 0 if below is None else saver.count_checkpoints(config, below=below)
        if below is not None and count:
            plans.append(
                ThreadPlan(
                    summary.thread_id, summary.checkpoint_ns, below, count, summary.checkpoints
                )
            )
    return plans


def _threads(saver: BaseSaver, policy: PrunePolicy) -> list[ThreadSummary]:
    found = threads_with_prefix(
        saver, policy.thread if policy.thread is not None else policy.prefix
    )
    return [t for t in found if policy.thread is None or t.thread_id == policy.thread]


def require_thread(saver: BaseSaver, thread_id: str) -> None:
    """Check that a thread named for pruning exists: a typo must not read as "nothing to do".

    Raises:
        ThreadNotFoundError: it has no checkpoints in any namespace.
    """
    if not any(t.thread_id == thread_id for t in threads_with_prefix(saver, thread_id)):
        raise ThreadNotFoundError(thread_id)


def _bound(saver: BaseSaver, summary: ThreadSummary, policy: PrunePolicy) -> str | None:
    """The id below which the policy selects the thread's checkpoints (None: nothing).

    Ids are time-ordered: "created before t" is "below the smallest id made at t". A bound
    in the past also leaves alone whatever a writer adds after the plan was made.
    """
    if policy.idle_since is not None:
        idle = lowest_id_at(policy.idle_since)
        if summary.latest_id < idle and _idle(saver, summary, policy.idle_since):
            return idle
    if policy.older_than is None:
        return None
    below = lowest_id_at(policy.older_than)
    if policy.keep_last:
        config = CheckpointRef(summary.thread_id, summary.checkpoint_ns).to_config()
        newest = saver.checkpoint_ids(config, limit=policy.keep_last)
        if len(newest) < policy.keep_last:
            return None
        below = min(below, newest[-1])
    return below


def _idle(saver: BaseSaver, summary: ThreadSummary, since: datetime) -> bool:
    """Whether a thread whose checkpoints are all older than `since` was not copied since."""
    info = saver.get_thread_info(summary.thread_id)
    return last_activity(summary.latest_ts, info) < since.isoformat()


def execute_prune(
    saver: BaseSaver,
    plans: Sequence[ThreadPlan],
    *,
    archive: BaseSaver | None = None,
    progress: Progress | None = None,
) -> PruneReport:
    """Delete what the plans select, archiving it first when `archive` is given."""
    report = PruneReport(plans=list(plans))
    total = sum(plan.count for plan in plans)
    for plan in plans:
        ref = CheckpointRef(plan.thread_id, plan.checkpoint_ns)
        if archive is not None:
            report.archived += _archive(saver, ref, plan.below, archive)
        # newest first: whatever is left between batches still reads whole; blobs are
        # collected once, with the thread's last batch (collecting after each batch would
        # read every remaining checkpoint of the thread each time)
        while batch := saver.checkpoint_ids(
            ref.to_config(), below=plan.below, limit=BATCH_SIZE + 1
        ):
            last = len(batch) <= BATCH_SIZE
            batch = batch[:BATCH_SIZE]
            saver.delete_checkpoints(ref.to_config(), batch, collect=last)
            _advance(progress, report, len(batch), total)
            if last:
                break
        report.threads += 1
    return report


def _advance(progress: Progress | None, report: PruneReport, done: int, total: int) -> None:
    report.checkpoints += done
    if progress is not None:
        progress(report.checkpoints, total)


def _archive(saver: BaseSaver, ref: CheckpointRef, below: str, archive: BaseSaver) -> int:
    """Copy what goes, oldest first (parents before children) and check it, committing the
    archive once per batch; only the batch boundaries are held in memory. Savers that can
    copy their stored rows into the archive do (much faster than value by value)."""
    copied = saver.copy_rows(ref.to_config(), below, archive)
    if copied is not None:
        return copied
    bounds = [below]
    while page := saver.checkpoint_ids(ref.to_config(), below=bounds[-1], limit=BATCH_SIZE):
        bounds.append(page[-1])
    copied = 0
    for bound in reversed(bounds[:-1]):
        page = saver.checkpoint_ids(ref.to_config(), below=bound, limit=BATCH_SIZE)
        with archive.batch():
            for checkpoint_id in reversed(page):
                copied += _archive_one(saver, ref, checkpoint_id, archive)
    return copied


def _archive_one(
    saver: BaseSaver, ref: CheckpointRef, checkpoint_id: str, archive: BaseSaver
) -> int:
    saved = saver.get_tuple(ref.at(checkpoint_id).to_config())
    if saved is None:
        return 0
    copied = copy_checkpoint(saver, saved, archive, ref)
    kept = archive.get_tuple(ref.at(checkpoint_id).to_config())
    if kept is None or _differs(saver, saved, archive, kept):
        raise StorageError(
            f"archive check failed for checkpoint '{checkpoint_id}' of thread "
            f"'{ref.thread_id}': nothing was deleted"
        )
    return int(copied)


def _differs(
    saver: BaseSaver, saved: CheckpointTuple, archive: BaseSaver, kept: CheckpointTuple
) -> bool:
    return (
        saved.checkpoint != kept.checkpoint
        or saved.metadata != kept.metadata
        or saved.parent_config != kept.parent_config
        or saver.get_writes(saved.config) != archive.get_writes(kept.config)
    )
