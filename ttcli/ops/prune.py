"""TTL retention: choosing what goes (a pure policy) and deleting it, archived first if asked.

The deletion contract (SPEC §5): every kept checkpoint reads exactly as before (values, next,
tasks, metadata), pending writes of kept checkpoints stay, history simply ends earlier.
`keep_last` is enforced by counting rows, in the transaction that deletes. With an archive,
prune deletes exactly the rows it copied and verified, never "everything below a bound": each
page of ids is read, copied into the archive and checked there inside the live file's write
transaction that then deletes it, so no row commits or changes in between; a row the archive
had already (a stopped run copied it) is compared by its pending writes and copied again if
they grew. Rows are compared in their stored form (`BaseSaver.stored_tuple`): an
application's class may have changed since a value was stored, and must not decide what is
deleted, nor stop a prune. A crash at any moment loses nothing (at worst rows are in both
files), and running the same prune again finishes the job.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import ConfigError, StorageError, ThreadNotFoundError
from ttcli.ops.copy import copy_checkpoint
from ttcli.ops.fork import last_activity
from ttcli.ops.inspect import threads_with_prefix
from ttcli.savers.base import BaseSaver, Checkpoint, TaskWrite, ThreadSummary
from ttcli.savers.serde import VERBATIM
from ttcli.uuid6 import lowest_id_at

BATCH_SIZE = 500  # checkpoints per delete transaction, so concurrent writers are not starved


@dataclass(frozen=True, slots=True)
class PrunePolicy:
    """What to delete. Times are absolute: the caller turns "7d" into now - 7 days.

    Raises:
        ValueError: a negative `keep_last`, or a moment before 1970 (no checkpoint id names
            one: a typo, which must not select anything).
    """

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
        for moment in (self.older_than, self.idle_since):
            if moment is not None and moment.timestamp() < 0:
                raise ValueError(f"{moment.isoformat()} is before 1970: no checkpoint is older")


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    """What a prune does to one thread (in one namespace).

    Ids are time-ordered, so what a policy selects is the checkpoints below some id, less
    the thread's newest `keep_last`: the plan holds that bound and a count, never the ids,
    and a prune of a 1,000,000-checkpoint thread needs no more memory than one of 1,000.
    """

    thread_id: str
    checkpoint_ns: str
    #: the checkpoints whose id is below this one go...
    below: str
    #: how many go
    count: int
    #: how many the thread has now
    total: int
    #: ...except the thread's newest this many, counted again as the prune deletes
    keep_last: int = 0
    #: with `--idle`: the whole thread goes, while it stays idle since this moment in every
    #: namespace (checked again as its rows are deleted: one that went on keeps them)
    idle_since: datetime | None = None


@dataclass
class PruneReport:
    """What a prune did (or, for a plan, would do)."""

    #: threads that lost checkpoints (or, for a plan, would), each counted once
    threads: int = 0
    checkpoints: int = 0
    archived: int = 0
    plans: list[ThreadPlan] = field(default_factory=list)
    #: selected rows not deleted: they changed while being archived and did not compare, or
    #: their thread, selected as idle, went on meanwhile
    left: int = 0


Progress = Callable[[int, int], None]  # (checkpoints done, checkpoints in total)


def plan_prune(saver: BaseSaver, policy: PrunePolicy) -> list[ThreadPlan]:
    """The threads and checkpoints `policy` selects; nothing is changed."""
    if policy.older_than is None and policy.idle_since is None:
        return []
    plans = []
    summaries = _threads(saver, policy)
    namespaces: dict[str, list[ThreadSummary]] = {}
    for summary in summaries:
        namespaces.setdefault(summary.thread_id, []).append(summary)
    for summary in summaries:
        config = CheckpointRef(summary.thread_id, summary.checkpoint_ns).to_config()
        bound = _bound(saver, summary, namespaces[summary.thread_id], policy)
        count = 0 if bound is None else saver.count_checkpoints(config, below=bound[0])
        if bound is not None and count:
            thread, ns, total = summary.thread_id, summary.checkpoint_ns, summary.checkpoints
            plans.append(ThreadPlan(thread, ns, bound[0], count, total, bound[1], bound[2]))
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


def _bound(
    saver: BaseSaver,
    summary: ThreadSummary,
    namespaces: list[ThreadSummary],
    policy: PrunePolicy,
) -> tuple[str, int, datetime | None] | None:
    """The id below which the policy selects the thread's checkpoints, how many of the
    newest it keeps whatever their id, and the moment the thread must stay idle since if it
    goes whole (None: nothing).

    Ids are time-ordered: "created before t" is "below the smallest id made at t". A bound
    in the past also leaves alone whatever a writer adds after the plan was made.
    """
    since = policy.idle_since
    if since is not None and _idle(saver, summary.thread_id, namespaces, since):
        return lowest_id_at(since), 0, since
    if policy.older_than is None:
        return None
    below = lowest_id_at(policy.older_than)
    if policy.keep_last:
        config = CheckpointRef(summary.thread_id, summary.checkpoint_ns).to_config()
        newest = saver.checkpoint_ids(config, limit=policy.keep_last)
        if len(newest) < policy.keep_last:
            return None
        below = min(below, newest[-1])  # only narrows the count of the plan
    return below, policy.keep_last, None


def _idle(
    saver: BaseSaver, thread_id: str, namespaces: list[ThreadSummary], since: datetime
) -> bool:
    """Whether a thread (`namespaces`: it in each of its namespaces) holds only checkpoints
    older than `since` in every namespace, and was not copied since: an idle thread goes
    whole, a subgraph's namespace never before its root."""
    bound = lowest_id_at(since)
    if not namespaces or any(t.latest_id >= bound for t in namespaces):
        return False
    latest_ts = max(t.latest_ts for t in namespaces)
    return _before(last_activity(latest_ts, saver.get_thread_info(thread_id)), since)


