PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_INPUT := fixtures/claude-code/openagents__regex-log__opus-raw.jsonl

.PHONY: install demo test lint typecheck unit bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ctxpack compress --force --offline $(DEMO_INPUT) -o /tmp/ctxpack-demo.jsonl
	@echo "compacted transcript: /tmp/ctxpack-demo.jsonl"

lint: $(STAMP)
	$(BIN)/ruff check ctxpack tests
	$(BIN)/ruff format --check ctxpack tests

typecheck: $(STAMP)
	$(BIN)/mypy ctxpack

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
