# navrl — Quick start: `make demo`, `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-all bench mutants clean

setup: $(STAMP)

# The CPU build of torch is installed explicitly first so that no CUDA build is pulled. Packages are
# installed without byte-compiling every module (--no-compile): Python compiles what it imports.
# Debian's Chromium (browser device, MiniWoB++) is installed when missing and apt is usable
# (as root on Debian: CI), in the background while pip installs (the set-up waits for both and
# fails if either does); elsewhere the browser tests say why they skip.
$(STAMP): pyproject.toml setup.py src/_navrl_gymnasium.pth
	@set -e; apt_pid=; \
	if { ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; } \
		&& command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "make setup: running as root on Debian without Chromium: apt-get install chromium chromium-driver (the browser device, MiniWoB++) beside pip; as a user this step is skipped"; \
		( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null ) & apt_pid=$$!; \
	fi; \
	echo "make setup: $(PYTHON) -m venv $(VENV); pip install torch==2.13.0 (CPU), then -e .[dev,ray,android,ios,browser]"; \
	$(PYTHON) -m venv $(VENV); \
	$(PIP) install --quiet --upgrade pip; \
	$(PIP) install --quiet --no-compile torch==2.13.0; \
	$(PIP) install --quiet --no-compile -e ".[dev,ray,android,ios,browser]"; \
	if [ -n "$$apt_pid" ]; then wait $$apt_pid || { echo "make setup: apt-get install chromium chromium-driver failed" >&2; exit 1; }; fi
	touch $(STAMP)

demo: setup
	$(VENV)/bin/navrl demo

# One pytest-xdist worker per core, each test file on one worker (its module fixtures built once).
# 1.5 per core was tried (2026-12-07): 511 and 584 s against 591 and ~600 on 2 cores, but the
# timing-sensitive farm tests then failed once (test_farm_adaptive's fixed pool masked 6, not >= 8).
# `$(PY) -m pytest` alone runs the same tests in one process; WORKERS=N overrides.
WORKERS ?= auto
test: setup
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n $(WORKERS) --dist loadfile

test-all: setup
	$(PY) -m pytest -n $(WORKERS) --dist loadfile -m ''

# Mutation testing of navrl.rl and the Android text-input path ([tool.mutmut] in pyproject.toml).
# Long: every mutant reruns the tests that cover it (hours on 2 cores for all of navrl.rl);
# MUTANTS='navrl.device.android*' narrows it to matching mutant names.
mutants: setup
	$(VENV)/bin/mutmut run --max-children 2 $(if $(MUTANTS),'$(MUTANTS)') || true
	$(VENV)/bin/mutmut results

bench: setup
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) runs build mutants *.egg-info src/*.egg-info
