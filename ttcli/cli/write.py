"""Commands that run a graph or add checkpoints: run, update, replay, resume, fork.

run, update, replay and resume load the graph TARGET (the one `run` recorded with the thread,
unless --graph names another); fork needs no graph.
"""

from __future__ import annotations

from typing import Any

import click

from ttcli.cli import render
from ttcli.cli.main import PAUSED, Env, output_options, pass_env, thread_options
from ttcli.cli.params import assignments, json_value
from ttcli.configs import CheckpointRef
from ttcli.errors import (
    GraphRecursionError,
    InputError,
    InvalidUpdateError,
    NodeError,
    NotFoundError,
    ThreadNotFoundError,
    TtcliError,
)
from ttcli.ops import inspect, targets
from ttcli.ops.copy import copy_lineage
from ttcli.ops.diff import diff_values
from ttcli.ops.fork import fork as fork_checkpoint
from ttcli.ops.refs import resolve
from ttcli.runtime.commands import Command
from ttcli.runtime.compiled import CompiledStateGraph
from ttcli.savers.base import BaseSaver, CheckpointTuple
from ttcli.savers.memory import InMemorySaver

graph_option = click.option(
    "--graph", "target", metavar="TARGET",
    help="The graph to use (path/to/file.py:name or package.module:name); "
    "by default the one `ttcli run` recorded with the thread.",
)  # fmt: skip


@click.command()
@click.argument("target")
@thread_options
@click.option(
    "--input", "input_", metavar="JSON", help="The input: JSON, @file.json, or - for stdin."
)
@click.option("--resume", metavar="JSON", help="Answer the interrupt the thread waits on.")
@click.option("--from", "from_ref", metavar="REF", help="Re-run from this checkpoint (a fork).")
@click.option(
    "--interrupt-before", multiple=True, metavar="NODE", help="Pause before NODE (repeatable)."
)
@click.option("--stream", is_flag=True, help="Print each node's update as it happens (JSON lines).")
@output_options
@pass_env
def run(
    env: Env, target: str, thread: str, ns: str, input_: str | None, resume: str | None,
    from_ref: str | None, interrupt_before: tuple[str, ...], stream: bool,
) -> None:  # fmt: skip
    """Run a graph TARGET on a thread, and remember TARGET with the thread.

    TARGET is path/to/file.py:name or package.module:name, naming a StateGraph, a compiled
    graph, or a function returning one. Exits 4 when the run pauses, 1 when a node raises.

    \b
    Example:
        ttcli run fixtures/order_agent.py:graph --thread order:123 --input @order.json
        ttcli run app.py:graph --thread t1 --resume '"approved"'
    """
    # everything given is checked before the file is opened (or created)
    given: Any = json_value(input_, "--input") if input_ is not None else None
    if resume is not None:
        given = Command(resume=json_value(resume, "--resume"))
    graph = targets.compile_target(target, InMemorySaver())
    if input_ is not None:
        _check_state_keys(graph, given, "--input")
    saver = env.saver(create=True)
    ref = CheckpointRef(thread, ns)
    at = resolve(saver, ref, from_ref).config if from_ref else ref.to_config()
    graph.checkpointer = saver
    saver.set_thread_info(thread, {"target": targets.normalise(target)})
    _execute(env, graph, target, given, at, interrupt_before=list(interrupt_before), stream=stream)


@click.command()
@click.argument("ref")
@thread_options
@click.option("--plan", is_flag=True, help="Only say what would run; change nothing.")
@graph_option
@output_options
@pass_env
def replay(env: Env, ref: str, thread: str, ns: str, plan: bool, target: str | None) -> None:
    """Re-run a thread from checkpoint REF: a fork of REF becomes the new head, its nodes run
    again (tools and model calls too) and interrupts answered after REF are asked again. The
    old branch stays.

    \b
    Example:
        ttcli replay latest~3 --thread order:123 --plan
        ttcli replay 1f1ec90d-205e --thread order:123
    """
    saver = env.saver()
    saved = resolve(saver, CheckpointRef(thread, ns), ref)
    if plan:
        detail = inspect.describe(saver, saved)
        render.document(env, _plan_record(detail), _plan_lines(detail))
        return
    spec = _target(saver, thread, target)
    _execute(env, targets.compile_target(spec, saver), spec, None, saved.config)


def _plan_record(d: inspect.Detail) -> dict[str, Any]:
    asked = [i for t in d.tasks for i in t.interrupts]
    return {
        "from": d.entry.checkpoint_id,
        "step": d.entry.step,
        "runs": list(d.entry.next),
        "asks_again": asked,
    }


def _plan_lines(d: inspect.Detail) -> list[str]:
    runs = ", ".join(d.entry.next) or "nothing (the checkpoint is final)"
    return [
        f"replay from {d.entry.checkpoint_id} (step {d.entry.step}): a fork, then {runs}",
        "nodes run again: their side effects (tool calls, messages, writes) happen again",
    ]


