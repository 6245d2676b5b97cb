# Two commands set everything up: `make book` and `make test` create .venv from requirements.txt when it is
# missing or older than requirements.txt, then do their job.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Options for the notebook run: execute every cell (--nbval-lax: stored outputs are not compared, notebooks
# are stored clean), with a per-cell timeout in seconds.
NBVAL  := --nbval-lax --nbval-cell-timeout=600

.PHONY: book test papers venv clean

venv: $(VENV)/.requirements-installed

$(VENV)/.requirements-installed: requirements.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --requirement requirements.txt
	touch $@

# Execute every notebook (through jupyter-cache: unchanged notebooks are not run again) and build the site
# into _build/html; any Sphinx warning or cell error fails the build.
book: venv
	$(BIN)/jupyter-book build . --warningiserror --keep-going

# The whole test suite: conventions, bibliography, launcher, papermill, papers download, workflows, the
# site in strict mode, and every cell of every notebook in sessions/ on this machine's device.
test: venv
	$(BIN)/python -m pytest -p no:cacheprovider tests sessions $(NBVAL)

# Download the annotated PDFs into papers/pdf/, verified against papers/SHA256SUMS (needs internet).
papers: venv
	$(BIN)/python papers/fetch_pdfs.py

clean:
	rm -rf _build
