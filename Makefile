PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_INPUT := fixtures/claude-code/openagents__regex-log__haiku-testgen-v2.jsonl
DEMO_OUT := demo

.PHONY: install demo test lint typecheck docs cog unit bench retention clean resume-check resume-clients

$(BIN)/python:
	$(PY) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip > /dev/null 2>&1 || true

$(STAMP): $(BIN)/python pyproject.toml
	@echo "installing ctxpack and its dev tools into $(VENV) ..."
	@$(BIN)/python -m pip install -q -e '.[dev]' > $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@mkdir -p $(DEMO_OUT)
	$(BIN)/ctxpack compress --force --offline $(DEMO_INPUT) -o $(DEMO_OUT)/session.ctxpack.jsonl --archive $(DEMO_OUT)/archive.db --report $(DEMO_OUT)/report.json
	$(BIN)/ctxpack restore $(DEMO_OUT)/session.ctxpack.jsonl -o $(DEMO_OUT)/session.restored.jsonl --archive $(DEMO_OUT)/archive.db
	@cmp -s $(DEMO_INPUT) $(DEMO_OUT)/session.restored.jsonl && echo "restore: byte-identical to the original"
	@echo "compacted transcript: $(DEMO_OUT)/session.ctxpack.jsonl (report: $(DEMO_OUT)/report.json)"

lint: $(STAMP)
	$(BIN)/ruff check ctxpack tests bench resume
	$(BIN)/ruff format --check ctxpack tests bench resume

typecheck: $(STAMP)
	$(BIN)/mypy ctxpack resume

# README's --help blocks are generated from the CLI; a stale one fails the build.
docs: $(STAMP)
	$(BIN)/cog --check README.md

cog: $(STAMP)
	$(BIN)/cog -r README.md

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck docs unit

# The real agent clients, pinned in resume/package-lock.json, installed from
# the npm registry into .resume (ignored); each ships its native binary in an
# npm package, so the install needs nothing but the registry.
CLIENTS_STAMP := .resume/.installed

$(CLIENTS_STAMP): resume/package.json resume/package-lock.json
	@mkdir -p .resume
	@cp resume/package.json resume/package-lock.json .resume/
	@echo "installing the agent clients into .resume ..."
	@cd .resume && npm ci --no-audit --no-fund > npm.log 2>&1 || { cat npm.log; exit 1; }
	@touch $(CLIENTS_STAMP)

resume-clients: $(CLIENTS_STAMP)

# Resume original and compacted fixtures in Claude Code, Codex and pi against
# a loopback stub and check the request each one sends.
resume-check: $(STAMP) $(CLIENTS_STAMP)
	$(BIN)/python -m resume.check

bench: $(STAMP)
	$(BIN)/python bench/run.py

# The README's retention tables: compress --context-length 32000, then eval's
# region facts and token ratio, on fixtures/ and the shared real transcripts.
retention: $(STAMP)
	$(BIN)/python bench/retention.py
	$(BIN)/python bench/retention.py ../shared/real-transcripts

clean:
	rm -rf $(VENV) $(DEMO_OUT) .resume .mypy_cache .ruff_cache .pytest_cache .hypothesis