@click.command()
@thread_options
@click.option("--value", required=True, metavar="JSON", help="The answer (JSON, @file or -).")
@click.option(
    "--id", "interrupt_id", metavar="INTERRUPT_ID", help="Which interrupt, when several wait."
)
@graph_option
@output_options
@pass_env
def resume(
    env: Env, thread: str, ns: str, value: str, interrupt_id: str | None, target: str | None
) -> None:
    """Answer the interrupt a paused thread waits on, and run on.

    \b
    Example:
        ttcli resume --thread review:1 --value '"yes"'
        ttcli resume --thread review:1 --value '{"approved": true}' --id 6d62eb71d26c83ca
    """
    saver = env.saver()
    answer = json_value(value, "--value")
    spec = _target(saver, thread, target)
    ref = CheckpointRef(thread, ns)
    if interrupt_id is not None:
        answer = {_full_interrupt_id(saver, ref, interrupt_id): answer}
    _execute(
        env, targets.compile_target(spec, saver), spec, Command(resume=answer), ref.to_config()
    )


def _full_interrupt_id(saver: BaseSaver, ref: CheckpointRef, given: str) -> str:
    """The id of a waiting interrupt that starts with `given`."""
    latest = resolve(saver, ref, "latest")
    waiting: list[str] = [
        str(i.id)
        for t in inspect.tasks(latest, saver.get_writes(latest.config))
        if t.waiting
        for i in t.interrupts
    ]
    matches = [i for i in waiting if i.startswith(given)]
    if len(matches) != 1:
        raise InputError(
            f"interrupt id {given!r} matches {len(matches)} of the interrupts thread "
            f"'{ref.thread_id}' waits on ({', '.join(waiting) or 'none'})"
        )
    return matches[0]


@click.command()
@thread_options
@click.option(
    "--at",
    "at_ref",
    default="latest",
    show_default=True,
    metavar="REF",
    help="The checkpoint to update.",
)
@click.option(
    "--as-node", required=True, metavar="NODE", help="Write as if NODE had returned the values."
)
@click.option(
    "--set", "sets", multiple=True, metavar="KEY=JSON", help="A state key to write (repeatable)."
)
@click.option(
    "--values", metavar="JSON", help="All values to write, as one JSON object (or @file, -)."
)
@click.option(
    "--dry-run", is_flag=True, help="Show the resulting state and next nodes; store nothing."
)
@graph_option
@output_options
@pass_env
def update(
    env: Env, thread: str, ns: str, at_ref: str, as_node: str, sets: tuple[str, ...],
    values: str | None, dry_run: bool, target: str | None,
) -> None:  # fmt: skip
    """Write to a thread as if a node had returned values (update_state): a new `update`
    checkpoint; at a past checkpoint it starts a new branch. Values go through that node's
    reducers and edges, which decide what runs next.

    \b
    Example:
        ttcli update --thread order:123 --at latest~3 --as-node plan --set tool='"refund_order"'
        ttcli update --thread order:123 --as-node plan --values @fix.json --dry-run
    """
    if bool(sets) == (values is not None):
        raise click.UsageError(
            "give the values with either --set KEY=JSON (repeatable) or --values JSON"
        )
    written = assignments(sets, "--set") if sets else json_value(values or "", "--values")
    saver = env.saver()
    saved = resolve(saver, CheckpointRef(thread, ns), at_ref)
    store = _scratch_copy(saved) if dry_run else saver
    spec = _target(saver, thread, target)
    graph = targets.compile_target(spec, store)
    _check_state_keys(graph, written, "--set" if sets else "--values")
    after = graph.get_state(graph.update_state(saved.config, written, as_node=as_node))
    render.document(env, *_update_report(spec, saved, after, dry_run))


def _update_report(
    spec: str, saved: Any, after: Any, dry_run: bool
) -> tuple[dict[str, Any], list[str]]:
    before = inspect.state_values(saved.checkpoint["channel_values"])
    changes = diff_values(before, after.values)
    checkpoint_id = None if dry_run else after.config["configurable"]["checkpoint_id"]
    record = {
        "graph": spec,
        "checkpoint_id": checkpoint_id,
        "next": list(after.next),
        "values": after.values,
        "changes": [{"path": c.path, "kind": c.kind, "old": c.old, "new": c.new} for c in changes],
    }
    head = "would write an update checkpoint" if dry_run else f"wrote update {checkpoint_id}"
    lines = [head, f"graph: {spec}", f"next: {', '.join(after.next) or '-'}"]
    lines += [
        f"  {c.kind} {c.path}: {render.compact(c.old if c.kind == 'removed' else c.new)}"
        for c in changes
    ]
    return record, lines


def _check_state_keys(graph: CompiledStateGraph, given: Any, what: str) -> None:
    """The API ignores keys the state does not have, as LangGraph does; on the command line
    that would turn a typo into a silent no-op."""
    keys = graph.plan.state_keys
    if given is None:
        return
    if not isinstance(given, dict):
        raise InputError(
            f"{what} must be a JSON object of state keys ({', '.join(keys)}), "
            f"not {render.compact(given, 40)}"
        )
    if unknown := [key for key in given if key not in keys]:
        raise InputError(
            f"{what} names {', '.join(map(repr, unknown))}, not a key of the graph's state "
            f"({', '.join(keys)})"
        )


