# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Both create .venv and install what they need first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SERVE ?= 1

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,serve]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m nmmo demo

lint: $(STAMP)
	$(PY) -m ruff check .

test: $(STAMP) lint
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/bench_mapgen.py

clean:
	rm -rf $(VENV) out build *.egg-info .pytest_cache .ruff_cache
