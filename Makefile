# hindsight_magic — set-up and checks. A fresh machine needs only Python 3.10+ and make.
#   make demo   start a local Hindsight server and run the quick-start notebook against it
#   make test   lint + the whole test suite (it starts its own real Hindsight servers)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint unit install clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python 3.10+ is needed"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[server,demo,test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hindsight-magic demo

test: $(STAMP) lint
	$(BIN)/python -m pytest

unit: $(STAMP)
	$(BIN)/python -m pytest -m "not integration and not browser"

lint: $(STAMP)
	$(BIN)/ruff check hindsight_magic tests bench
	$(BIN)/ruff format --check hindsight_magic tests bench

clean:
	rm -rf $(VENV) hindsight-demo .pytest_cache .ruff_cache
