"""The `ttcli` group: global options, opening the database, and errors -> exit codes.

Exit codes (README, "Exit codes"): 0 success, 1 a node raised or `diff --exit-code` found a
difference, 2 usage error, 3 not found, 4 paused, 5 database busy, 6 unreadable data, 130
interrupted by Ctrl-C.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from ttcli.errors import (
    AnswerConflictError,
    ConfigError,
    DatabaseBusyError,
    EmptyInputError,
    GraphDefinitionError,
    InputError,
    InvalidFilterError,
    InvalidUpdateError,
    LangGraphFileError,
    NodeError,
    NotFoundError,
    StorageError,
    TtcliError,
)

if TYPE_CHECKING:
    from pathlib import Path

    from ttcli.savers.base import BaseSaver
    from ttcli.savers.sql.saver import SqlSaver

FORMATS = ("table", "json", "jsonl", "csv")
#: formats that draw a picture: `tree` and `graph` only
PICTURES = ("mermaid", "dot")

PAUSED = 4
INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
RECURSION_LIMIT = 10_000
EXIT_CODES: list[tuple[type[Exception], int]] = [
    (NodeError, 1),
    (InputError, 2),
    (InvalidFilterError, 2),
    (AnswerConflictError, 2),
    (InvalidUpdateError, 2),
    (EmptyInputError, 2),
    (ConfigError, 2),
    (NotFoundError, 3),
    (GraphDefinitionError, 3),
    (DatabaseBusyError, 5),
    (StorageError, 6),
]

F = TypeVar("F", bound=Callable[..., Any])


class Failure(click.ClickException):
    """An error with its documented exit code; click prints `Error: <message>` on stderr."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        # click declares exit_code per class but reads it from the instance
        self.exit_code = exit_code  # type: ignore[misc]


#: command name -> module that defines it; imported only when the command runs, so that
#: `ttcli history` never loads the runtime
COMMANDS = {
    "run": "write",
    "update": "write",
    "replay": "write",
    "resume": "write",
    "fork": "write",
    "graph": "graph",
    "history": "read",
    "blame": "blame",
    "show": "read",
    "diff": "read",
    "threads": "read",
    "tree": "tree",
    "prune": "prune",
    "verify": "read",
    "import": "imports",
}


class TtcliGroup(click.Group):
    """Loads commands lazily, and turns every ttcli error into one line on stderr with its
    exit code, in one place."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        loaded = importlib.import_module(f"ttcli.cli.{module}")
        name = cmd_name.replace("-", "_")
        found = getattr(loaded, name, None) or getattr(loaded, f"{name}_")  # import_
        assert isinstance(found, click.Command)
        return found

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        # the commands of cli/read.py, cli/blame.py and cli/tree.py only read: they open the
        # file so that it never changes
        ctx.ensure_object(Env).readonly = COMMANDS.get(name or "") in ("read", "blame", "tree")
        return name, command, rest

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:  # `ttcli` alone: the help, not a usage error
            click.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:  # fmt: skip
        for arg in args:
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:  # bytes that are not UTF-8 arrive as lone surrogates
                given = arg.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
                raise Failure(f"argument '{given}' is not valid UTF-8 text", 2) from None
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc) from exc
        except TtcliError as exc:
            code = next((code for kind, code in EXIT_CODES if isinstance(exc, kind)), 1)
            raise Failure(str(exc), code) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            raise Failure(
                "interrupted: what was committed is kept; run the command again to go on",
                INTERRUPTED,
            ) from None
        except RecursionError:
            raise Failure(
                "a value is nested too deeply to print (more than about "
                f"{RECURSION_LIMIT // 2} levels); --channel shows one key at a time",
                6,
            ) from None
        except BrokenPipeError:
            # the reader stopped early (`| head -1`): not an error, and nothing more to say
            _discard_stdout()
            raise click.exceptions.Exit(0) from None
        except Exception as exc:
            if os.environ.get("TTCLI_DEBUG"):
                raise
            raise Failure(
                f"unexpected {type(exc).__name__}: {exc} (a bug in ttcli: run again with "
                "TTCLI_DEBUG=1 to see where, and report it)",
                1,
            ) from exc


def _discard_stdout() -> None:
    """Point standard output at the null device, so that flushing what is left at exit
    does not fail a second time."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (a test runner's buffer)
        pass
    finally:
        os.close(null)


