# SE-Jury web: `make run` starts the app with demo data; `make test` runs every test;
# `make test-fast` skips lint and the browser and worker tests, for the inner loop.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast lint format install migrate demo bench clean

$(VENV)/.installed: requirements.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "SE-Jury web needs Python 3.11"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

install: $(VENV)/.installed

migrate: install
	DEBUG=1 $(PY) manage.py migrate --noinput

demo: migrate
	DEBUG=1 $(PY) manage.py load_demo

run: demo
	DEBUG=1 $(PY) manage.py serve --host $(HOST) --port $(PORT)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest -m "not e2e and not worker" $(PYTEST_ARGS)

bench: install
	$(PY) bench/dataset_page.py
	$(PY) bench/llm_throughput.py
	$(PY) bench/judging_throughput.py
	$(PY) bench/agreement_report.py
	$(PY) bench/rubric_feedback.py
	$(PY) bench/bundle_import.py
	$(PY) bench/swebench_import.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
