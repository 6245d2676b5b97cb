"""The site as built: strict (a Sphinx warning fails the build), with every page, the sessions
table, the decks, the Colab copies and the status page. The site is built from the notebooks
nbval executed earlier in the same `make test` (the `site` fixture), not executed again."""

import html
import json
import re

import pytest
import yaml

from colab import myst_left
from conftest import NOTEBOOKS, ROOT, SESSIONS

pytestmark = pytest.mark.site
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO = CONFIG["repository"]["url"].removeprefix("https://github.com/")


def text(path):
    return html.unescape(path.read_text())


def test_every_notebook_has_a_page_with_its_outputs(site):
    for notebook in NOTEBOOKS:
        page = site / "sessions" / f"{notebook.stem}.html"
        assert page.exists(), f"no page for {notebook.name}"
        assert "footnote" in text(page), f"{notebook.name}: its page shows no citations"
        assert "cell_output" in text(page), f"{notebook.name}: its page shows no outputs"


def test_tables_a_cell_displays_are_tables(site):
    # a Markdown table that a cell displays (the compile tables) must render as a table,
    # not as a paragraph of pipes (CommonMark has no tables: the config asks for GFM)
    for notebook in NOTEBOOKS:
        page = text(site / "sessions" / f"{notebook.stem}.html")
        assert not re.search(r"<p>\|[^<]*\|\s*\n\|\s*[-—:]", page), (
            f"{notebook.name}: a displayed Markdown table renders as text"
        )


def test_intro_lists_every_session(site):
    intro = text(site / "intro.html")
    rows = re.findall(r"<tr[^>]*>.*?</tr>", intro, re.S)
    assert len(rows) == 1 + len(SESSIONS["sessions"]), (
        "one header row and one per session"
    )
    for session, row in zip(SESSIONS["sessions"], rows[1:]):
        assert session["title"] in row
        for paper in session["papers"]:
            assert (paper.get("arxiv") or paper["url"]) in row
            if "annotated" in paper:
                assert SESSIONS["upstream_commit"] in row
        if "notebook" in session:
            assert f'href="{session["notebook"]}.html"' in row
            deck = session["notebook"].replace("sessions/", "slides/") + ".slides.html"
            assert f'href="{deck}"' in row, f"session {session['n']}: no link to its deck"


def test_papers_page_cites_every_paper(site):
    page = text(site / "papers" / "index.html")
    for session in SESSIONS["sessions"]:
        for paper in session["papers"]:
            assert paper["title"] in page


def test_buttons_point_at_the_configured_repository(site):
    for notebook in NOTEBOOKS:
        page = text(site / "sessions" / f"{notebook.stem}.html")
        colab = f"https://colab.research.google.com/github/{REPO}/blob/colab/sessions/{notebook.name}"
        assert page.count(colab) >= 2, (
            f"{notebook.name}: the Colab button and link open {colab}"
        )
        assert f"github.com/{REPO}/issues" in page


def test_decks_exist_and_load_only_local_scripts(site):
    for notebook in NOTEBOOKS:
        deck = site / "slides" / f"{notebook.stem}.slides.html"
        assert deck.exists(), f"no deck for {notebook.name}"
        page = deck.read_text()
        sources = re.findall(r'<script[^>]* src="([^"]+)"', page)
        sources += re.findall(r'<link[^>]* href="([^"]+)"', page)
        remote = [s for s in sources if not s.startswith("../_static/")]
        assert not remote, f"{deck.name} loads {remote}"
        for local in (s for s in sources if s.startswith("../_static/")):
            assert (deck.parent / local).exists(), (
                f"{deck.name}: {local} is not in the site"
            )
        notes = '"slide_type": "notes"' in notebook.read_text()  # cells tagged `notes`
        assert notes == ('<aside class="notes">' in page), f"{deck.name}: speaker notes"


def test_colab_copies_are_clean_and_plain_markdown(site):
    for notebook in NOTEBOOKS:
        for copy in (
            site.parent / "colab" / "sessions" / notebook.name,
            site / "_sources" / "sessions" / notebook.name,
        ):
            nb = json.loads(copy.read_text())
            markdown = "\n".join(
                c["source"] for c in nb["cells"] if c["cell_type"] == "markdown"
            )
            assert not myst_left(markdown), (
                f"{copy}: MyST left: {myst_left(markdown)[:5]}"
            )
            assert not any(c.get("outputs") for c in nb["cells"]), f"{copy} has outputs"
            assert nb["metadata"]["accelerator"] == "GPU"


def test_status_page_lists_every_notebook_as_passed(site):
    page = text(site / "status.html")
    for notebook in NOTEBOOKS:
        row = re.search(rf"<tr[^>]*>(?:(?!</tr>).)*{notebook.stem}.*?</tr>", page, re.S)
        assert row, f"status page: no row for {notebook.stem}"
        assert "passed" in row[0] and re.search("nbval|jupyter-cache", row[0]), (
            f"status of {notebook.stem}: {row[0]}"
        )
