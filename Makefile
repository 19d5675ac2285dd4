# Set-up is two commands on a fresh machine (see README.rst):
#   make run    installs cyquota into .venv and starts the all-in-one service
#               on the embedded default (SQLite, in-process RPC, local limits)
#   make test   installs cyquota with its test tools into .venv and runs the tests
#   make unit   the unit tests alone, without the slow groups (markers in
#               setup.cfg): a few minutes, no server needed
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Test processes side by side (pytest-xdist, -n): 0 runs the tests in this
# process. On two cores two processes were slower than one (the functional
# tests' servers and spawned workers already fill both); give more cores
# more processes: make test TEST_WORKERS=4.
TEST_WORKERS ?= 0

.PHONY: run test unit bench genconfig genopenapi

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/cyquota-all-in-one

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q -ra --durations=15 -n $(TEST_WORKERS) --dist loadgroup tests

unit: $(VENV)/.installed
	$(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) -m 'not (readme or docs_build or mypy)' tests/unit

bench: $(VENV)/.installed
	$(BIN)/python -m benchmarks

genconfig: $(VENV)/.installed
	$(BIN)/oslo-config-generator --config-file etc/cyquota/cyquota-config-generator.conf
	$(BIN)/oslo-config-generator --config-file etc/cyquota/cyquota-cyborg-filter-config-generator.conf

genopenapi: $(VENV)/.installed
	$(BIN)/python -m cyquota.api.openapi_document
