"""Shared fixtures: one `saver` fixture runs a test against every saver backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ttcli.savers.base import BaseSaver
from ttcli.savers.memory import InMemorySaver

SAVERS = ["memory"]


@pytest.fixture(params=SAVERS, ids=SAVERS)
def saver(request: pytest.FixtureRequest) -> Iterator[BaseSaver]:
    if request.param == "memory":
        yield InMemorySaver()
