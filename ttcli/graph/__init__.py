"""Declaring graphs: StateGraph, state schemas, channels, reducers and messages."""

from ttcli.graph.builder import StateGraph
from ttcli.graph.constants import END, START
from ttcli.graph.messages import MessagesState, add_messages

__all__ = ["END", "START", "MessagesState", "StateGraph", "add_messages"]
