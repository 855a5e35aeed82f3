# hindsight_magic — set-up and checks. A fresh machine needs only Python 3.10+ and make.
#   make demo   start a local Hindsight server and run the quick-start notebook against it
#   make test   lint + the whole test suite (it starts its own real Hindsight servers)
#   make check  lint + the tests that need no server (the contributor's loop)
#   make oldest the tests that need no server, on the oldest declared versions and Python 3.10
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The tests that need no server on two workers (pytest-xdist), a module each at a time: half
# their time is spent waiting (on the worker threads and timers they test), so two workers
# about halve it even on two cores. WORKERS= runs them in one process. The whole suite stays
# in one process: it is CPU-bound (real servers, kernels), and two workers made it no faster
# and its timing-bound tests flaky.
WORKERS ?= --numprocesses 2 --dist loadfile

.PHONY: demo test check lint unit install clean bench browser oldest

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python 3.10+ is needed"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[server,demo,test,bench,mcp,pictures]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hindsight-magic demo

# Lint, tests/, then the notebooks top to bottom against a real server (notebooks/conftest.py
# starts it): a separate pytest run, because tests/ and notebooks/ each have a module named
# conftest. Both runs always happen; the target fails if either does.
test: $(STAMP) lint browser
	$(BIN)/python -m pytest; tests=$$?; \
	$(BIN)/python -m pytest --nbval-lax notebooks/; notebooks=$$?; \
	test $$tests -eq 0 && test $$notebooks -eq 0

# The benchmarks: the extension vs. calling Hindsight by hand, against a real local server
# (started and stopped again if none runs); writes BENCHMARKS.md. 6-20 minutes on 2 cores.
bench: $(STAMP)
	$(BIN)/python -m bench

# The browser test (tests/ui/test_browser.py) drives JupyterLab in Debian's chromium. Install it
# when missing and we can (root with apt); otherwise say, before the run, what will be skipped.
browser:
	@command -v chromium >/dev/null && exit 0; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing Debian's chromium for the browser test (apt-get install chromium)..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	    && exit 0; \
	fi; \
	echo "NOTE: chromium is not installed, so the browser test (tests/ui/test_browser.py, marked"; \
	echo "      'browser') will be SKIPPED. To run it: sudo apt-get install chromium; make test."

unit: $(STAMP)
	$(BIN)/python -m pytest $(WORKERS) -m "not integration and not browser"

# The contributor's loop: lint, then every test that needs no server, kernel farm or browser.
check: lint unit

# The oldest versions pyproject.toml declares (.ci/oldest-versions.txt) in their own venv, on
# Python 3.10 where one is installed (on PATH or under pyenv), else on $(PYTHON) with a note:
# the tests that need no server, kernel farm or browser.
OLDEST_VENV ?= .venv-oldest
$(OLDEST_VENV)/.installed: pyproject.toml .ci/oldest-versions.txt
	@test -x $(OLDEST_VENV)/bin/python && exit 0; \
	for py in $(HOME)/.pyenv/versions/3.10*/bin/python3.10 python3.10 NONE; do \
	  "$$py" -c 'import sys; assert sys.version_info[:2] == (3, 10)' 2>/dev/null && break; \
	done; \
	if [ "$$py" = NONE ]; then py=$(PYTHON); \
	  echo "NOTE: no Python 3.10 here; testing the oldest versions on $$($$py -V)"; fi; \
	echo "$$py -m venv $(OLDEST_VENV)"; $$py -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install --quiet -c .ci/oldest-versions.txt -e '.[pictures]' \
	  ipykernel "pytest>=8" "hypothesis>=6.100" nbformat nbclient nest-asyncio hatchling pandas
	touch $@

oldest: $(OLDEST_VENV)/.installed
	@$(OLDEST_VENV)/bin/python -c 'import sys, IPython, ipywidgets, ipykernel, traitlets, httpx; \
	  print("Oldest versions: Python", sys.version.split()[0], "IPython", IPython.__version__, \
	  "ipywidgets", ipywidgets.__version__, "ipykernel", ipykernel.__version__, \
	  "traitlets", traitlets.__version__, "httpx", httpx.__version__)'
	$(OLDEST_VENV)/bin/python -m pytest -p no:cacheprovider -m "not integration and not browser"

# ruff (style), mypy --strict (types), import-linter (the folders' import rules, pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check hindsight_magic tests bench notebooks/conftest.py
	$(BIN)/ruff format --check hindsight_magic tests bench notebooks/conftest.py
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) $(OLDEST_VENV) hindsight-demo .pytest_cache .ruff_cache