def _before(moment: str, since: datetime) -> bool:
    """Whether an ISO time (as ttcli writes them: UTC) is before `since`, compared as times,
    whatever offset `since` was given in; one that reads as no time is never before."""
    try:
        parsed = datetime.fromisoformat(moment)
    except ValueError:
        return False
    # (a naive `since` is local time, as the id bound takes it)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)) < since.astimezone(UTC)


def _idle_now(saver: BaseSaver, thread_id: str, since: datetime) -> bool:
    """`_idle` of the thread as it is now, in every namespace it has now."""
    namespaces = [t for t in saver.list_threads(thread_id) if t.thread_id == thread_id]
    return _idle(saver, thread_id, namespaces, since)


def execute_prune(
    saver: BaseSaver,
    plans: Sequence[ThreadPlan],
    *,
    archive: BaseSaver | None = None,
    progress: Progress | None = None,
) -> PruneReport:
    """Delete what the plans select, archiving it first when `archive` is given.

    Rows are deleted by id, a page at a time, oldest first, each page in one write
    transaction of `saver`: in it the page's ids are read, copied into the archive (which
    commits first) and checked there, and exactly the rows that compare are deleted. A row
    the archive had already (an earlier run was stopped) is compared by its pending writes,
    the only thing of a committed checkpoint that may change, and copied again if they grew;
    one that still does not compare is left for the next run (`PruneReport.left`).
    """
    if archive is not None and saver.stores_in(archive):
        raise ConfigError("cannot archive a database into itself: archive to another file")
    run = _Run(saver, archive, PruneReport(plans=list(plans)), progress)
    run.total = sum(plan.count for plan in plans)
    pruned: set[str] = set()  # a thread counts once, in however many namespaces it lost rows
    for plan in plans:
        before = run.report.checkpoints
        run.delete(CheckpointRef(plan.thread_id, plan.checkpoint_ns), plan)
        if run.report.checkpoints > before:
            pruned.add(plan.thread_id)
    run.report.threads = len(pruned)
    return run.report


