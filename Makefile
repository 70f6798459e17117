# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Both create .venv and install what they need first (Python packages, the viewer build and,
# for the browser test, Debian's chromium + chromium-driver).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
WEB := client_server/web
SERVE ?= 1
# make demo keeps the finished episodes of an earlier make demo (out/demo) and serves at once; FORCE=1 plays them again
FORCE ?= 0
PORT ?= 8000
# test workers (pytest-xdist), one a core of the 2-core CI machine; TEST_JOBS=0 runs the suite in one process
TEST_JOBS ?= 2

.PHONY: demo test lint web chromium sandbox bench docs clean

# pip speaks as it works (each download, then what it installed): a first set-up takes minutes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "set-up 1/3: pip itself"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "set-up 2/3: torch's CPU build (pinned; a large download, a few minutes on a first set-up)"
	# torch first, pinned: its CPU build; a bare range would pull a multi-GB CUDA build
	$(PY) -m pip install --progress-bar on torch==2.13.0
	@echo "set-up 3/3: this package and its extras (dev, serve, train, scale, docs, trainers)"
	$(PY) -m pip install --progress-bar on -e '.[dev,serve,train,scale,docs,trainers]'
	touch $(STAMP)

# The 3D viewer: three.js built with vite from the committed lock file.
$(WEB)/node_modules/.package-lock.json: $(WEB)/package-lock.json
	cd $(WEB) && npm ci --no-audit --no-fund
$(WEB)/dist/index.html: $(WEB)/node_modules/.package-lock.json $(WEB)/index.html $(WEB)/vite.config.js $(wildcard $(WEB)/src/*)
	cd $(WEB) && npm run build
web: $(WEB)/dist/index.html

# Headless Chromium for the browser test, from Debian's packages (never a downloaded browser).
chromium:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || \
		(apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver)

# The namespace sandbox for tournament submissions: Debian's bubblewrap. `make demo` goes on without
# it (tournaments then fall back to the process sandbox and say so); `make test` requires it.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || \
		(apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap)

demo: $(STAMP) web
	-@$(MAKE) --no-print-directory sandbox 2>/dev/null || echo "bubblewrap not installed: submissions fall back to the process sandbox"
	$(PY) -m nmmo demo $(if $(filter 1,$(FORCE)),--force,--resume) $(if $(filter 0,$(SERVE)),,--serve --port $(PORT))

lint: $(STAMP)
	$(PY) -m ruff check .

# Each test file runs whole on one worker, and all the Ray tests on one (tests/conftest.py).
test: $(STAMP) lint web chromium sandbox
	NMMO_REQUIRE_BROWSER=1 NMMO_REQUIRE_SANDBOX=1 $(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile

# This documentation site (mkdocs.yml), offline and strict: any warning fails. Output: site/.
docs: $(STAMP)
	$(PY) -m mkdocs build --strict

bench: $(STAMP)
	$(PY) benchmarks/bench_mapgen.py
	$(PY) benchmarks/bench_env.py
	$(PY) benchmarks/bench_scripted.py

clean:
	rm -rf $(VENV) out build site *.egg-info .pytest_cache .ruff_cache $(WEB)/node_modules $(WEB)/dist
