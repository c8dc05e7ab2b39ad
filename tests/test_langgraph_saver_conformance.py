"""LangGraph's official conformance suite (langgraph-checkpoint-conformance) on TtcliSaver:
every base capability and every extended one, on SQLite and on PostgreSQL, each run on a
fresh database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
    Capability,
)

from tests.conftest import NewDb
from ttcli.langgraph import TtcliSaver


@pytest.mark.parametrize(
    "capability",
    sorted(BASE_CAPABILITIES | EXTENDED_CAPABILITIES),
    ids=str,
)
def test_conformance(capability: Capability, new_db: NewDb) -> None:
    files = iter(range(1000))

    @checkpointer_test(name="TtcliSaver")
    async def ttcli_saver() -> AsyncIterator[TtcliSaver]:
        saver = TtcliSaver(new_db(f"conformance-{next(files)}.db"))
        yield saver
        saver.close()

    report = asyncio.run(validate(ttcli_saver, capabilities={capability.value}))
    result = report.results[capability.value]
    assert result.detected, f"{capability.value} is not implemented"
    assert result.failures == [], "\n".join(result.failures)
    assert result.passed and result.tests_passed > 0 and result.tests_failed == 0