def _one_line(exc: click.UsageError) -> Failure:
    """Click's usage errors print the usage and a hint over three lines; scripts and people
    read one: the problem, and where the help is."""
    where = exc.ctx.command_path if exc.ctx is not None else "ttcli"
    return Failure(f"{exc.format_message()} (see '{where} --help')", exc.exit_code)


@dataclass
class Env:
    """What every command shares: the database and the output format."""

    #: --db as given (a `file:` URI, say); `db` is the path or DSN it names
    given_db: str = "ttcli.db"
    format: str = "table"
    busy_timeout: float = 30.0
    #: the command only reads: the file is opened so that nothing can change it
    readonly: bool = False
    _saver: SqlSaver | None = field(default=None, repr=False)
    #: the fields given as flags on the command line, which environment variables leave alone
    typed: set[str] = field(default_factory=set)
    #: a LangGraph file's threads, read into memory for the reading commands
    _langgraph: BaseSaver | None = field(default=None, repr=False)
    #: which LangGraph database --db names, once opening it as ttcli's failed
    _langgraph_kind: str | None = field(default=None, repr=False)

    @property
    def db(self) -> str:
        """The database --db names: a SQLite `file:` URI as its path (see `uri_path`),
        checked when a command uses it, so that a TTCLI_DB a typed --db replaces never is."""
        from ttcli.savers.locate import uri_path

        try:
            return uri_path(self.given_db)
        except InputError as exc:
            raise InputError(f"--db {exc}") from None

    @db.setter
    def db(self, value: str) -> None:
        self.given_db = value

    @property
    def format_json(self) -> bool:
        return self.format == "json"

    @format_json.setter
    def format_json(self, value: bool) -> None:
        if value:
            self.format = "json"

    @property
    def folder(self) -> Path | None:
        """The database file's folder: graph TARGETs beneath it are recorded relative to it
        (a server's database has none: they are recorded whole)."""
        from pathlib import Path  # only here: milliseconds of every command's start-up

        from ttcli.savers.locate import is_dsn

        return None if is_dsn(self.db) else Path(self.db).resolve().parent

    def saver(self, *, create: bool = False) -> SqlSaver:
        """The database, opened once; only commands that write may create it."""
        from ttcli.savers.locate import file_stat, is_dsn, open_saver, refuse_other_urls

        refuse_other_urls(self.db)
        if self._saver is None and not is_dsn(self.db):
            exists = self.db == ":memory:" or file_stat(self.db) is not None
            if not create and not exists:
                raise NotFoundError(
                    f"no database at {self.db}: run a graph first (ttcli run), "
                    "or pass --db or TTCLI_DB"
                )
        if self._saver is None:
            try:
                self._saver = open_saver(
                    self.db, busy_timeout=self.busy_timeout, readonly=self.readonly and not create
                )
            except DatabaseBusyError:
                raise
            except StorageError as exc:
                self._langgraph_kind = kind = _langgraph_kind(self.db, self.busy_timeout)
                if kind:
                    source = "DSN" if is_dsn(self.db) else self.db
                    raise LangGraphFileError(
                        f"{self.shown} is a LangGraph {kind}, which ttcli reads but never "
                        f"writes: copy it into a ttcli database with "
                        f"'ttcli --db NEW.db import {source}'"
                    ) from exc
                raise
        return self._saver

    @property
    def shown(self) -> str:
        """The database as messages name it (a DSN without its password)."""
        from ttcli.savers.locate import is_dsn

        if not is_dsn(self.db):
            return self.db
        from ttcli.savers.postgres.connection import display_name

        return display_name(self.db)

    def reader(self, thread_id: str | None = None) -> BaseSaver:
        """The database for a command that only reads; a LangGraph SqliteSaver file or
        PostgresSaver database is read into memory (saying so once on stderr), only
        `thread_id` if the command reads one thread, and never changed."""
        if self._langgraph is None:
            try:
                return self.saver()
            except LangGraphFileError:
                pass
            from ttcli.ops.imports import read_langgraph

            kind = self._langgraph_kind
            click.echo(f"note: {self.shown} is a LangGraph {kind}, read-only", err=True)
            self._langgraph = read_langgraph(self.db, thread_id, self.busy_timeout)
        return self._langgraph

    def close(self) -> None:
        if self._saver is not None:
            self._saver.close()


