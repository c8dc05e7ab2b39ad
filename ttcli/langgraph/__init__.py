"""ttcli for LangGraph apps (the optional extra `ttcli[langgraph]`).

`TtcliSaver(path)` is a LangGraph checkpointer that stores in ttcli's SQLite format, so a
graph kept on LangGraph gets ttcli's small files and its command line:

    graph = builder.compile(checkpointer=TtcliSaver("app.db"))

This package is the only part of ttcli that imports LangGraph or LangChain. `TtcliSaver` is
loaded when first asked for, so that `ttcli.langgraph.tokens` (LangChain only, for ttcli's
own runtime) loads without LangGraph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ttcli.langgraph.saver import TtcliSaver

__all__ = ["TtcliSaver"]


def __getattr__(name: str) -> Any:
    if name == "TtcliSaver":
        from ttcli.langgraph.saver import TtcliSaver

        return TtcliSaver
    raise AttributeError(f"module 'ttcli.langgraph' has no attribute {name!r}")
