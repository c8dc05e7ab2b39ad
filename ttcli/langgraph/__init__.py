"""ttcli for LangGraph apps (the optional extra `ttcli[langgraph]`).

`TtcliSaver(path)` is a LangGraph checkpointer that stores in ttcli's SQLite format, so a
graph kept on LangGraph gets ttcli's small files and its command line:

    graph = builder.compile(checkpointer=TtcliSaver("app.db"))

This package is the only part of ttcli that imports LangGraph or LangChain.
"""

from ttcli.langgraph.saver import TtcliSaver

__all__ = ["TtcliSaver"]
