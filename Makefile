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

bench: install  ## every benchmark figure (quality, latency and scale, dedup); results in bench/results/
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/mnemo bench quality
	$(BIN)/mnemo bench hot-path
	$(BIN)/mnemo bench scale
	$(BIN)/mnemo bench dedup

bench-quick: install  ## the same suites on small data, in a few minutes
	$(BIN)/mnemo bench quality --quick
	$(BIN)/mnemo bench hot-path --conversations 50 --messages 50
	$(BIN)/mnemo bench scale --sizes 10000 --users 1000 --queries 200
	$(BIN)/mnemo bench dedup --sizes 2000,8000

lint: install
	$(BIN)/ruff check .

doctor: install
	$(BIN)/mnemo doctor

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
