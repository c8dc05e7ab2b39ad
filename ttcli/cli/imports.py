"""`ttcli import`: a LangGraph SqliteSaver file into a ttcli database."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from ttcli.cli.main import Env, output_options, pass_env
from ttcli.ops.imports import import_langgraph


@click.command("import")
@click.argument("source", metavar="SRC", type=click.Path(dir_okay=False))
@output_options
@pass_env
def import_(env: Env, source: str) -> None:
    """Copy every thread (all namespaces) of a LangGraph SqliteSaver file SRC into the
    ttcli database (--db), with ids, parents, metadata and pending writes.

    SRC is only read. Values are decoded without importing anything named in the file:
    LangChain messages become ttcli messages, Send and Interrupt ttcli's, other classes
    inert data {"$type": "module.Name", "data": ...}. A thread already in the database is
    refused (exit 2, nothing written); a value that does not decode stops the import
    (exit 6) before any of its thread is written. The reading commands (history, show,
    diff, tree, threads, blame, verify) also read a LangGraph file itself, read-only.

    \b
    Example:
        ttcli --db app.ttcli.db import langgraph.sqlite
        ttcli --db app.ttcli.db threads
        ttcli --db langgraph.sqlite history --thread chat:1     # read-only, no import
    """
    summary = import_langgraph(source, env.saver(create=True))
    if env.format_json:
        click.echo(json.dumps(asdict(summary)))
        return
    click.echo(
        f"imported {summary.threads} threads ({summary.namespaces} namespaces), "
        f"{summary.checkpoints} checkpoints: {summary.bytes_before} bytes -> "
        f"{summary.bytes_after} bytes"
    )