@dataclass
class _Run:
    saver: BaseSaver
    archive: BaseSaver | None
    report: PruneReport
    progress: Progress | None
    total: int = 0

    def delete(self, ref: CheckpointRef, plan: ThreadPlan) -> None:
        """Delete the plan's rows a page at a time, oldest first (parents are archived
        before their children; what is left between pages still reads whole), each page
        read in the transaction that deletes it: a row that commits late is either in it,
        and then archived and checked like any other, or left alone. Only the page is held
        in memory. Blobs are collected once, in the last page's transaction: a page reads one
        id more than it takes, to know whether it is the last."""
        config, since = ref.to_config(), None
        while True:
            with self.saver.batch():
                found = self.saver.checkpoint_ids(
                    config, below=plan.below, since=since, limit=BATCH_SIZE + 1, oldest_first=True
                )
                if not found and since is None:
                    return  # nothing is left below the bound (another prune took it)
                last = len(found) <= BATCH_SIZE
                page = found[:BATCH_SIZE][::-1]  # newest first, as a page's work takes it
                doomed = self._doomed(ref, plan, page)
                self.saver.delete_checkpoints(config, doomed, collect=last)
            self.report.checkpoints += len(doomed)
            if self.progress is not None:
                self.progress(self.report.checkpoints, self.total)
            if last:
                return
            since = _after(page[0])

    def _doomed(self, ref: CheckpointRef, plan: ThreadPlan, page: list[str]) -> list[str]:
        """What of a page may go, decided in the transaction that deletes it."""
        if plan.idle_since is not None and not _idle_now(
            self.saver, ref.thread_id, plan.idle_since
        ):
            self.report.left += len(page)  # it went on since the plan: it stays
            return []
        keep: set[str] = set()
        if plan.keep_last:  # counted here: no writer can add a newer row meanwhile
            keep.update(self.saver.checkpoint_ids(ref.to_config(), limit=plan.keep_last))
        doomed = [checkpoint_id for checkpoint_id in page if checkpoint_id not in keep]
        if self.archive is None or not doomed:
            return doomed
        return self._archived(ref, doomed, self.archive)

    def _archived(
        self, ref: CheckpointRef, checkpoint_ids: list[str], archive: BaseSaver
    ) -> list[str]:
        """Copy these rows (newest first) into the archive, checked before it commits, and
        return those it now holds exactly as the live file does (called in the live file's
        write transaction, so they cannot change before they are deleted)."""
        earlier = set(_present(archive, ref, checkpoint_ids))
        with archive.batch(durable=True):  # on the disk before the live rows go
            self.report.archived += _copy_page(self.saver, ref, checkpoint_ids, archive)
        now = set(_present(archive, ref, checkpoint_ids))
        verified = set(self._verified(ref, [i for i in checkpoint_ids if i in earlier], archive))
        return [i for i in checkpoint_ids if i in verified or (i in now and i not in earlier)]

    def _verified(
        self, ref: CheckpointRef, checkpoint_ids: list[str], archive: BaseSaver
    ) -> list[str]:
        """Of rows the archive had before, those it holds as the live file does: a committed
        checkpoint never changes but for its pending writes, so these are compared; a row
        whose writes differ is copied again and compared whole, and left for the next run
        if it still does not compare. That comparison, made once the archive committed and
        inside the live file's transaction, is what lets such a row go: a copy value by
        value checks nothing itself."""
        if not checkpoint_ids:
            return []
        live = self.saver.stored_pending_writes(ref.to_config(), checkpoint_ids)
        kept = archive.stored_pending_writes(ref.to_config(), live)
        stale = [i for i in checkpoint_ids if i in live and not VERBATIM.same(kept.get(i), live[i])]
        if stale:
            self.report.archived += _refresh(self.saver, ref, stale, archive)
            stale = [i for i in stale if not _holds(archive, self.saver, ref, i)]
            self.report.left += len(stale)
        return [i for i in checkpoint_ids if i in live and i not in stale]


