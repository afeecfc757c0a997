# The two commands of the README:  `make demo` (the main job) and `make test` (everything CI runs).
# Both set up what they need from nothing: a virtual environment with the project and its
# dependencies, and the system packages (Mosquitto) through apt when they are missing.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
GAME   ?= baccarat
ROUNDS ?= 20
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test lint typecheck layers layout unit system-deps venv bench campaigns fuzz clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# Mosquitto is the broker the tests start on a free port (and the demo's when none is given);
# systemd-analyze checks the units; PostgreSQL's initdb/pg_ctl start the server the pit's store
# tests run against; Debian's Chromium is the browser the pit's page tests drive through Playwright
# (never `playwright install`: it downloads a browser of its own). Installed only when missing.
system-deps:
	@missing=""; \
	command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || missing="$$missing mosquitto"; \
	command -v mosquitto_passwd >/dev/null 2>&1 || [ -x /usr/bin/mosquitto_passwd ] || missing="$$missing mosquitto"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

demo: venv system-deps
	$(BIN)/tabled demo --game $(GAME) --rounds $(ROUNDS)

lint: venv
	$(BIN)/ruff check .

# mypy and import-linter read the installed layout (tabled.<folder>), which setuptools' package-dir
# mapping gives the interpreter but not static tools: link the folders into it for them.
PACKAGES := contract daemon drivers simulators pit tools
LAYOUT   := build/typecheck/tabled

layout:
	@mkdir -p $(LAYOUT)
	@for d in $(PACKAGES); do ln -sfn ../../../$$d $(LAYOUT)/$$d; done

typecheck: venv layout
	$(BIN)/mypy

layers: venv layout
	PYTHONPATH=build/typecheck $(BIN)/lint-imports

unit: venv system-deps
	$(BIN)/pytest -q $(PYTEST_ARGS)

test: lint typecheck layers unit

bench: venv system-deps
	$(BIN)/python -m bench $(BENCH_ARGS)

# The full fault campaigns and the full fuzzing campaign of docs/reliability.md (bounded forms
# of both run in `make test`). The disk campaign needs root (a loop-mounted filesystem).
campaigns: venv system-deps
	$(BIN)/python -m tests.campaigns $(CAMPAIGN_ARGS)

fuzz: venv
	$(BIN)/python -m bench.fuzz $(FUZZ_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
