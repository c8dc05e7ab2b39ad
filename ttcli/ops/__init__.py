"""Thread-level operations on a saver: copying lineages, pruning and archiving.

They work through the saver contract only, so they run on any backend; the command line is a
thin shell over them.
"""
