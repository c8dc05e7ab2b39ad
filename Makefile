# Every target builds its own virtualenv, so a fresh machine needs only python3 and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TEST ?= tests

.PHONY: install dev test demo bench bench-tricks bench-postgres lint typecheck check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# the command line and the library alone
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# plus what the tests, the checkers and the benchmarks need (LangGraph as a test oracle)
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed

dev: $(VENV)/.installed-dev

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q $(TEST)

demo: $(VENV)/.installed
	$(BIN)/python -m fixtures.demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check ttcli tests fixtures bench
	$(BIN)/ruff format --check ttcli tests fixtures bench

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

check: lint typecheck test

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench

# what each compaction trick of the format pays (bench/analysis.md)
bench-tricks: $(VENV)/.installed-dev
	$(BIN)/python -m bench.tricks

# ttcli's PostgresSaver against LangGraph's on the server of TTCLI_BENCH_PG (sizes: ARGS='--help')
bench-postgres: $(VENV)/.installed-dev
	$(BIN)/python -m bench.postgres $(ARGS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
