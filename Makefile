# The two commands of the README:  `make demo` (the main job) and `make test` (everything CI runs).
# Both set up what they need from nothing: a virtual environment with the project and its
# dependencies, and the system packages (Mosquitto) through apt when they are missing.
#
#   make demo                         the floor demo (tabled floor): six tables, their devices and
#                                     daemons, a broker and the pit, until Ctrl-C
#   make demo FLOOR_ARGS="--pace 10"  the same, with tabled floor's options (tabled floor -h)
#   make demo GAME=qpoker ROUNDS=10   one table (tabled demo): N rounds, then exit 0

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# One table when GAME or ROUNDS is given, the floor otherwise (decided before the defaults).
ifeq ($(origin GAME)$(origin ROUNDS),undefinedundefined)
DEMO   := floor
else
DEMO   := table
endif
GAME   ?= baccarat
ROUNDS ?= 20
FLOOR_ARGS ?=
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL = $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends

.PHONY: demo test lint typecheck layers layout unit system-deps demo-deps venv bench campaigns \
	fuzz clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# Mosquitto is the broker the tests start on a free port (and the demo's when none is given);
# systemd-analyze checks the units; PostgreSQL's initdb/pg_ctl start the server the pit's store
# tests run against. Installed only when missing.
system-deps:
	@missing=""; \
	command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || missing="$$missing mosquitto"; \
	command -v mosquitto_passwd >/dev/null 2>&1 || [ -x /usr/bin/mosquitto_passwd ] || missing="$$missing mosquitto"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(APT_INSTALL) $$missing; \
	fi

# What the demos need: the broker, and its clients to watch it (mosquitto_sub, which the floor
# demo's banner suggests). The pit's Python packages come with the venv.
demo-deps:
	@missing=""; \
	command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || missing="$$missing mosquitto"; \
	command -v mosquitto_sub >/dev/null 2>&1 || missing="$$missing mosquitto-clients"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(APT_INSTALL) $$missing; \
	fi

demo: venv demo-deps
ifeq ($(DEMO),floor)
	$(BIN)/tabled floor $(FLOOR_ARGS)
else
	$(BIN)/tabled demo --game $(GAME) --rounds $(ROUNDS)
endif

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
