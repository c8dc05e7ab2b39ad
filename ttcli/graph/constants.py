"""Reserved node and channel names, spelled as LangGraph spells them."""

from __future__ import annotations

from typing import Final

START: Final = "__start__"
END: Final = "__end__"

#: pseudo-writer of the raw input, and of writes made outside any node
INPUT: Final = "__input__"
#: versions_seen entry that remembers where the last breakpoint fired; also the pending write
#: channel that holds the interrupt a task raised
INTERRUPT: Final = "__interrupt__"
#: pending write channel holding the answers given to a task's interrupts
RESUME: Final = "__resume__"
ERROR: Final = "__error__"
COPY: Final = "__copy__"
#: marks a task that finished without writing anything, so a resume does not re-run it
NO_WRITES: Final = "__no_writes__"

RESERVED_NODES: Final = frozenset({START, END, INPUT, INTERRUPT, COPY})
RESERVED_CHARS: Final = ("|", ":")

#: Task path kind for nodes triggered by edges (LangGraph's spelling).
PULL: Final = "__pregel_pull"
#: Task path kind for tasks started by a Send.
PUSH: Final = "__pregel_push"
#: The channel that collects Sends for the next superstep.
TASKS: Final = "__pregel_tasks"
#: Task id of writes made outside any task: a Command's update given as input.
NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"


def branch_channel(node: str) -> str:
    """The trigger channel an edge or branch writes to wake `node`."""
    return f"branch:to:{node}"


def join_channel(sources: tuple[str, ...], node: str) -> str:
    """The barrier channel of `add_edge([a, b], node)`."""
    return f"join:{'+'.join(sources)}:{node}"
