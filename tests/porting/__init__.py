"""LangGraph programs of the kinds its docs teach, written against LangGraph's imports.

`tests/test_porting_suite.py` runs each as written on LangGraph, then with only its imports
changed to ttcli's (on the memory and the SQLite saver), and compares what they return. Each
program's `main(checkpointer)` returns its results and the histories it produced.
"""
