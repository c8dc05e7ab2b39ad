"""State schemas: turning a TypedDict or dataclass into channels, and values in and out."""

from __future__ import annotations

import dataclasses
import enum
import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from ttcli.errors import GraphDefinitionError, InvalidUpdateError
from ttcli.graph.channels import Channel, LastValue, ReducerChannel
from ttcli.graph.messages import add_messages, coerce_messages


def schema_channels(schema: type[Any]) -> dict[str, Channel]:
    """One channel per state key: `Annotated[T, reducer]` folds writes, others keep the last."""
    try:
        hints = get_type_hints(schema, include_extras=True)
    except TypeError as exc:
        raise GraphDefinitionError(f"state schema {schema!r} has no type annotations") from exc
    except NameError as exc:
        raise GraphDefinitionError(
            f"cannot read the type hints of state schema {schema.__qualname__}: {exc}; "
            "import the names its annotations use in its module"
        ) from exc
    if not hints:
        raise GraphDefinitionError(
            f"state schema {getattr(schema, '__name__', schema)!r} declares no keys; "
            "use a TypedDict or dataclass with annotated fields"
        )
    return {key: _channel_for(key, hint) for key, hint in hints.items()}


def _channel_for(key: str, hint: Any) -> Channel:
    if get_origin(hint) is Annotated:
        base, *extras = get_args(hint)
        reducers = [extra for extra in extras if callable(extra) and _takes_two(extra)]
        if reducers:
            reducer = reducers[-1]
            # messages get their ids when written, not when reduced, so a replay or a live
            # view that reduces the same write again sees the same ids
            normalize = coerce_messages if reducer is add_messages else None
            return ReducerChannel(key, reducer, _default_factory(base), normalize)
    return LastValue(key)


def _takes_two(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # builtins such as operator.add have no signature
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _default_factory(base: Any) -> Callable[[], Any] | None:
    """A reducer channel starts from its type's empty value (`list` -> `[]`), as LangGraph."""
    origin = get_origin(base) or base
    if not isinstance(origin, type):
        return None
    try:
        origin()
    except Exception:
        return None
    return origin


def annotated_input_schema(action: Any) -> type[Any] | None:
    """The schema a node function's first parameter is annotated with, if it is one (a
    TypedDict, dataclass or pydantic model): the keys that node reads."""
    if not inspect.isfunction(action) and not inspect.ismethod(action):
        return None
    try:
        first = next(iter(inspect.signature(action).parameters), None)
        hint = get_type_hints(action).get(first) if first is not None else None
    except (NameError, TypeError, ValueError):
        return None
    if not isinstance(hint, type) or not (
        dataclasses.is_dataclass(hint) or hasattr(hint, "model_fields") or _is_typeddict(hint)
    ):
        return None
    return hint


def _is_typeddict(hint: type[Any]) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


def read_input(schema: type[Any], value: Any, keys: Mapping[str, Channel]) -> dict[str, Any]:
    """The state keys an input (or node output, or update) writes, in declaration order."""
    if value is None:
        return {}
    if type(value) is dict or isinstance(value, Mapping):  # a node's usual dict: no ABC check
        found = {key: value[key] for key in value if key in keys}
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = {
            f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name in keys
        }
    elif hasattr(type(value), "model_fields"):  # a pydantic model (read on its class: v2.11+)
        found = {key: getattr(value, key) for key in type(value).model_fields if key in keys}
    else:
        raise InvalidUpdateError(f"Expected dict, got {value!r}")
    for key, item in found.items():
        channel = keys[key]
        if isinstance(channel, ReducerChannel) and channel.normalize is not None:
            found[key] = channel.normalize(item)
    return found


def state_builder(schema: type[Any]) -> Callable[[dict[str, Any]], Any]:
    """How a node's state is made from its keys' values: a dict for TypedDict schemas, an
    instance for classes (dataclasses, pydantic models). Decided once per schema, when a
    graph is compiled: asking each superstep cost two failed attribute lookups, each
    formatting an AttributeError (~3% of the runtime's work in a counter loop)."""
    if dataclasses.is_dataclass(schema) or hasattr(schema, "model_fields"):
        return lambda values: schema(**values)
    return dict


def schema_types(schema: type[Any]) -> set[type]:
    """Classes a state schema names (dataclasses, enums, pydantic models, named tuples), at
    any depth of its type hints: the types the saver may rebuild when reading state back."""
    found: set[type] = set()
    todo: list[Any] = [schema]
    while todo:
        hint = todo.pop()
        todo.extend(get_args(hint))
        if not isinstance(hint, type) or hint in found:
            continue
        if (
            dataclasses.is_dataclass(hint)
            or hasattr(hint, "model_fields")
            or (issubclass(hint, tuple) and hasattr(hint, "_fields"))
            or issubclass(hint, enum.Enum)
        ):
            found.add(hint)
        if dataclasses.is_dataclass(hint) or hasattr(hint, "__annotations__"):
            try:
                todo.extend(get_type_hints(hint).values())
            except (NameError, TypeError):
                pass
    return found
