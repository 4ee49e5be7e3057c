# The two commands of cubejit: `make demo` and `make test`. Both make .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint format clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed: $(PY) pyproject.toml
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(PY) -m cubejit demo

test: $(VENV)/.installed-test
	$(PY) -m ruff check cubejit tests benchmarks examples
	$(PY) -m pytest -q

lint: $(VENV)/.installed-test
	$(PY) -m ruff check cubejit tests benchmarks examples
	$(PY) -m ruff format --check cubejit tests benchmarks examples
	$(PY) -m mypy --follow-imports=silent cubejit/showcase.py examples

format: $(VENV)/.installed-test
	$(PY) -m ruff format cubejit tests benchmarks examples

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
