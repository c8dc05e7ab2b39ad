"""Executing graphs: the superstep loop, snapshots, update_state and replay."""
