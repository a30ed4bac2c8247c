# SE-Jury web: `make run` starts the app with demo data; `make test` runs every test;
# `make test-fast` skips lint and the browser, worker, real-model and Label Studio tests, for the
# inner loop;
# `make docs` serves the documentation site (docs/, mkdocs.yml).
SHELL := /bin/bash
# Bytecode caches on (__pycache__/, ignored by git), whatever the shell says: a shell or container
# that sets PYTHONDONTWRITEBYTECODE=1 (this machine's does) made every process of the suite (three
# pytest processes, about 40 workers, servers and commands) compile the app and rewrite the 358
# test modules' assertions again. Empty is "not set".
export PYTHONDONTWRITEBYTECODE :=
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
DOCS_PORT ?= 8001
# Where `make test` builds the documentation site (var/ is ignored by git).
DOCS_SITE ?= var/docs-site

.PHONY: run test test-pytest test-fast lint format install migrate demo bench clean llm-local llm-local-stop \
	docs docs-build screenshots

# LLM=local: a real model on this machine (llama.cpp's server and Qwen2.5-Coder-1.5B-Instruct,
# built and fetched once into ~/.cache/sejury-web by scripts/llm_local.py); `make run LLM=local`
# starts it, drafts the demo's rubrics and judges the demo with it.
ifeq ($(LLM),local)
LLM_ENV = exports="$$($(PYTHON) scripts/llm_local.py start)" && eval "$$exports" &&
DEMO_ARGS = --with-model
endif

# .installed is a copy of the requirements last installed: a fresh clone (whose requirements.txt
# is newer than the venv's mark) skips pip when they are the same, about 7 CPU-seconds of
# resolving before any test could start.
$(VENV)/.installed: requirements.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "SE-Jury web needs Python 3.11"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	cmp -s requirements.txt $@ || $(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	cp requirements.txt $@

install: $(VENV)/.installed

migrate: install
	DEBUG=1 $(PY) manage.py migrate --noinput

demo: migrate
	$(LLM_ENV) DEBUG=1 $(PY) manage.py load_demo $(DEMO_ARGS)

run: demo
	$(LLM_ENV) DEBUG=1 $(PY) manage.py serve --host $(HOST) --port $(PORT)

# Prints `export NAME=value` lines: eval "$$(make -s llm-local)" points a shell at the model.
llm-local:
	@$(PYTHON) scripts/llm_local.py start

llm-local-stop:
	@$(PYTHON) scripts/llm_local.py stop

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The suite runs in one process per core (pytest-xdist: each its own database, broker and var/
# directory; tests handed to whichever process is free). XDIST= runs it in one process.
XDIST ?= -n auto --dist worksteal

# pytest starts at once, with lint and the docs build beside it (make -j): on a fresh clone mypy
# keeps a core busy for 40 s, which the test processes would otherwise spend waiting on
# browsers and workers. --output-sync=line keeps each line of theirs whole.
test: install
	@$(MAKE) --no-print-directory -j3 --output-sync=line lint docs-build test-pytest

test-pytest: install
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest $(XDIST) -m "not e2e and not worker and not real_llm and not label_studio" $(PYTEST_ARGS)

# The browser tests with their screenshots, which the suite does not take: one folder per test
# under var/screenshots/ (the last page of a failed test is saved there either way).
screenshots: install
	rm -rf var/screenshots
	SEJURY_SCREENSHOTS=1 $(PY) -m pytest $(XDIST) -m e2e -p no:randomly --basetemp=var/screenshots $(PYTEST_ARGS)
	@find var/screenshots -name '*.png' | sort

# The documentation site, served on HOST:DOCS_PORT and rebuilt as docs/ changes.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(HOST):$(DOCS_PORT)

# --strict: a broken link, a missing page or a page left out of the nav fails the build
# (not with --quiet, which hides the warnings that --strict counts).
docs-build: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(DOCS_SITE)

bench: install
	$(PY) bench/dataset_page.py
	$(PY) bench/llm_throughput.py
	$(PY) bench/judging_throughput.py
	$(PY) bench/agreement_report.py
	$(PY) bench/load.py
	$(PY) bench/rubric_feedback.py
	$(PY) bench/bundle_import.py
	$(PY) bench/swebench_import.py
	$(PY) bench/input_memory.py
	$(PY) bench/refine.py
	$(PY) bench/prompt_cache.py
	$(PY) bench/forecast.py
	$(PY) bench/batch_judging.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