def _copy_page(
    saver: BaseSaver, ref: CheckpointRef, checkpoint_ids: list[str], archive: BaseSaver
) -> int:
    """Copy the rows the archive lacks of a page (newest first) and those below it, as
    stored rows where the saver can (much faster than value by value; they are checked as
    they are copied), else value by value, oldest first, checked here."""
    below = _after(checkpoint_ids[0])
    if below is not None:
        copied = saver.copy_rows(ref.to_config(), below, archive)
        if copied is not None:
            return copied
    fresh = _copy(saver, ref, reversed(checkpoint_ids), archive)
    _check(saver, ref, fresh, archive)
    return len(fresh)


def _check(
    saver: BaseSaver, ref: CheckpointRef, checkpoint_ids: list[str], archive: BaseSaver
) -> None:
    for checkpoint_id in checkpoint_ids:
        if not _holds(archive, saver, ref, checkpoint_id):
            raise StorageError(
                f"archive check failed for checkpoint '{checkpoint_id}' of thread "
                f"'{ref.thread_id}': nothing of it was deleted"
            )


def _copy(
    saver: BaseSaver, ref: CheckpointRef, checkpoint_ids: Iterable[str], archive: BaseSaver
) -> list[str]:
    """Copy these rows into the archive (in this order); returns the ids it did not have."""
    copied = []
    for checkpoint_id in checkpoint_ids:
        saved = saver.get_tuple(_at(ref, checkpoint_id))
        if saved is not None and copy_checkpoint(saver, saved, archive, ref):
            copied.append(checkpoint_id)
    return copied


def _refresh(
    saver: BaseSaver, ref: CheckpointRef, checkpoint_ids: list[str], archive: BaseSaver
) -> int:
    """Copy these rows (newest first) into the archive again, replacing the copies it has,
    in one archive transaction; returns how many it did not have. Stored rows are copied
    where the saver can (with the rows below them the archive lacks): a value is then never
    decoded and encoded again, which could change what it decodes to elsewhere."""
    present = _present(archive, ref, checkpoint_ids)
    below = _after(checkpoint_ids[0])
    with archive.batch(durable=True):
        if present:
            archive.delete_checkpoints(ref.to_config(), present)
        if below is None or saver.copy_rows(ref.to_config(), below, archive) is None:
            _copy(saver, ref, reversed(checkpoint_ids), archive)  # oldest first
    return len(checkpoint_ids) - len(present)


#: what a checkpoint holds, as compared between the live file and the archive
Content = tuple[Checkpoint, dict[str, Any], RunnableConfig | None, list[TaskWrite]]


def _holds(archive: BaseSaver, saver: BaseSaver, ref: CheckpointRef, checkpoint_id: str) -> bool:
    """Whether the archive holds the checkpoint as the saver does."""
    return VERBATIM.same(_content(archive, ref, checkpoint_id), _content(saver, ref, checkpoint_id))


def _content(saver: BaseSaver, ref: CheckpointRef, checkpoint_id: str) -> Content | None:
    """What a checkpoint holds, in its stored form: the same in both files whatever the
    application's classes have become since (one given a required field rebuilds nothing)."""
    saved = saver.stored_tuple(_at(ref, checkpoint_id))
    if saved is None:
        return None
    writes = saver.stored_pending_writes(ref.to_config(), [checkpoint_id])
    return saved.checkpoint, saved.metadata, saved.parent_config, writes.get(checkpoint_id, [])


def _present(saver: BaseSaver, ref: CheckpointRef, checkpoint_ids: list[str]) -> list[str]:
    """Which of these ids (newest first) the saver has, read as one range of ids."""
    if not checkpoint_ids:
        return []
    newest, oldest = checkpoint_ids[0], checkpoint_ids[-1]
    found = set(saver.checkpoint_ids(ref.to_config(), below=_after(newest), since=oldest))
    return [i for i in checkpoint_ids if i in found]


def _after(checkpoint_id: str) -> str | None:
    """The id right after this one (None after the largest)."""
    value = uuid.UUID(checkpoint_id).int + 1
    return None if value >> 128 else str(uuid.UUID(int=value))


def _at(ref: CheckpointRef, checkpoint_id: str) -> RunnableConfig:
    return ref.at(checkpoint_id).to_config()
