# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

LLM_VENV ?= .venv-llm

.PHONY: install run test test-again test-llm bench bench-quick lint services doctor clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install Mnemo with its dev tools

run: install  ## the bot on the embedded default: embedded PostgreSQL (migrated) and a console chat
	$(BIN)/mnemo db upgrade
	$(BIN)/mnemo chat

services:  ## make sure PostgreSQL and Redis are up on 127.0.0.1 (tests use both)
	./scripts/services.sh

TEST_WORKERS ?= 3

test: install services  ## the import contracts, the type check, then the whole suite (unit, integration, e2e) on TEST_WORKERS processes
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

RUNS ?= 20
AGAIN ?= tests/e2e/test_panel_browser.py tests/e2e/test_usage_panel_browser.py tests/e2e/test_worker.py

test-again: install services  ## the tests in AGAIN (browser and worker), RUNS times in a row; stops at the first failure
	for run in $$(seq $(RUNS)); do \
		$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup $(AGAIN) || { echo "run $$run of $(RUNS) failed"; exit 1; }; \
		echo "run $$run of $(RUNS) passed"; \
	done

test-llm: install services  ## Mnemo against a real LLM server: llama-cpp-python + Gemma 3 270M on loopback
	# builds llama.cpp from source once per machine (about 8 minutes), for a portable x86-64 baseline
	PYTHON=$(PYTHON) LLM_VENV=$(LLM_VENV) ./scripts/llm-server-venv.sh
	MNEMO_LLM_SERVER_PYTHON=$(CURDIR)/$(LLM_VENV)/bin/python $(BIN)/python -m pytest -m real_llm tests/real_llm -rA

bench: install  ## every benchmark (quality, hot path, scale, dedup, worker, prompt cost): bench/results/report.md
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/mnemo bench all

bench-quick: install  ## the same suites on small data, in under three minutes
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/mnemo bench all --quick

lint: install
	$(BIN)/ruff check .

doctor: install
	$(BIN)/mnemo doctor

clean:
	rm -rf $(VENV) $(LLM_VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
