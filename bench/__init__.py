"""Side-by-side benchmarks of ttcli against LangGraph (the oracle), run with `make bench`."""
