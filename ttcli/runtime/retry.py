"""Retrying a failing node, as LangGraph's `RetryPolicy` does."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ttcli.runtime.commands import GraphInterrupt, ParentCommand, current_scratchpad

# errors that retrying will not fix (LangGraph's list)
_NOT_RETRIED = (
    ValueError,
    TypeError,
    ArithmeticError,
    ImportError,
    LookupError,
    NameError,
    SyntaxError,
    RuntimeError,
    ReferenceError,
    StopIteration,
    StopAsyncIteration,
    OSError,
)


def default_retry_on(exc: Exception) -> bool:
    """LangGraph's default: connection errors and HTTP 5xx answers, not programming errors."""
    if isinstance(exc, ConnectionError):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):  # an HTTP client's status error (httpx, requests)
        return 500 <= status < 600
    return not isinstance(exc, _NOT_RETRIED)


class RetryPolicy(NamedTuple):
    """How often, and after how long, a failing node is run again."""

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    #: attempts in all, the first included
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        default_retry_on
    )

    def applies(self, exc: Exception) -> bool:
        retry_on: Any = self.retry_on
        if isinstance(retry_on, type):
            return isinstance(exc, retry_on)
        if isinstance(retry_on, Sequence):
            return isinstance(exc, tuple(retry_on))
        return bool(retry_on(exc))

    def pause(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th failure."""
        interval = self.initial_interval * self.backoff_factor ** (failures - 1)
        interval = min(self.max_interval, interval)
        return interval + random.uniform(0, 1) if self.jitter else interval


def with_retries(call: Callable[[], Any], policies: Sequence[RetryPolicy]) -> Any:
    """`call()`, run again as the first policy that applies to its error allows (a pause for a
    person, or a command for the parent graph, is not an error)."""
    failures = 0
    while True:
        scratchpad = current_scratchpad()
        if scratchpad is not None:  # each attempt asks its questions from the first again
            scratchpad.count = scratchpad.subgraph_calls = 0
        try:
            return call()
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as exc:
            policy = next((p for p in policies if p.applies(exc)), None)
            failures += 1
            if policy is None or failures >= policy.max_attempts:
                raise
            time.sleep(policy.pause(failures))
