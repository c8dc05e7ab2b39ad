"""Storing checkpoints: the saver contract and its backends."""

from ttcli.savers.base import BaseSaver, Checkpoint, CheckpointTuple
from ttcli.savers.memory import InMemorySaver

__all__ = ["BaseSaver", "Checkpoint", "CheckpointTuple", "InMemorySaver"]
