# Everything the project needs is installed here, into .venv, by `make setup` (run by the other targets).
PYTHON ?= python3
# The CPU build: a bare `torch` requirement with no torch installed would pull the multi-GB CUDA build.
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup quickstart test lint lab bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install "$(TORCH)"
	$(BIN)/pip install -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

## The main job: the quickstart notebook, executed headless on the embedded Dask cluster.
quickstart: setup
	$(BIN)/python scripts/run_notebook.py notebooks/01_quickstart_hpo.ipynb --out build/quickstart

## All the tests (and the linters).
test: setup lint
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check jupyter_dist tests scripts bench
	$(BIN)/ruff format --check jupyter_dist tests scripts bench

## JupyterLab on the example notebooks.
lab: setup
	$(BIN)/jupyter lab notebooks/

## Benchmarks (not part of the tests); results land in bench/results/*.json.
bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build .pytest_cache
