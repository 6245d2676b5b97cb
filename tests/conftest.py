"""Shared fixtures: the repository's notebooks, the sessions data and the canonical setup cell."""

import json
import pathlib

import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(
    0, str(ROOT / "tools")
)  # the book's tools (notebooks.py, colab.py) are tested too
NOTEBOOKS = sorted((ROOT / "sessions").glob("[0-9][0-9]_*.ipynb"))
SESSIONS = yaml.safe_load((ROOT / "papers" / "sessions.yml").read_text())
SETUP_CELL = (ROOT / "tests" / "setup_cell.py").read_text().rstrip("\n")


def load(path):
    return json.loads(pathlib.Path(path).read_text())


def source(cell):
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def session_of(path):
    """The sessions.yml entry whose notebook is `path`."""
    stem = f"sessions/{pathlib.Path(path).stem}"
    matches = [s for s in SESSIONS["sessions"] if s.get("notebook") == stem]
    assert matches, f"{stem} is not the notebook of any session in papers/sessions.yml"
    return matches[0]


def pytest_generate_tests(metafunc):
    if "notebook" in metafunc.fixturenames:
        metafunc.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])


@pytest.fixture
def nb(notebook):
    return load(notebook)


@pytest.fixture
def setup_cell():
    """A fresh namespace in which the setup cell has run (it imports torch and triton, defines param, launch...)."""
    namespace = {}
    exec(compile(SETUP_CELL, "setup_cell", "exec"), namespace)
    return namespace


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "site: needs the built site (the second step of make test)"
    )
    config.addinivalue_line(
        "markers", "values: runs a whole notebook per documented value (make param-test)"
    )


@pytest.fixture(scope="session")
def site():
    """The site, built in strict mode from the notebooks nbval executed in this `make test`
    (tests/nbval_record.py keeps them in _build/executed/): its _build/html folder. With
    BOOK_SITE=path/to/html, the site built there (e.g. by `make book`) is tested instead."""
    import os

    import build_site

    if os.environ.get("BOOK_SITE"):
        return pathlib.Path(os.environ["BOOK_SITE"]).resolve()

    executed, out = ROOT / "_build" / "executed", ROOT / "_build" / "site-test"
    try:
        return build_site.main(["--executed", str(executed), str(out)])
    except SystemExit as error:
        pytest.fail(str(error))


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (Debian's, or Chrome; BOOK_BROWSER names another), driven by Playwright."""
    import os
    import shutil

    from playwright.sync_api import sync_playwright

    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    path = os.environ.get("BOOK_BROWSER") or next(
        filter(None, map(shutil.which, names)), None
    )
    assert path, f"no Chromium found ({', '.join(names)}); `make browser` installs it"
    flags = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
    ]
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=path, args=flags)
        yield chromium
        chromium.close()
