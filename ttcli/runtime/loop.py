"""The superstep loop: load a thread, apply input (or fork for replay), run until done.

One `Run` is one `invoke`/`stream` call. Every superstep ends in one checkpoint; every
finished task's writes are saved as soon as it finishes, against the checkpoint it was
planned from, so a crash, a failing sibling or an interrupt never costs finished work.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import CheckpointNotFoundError, ConfigError, EmptyInputError, GraphRecursionError
from ttcli.graph.constants import (
    ERROR,
    INPUT,
    INTERRUPT,
    NO_WRITES,
    NULL_TASK_ID,
    PUSH,
    RESUME,
    START,
)
from ttcli.graph.state import build_state, read_input
from ttcli.runtime.algo import (
    Task,
    apply_writes,
    bookkeeping_copy,
    empty_checkpoint,
    prepare_tasks,
    should_interrupt,
)
from ttcli.runtime.checkpoints import checkpoint_metadata, new_checkpoint, new_versions, utc_now
from ttcli.runtime.commands import Command, GraphInterrupt, Interrupt, TaskScratchpad, run_in_task
from ttcli.runtime.pending import TaskRecord, answers, null_writes, records
from ttcli.runtime.snapshots import snapshot_of
from ttcli.savers.base import PendingWrite

if TYPE_CHECKING:
    from ttcli.runtime.compiled import CompiledStateGraph

DEFAULT_RECURSION_LIMIT = 10007  # LangGraph 1.2's default

Chunk = tuple[str, Any]
Outcome = BaseException | None  # what running a task raised: an error, a GraphInterrupt, or None


class Run:
    """One invoke/stream of a compiled graph on one thread."""

    def __init__(
        self,
        graph: CompiledStateGraph,
        input: Any,  # noqa: A002 - LangGraph's name
        config: RunnableConfig | None,
        *,
        interrupt_before: Sequence[str],
        interrupt_after: Sequence[str],
        modes: Sequence[str] = ("values",),
    ) -> None:
        self.plan = graph.plan
        self.saver = graph.checkpointer
        self.input = input
        self.config: RunnableConfig = dict(config or {})
        self.interrupt_before = tuple(interrupt_before)
        self.interrupt_after = tuple(interrupt_after)
        self.debug = "debug" in modes
        #: the interrupts the run stopped at, if it stopped at any
        self.interrupts: list[Interrupt] = []
        #: the writes of a superstep's only task, saved with the checkpoint it leads to
        self.deferred: tuple[str, str, list[tuple[str, Any]]] | None = None
        limit = self.config.get("recursion_limit", DEFAULT_RECURSION_LIMIT)
        if not isinstance(limit, int) or limit < 1:
            raise ConfigError("recursion_limit must be at least 1")
        self.limit = limit
        if self.saver is not None:
            self.ref = CheckpointRef.from_config(self.config)
        else:
            configurable = self.config.get("configurable") or {}
            self.ref = CheckpointRef(
                str(configurable.get("thread_id", "")), configurable.get("checkpoint_ns") or ""
            )
        if isinstance(input, Command) and input.resume is not None and self.saver is None:
            raise RuntimeError("Cannot use Command(resume=...) without checkpointer")

    def stream(self) -> Iterator[Chunk]:
        """Run to the end, a breakpoint or an interrupt, yielding (mode, chunk) pairs."""
        try:
            yield from self._steps()
        finally:  # stopped early, or failed: a finished task's writes are kept all the same
            self._flush()

    def _steps(self) -> Iterator[Chunk]:
        self._load()
        yield from self._first()
        while True:
            if self.step > self.stop:
                raise GraphRecursionError(
                    f"Recursion limit of {self.limit} reached without hitting a stop condition. "
                    "You can increase the limit by setting the `recursion_limit` config key."
                )
            tasks = prepare_tasks(
                self.plan, self.checkpoint, self.channels, self.step, self.ref.checkpoint_ns
            )
            if not tasks:
                return
            if self.interrupt_before and should_interrupt(
                self.checkpoint, self.interrupt_before, tasks
            ):
                yield "updates", {INTERRUPT: ()}
                return
            yield from self._run_tasks(tasks)
            if self.interrupts:
                return
            updated = apply_writes(self.checkpoint, self.channels, tasks)
            writes = {task.name: task.output for task in tasks if task.name != START} or None
            yield from self._put_checkpoint("loop", writes, updated)
            yield "values", self.plan.values(self.channels)
            if self.interrupt_after and should_interrupt(
                self.checkpoint, self.interrupt_after, tasks
            ):
                yield "updates", {INTERRUPT: ()}
                return

    def _load(self) -> None:
        saved = self.saver.get_tuple(self.ref.to_config()) if self.saver is not None else None
        if saved is None and self.ref.checkpoint_id is not None:
            raise CheckpointNotFoundError(self.ref.checkpoint_id, self.ref.thread_id)
        self.checkpoint = saved.checkpoint if saved else empty_checkpoint()
        self.metadata: dict[str, Any] = saved.metadata if saved else {"step": -2}
        self.pending: list[PendingWrite] = list(saved.pending_writes or []) if saved else []
        self.parent = self.ref.at(saved.checkpoint["id"] if saved else None)
        self.stored_versions = dict(self.checkpoint["channel_versions"])
        self.channels = self.plan.restore(self.checkpoint["channel_values"])
        self.step = int(self.metadata["step"]) + 1
        self.stop = self.step + self.limit + 1
        #: the thread's newest id: new checkpoints sort after it, even if a clock ran ahead
        self.latest_id = saved.checkpoint["id"] if saved else None
        if saved and self.ref.checkpoint_id and self.saver is not None:
            self.latest_id = self.saver.checkpoint_ids(self.ref.at(None).to_config(), limit=1)[0]
        self.superseded = bool(saved and self.latest_id != saved.checkpoint["id"])

    def _first(self) -> Iterator[Chunk]:
        command = self.input if isinstance(self.input, Command) else None
        if command is not None and command.graph is not None:
            raise ConfigError("Command(graph=...) needs a parent graph; ttcli has no subgraphs")
        if self.input is not None and command is None:
            yield from self._take_input()
            return
        if command is not None and not (
            command.update is not None or command.destinations() or command.resume is not None
        ):
            raise EmptyInputError("Received empty Command input")
        if not self.checkpoint["channel_versions"]:
            raise EmptyInputError(f"Received no input for {START}")
        # an explicit checkpoint id without an answer to give is time travel: re-execute
        time_travel = self.ref.checkpoint_id is not None and (
            command is None or command.resume is None
        )
        if time_travel or self.superseded:
            self.pending = []  # replay re-executes: the earlier run's writes are not reused
        forks = time_travel and (
            self.metadata.get("source") not in ("update", "fork") or self.superseded
        )
        if command is not None:
            # a fork carries the Command's writes itself: none are stored on the checkpoint
            # it was addressed at, whose other children replay it
            self._take_command(command, save=not forks)
        if found := null_writes(self.pending):
            apply_writes(self.checkpoint, self.channels, [Task("", INPUT, (), (), writes=found)])
        # breakpoints before what comes next do not fire again on this resume
        self.checkpoint["versions_seen"][INTERRUPT] = dict(self.checkpoint["channel_versions"])
        if forks:
            yield from self._put_checkpoint("fork", None, None)
        yield "values", self.plan.values(self.channels)

    def _take_input(self) -> Iterator[Chunk]:
        values = read_input(self.plan.schema, self.input, self.plan.state_keys)
        # new input abandons whatever the previous checkpoint still had scheduled
        discarded = prepare_tasks(
            self.plan, self.checkpoint, self.channels, self.step, self.ref.checkpoint_ns
        )
        start = Task(id="", name=INPUT, path=(), triggers=(), writes=[(START, values)])
        updated = apply_writes(self.checkpoint, self.channels, [*discarded, start])
        yield from self._put_checkpoint("input", {START: values}, updated)

    def _take_command(self, command: Command, *, save: bool) -> None:
        """Take a Command's update/goto (as null-task writes) and its answers to interrupts."""
        writes = list(read_input(self.plan.schema, command.update, self.plan.state_keys).items())
        writes += self.plan.goto_writes("Command", command.destinations())
        if writes and save:
            self._save_writes(NULL_TASK_ID, "", writes)
        self.pending += [(NULL_TASK_ID, channel, value) for channel, value in writes]
        if command.resume is None:
            return
        tasks = prepare_tasks(
            self.plan, self.checkpoint, self.channels, self.step, self.ref.checkpoint_ns
        )
        answered = answers(tasks, records(self.pending), command.resume, self.ref.thread_id)
        for task in tasks:
            if task.id in answered:
                self._save_writes(task.id, task.path_text, [(RESUME, answered[task.id])])
                self.pending = [w for w in self.pending if w[:2] != (task.id, RESUME)]
                self.pending.append((task.id, RESUME, answered[task.id]))

    def _run_tasks(self, tasks: list[Task]) -> Iterator[Chunk]:
        found = records(self.pending)
        to_run = []
        for task in tasks:
            record = found.get(task.id)
            if record is not None and record.finished:
                # finished before a crash, a failing sibling or an interrupt: reuse its writes
                task.writes = record.writes
                task.output = {k: v for k, v in task.writes if k in self.plan.state_keys} or None
            else:
                to_run.append(task)
        # the START task is plumbing: LangGraph hides it from debug events, and so do we
        shown = [task for task in to_run if task.name != START] if self.debug else []
        for task in shown:
            payload = {
                "id": task.id,
                "name": task.name,
                "input": self._task_input(task),
                "triggers": task.triggers,
            }
            yield "debug", self._debug("task", payload)
        errors: dict[str, BaseException] = {}
        for task, outcome in self._execute(to_run, found):
            if isinstance(outcome, GraphInterrupt):
                self._save_writes(task.id, task.path_text, [(INTERRUPT, [outcome.interrupt])])
                self.interrupts.append(outcome.interrupt)
                yield "updates", {INTERRUPT: (outcome.interrupt,)}
            elif outcome is not None:
                errors[task.id] = outcome
                self._save_writes(task.id, task.path_text, [(ERROR, repr(outcome))])
            else:
                writes = task.writes or [(NO_WRITES, None)]
                if len(tasks) == 1:  # saved with the checkpoint it leads to: one commit a step
                    self.deferred = (task.id, task.path_text, writes)
                else:  # each as it finishes: after a crash only unfinished tasks run again
                    self._save_writes(task.id, task.path_text, writes)
                if task.name != START:
                    yield "updates", {task.name: task.output}
            if task in shown:
                yield "debug", self._debug("task_result", self._result(task, outcome))
        for task in tasks:
            if task.id in errors:
                raise errors[task.id]
        if self.interrupts:
            # what the state is now: the tasks that finished applied, as the live view shows
            finished = [task for task in tasks if task not in to_run or task.writes]
            channels = {name: channel.copy() for name, channel in self.channels.items()}
            apply_writes(bookkeeping_copy(self.checkpoint), channels, finished)
            values = self.plan.values(channels)
            for interrupt in self.interrupts:
                yield "values", {**values, INTERRUPT: (interrupt,)}

    def _result(self, task: Task, outcome: Outcome) -> dict[str, Any]:
        interrupted = isinstance(outcome, GraphInterrupt)
        return {
            "id": task.id,
            "name": task.name,
            "error": repr(outcome) if outcome is not None and not interrupted else None,
            "result": {k: v for k, v in task.writes if k in self.plan.state_keys},
            "interrupts": [outcome.interrupt] if isinstance(outcome, GraphInterrupt) else [],
        }

    def _execute(
        self, tasks: list[Task], found: dict[str, TaskRecord]
    ) -> Iterator[tuple[Task, Outcome]]:
        def call(task: Task) -> Outcome:
            record = found.get(task.id)
            resume = list(record.resume) if record is not None else []
            outcome: Outcome = run_in_task(
                TaskScratchpad(task.name, task.id, resume), self._call, task
            )
            return outcome

        if len(tasks) <= 1:
            yield from ((task, call(task)) for task in tasks)
            return
        with ThreadPoolExecutor(max_workers=len(tasks), thread_name_prefix="ttcli-task") as pool:
            futures = {pool.submit(call, task): task for task in tasks}
            for future in as_completed(futures):
                yield futures[future], future.result()

    def _call(self, task: Task) -> Outcome:
        """Run one node; its writes land on the task. Returns what it raised, if anything."""
        try:
            spec = self.plan.nodes[task.name]
            state = self._task_input(task)
            if spec.action is None:
                output = state
            elif spec.takes_config:
                output = spec.action(state, config=self.config)
            else:
                output = spec.action(state)
            task.output, task.writes = self.plan.node_writes(
                task.name, output, self.channels, self.config
            )
        except Exception as exc:  # the node's failure or interrupt belongs to the caller
            return exc
        return None

    def _task_input(self, task: Task) -> Any:
        if task.path[0] == PUSH:
            return task.arg
        if task.name == START:
            return self.channels[START].get()
        return build_state(self.plan.schema, self.plan.values(self.channels))

    def _save_writes(self, task_id: str, task_path: str, writes: list[tuple[str, Any]]) -> None:
        if self.saver is not None:
            self.saver.put_writes(self.parent.to_config(), writes, task_id, task_path)

    def _flush(self) -> None:
        """Save the writes of a superstep's only task, held back to go with its checkpoint."""
        if self.deferred is not None:
            deferred, self.deferred = self.deferred, None
            self._save_writes(*deferred)

    def _put_checkpoint(
        self, source: str, writes: dict[str, Any] | None, updated: set[str] | None
    ) -> Iterator[Chunk]:
        checkpoint = new_checkpoint(
            self.checkpoint, self.channels, self.step, updated, latest=self.latest_id
        )
        metadata = checkpoint_metadata(self.config, source, self.step, writes)
        parent_config = self.parent.to_config() if self.parent.checkpoint_id else None
        if self.saver is not None:
            changed = new_versions(self.stored_versions, checkpoint["channel_versions"])
            with self.saver.batch():
                if self.deferred is not None:
                    self._save_writes(*self.deferred)
                self.saver.put(self.parent.to_config(), checkpoint, metadata, changed)
            self.deferred = None  # committed; had the batch failed, they are saved alone
        self.checkpoint, self.metadata, self.pending = checkpoint, metadata, []
        self.stored_versions = dict(checkpoint["channel_versions"])
        self.parent = self.ref.at(checkpoint["id"])
        self.latest_id = checkpoint["id"]
        self.step += 1
        if self.debug:
            snapshot = snapshot_of(
                self.plan, self.parent.to_config(), checkpoint, metadata, parent_config, []
            )
            payload = {
                "config": snapshot.config,
                "parent_config": parent_config,
                "values": snapshot.values,
                "metadata": metadata,
                "next": list(snapshot.next),
                "tasks": [
                    {"id": t.id, "name": t.name, "interrupts": (), "state": None}
                    for t in snapshot.tasks
                ],
            }
            yield "debug", self._debug("checkpoint", payload, step=metadata["step"])

    def _debug(self, kind: str, payload: dict[str, Any], step: int | None = None) -> dict[str, Any]:
        return {
            "step": self.step if step is None else step,
            "timestamp": utc_now(),
            "type": kind,
            "payload": payload,
        }
