"""Declaring graphs: StateGraph, state schemas, channels, reducers and messages."""
