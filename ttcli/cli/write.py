"""Commands that run a graph or add checkpoints: run, update, replay, resume, fork.

run, update, replay and resume load the graph TARGET (the one `run` recorded with the thread,
unless --graph names another); fork needs no graph.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from ttcli.cli import render
from ttcli.cli.main import (
    INTERRUPTED,
    PAUSED,
    Env,
    Failure,
    output_options,
    pass_env,
    thread_options,
)
from ttcli.cli.params import assignments, json_or_text, json_value
from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import (
    GraphRecursionError,
    InputError,
    InvalidUpdateError,
    NodeError,
    ThreadNotFoundError,
    TtcliError,
)
from ttcli.ops import answers, inspect, targets
from ttcli.ops.diff import diff_values
from ttcli.ops.fork import fork as fork_checkpoint
from ttcli.ops.fork import fork_to_thread
from ttcli.ops.refs import resolve
from ttcli.runtime.algo import check_sends
from ttcli.runtime.commands import Command
from ttcli.runtime.compiled import CompiledStateGraph
from ttcli.savers.base import CheckpointTuple
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
    targets.require_nodes(graph, interrupt_before, "--interrupt-before")
    _check_state_keys(graph, given if input_ is not None else None, "--input")
    saver, ref = env.saver(create=True), CheckpointRef(thread, ns)
    if given is None and from_ref is None and saver.get_tuple(ref.to_config()) is None:
        raise InputError(f"thread '{thread}' is new: give --input JSON")
    at = resolve(saver, ref, from_ref).config if from_ref else ref.to_config()
    graph.checkpointer = saver
    _record(env, graph, target, ref, at if input_ is None else None)
    _execute(env, graph, target, given, at, interrupt_before=list(interrupt_before), stream=stream)


def _record(
    env: Env,
    graph: CompiledStateGraph,
    target: str,
    ref: CheckpointRef,
    going_on: RunnableConfig | None,
) -> None:
    """Remember the graph with the thread; first, going on from a checkpoint (`going_on`, its
    config), refuse a graph that lacks a node its stored Sends name: the thread keeps the one
    that wrote it."""
    assert graph.checkpointer is not None
    saved = graph.checkpointer.get_tuple(going_on) if going_on is not None else None
    if saved is not None:
        check_sends(graph.plan, saved.checkpoint, ref.thread_id, ref.checkpoint_ns)
    targets.record(graph.checkpointer, ref.thread_id, target, graph, env.folder)


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
        forks = inspect.replay_forks(saver, saved)
        render.document(env, *_plan_report(inspect.describe(saver, saved), forks))
        return
    spec, graph = targets.for_thread(saver, thread, target, env.folder, saver)
    _execute(env, graph, spec, None, saved.config)


def _plan_report(d: inspect.Detail, forks: bool) -> tuple[dict[str, Any], list[str]]:
    record = {
        "from": d.entry.checkpoint_id,
        "step": d.entry.step,
        "fork": forks,
        "runs": list(d.entry.next),
        "asks_again": [render.asked_record(i) for t in d.tasks for i in t.interrupts],
    }
    runs = ", ".join(d.entry.next) or "nothing (the checkpoint is final)"
    how = "a fork, then" if forks else f"the thread's head, an {d.entry.source}: no fork, runs"
    return record, [
        f"replay from {d.entry.checkpoint_id} (step {d.entry.step}): {how} {runs}",
        "nodes run again: their side effects (tool calls, messages, writes) happen again",
    ]


@click.command()
@thread_options
@click.option(
    "--value", required=True, metavar="JSON",
    help="The answer: JSON (text that is not JSON is a string), @file.json or - for stdin.",
)  # fmt: skip
@click.option(
    "--id", "interrupt_id", metavar="INTERRUPT_ID", help="Which interrupt, when several wait."
)
@graph_option
@output_options
@pass_env
def resume(
    env: Env, thread: str, ns: str, value: str, interrupt_id: str | None, target: str | None
) -> None:
    """Answer the interrupt a paused thread waits on, and run on. A thread that waits on
    no interrupt is refused (exit 2); one stopped at a breakpoint goes on with `ttcli run
    TARGET --thread T` without --input.

    \b
    Example:
        ttcli resume --thread review:1 --value yes
        ttcli resume --thread review:1 --value '{"approved": true}' --id 6d62eb71d26c83ca
    """
    saver, ref = env.saver(), CheckpointRef(thread, ns)
    command = answers.answer(saver, ref, json_or_text(value, "--value"), interrupt_id)
    spec, graph = targets.for_thread(saver, thread, target, env.folder, saver)
    _execute(env, graph, spec, command, ref.to_config())


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
    spec, graph = targets.for_thread(saver, thread, target, env.folder, store)
    targets.require_nodes(graph, [as_node], "--as-node")
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
    thread's head (the old branch stays). With --to-thread, copy REF and its ancestors, and
    the subgraphs their tasks ran, into a new thread (an existing one is refused),
    recording where they came from.

    \b
    Example:
        ttcli fork latest~2 --thread order:123
        ttcli fork latest~2 --thread order:123 --to-thread order:123-retry
    """
    saver = env.saver()
    saved = resolve(saver, CheckpointRef(thread, ns), ref)
    if to_thread is not None:
        made = fork_to_thread(saver, saved, to_thread, now=datetime.now(UTC))
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


def _execute(
    env: Env, graph: CompiledStateGraph, spec: str, given: Any, config: dict[str, Any], *,
    interrupt_before: list[str] | None = None, stream: bool = False,
) -> None:  # fmt: skip
    """Run, print the outcome, and exit 4 if the run paused (1 is raised for a failed node,
    130 for Ctrl-C)."""
    try:
        for chunk in graph.stream(
            given, config, stream_mode="updates", interrupt_before=interrupt_before or None
        ):
            if stream:
                click.echo(render.to_json(chunk, indent=None))
    except KeyboardInterrupt:
        _stopped(graph, spec, config)
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
        inspect.Waiting(t.name, [inspect.asked(i) for i in t.interrupts])
        for t in state.tasks
        if t.result is None and not t.error
    ]
    record = {
        "graph": spec,
        "thread_id": state.config["configurable"]["thread_id"],
        "checkpoint_id": state.config["configurable"]["checkpoint_id"],
        "status": "paused" if state.next else "done",
        "next": list(state.next),
        "waiting": render.waiting_record(waits),
        "values": state.values,
    }
    lines = [f"{record['status']} at {record['checkpoint_id']}", f"graph: {spec}"]
    lines += render.waiting_lines(waits)
    lines += ["values"] + [f"  {k}: {render.compact(v, 90)}" for k, v in state.values.items()]
    return record, lines


def _stopped(graph: CompiledStateGraph, spec: str, config: dict[str, Any]) -> None:
    """Ctrl-C: exit 130 with where the run stopped and the command that goes on from there."""
    assert graph.checkpointer is not None
    ref = CheckpointRef.from_config(config)
    latest = inspect.mark_interrupted(graph.checkpointer, ref)
    where = f"at {latest.checkpoint['id']}" if latest else "before its first checkpoint"
    raise Failure(
        f"interrupted {where}: `ttcli run {spec} --thread {ref.thread_id}` goes on from there",
        INTERRUPTED,
    )


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