def _scratch_copy(saved: CheckpointTuple) -> InMemorySaver:
    """An in-memory saver holding just this checkpoint: --dry-run writes there."""
    scratch = InMemorySaver()
    ref = CheckpointRef.from_config(saved.config)
    scratch.put(ref.at(None).to_config(), saved.checkpoint, saved.metadata, {})
    return scratch


@click.command()
@click.argument("ref")
@thread_options
@click.option(
    "--to-thread", metavar="ID", help="Copy REF and its ancestors into a new thread instead."
)
@output_options
@pass_env
def fork(env: Env, ref: str, thread: str, ns: str, to_thread: str | None) -> None:
    """Start a new branch at checkpoint REF: a `fork` checkpoint, a copy of REF, becomes the
    thread's head (the old branch stays). With --to-thread, copy REF and its ancestors into
    another thread, recording where they came from.

    \b
    Example:
        ttcli fork latest~2 --thread order:123
        ttcli fork latest~2 --thread order:123 --to-thread order:123-retry
    """
    saver = env.saver()
    saved = resolve(saver, CheckpointRef(thread, ns), ref)
    if to_thread is not None:
        made = copy_lineage(saver, saved.config, to_thread)
    else:
        made = fork_checkpoint(saver, saved)
    record = {
        "thread_id": made["configurable"]["thread_id"],
        "checkpoint_id": made["configurable"]["checkpoint_id"],
        "from": saved.checkpoint["id"],
    }
    if to_thread is None:
        line = f"{thread}: new branch head {record['checkpoint_id']}, a fork of {record['from']}"
    else:
        line = f"{to_thread}: a copy of {record['from']} and its ancestors"
    render.document(env, record, [line])


def _target(saver: BaseSaver, thread: str, given: str | None) -> str:
    """--graph if given, else the graph `ttcli run` recorded with the thread (shown in the
    output: a file could name any module)."""
    if given is not None:
        return given
    recorded = saver.get_thread_info(thread).get("target")
    if recorded is None:
        raise NotFoundError(f"thread '{thread}' has no graph recorded: pass --graph TARGET")
    return str(recorded)


def _execute(
    env: Env, graph: CompiledStateGraph, spec: str, given: Any, config: dict[str, Any], *,
    interrupt_before: list[str] | None = None, stream: bool = False,
) -> None:  # fmt: skip
    """Run, print the outcome, and exit 4 if the run paused (1 is raised for a failed node)."""
    try:
        for chunk in graph.stream(
            given, config, stream_mode="updates", interrupt_before=interrupt_before or None
        ):
            if stream:
                click.echo(render.to_json(chunk, indent=None))
    except Exception as exc:
        _raise_node_error(graph, config, exc)
    thread = config["configurable"]["thread_id"]
    state = graph.get_state({"configurable": {"thread_id": thread}})
    if "checkpoint_id" not in state.config["configurable"]:
        # another process (`prune --keep-last 0`) deleted the thread since the run wrote it
        raise ThreadNotFoundError(thread)
    render.document(env, *_outcome(spec, state))
    if state.next:
        click.get_current_context().exit(PAUSED)


def _outcome(spec: str, state: Any) -> tuple[dict[str, Any], list[str]]:
    """Where a run ended: done, or paused with what it waits for."""
    waits = [
        {"node": t.name, "interrupts": list(t.interrupts)} for t in state.tasks if t.result is None
    ]
    record = {
        "graph": spec,
        "thread_id": state.config["configurable"]["thread_id"],
        "checkpoint_id": state.config["configurable"]["checkpoint_id"],
        "status": "paused" if state.next else "done",
        "next": list(state.next),
        "waiting": waits,
        "values": state.values,
    }
    lines = [f"{record['status']} at {record['checkpoint_id']}", f"graph: {spec}"]
    for wait in waits:
        lines.append(f"waiting: {wait['node']}")
        lines += [f"  asks: {render.compact(i.value, 90)} (id {i.id})" for i in wait["interrupts"]]
    lines += ["values"] + [f"  {k}: {render.compact(v, 90)}" for k, v in state.values.items()]
    return record, lines


def _raise_node_error(graph: CompiledStateGraph, config: dict[str, Any], exc: Exception) -> None:
    """A node's failure (its exception, a bad return, a runaway loop) becomes exit 1, naming
    the node; problems with the input, the thread or the file keep their own exit codes."""
    if isinstance(exc, TtcliError) and not isinstance(
        exc, InvalidUpdateError | GraphRecursionError
    ):
        raise exc
    thread = config["configurable"]["thread_id"]
    state = graph.get_state({"configurable": {"thread_id": thread}})
    failed = [t.name for t in state.tasks if t.error]
    where = f"node '{failed[0]}'" if failed else "the graph"
    raise NodeError(
        f"{where} raised {type(exc).__name__}: {exc} (the thread keeps the error; "
        f"`ttcli show latest --thread {thread}` shows it)"
    ) from exc
