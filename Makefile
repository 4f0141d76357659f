# One command for the tests: `make test` sets everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Only the folders that exist: a checkout may not have every top-level package yet.
CODE := $(wildcard monitor forecasting fleetsim tests benchmarks)
PACKAGES := $(wildcard monitor forecasting fleetsim)

.PHONY: test lint typecheck unit setup tools clean rules demo

# The whole product on loopback until Ctrl-C: `make demo` (irregular demand, fleetsim's default),
# `make demo SCENARIO=long-prompts`, `make demo SCENARIO=baseline` (the plan's regular week),
# `make demo CLOSED_LOOP=1` (recommendations drive fleetsim's replica counts).
SCENARIO ?=
DAYS ?= 28
PLAN ?=
CLOSED_LOOP ?=

setup: $(STAMP) tools

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Prometheus, Alertmanager, VictoriaMetrics and its vmalert (integration tests), Chromium (the page tests) and docker-compose
# (v1: it validates docker-compose.yml offline, with no engine) from Debian's packages,
# when they are not installed yet.
tools:
	@missing=""; \
	command -v prometheus >/dev/null && command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v prometheus-alertmanager >/dev/null || command -v alertmanager >/dev/null || missing="$$missing prometheus-alertmanager"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v victoria-metrics >/dev/null && command -v vmalert >/dev/null || missing="$$missing victoria-metrics"; \
	command -v docker-compose >/dev/null || missing="$$missing docker-compose"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check $(CODE)
	$(BIN)/ruff format --check $(CODE)

typecheck: $(STAMP)
	$(BIN)/mypy $(PACKAGES)

test: setup lint typecheck
	$(BIN)/lint-imports
	$(BIN)/pytest

demo: setup
	$(BIN)/planwatch demo $(if $(PLAN),--plan $(PLAN),) $(if $(SCENARIO),--scenario $(SCENARIO),) --days $(DAYS) $(if $(CLOSED_LOOP),--closed-loop,)

# Regenerate the committed rules (tests fail when the committed files differ from the generators).
rules: $(STAMP)
	$(BIN)/python -m monitor.queries.rules > rules/recording.yml
	$(BIN)/planwatch rules examples/capstone.yaml --out rules/capstone-slo.yml
	$(BIN)/planwatch rules examples/support-copilot.yaml --out rules/support-copilot-slo.yml
	$(BIN)/planwatch rules --advisor --out rules/alerts-planwatch.yml
	$(BIN)/python -m monitor.dashboards

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
