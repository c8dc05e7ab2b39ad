"""`ttcli import`: another database's threads into a ttcli database."""

from __future__ import annotations

import json
from contextlib import closing
from dataclasses import asdict

import click

from ttcli.cli.main import Env, output_options, pass_env
from ttcli.errors import InputError
from ttcli.ops.imports import import_threads, open_source
from ttcli.savers.locate import is_dsn, require_lasting, uri_path
from ttcli.savers.sqlite.saver import same_file


@click.command("import")
@click.argument("source", metavar="SRC")
@output_options
@pass_env
def import_(env: Env, source: str) -> None:
    """Copy every thread (all namespaces) of the database SRC into the ttcli database
    (--db), with ids, parents, metadata and pending writes. SRC is a LangGraph SqliteSaver
    file, a LangGraph PostgresSaver database (postgresql://...), or another ttcli database:
    a SQLite file or a PostgreSQL DSN, so threads move between the two.

    SRC is only read. LangGraph's values are decoded without importing anything named in
    the database: LangChain messages become ttcli messages, Send and Interrupt ttcli's,
    other classes inert data {"$type": "module.Name", "data": ...}; what each node wrote is
    derived from the pending writes. A thread already in the database just as SRC has
    it is skipped, so an interrupted import goes on when run again; one that differs (other
    checkpoints, metadata or pending writes) is refused (exit 2, nothing written); a value
    that does not decode stops the import (exit 6) before any of its thread is written. The
    reading commands (history, show, diff, tree, threads, blame, verify) also read a
    LangGraph SqliteSaver file itself, read-only.

    \b
    Example:
        ttcli --db app.ttcli.db import langgraph.sqlite
        ttcli --db postgresql://app@db/agents import app.ttcli.db
        ttcli --db app.ttcli.db threads
        ttcli --db langgraph.sqlite history --thread chat:1     # read-only, no import
    """
    require_lasting("--db", env.db)
    source = uri_path(source)
    if not is_dsn(env.db) and not is_dsn(source) and same_file(source, env.db):
        raise InputError(
            f"{source} is the database being imported into, or --db {env.db} is a file "
            "SQLite keeps beside it (-wal, -shm, -journal): import into another file"
        )
    # the source opens first: one that does not open creates nothing
    with closing(open_source(source, env.busy_timeout)) as opened:
        summary = import_threads(opened, env.saver(create=True))
    if env.format_json:
        click.echo(json.dumps(asdict(summary)))
        return
    click.echo(
        f"imported {summary.threads} threads ({summary.namespaces} namespaces), "
        f"{summary.checkpoints} checkpoints: {summary.bytes_before} bytes -> "
        f"{summary.bytes_after} bytes"
        + (f"; {summary.skipped} threads already there, skipped" if summary.skipped else "")
    )
