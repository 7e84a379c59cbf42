# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test bench bench-quick lint services doctor clean

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

test: install services  ## the whole suite: unit, integration (Postgres, Redis, embedded pgvector)
	$(BIN)/python -m pytest

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
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
