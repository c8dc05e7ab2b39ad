"""Where a thread's subgraphs ran: the namespaces one level below a namespace, each with the
parent checkpoint and the task that ran it, so that `show` and `tree` put a subgraph's
checkpoints under that task.

A subgraph's namespace is its parent's, then `<node>:<task id>` (LangGraph's format, joined
with `|`); a task that runs the same subgraph again saves the n-th run under `...|<n>`. Each
subgraph checkpoint's metadata `parents` names the parent checkpoint its task was planned at.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttcli.configs import CheckpointRef
from ttcli.ops.inspect import Entry, entry
from ttcli.savers.base import BaseSaver

#: between a namespace's parts, and between a part's node and task id
NS_SEP, NS_END = "|", ":"


@dataclass(frozen=True, slots=True)
class Subgraph:
    """A subgraph run by one task of the namespace above it."""

    checkpoint_ns: str
    task_name: str
    task_id: str
    #: the checkpoint of the namespace above at which the task was planned, if its
    #: checkpoints say
    parent_checkpoint_id: str | None
    checkpoints: int
    latest: Entry


def below(saver: BaseSaver, ref: CheckpointRef) -> list[Subgraph]:
    """The subgraphs run by the tasks of `ref`'s namespace (not the subgraphs they ran in
    turn), in namespace order."""
    found = []
    for summary in saver.list_threads(ref.thread_id):
        ns = summary.checkpoint_ns
        if summary.thread_id != ref.thread_id or not _directly_below(ns, ref.checkpoint_ns):
            continue
        newest = saver.list_metadata(CheckpointRef(ref.thread_id, ns).to_config(), limit=1)
        if not newest:
            continue
        parents = newest[0].metadata.get("parents") or {}
        name, _, task_id = _task_part(ns).partition(NS_END)
        parent_id = parents.get(ref.checkpoint_ns)
        found.append(
            Subgraph(ns, name, task_id, parent_id if isinstance(parent_id, str) else None,
                     summary.checkpoints, entry(newest[0]))
        )  # fmt: skip
    return found


def _parts(ns: str) -> list[str]:
    """The task parts of a namespace: `a:1|b:2|1` -> [a:1, b:2] (a trailing number counts
    a repeated run of the same task's subgraph, not a level)."""
    return [part for part in ns.split(NS_SEP) if NS_END in part] if ns else []


def is_below(ns: str, above: str) -> bool:
    """Whether namespace `ns` is a subgraph's, at any depth, inside namespace `above`."""
    return ns != above and (not above or ns.startswith(above + NS_SEP))


def _directly_below(ns: str, above: str) -> bool:
    return is_below(ns, above) and len(_parts(ns)) == len(_parts(above)) + 1


def _task_part(ns: str) -> str:
    return _parts(ns)[-1]
