"""The one exception tree of ttcli.

Messages say what was wrong and which thing it was, in one line.

    TtcliError
    ├── GraphDefinitionError (ValueError)   bad graph at add_node/add_edge/compile time
    ├── InvalidUpdateError                  a write the state cannot take
    ├── EmptyInputError                     nothing to run: no input and no saved state
    ├── GraphRecursionError (RecursionError) recursion_limit supersteps without finishing
    ├── ConfigError (ValueError)            a config the runtime cannot use
    ├── InputError (ValueError)             a command-line value that cannot be used (JSON, ref...)
    │   └── AmbiguousRefError               a ref prefix that several checkpoints share
    ├── InvalidFilterError (ValueError)     a history filter key that is not a plain name
    ├── AnswerConflictError (ValueError)    a second, different answer to one interrupt
    ├── SerializationError (TypeError)      a state value the saver cannot store (names its path)
    ├── StorageError                        the database file cannot be used as a ttcli database
    │   ├── SchemaVersionError              written by a newer ttcli
    │   ├── CorruptValueError               a stored value that does not decode
    │   ├── DatabaseBusyError               still locked after the busy timeout, or the server
    │   │                                   unreachable (safe to retry)
    │   └── LangGraphFileError              a LangGraph SqliteSaver file, for a command that writes
    ├── NotFoundError (LookupError)
    │   ├── CheckpointNotFoundError         a checkpoint id that is not in the thread
    │   ├── ThreadNotFoundError             a thread with no checkpoints
    │   └── TargetNotFoundError             a graph TARGET that does not import
    └── NodeError                           a node raised while the command line ran a graph

Exception names and messages that LangGraph users catch (`InvalidUpdateError`,
`GraphRecursionError`, `EmptyInputError`, `ValueError("No checkpointer set")`) keep
LangGraph's wording, so ported code keeps working.
"""

from __future__ import annotations


class TtcliError(Exception):
    """Base class of every error ttcli raises on purpose."""


class GraphDefinitionError(TtcliError, ValueError):
    """The graph cannot be built as declared."""


class InvalidUpdateError(TtcliError):
    """A node or update_state wrote something the state cannot take."""


class EmptyInputError(TtcliError):
    """A run was asked to start without input and without saved state."""


class GraphRecursionError(TtcliError, RecursionError):
    """The graph ran recursion_limit supersteps without reaching a stop."""


class ConfigError(TtcliError, ValueError):
    """The run config is missing something the runtime needs."""


class UnknownSendError(ConfigError):
    """A checkpoint a run goes on from holds a Send to a node the graph does not have: the
    graph changed since the Send was stored."""


class InputError(TtcliError, ValueError):
    """A value given on the command line that cannot be used as given."""


class AmbiguousRefError(InputError):
    """A checkpoint ref (a prefix or a short id) that several checkpoints match."""

    def __init__(
        self, text: str, thread_id: str, candidates: list[str], *, total: int | None = None
    ) -> None:
        total = len(candidates) if total is None else total  # when only some were read
        shown = ", ".join(candidates[:5]) + (", ..." if total > 5 else "")
        super().__init__(
            f"checkpoint ref '{text}' is ambiguous in thread '{thread_id}': it matches "
            f"{total} ids ({shown}); give more characters"
        )
        self.candidates = candidates


class InvalidFilterError(TtcliError, ValueError):
    """A metadata filter key that could reach the storage layer as code."""


class AnswerConflictError(TtcliError, ValueError):
    """An interrupt already has a stored answer and another one was sent: the first stays."""

    def __init__(self, answer: object, thread_id: str) -> None:
        super().__init__(
            f"an interrupt of thread '{thread_id}' was already answered with {answer!r}: "
            "send the same answer to go on"
        )
        self.answer = answer


class SerializationError(TtcliError, TypeError):
    """A value that cannot be stored; the message names its state path and type."""


class StorageError(TtcliError):
    """The database cannot be read or written as a ttcli database."""


class SchemaVersionError(StorageError):
    """The file uses a schema version newer than this ttcli understands."""


class CorruptValueError(StorageError):
    """Stored bytes that do not decode; never turned into None."""


class DatabaseBusyError(StorageError):
    """Another process held the database lock past the busy timeout, or the database
    server did not answer: safe to retry."""


class LangGraphFileError(StorageError):
    """A LangGraph SqliteSaver file where a ttcli database is needed: ttcli reads one (the
    reading commands, `import`) but never writes it."""


class NotFoundError(TtcliError, LookupError):
    """Something addressed by name or id does not exist."""

    def __str__(self) -> str:
        # LookupError would quote the message like a dict key
        return str(self.args[0]) if self.args else ""


class CheckpointNotFoundError(NotFoundError):
    """A checkpoint id that the thread does not hold."""

    def __init__(self, checkpoint_id: str, thread_id: str, reason: str = "") -> None:
        super().__init__(
            f"checkpoint '{checkpoint_id}' not found in thread '{thread_id}'"
            + (f": {reason}" if reason else "")
        )
        self.checkpoint_id = checkpoint_id
        self.thread_id = thread_id


class ThreadNotFoundError(NotFoundError):
    """A thread that has no checkpoints."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread '{thread_id}' not found: it has no checkpoints")
        self.thread_id = thread_id


class TargetNotFoundError(NotFoundError):
    """A graph TARGET that does not import or names nothing usable."""


class NodeError(TtcliError):
    """A node of the graph raised; the thread keeps the error and can be resumed."""
