# The two commands of the README:  `make demo` (the main job) and `make test` (everything CI runs).
# Both set up what they need from nothing: a virtual environment with the project and its
# dependencies, and the system packages (Mosquitto) through apt when they are missing.
#
#   make demo                         the floor demo (tabled floor): two tables per game, devices and
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
	fuzz clean integrity-calibration messages

venv: $(VENV)/.installed

# The example vendor device family (docs/drivers.md): a package of its own, installed into this
# venv as a vendor's would be into a table's, so that `make test` runs the conformance kit and
# its own tests against it. With --no-deps: it depends on `tabled`, which here is this venv's
# editable install (the name on PyPI is another project's). `pip install .` of tabled and the
# Debian package (debian/rules installs pyproject.toml's project only) do not include it.
EXAMPLES := examples/tabled-acme-shoe examples/tabled-sicbo

$(VENV)/.installed: pyproject.toml $(EXAMPLES:%=%/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	for example in $(EXAMPLES); do $(BIN)/pip install --quiet --no-deps -e $$example || exit 1; done
	touch $@

# Mosquitto is the broker the tests start on a free port (and the demo's when none is given);
# systemd-analyze checks the units; PostgreSQL's initdb/pg_ctl start the server the pit's store
# tests run against; Debian's Chromium is the browser the pit's page tests drive through Playwright
# (never `playwright install`: it downloads a browser of its own). Installed only when missing.
system-deps:
	@missing=""; \
	command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || missing="$$missing mosquitto"; \
	command -v mosquitto_passwd >/dev/null 2>&1 || [ -x /usr/bin/mosquitto_passwd ] || missing="$$missing mosquitto"; \
	command -v dpkg-buildpackage >/dev/null 2>&1 || missing="$$missing dpkg-dev"; \
	command -v dh >/dev/null 2>&1 || missing="$$missing debhelper"; \
	command -v dh_virtualenv >/dev/null 2>&1 || missing="$$missing dh-virtualenv"; \
	/usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	command -v lintian >/dev/null 2>&1 || missing="$$missing lintian"; \
	command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing="$$missing debootstrap"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v pdftoppm >/dev/null 2>&1 || missing="$$missing poppler-utils"; \
	fc-list 2>/dev/null | grep -qi "wenquanyi micro hei" || missing="$$missing fonts-wqy-microhei"; \
	command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing="$$missing haproxy"; \
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
PACKAGES := contract daemon drivers games simulators pit tools
LAYOUT   := build/typecheck/tabled

layout:
	@mkdir -p $(LAYOUT)
	@for d in $(PACKAGES); do ln -sfn ../../../$$d $(LAYOUT)/$$d; done

typecheck: venv layout
	$(BIN)/mypy
	for example in $(EXAMPLES); do \
	  (cd $$example && MYPYPATH=$(CURDIR)/build/typecheck $(CURDIR)/$(BIN)/mypy) || exit 1; \
	done

layers: venv layout
	PYTHONPATH=build/typecheck $(BIN)/lint-imports

unit: venv system-deps
	$(BIN)/pytest -q $(PYTEST_ARGS)

test: lint typecheck layers unit

bench: venv system-deps
	$(BIN)/python -m bench $(BENCH_ARGS)

# The full fault campaigns and the full fuzzing campaign of docs/reliability.md (bounded forms
# of both run in `make test`), and the pit killed 25 times while tables play (docs/pit.md; 6 kills
# in `make test`). The disk campaign needs root (a loop-mounted filesystem).
# A site's uplink cut for 60 s between bridged brokers (docs/deployment.md; 3 s in `make test`).
campaigns: venv system-deps
	$(BIN)/python -m tests.campaigns $(CAMPAIGN_ARGS)
	TABLED_SLOW=1 $(BIN)/pytest -q -m slow tests/pit
	TABLED_SLOW=1 $(BIN)/pytest -q -m slow tests/integration/test_bridge.py

fuzz: venv
	$(BIN)/python -m bench.fuzz $(FUZZ_ARGS)

# The integrity monitors' calibration (docs/integrity.md): false alarms over 10^6 fair rounds per
# game, detection delays of the biased cases, throughput; writes the figures into the document.
# Several minutes; tests/bench/test_integrity_calibration.py runs a bounded form in `make test`.
integrity-calibration: venv
	$(BIN)/python -m bench.integrity --write-docs $(INTEGRITY_ARGS)

# The Debian package, build/deb/tabled_<version>_<arch>.deb (docs/install.md; debian/rules says
# what goes in it). The build runs in a copy of the tree as git sees it (committed, changed and
# new files; nothing ignored), so that dpkg-buildpackage's output and dh-virtualenv's work stay
# under build/deb, and pip's cache under build/. tests/packaging/ builds it, runs lintian and
# installs it into a fresh root. The Debian tooling (debhelper, dh-virtualenv with Debian's
# python3 and its venv module, lintian, debootstrap) comes from system-deps, when missing.
DEB_DIR := build/deb
.PHONY: deb
deb: system-deps
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	git ls-files -z --cached --others --exclude-standard \
	  | xargs -0 -r sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done; true' sh \
	  | tar --null --files-from=- -cf - | tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && env -u VIRTUAL_ENV -u PYTHONPATH -u PYTHONHOME \
	  PIP_CACHE_DIR=$(CURDIR)/build/pip-cache dpkg-buildpackage --build=binary --no-sign
	rm -rf $(DEB_DIR)/src
	@ls -l $(DEB_DIR)/*.deb

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(DEB_DIR) build/pip-cache

# The pit's message catalogue (docs/pit.md "Languages"): extract every marked string of pit/ and
# games/ (babel.cfg, its paths from here) into build/tabled.pot, then add the new msgids to each language's .po
# (existing entries and their translations kept; a msgid gone from the sources is kept as
# obsolete). Fill in the empty msgstrs; tests/pit/test_i18n.py fails until they are.
messages: venv
	@mkdir -p build
	$(BIN)/pybabel -q extract -F babel.cfg -k N_ --no-location --sort-output \
	  --project tabled -o build/tabled.pot .
	for language in zh_Hant pt; do \
	  $(BIN)/pybabel -q update -i build/tabled.pot -d pit/locale -D tabled -l $$language \
	    --no-fuzzy-matching || exit 1; \
	done
