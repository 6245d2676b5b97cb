# Two commands set everything up: `make book` and `make test` create .venv from requirements.txt
# when it is missing or older than requirements.txt, then do their job.
#
# BOOK_PYTHON=/path/to/python: use that interpreter as it is (a GPU workstation's CUDA torch, an
# image's torch 2.11) and create no .venv; `make check-env` says which packages it lacks.
PYTHON ?= python3
VENV   := .venv
ifdef BOOK_PYTHON
PY  := $(BOOK_PYTHON)
ENV := check-env
else
PY  := $(VENV)/bin/python
ENV := $(VENV)/.requirements-installed
endif
PYTEST := $(PY) -m pytest -p no:cacheprovider
# nbval executes every cell (--nbval-lax: stored outputs are not compared, notebooks are stored
# clean) with a per-cell timeout in seconds, in this interpreter's kernel (--nbval-current-env);
# tests/nbval_kernels.py fails a cell that creates a Triton kernel without the `kernel` tag.
NBVAL  := --nbval-lax --nbval-cell-timeout=600 --nbval-current-env
# Two pytest workers (pytest-xdist), each running whole notebooks (--dist loadfile keeps a
# notebook's cells in one kernel, in order).
XDIST  := -n 2 --dist loadfile
# The browser test uses Debian's chromium (or Chrome, if a machine has it).
BROWSER := $(firstword $(foreach b,chromium chromium-browser google-chrome,$(shell command -v $(b))))
SUDO    := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: book test site-test papers venv check-env browser colab clean compile-check-full \
        compile-report compile-refresh compile-check-versions gpu-run gpu-plan param-test \
        seed-test version-test

venv: $(VENV)/.requirements-installed

$(VENV)/.requirements-installed: requirements.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --requirement requirements.txt
	touch $@

# With BOOK_PYTHON: check that it imports what the book needs, and name what it lacks.
check-env:
	$(PY) tools/check_env.py

# Headless Chromium for the browser test: Debian's package, installed when none is on PATH.
browser:
ifeq ($(BROWSER),)
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium
endif

# Execute every notebook (through jupyter-cache: unchanged notebooks are not run again) and build
# the site into _build/html, with the decks (slides/) and the Colab copies (_build/colab/); any
# Sphinx warning or cell error fails the build.
book: $(ENV)
	$(PY) tools/build_site.py

# The whole test suite. First: conventions, style, bibliography, launcher, papermill, papers
# download, workflows, and every cell of every notebook in sessions/ on this machine's device
# (nbval; tests/nbval_record.py keeps the executed notebooks). Then the site, built in strict mode
# from those executed notebooks, checked as files and in headless Chromium with the network off.
test: $(ENV) browser
	PYTHONPATH=tests $(PYTEST) -p nbval_record -p nbval_kernels $(XDIST) -m "not site and not values" \
	  tests sessions $(NBVAL)
	$(MAKE) site-test

site-test: $(ENV) browser
	$(PYTEST) -m site tests

# Every notebook through nbval at BOOK_SEED = 1, 2 and 3 (make test runs seed 0): every random
# draw derives from BOOK_SEED, so a claim that holds at one seed only fails here.
SEEDS ?= 1 2 3
seed-test: $(ENV)
	set -e; for seed in $(SEEDS); do \
	  echo "== BOOK_SEED=$$seed"; \
	  BOOK_SEED=$$seed $(PYTEST) $(XDIST) sessions $(NBVAL); \
	done

# Every notebook (nbval) in two more environments, each
# a .venv-NAME built by Python 3.13 from tests/versions/NAME.txt: the floor (Colab's torch 2.11,
# Triton 3.6, torchao 0.10) and the newest releases (torch 2.15, Triton 3.9, torchao 0.18).
# PIP_CONSTRAINT=/dev/null: site constraints in pip's configuration (if any) must not cap these pins.
VERSIONS ?= floor newest
# Python 3.13: the first of these that runs (a pyenv shim without that version does not).
PYTHON_VERSIONS ?= $(firstword $(foreach p,python3.13 $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3),\
                   $(if $(shell $(p) --version 2>/dev/null),$(p))))
