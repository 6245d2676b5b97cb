"""The site builds in strict mode (any Sphinx warning is an error) and has its pages and links.

Notebook execution is switched off here: nbval runs every cell of every notebook in the same `make test`,
and `make book` executes them for the real site; running them twice would double the suite's time."""

import html
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

from conftest import NOTEBOOKS, ROOT, SESSIONS


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    # This copy of the configuration lives elsewhere: make its paths absolute.
    config["sphinx"]["local_extensions"] = {
        k: str(ROOT / v) for k, v in config["sphinx"]["local_extensions"].items()
    }
    (out / "_config.yml").write_text(yaml.safe_dump(config))
    jupyter_book = pathlib.Path(sys.executable).parent / "jupyter-book"
    result = subprocess.run(
        [
            jupyter_book,
            "build",
            str(ROOT),
            "--path-output",
            str(out),
            "--config",
            str(out / "_config.yml"),
            "--warningiserror",
            "--keep-going",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"strict build failed:\n{log[-6000:]}"
    assert "WARNING" not in log, log[-6000:]
    assert (out / "_build" / "html" / "intro.html").exists(), log[-3000:]
    return out / "_build" / "html"


def text(path):
    return html.unescape(path.read_text())


def test_every_notebook_has_a_page(site):
    for notebook in NOTEBOOKS:
        page = site / "sessions" / f"{notebook.stem}.html"
        assert page.exists(), f"no page for {notebook.name}"
        assert "footnote" in text(page), f"{notebook.name}: its page shows no citations"


def test_intro_lists_every_session(site):
    intro = text(site / "intro.html")
    rows = re.findall(r"<tr[^>]*>.*?</tr>", intro, re.S)
    assert len(rows) == 1 + len(SESSIONS["sessions"]), (
        "one header row and one row per session"
    )
    for session, row in zip(SESSIONS["sessions"], rows[1:]):
        assert session["title"] in row
        for paper in session["papers"]:
            assert (paper.get("arxiv") or paper["url"]) in row
            if "annotated" in paper:
                assert "4582b213dc737da7153046fbd42ad34d8a186b4c" in row
        if "notebook" in session:
            assert f'href="{session["notebook"]}.html"' in row


def test_papers_page_cites_every_paper(site):
    page = text(site / "papers" / "index.html")
    for session in SESSIONS["sessions"]:
        for paper in session["papers"]:
            assert paper["title"] in page


def test_colab_and_repository_buttons(site):
    page = text(site / "sessions" / f"{NOTEBOOKS[0].stem}.html")
    assert (
        "colab.research.google.com/github/danielvegamyhre/ml-perf-reading-group/blob/main"
        in page
    )
    assert "github.com/danielvegamyhre/ml-perf-reading-group/issues" in page
