# The two commands of the README: `make demo` and `make test`. Both install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser demo test reliability lint bench eval clean

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# Headless Chromium from Debian's packages for the inspector's browser tests; installs
# only when missing, never fails (the tests skip, saying why, without it).
browser:
	sh .ci/install-browser.sh

demo: install
	$(BIN)/python -m hivemem.demo

test: install browser
	$(BIN)/ruff check src tests examples
	$(BIN)/ruff format --check src tests examples
	$(BIN)/python -m pytest -q

# The reliability suite in its long form (docs/reliability.md): every test marked
# `reliability` (all of tests/reliability/), with many more fuzz examples than `make test`.
reliability: install
	HIVEMEM_RELIABILITY_LONG=1 $(BIN)/python -m pytest -q -m reliability

bench: install
	$(BIN)/hivemem bench

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
