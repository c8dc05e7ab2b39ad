"""The superstep loop: load a thread, apply input (or fork for replay), run until done.

One `Run` is one `invoke`/`stream` call. Every superstep ends in one checkpoint; every
finished task's writes are saved as soon as it finishes, against the checkpoint it was
planned from, so a crash, a failing sibling or an interrupt never costs finished work.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ttcli.configs import RunnableConfig
from ttcli.errors import (
    CheckpointNotFoundError,
    ConfigError,
    EmptyInputError,
    GraphRecursionError,
    InvalidUpdateError,
)
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
from ttcli.graph.state import read_input
from ttcli.runtime import debug
from ttcli.runtime.algo import (
    Task,
    apply_writes,
    bookkeeping_copy,
    check_sends,
    empty_checkpoint,
    prepare_tasks,
    should_interrupt,
)
from ttcli.runtime.checkpoints import checkpoint_metadata, new_checkpoint
from ttcli.runtime.commands import (
    Command,
    GraphInterrupt,
    Interrupt,
    ParentCommand,
    TaskScratchpad,
    run_in_task,
)
from ttcli.runtime.execute import Chunk, Event, Finished, Outcome, Workers, execute
from ttcli.runtime.messages_mode import (
    message_chunks,
    task_metadata,
    token_muting,
    token_streaming,
)
from ttcli.runtime.pending import TaskRecord, answers, null_writes, records
from ttcli.runtime.recorder import Recorder
from ttcli.runtime.retry import with_retries
from ttcli.runtime.settings import RunSettings, recursion_limit, where
from ttcli.runtime.subgraphs import ParentLink, child_parents, task_namespace
from ttcli.savers.base import Checkpoint, PendingWrite, TaskWrites

if TYPE_CHECKING:
    from ttcli.runtime.compiled import CompiledStateGraph


class Run:
    """One invoke/stream of a compiled graph on one thread."""

    def __init__(
        self,
        graph: CompiledStateGraph,
        input: Any,  # noqa: A002 - LangGraph's name
        config: RunnableConfig | None,
        settings: RunSettings,
    ) -> None:
        self.plan = graph.plan
        self.settings = settings
        self.saver, self.link, self.loop = settings.saver, settings.link, settings.loop
        inherited = self.link.committer if self.link is not None else None
        self.recorder = Recorder(self.saver, settings.durability, inherited)
        self.input = input
        self.config: RunnableConfig = dict(config or {})
        self.debug = "debug" in settings.modes
        self.forwarding = settings.forwarding
        #: chunks nodes (and subgraphs) write as they run, when the caller streams them
        streams = self.forwarding or {"custom", "messages"} & set(settings.modes)
        self.chunks: queue.SimpleQueue[Chunk] | None = queue.SimpleQueue() if streams else None
        #: the ids of the messages chat models streamed as tokens (in subgraphs too): a node
        #: that returns one does not send it again
        self.streamed: set[str] = self.link.streamed if self.link is not None else set()
        #: the interrupts the run stopped at, if it stopped at any
        self.interrupts: list[Interrupt] = []
        #: an answer given when no interrupt was waiting, for the first `interrupt()` to ask
        self.spare: list[Any] = self.link.spare if self.link is not None else []
        #: the writes of a superstep's finished tasks, saved with the checkpoint they lead to
        #: (one commit a step), or together when the step stops short of one
        self.deferred: list[TaskWrites] = []
        self.workers = Workers()
        self.limit = recursion_limit(self.config)
        self.ref = where(self.config, checked=self.saver is not None)
        if isinstance(input, Command) and input.resume is not None and self.saver is None:
            raise RuntimeError("Cannot use Command(resume=...) without checkpointer")

    def stream(self) -> Iterator[Chunk]:
        """Run to the end, a breakpoint or an interrupt, yielding (mode, chunk) pairs."""
        completed = False
        try:
            yield from self._steps()
            completed = not self.interrupts
        finally:  # stopped early, or failed: a finished task's writes are kept all the same
            self.workers.close()
            try:
                self._flush()
                # a subgraph that ran to its end leaves nothing at exit: its parent's
                # checkpoint holds the result
                self.recorder.finish(keep=self.link is None or not completed)
            finally:
                self.recorder.close()  # with durability="async": all of it committed

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
            if self.settings.interrupt_before and should_interrupt(
                self.checkpoint, self.settings.interrupt_before, tasks
            ):
                yield "updates", {INTERRUPT: ()}
                return
            yield from self._run_tasks(tasks)
            if self.interrupts:
                return
            updated = apply_writes(self.checkpoint, self.channels, tasks, self.plan.triggers)
            writes = {task.name: task.output for task in tasks if task.name != START} or None
            yield from self._put_checkpoint("loop", writes, updated)
            yield "values", self.plan.values(self.channels)
            if self.settings.interrupt_after and should_interrupt(
                self.checkpoint, self.settings.interrupt_after, tasks
            ):
                yield "updates", {INTERRUPT: ()}
                return

    def _load(self) -> None:
        self.recorder.settle()
        saved = self.saver.get_tuple(self.ref.to_config()) if self.saver is not None else None
        if saved is None and self.ref.checkpoint_id is not None:
            raise CheckpointNotFoundError(self.ref.checkpoint_id, self.ref.thread_id)
        self.checkpoint = saved.checkpoint if saved else empty_checkpoint()
        self.metadata: dict[str, Any] = saved.metadata if saved else {"step": -2}
        self.pending: list[PendingWrite] = list(saved.pending_writes or []) if saved else []
        self.parent = self.ref.at(saved.checkpoint["id"] if saved else None)
        self.loaded_parent = saved.parent_config if saved else None
        self.recorder.loaded(self.checkpoint["channel_versions"])
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
            raise ConfigError("Command(graph=...) is for a node's result, not a graph's input")
        if self.input is not None and command is None:
            yield from self._take_input()
            return
        if command is not None and not (
            command.update is not None or command.destinations() or command.resume is not None
        ):
            raise EmptyInputError("Received empty Command input")
        if not self.checkpoint["channel_versions"]:
            raise EmptyInputError(f"Received no input for {START}")
        # before anything is saved: an answer, an update, a fork
        check_sends(self.plan, self.checkpoint, self.ref.thread_id, self.ref.checkpoint_ns)
        # an explicit checkpoint id without an answer to give is time travel: re-execute
        time_travel = self.ref.checkpoint_id is not None and (
            command is None or command.resume is None
        )
        if time_travel or self.superseded:
            self.pending = []  # replay re-executes: the earlier run's writes are not reused
        forks = time_travel and (
            self.metadata.get("source") not in ("update", "fork") or self.superseded
        )
        if self.debug and not forks:  # a resume's first event: the checkpoint it goes on from
            yield "debug", self._checkpoint_event(self.checkpoint, self.metadata, self.pending)
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
        values = read_input(self.plan.schema, self.input, self.plan.input_keys)
        # new input abandons whatever the previous checkpoint still had scheduled
        discarded = prepare_tasks(
            self.plan, self.checkpoint, self.channels, self.step, self.ref.checkpoint_ns
        )
        start = Task(id="", name=INPUT, path=(), triggers=(), writes=[(START, values)])
        updated = apply_writes(self.checkpoint, self.channels, [*discarded, start])
        yield from self._put_checkpoint("input", {START: values}, updated)

    def _take_command(self, command: Command[Any], *, save: bool) -> None:
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
        if not answered:  # nothing waits (an update came first): the run's first question takes it
            self.spare.append(command.resume)
        for task in tasks:
            if task.id in answered:
                self._save_writes(task.id, task.path_text, [(RESUME, answered[task.id])])
                self.pending = [w for w in self.pending if w[:2] != (task.id, RESUME)]
                self.pending.append((task.id, RESUME, answered[task.id]))

    def _run_tasks(self, tasks: list[Task]) -> Iterator[Chunk]:
        found = records(self.pending)
        to_run = [task for task in tasks if not self._reuse(task, found.get(task.id))]
        # the START task is plumbing: LangGraph hides it from debug events, and so do we
        shown = [task for task in to_run if task.name != START] if self.debug else []
        for task in shown:
            yield "debug", debug.task_event(task, self._task_input(task), self.step)
        errors: dict[str, BaseException] = {}
        for event in self._execute(to_run, found):
            if not isinstance(event, Finished):  # a chunk a node wrote while it ran
                yield event
                continue
            task, outcome = event
            if outcome is not None and not isinstance(outcome, GraphInterrupt):
                errors[task.id] = outcome
            yield from self._take_outcome(task, outcome)
            if task in shown:
                yield "debug", debug.result_event(self.plan, task, outcome, self.step)
        for task in tasks:
            if task.id in errors:
                raise errors[task.id]
        if self.interrupts:
            # what the state is now: the tasks that finished applied, as the live view shows
            finished = [task for task in tasks if task not in to_run or task.writes]
            channels = {name: channel.copy() for name, channel in self.channels.items()}
            apply_writes(bookkeeping_copy(self.checkpoint), channels, finished, self.plan.triggers)
            values = self.plan.values(channels)
            for interrupt in self.interrupts:
                yield "values", {**values, INTERRUPT: (interrupt,)}

    def _reuse(self, task: Task, record: TaskRecord | None) -> bool:
        """Whether the task finished before (a crash, a failing sibling, an interrupt): then it
        is not run again, and its saved writes are its writes."""
        if record is None or not record.finished:
            return False
        task.writes = record.writes
        task.output = {k: v for k, v in task.writes if k in self.plan.state_keys} or None
        return True

    def _take_outcome(self, task: Task, outcome: Outcome) -> Iterator[Chunk]:
        """Save what a task did, and stream its update or interrupt."""
        if isinstance(outcome, GraphInterrupt):
            raised = list(outcome.interrupts)
            self._save_writes(task.id, task.path_text, [(INTERRUPT, raised)])
            self.interrupts += raised
            yield "updates", {INTERRUPT: tuple(raised)}
        elif isinstance(outcome, ParentCommand):  # for the parent graph: not an error here
            return
        elif outcome is not None:
            self._save_writes(task.id, task.path_text, [(ERROR, repr(outcome))])
        else:
            # saved with the checkpoint they lead to: one commit a step (after a crash in
            # the step, its tasks run again)
            self.deferred.append((task.id, task.path_text, task.writes or [(NO_WRITES, None)]))
            if task.name != START:
                if "messages" in self.settings.modes:
                    metadata = task_metadata(task, self.step, self.ref)
                    yield from message_chunks(task, self._task_input(task), metadata, self.streamed)
                yield "updates", {task.name: task.output}

    def _execute(self, tasks: list[Task], found: dict[str, TaskRecord]) -> Iterator[Event]:
        def call(task: Task) -> Outcome:
            record = found.get(task.id)
            resume = list(record.resume) if record is not None else []
            scratchpad = TaskScratchpad(
                task.name, task.id, resume, self._writer, partial(self._link, task), self.spare,
                context=self.settings.context, store=self.settings.store,
            )  # fmt: skip
            outcome: Outcome = run_in_task(scratchpad, self._call, task)
            if isinstance(outcome, GraphInterrupt):
                outcome = outcome.adopted(scratchpad)
            return outcome

        return execute(tasks, call, self.chunks, self.workers)

    def _link(self, task: Task) -> ParentLink:
        """What a subgraph the task runs takes from this run."""
        forward = self.chunks.put if self.forwarding and self.chunks is not None else None
        return ParentLink(
            saver=self.saver,
            thread_id=self.ref.thread_id,
            namespace=task_namespace(self.ref.checkpoint_ns, task.name, task.id),
            parents=child_parents(self.link, self.ref.at(self.parent.checkpoint_id)),
            durability=self.settings.durability,
            committer=self.recorder.in_flight,
            loop=self.loop,
            modes=self.settings.modes if forward else None,
            forward=forward,
            spare=self.spare,
            streamed=self.streamed,
            context=self.settings.context,
            store=self.settings.store,
        )

    def _writer(self, chunk: Any) -> None:
        if self.chunks is not None and "custom" in self.settings.modes:
            self.chunks.put(("custom", chunk))

    def _call(self, task: Task) -> Outcome:
        """Run one node; its writes land on the task. Returns what it raised, if anything."""
        try:
            output = self._node_output(task)
            task.output, task.writes = self.plan.node_writes(
                task.name, output, self.channels, self.config, self.loop
            )
        except ParentCommand as command:
            if self.link is None:
                return InvalidUpdateError(
                    f"Node '{task.name}' returned Command(graph={command.command.graph!r}): "
                    "ttcli graphs have no parent graph to send it to"
                )
            return command
        except Exception as exc:  # the node's failure or interrupt belongs to the caller
            return exc
        return None

    def _node_output(self, task: Task) -> Any:
        spec = self.plan.nodes[task.name]
        state = self._task_input(task)
        if spec.call is None:
            return state
        call = spec.call
        try:
            with self._tokens(task):
                if spec.retry:
                    return with_retries(lambda: call(state, self.config, self.loop), spec.retry)
                return call(state, self.config, self.loop)
        except ParentCommand as bubbled:  # a subgraph's node sent this node a Command
            return replace(bubbled.command, graph=None)

    def _tokens(self, task: Task) -> AbstractContextManager[None]:
        """A context to run the task in: the tokens of the chat models it calls stream when
        the caller streams `messages` (their ids go to `self.streamed`)."""
        if self.chunks is None or "messages" not in self.settings.modes:
            return token_muting()  # a subgraph's models stream only when it streams
        chunks = self.chunks

        def emit(chunk: Any, metadata: dict[str, Any]) -> None:
            chunks.put(("messages", (chunk, metadata)))

        return token_streaming(emit, task_metadata(task, self.step, self.ref), self.streamed)

    def _task_input(self, task: Task) -> Any:
        if task.path[0] == PUSH:
            return task.arg
        if task.name == START:
            return self.channels[START].get()
        return self.plan.node_input(task.name, self.channels)

    def _save_writes(self, task_id: str, task_path: str, writes: list[tuple[str, Any]]) -> None:
        self.recorder.put_writes(self.parent, (task_id, task_path, writes))

    def _flush(self) -> None:
        """Save the writes of a superstep's finished tasks, held back to go with its
        checkpoint, when the step ends without one."""
        if self.deferred:
            deferred, self.deferred = self.deferred, []
            self.recorder.put_writes_together(self.parent, deferred)

    def _put_checkpoint(
        self, source: str, writes: dict[str, Any] | None, updated: set[str] | None
    ) -> Iterator[Chunk]:
        checkpoint = new_checkpoint(
            self.checkpoint, self.channels, self.step, updated, latest=self.latest_id
        )
        metadata = checkpoint_metadata(self.config, source, self.step, writes)
        if self.link is not None:
            metadata["parents"] = dict(self.link.parents)
        parent = self.parent
        self.recorder.put(parent, checkpoint, metadata, self.deferred)
        self.deferred = []  # committed; had the batch failed, they are saved alone
        self.checkpoint, self.metadata, self.pending = checkpoint, metadata, []
        self.parent = self.ref.at(checkpoint["id"])
        self.latest_id = checkpoint["id"]
        self.step += 1
        if self.debug:
            parent_config = parent.to_config() if parent.checkpoint_id else None
            yield "debug", self._checkpoint_event(checkpoint, metadata, [], parent_config)

    def _checkpoint_event(
        self,
        checkpoint: Checkpoint,
        metadata: dict[str, Any],
        pending: list[PendingWrite],
        parent_config: RunnableConfig | None = None,
    ) -> dict[str, Any]:
        parent_config = parent_config if checkpoint is not self.checkpoint else self.loaded_parent
        config = self.ref.at(checkpoint["id"]).to_config()
        return debug.checkpoint_event(
            self.plan, config, checkpoint, metadata, parent_config, pending
        )