def _langgraph_kind(db: str, busy_timeout: float) -> str | None:
    from ttcli.ops.imports import langgraph_kind

    return langgraph_kind(db, busy_timeout)


pass_env = click.make_pass_decorator(Env)


def _store(field_name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        env = ctx.ensure_object(Env)
        typed = ctx.get_parameter_source(str(param.name)) is ParameterSource.COMMANDLINE
        # the group's options and each command's are the same options: a flag typed before
        # the command is not overridden by the command's reading of TTCLI_DB
        if value is None or value is False or (not typed and field_name in env.typed):
            return
        setattr(env, field_name, value)
        if typed:
            env.typed.add(field_name)

    return callback


def output_options(func: F) -> F:
    """--db, --format, --json and --busy-timeout: accepted by the group and every command."""
    return _output_options(func, FORMATS)


def picture_options(func: F) -> F:
    """`output_options`, with --format mermaid|dot for the commands that draw."""
    return _output_options(func, FORMATS + PICTURES)


def _output_options(func: F, formats: tuple[str, ...]) -> F:
    options = [
        click.option(
            "--db", envvar="TTCLI_DB", metavar="PATH", expose_value=False, callback=_store("db"),
            help="The SQLite file (or a file: URI naming it), or a postgresql:// DSN "
            "(env TTCLI_DB; default ./ttcli.db).",
        ),
        click.option(
            "--format", type=click.Choice(formats), expose_value=False, callback=_store("format"),
            help="Output: table (default) for people; json, jsonl or csv for scripts"
            + ("; mermaid or dot for a picture." if PICTURES[0] in formats else "."),
        ),
        click.option(
            "--json", is_flag=True, expose_value=False, callback=_store("format_json"),
            help="Short for --format json.",
        ),
        click.option(
            "--busy-timeout", type=click.FloatRange(min=0), envvar="TTCLI_BUSY_TIMEOUT",
            metavar="SECONDS", expose_value=False, callback=_store("busy_timeout"),
            help="How long to wait for another writer (default 30; then exit 5).",
        ),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


@click.group(name="ttcli", cls=TtcliGroup, context_settings={"help_option_names": ["-h", "--help"]})
@picture_options
@click.version_option(package_name="ttcli")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Time travel for LangGraph-style agents: list a thread's history, look at any
    checkpoint, compare two, fork, edit and replay, resume a paused run, prune old ones.

    \b
    Example:
        ttcli run fixtures/order_agent.py:graph --thread order:123 --input @order.json
        ttcli history --thread order:123
        ttcli show latest~2 --thread order:123 --json
    """
    ctx.call_on_close(ctx.ensure_object(Env).close)
    # values nest as deep as an application made them; Python's default of 1,000 frames
    # stops at about 500 levels
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))


def thread_options(func: F) -> F:
    """--thread and --ns, shared by every command that works on one thread."""
    func = click.option(
        "--ns", default="", metavar="NS", help="Checkpoint namespace ('' for the root graph)."
    )(func)
    func = click.option("--thread", "-t", required=True, metavar="ID", help="The thread id.")(func)
    return func
