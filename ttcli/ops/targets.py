"""Graph TARGETs: `path/to/file.py:attr` or `package.module:attr` naming a graph to run.

A TARGET may name a StateGraph, a compiled graph, or a function that returns either, of
ttcli or of LangGraph (run on LangGraph through `ttcli.langgraph`, the `langgraph` extra). Only
commands that run a graph (run, update, replay, resume) load one; reading a file never does.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast, is_typeddict

from ttcli.errors import InputError, NotFoundError, TargetNotFoundError
from ttcli.graph.builder import StateGraph
from ttcli.graph.constants import END
from ttcli.runtime.compiled import CompiledStateGraph
from ttcli.savers.base import BaseSaver


def normalise(spec: str, folder: Path | None) -> str:
    """The TARGET as it is recorded with a thread: a file path relative to `folder` (the
    database's) when it lies beneath it, so that the two can move together (a golden database
    in CI), and absolute otherwise (always, for a server's database: `folder` None)."""
    module, _, attr = spec.rpartition(":")
    if not _is_file(module):
        return spec
    path = Path(module).resolve()
    if folder is not None and path.is_relative_to(folder.resolve()):
        return f"{path.relative_to(folder.resolve()).as_posix()}:{attr}"
    return f"{path}:{attr}"


def anchored(info: dict[str, Any], folder: Path | None) -> dict[str, Any]:
    """A thread's recorded info with its TARGET whole (a file path relative to `folder`, the
    database file's, made absolute), to be recorded in another database."""
    spec = info.get("target")
    module, _, attr = str(spec).rpartition(":")
    if spec is None or folder is None or not _is_file(module) or Path(module).is_absolute():
        return info
    return {**info, "target": f"{(folder / module).resolve()}:{attr}"}


def record(
    saver: BaseSaver, thread_id: str, spec: str, graph: CompiledStateGraph, folder: Path | None
) -> None:
    """Remember the graph with the thread, for the commands that run it again, and its state
    keys, so that commands that never load a graph can show values in the state's order."""
    saver.set_thread_info(
        thread_id, {"target": normalise(spec, folder), "state_keys": list(graph.plan.state_keys)}
    )


def for_thread(
    saver: BaseSaver, thread_id: str, given: str | None, folder: Path | None, store: BaseSaver
) -> tuple[str, CompiledStateGraph]:
    """The graph to run a thread with, compiled with `store`, and its TARGET as shown: `given`
    (from --graph), else the one recorded with the thread (a file path relative to `folder`).

    Raises:
        NotFoundError: nothing recorded; TargetNotFoundError: the recorded file is gone.
    """
    if given is not None:
        return given, compile_target(given, store)
    recorded = saver.get_thread_info(thread_id).get("target")
    if recorded is None:
        raise NotFoundError(f"thread '{thread_id}' has no graph recorded: pass --graph TARGET")
    spec = str(recorded)
    module, _, attr = spec.rpartition(":")
    if _is_file(module):
        path = Path(module) if folder is None else folder / module
        if not path.is_file():
            raise TargetNotFoundError(
                f"graph TARGET file {path}, recorded with thread '{thread_id}', does not "
                "exist: pass --graph TARGET"
            )
        return spec, compile_target(f"{path}:{attr}", store)
    return spec, compile_target(spec, store)


def compile_target(spec: str, saver: BaseSaver) -> CompiledStateGraph:
    """Load `spec` and compile it with `saver` (keeping a compiled graph's breakpoints).

    Raises:
        TargetNotFoundError: it does not import, or names no graph.
        InputError: it names a state schema or a LangGraph graph, or has a syntax error.
    """
    found = _load(spec)
    _refuse_lookalikes(spec, found)
    if callable(found) and not isinstance(found, StateGraph | CompiledStateGraph):
        try:
            found = found()
        except Exception as exc:
            raise TargetNotFoundError(
                f"graph TARGET '{spec}': calling it raised {type(exc).__name__}: {exc}"
            ) from exc
    if type(found).__module__.partition(".")[0] == "langgraph":
        return _langgraph_target(found, saver)
    if isinstance(found, CompiledStateGraph):
        return found.builder.compile(
            saver,
            interrupt_before=found.interrupt_before_nodes,
            interrupt_after=found.interrupt_after_nodes,
        )
    if isinstance(found, StateGraph):
        return found.compile(saver)
    raise TargetNotFoundError(
        f"graph TARGET '{spec}' is a {type(found).__name__}, not a StateGraph, a compiled "
        "graph or a function returning one"
    )


LANGGRAPH_EXTRA = "pip install 'ttcli[langgraph]'"


def require_nodes(graph: CompiledStateGraph, names: Iterable[str], what: str) -> None:
    """Check that each name is a node of `graph` (END counts for --as-node).

    Raises:
        InputError: one is not, listing the graph's nodes.
    """
    for name in names:
        if name not in graph.nodes and name != END:
            raise InputError(
                f"{what} {name!r} is not a node of the graph; its nodes are: "
                + ", ".join(graph.nodes)
            )


def _refuse_lookalikes(spec: str, found: Any) -> None:
    """Things often named by mistake, each with what to name instead."""
    if isinstance(found, type) and is_typeddict(found):
        raise InputError(
            f"graph TARGET '{spec}' is a state schema (a TypedDict), not a graph: name the "
            "StateGraph built on it, the compiled graph, or a function returning one"
        )


def _langgraph_target(found: Any, saver: BaseSaver) -> CompiledStateGraph:
    """A LangGraph graph runs on LangGraph, storing through `ttcli.langgraph.TtcliSaver`;
    what it returns offers what the command line uses of a compiled graph."""
    from ttcli.langgraph.target import LangGraphTarget

    return cast(CompiledStateGraph, LangGraphTarget(found, saver))


def _load(spec: str) -> Any:
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise TargetNotFoundError(
            f"graph TARGET '{spec}' must look like path/to/file.py:name or package.module:name"
        )
    try:
        module = _import_file(module_name) if _is_file(module_name) else _import_module(module_name)
        found = module
        for part in attr.split("."):
            found = getattr(found, part)
    except TargetNotFoundError:
        raise
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] in ("langgraph", "langchain_core"):
            raise InputError(
                f"graph TARGET '{spec}' needs LangGraph ({exc.name} is not installed): "
                f"{LANGGRAPH_EXTRA}"
            ) from exc
        raise TargetNotFoundError(
            f"graph TARGET '{spec}' does not import: {type(exc).__name__}: {exc}"
        ) from exc
    except AttributeError:
        raise TargetNotFoundError(f"graph TARGET '{spec}': {module_name} has no {attr!r}") from None
    except SyntaxError as exc:  # the file is there: a mistake in it is not "not found"
        raise InputError(
            f"graph TARGET '{spec}': syntax error in {exc.filename}, line {exc.lineno}: {exc.msg}"
        ) from None
    except Exception as exc:  # whatever the module raises while importing
        raise TargetNotFoundError(
            f"graph TARGET '{spec}' does not import: {type(exc).__name__}: {exc}"
        ) from exc
    return found


def _is_file(module: str) -> bool:
    return module.endswith(".py") or os.sep in module or "/" in module


def _import_file(path: str) -> Any:
    file = Path(path).resolve()
    if not file.is_file():
        raise TargetNotFoundError(f"graph TARGET file {path} does not exist")
    # the file's folder goes on the path so that it can import its neighbours
    sys.path.insert(0, str(file.parent))
    name = f"_ttcli_target_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # so that get_type_hints finds the module's names
    spec.loader.exec_module(module)
    return module


def _import_module(name: str) -> Any:
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(name)
