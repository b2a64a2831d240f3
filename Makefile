# Quick start: `make demo` and `make test` do all set-up themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test typecheck lint venv clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# the peer the benchmarks compare with (bench temporal's mempalace system); its KnowledgeGraph needs no deps
	$(BIN)/python -m pip install --quiet --no-deps -r bench/requirements.txt
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/chronomem --db "$${CHRONOMEM_DEMO_DB:-$$(mktemp -d)/demo.db}" demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 -q --durations=15

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info

# Benchmark vs MemPalace (bench/kg_bench.py); extra flags: make bench BENCH_ARGS="--quick --json out.json"
.PHONY: bench
bench:
	test -x .venv-bench/bin/python || $(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet --upgrade pip
	.venv-bench/bin/python -m pip install --quiet -e .
	.venv-bench/bin/python -m pip install --quiet --no-deps -r bench/requirements.txt
	.venv-bench/bin/python bench/kg_bench.py $(BENCH_ARGS)
