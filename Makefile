# The two commands of the README: `make demo` and `make test`. Both install first:
# `make demo` the runtime only (requirements.lock), `make test` the extras and the test
# tools too (requirements-dev.lock).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.runtime-installed
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check

.PHONY: install install-runtime browser demo test reliability lint bench eval clean

$(RUNTIME): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements.lock
	$(PIP) --no-deps -e .
	touch $(RUNTIME)

$(STAMP): $(RUNTIME) requirements-dev.lock
	$(PIP) -r requirements-dev.lock
	touch $(STAMP)

install-runtime: $(RUNTIME)

install: $(STAMP)

# Headless Chromium from Debian's packages for the inspector's browser tests; installs
# only when missing, never fails (the tests skip, saying why, without it).
browser:
	sh .ci/install-browser.sh

demo: install-runtime
	$(BIN)/python -m hivemem.frontends.demo

# The 15 slowest tests close the run's output, so a test that grows the suite's time
# shows in every CI log (README: how long `make test` takes).
test: install browser
	$(BIN)/ruff check src tests examples
	$(BIN)/ruff format --check src tests examples
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q --durations=15

# The reliability suite in its long form (docs/reliability.md): every test marked
# `reliability` (all of tests/reliability/), with many more fuzz examples than `make test`.
reliability: install
	HIVEMEM_RELIABILITY_LONG=1 $(BIN)/python -m pytest -q -m reliability

bench: install-runtime
	$(BIN)/hivemem bench --full

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