# Build .venv-$$v for each v in VERSIONS when missing or older than tests/versions/$$v.txt.
define VERSION_VENVS
	@test -n "$(PYTHON_VERSIONS)" || { echo "needs Python 3.13 (PYTHON_VERSIONS=...)"; exit 1; }
	set -e; for v in $(VERSIONS); do \
	  if [ ! -f .venv-$$v/.installed ] || [ tests/versions/$$v.txt -nt .venv-$$v/.installed ]; then \
	    rm -rf .venv-$$v; $(PYTHON_VERSIONS) -m venv .venv-$$v; \
	    PIP_CONSTRAINT=/dev/null .venv-$$v/bin/python -m pip install --quiet -r tests/versions/$$v.txt; \
	    touch .venv-$$v/.installed; \
	  fi; \
	done
endef
version-test:
	$(VERSION_VENVS)
	set -e; for v in $(VERSIONS); do \
	  echo "== $$v: tests/versions/$$v.txt"; \
	  .venv-$$v/bin/python -m pytest -p no:cacheprovider $(XDIST) sessions $(NBVAL); \
	done

# The compile check's full matrix alone on the floor's and the newest Triton (the CPU workflow
# runs it after compile-check-full: ptxas differs between Triton versions).
compile-check-versions:
	$(VERSION_VENVS)
	set -e; for v in $(VERSIONS); do \
	  echo "== $$v: tests/versions/$$v.txt"; \
	  .venv-$$v/bin/python tests/compile_check.py --full sessions/[0-9]*.ipynb; \
	done

# Every notebook run whole with each documented value of its structural parameters (papermill,
# this machine's sizes); make test only resolves each value.
param-test: $(ENV)
	$(PYTEST) $(XDIST) -m values tests/test_parameter_values.py

# The compile check's full matrix: every kernel of every notebook, launch_kernels(full=True)
# and launch_kernels(bench=True), compiled for sm_75, sm_80, sm_89 and sm_90 (make test compiles
# the subset that covers every code path, and the bench launches).
compile-check-full: $(ENV)
	$(PY) tests/compile_check.py --full sessions/[0-9]*.ipynb

# The per-tier compile tables the notebooks show (figures/compile/NN_name.json, with the Triton
# and ptxas that made them). Rerun after changing a kernel.
compile-report: $(ENV)
	$(PY) tests/compile_check.py --report figures/compile sessions/[0-9]*.ipynb

# After changing kernels: the spills of every configuration on the pinned, the floor's and the
# newest Triton (tests/compile_spills.json; each kernel's reason stays in
# tests/compile_allowlist.py), then the compile reports. Its last lines name any spilling kernel
# without a reason.
compile-refresh: $(ENV)
	$(VERSION_VENVS)
	status=0; \
	for py in $(PY) $(foreach v,$(VERSIONS),.venv-$(v)/bin/python); do \
	  echo "== $$py"; \
	  $$py tests/compile_check.py --refresh-allowlist sessions/[0-9]*.ipynb || status=1; \
	done; \
	$(PY) tests/compile_check.py --report figures/compile sessions/[0-9]*.ipynb || status=1; \
	exit $$status

# On a GPU: run the notebooks at the tier's sizes, results and run records under figures/,
# resumable (NB="01 02" picks sessions; GPU_RUN="--out DIR" adds an archive; see
# tools/gpu_run.py). It needs only torch, Triton, numpy and matplotlib, so it uses the
# interpreter it is given (BOOK_PYTHON) or python3, and builds no .venv.
GPU_PYTHON := $(or $(BOOK_PYTHON),$(PYTHON))
gpu-run:
	$(GPU_PYTHON) tools/gpu_run.py $(GPU_RUN) $(NB)

# The plan of a GPU run: each notebook's estimated minutes on an H100, and the calls it takes.
gpu-plan:
	$(GPU_PYTHON) tools/gpu_run.py --plan $(NB)

# Colab/JupyterLab copies of the notebooks (plain Markdown instead of MyST) in _build/colab/,
# without executing anything: present these with RISE in JupyterLab.
colab: $(ENV)
	$(PY) tools/colab.py _build/colab

# Download the annotated PDFs into papers/pdf/, verified against papers/SHA256SUMS (needs internet).
papers: $(ENV)
	$(PY) papers/fetch_pdfs.py

clean:
	rm -rf _build
