"""Every paper of every session, and every citation on every page, has its entry in references.bib."""

import re

import pybtex.database
import pytest

from conftest import NOTEBOOKS, ROOT, SESSIONS, load, source

BIB = pybtex.database.parse_file(str(ROOT / "papers" / "references.bib"))
CITATION = re.compile(r"\{(?:foot)?cite(?::\w+)?\}`([^`]+)`")


def pages():
    """(name, Markdown text) of every page of the site: its Markdown files and its notebooks' Markdown cells."""
    for path in sorted(ROOT.glob("*.md")) + sorted((ROOT / "papers").glob("*.md")):
        if path.name not in (
            "README.md",
            "CONTRIBUTING.md",
        ):  # not pages of the site (_config.yml)
            yield path.name, path.read_text()
    for path in NOTEBOOKS:
        yield (
            path.name,
            "\n".join(
                source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown"
            ),
        )


@pytest.mark.parametrize(
    "session", SESSIONS["sessions"], ids=lambda s: f"session{s['n']}"
)
def test_session_papers_in_bib(session):
    for paper in session["papers"]:
        assert paper["key"] in BIB.entries, (
            f"session {session['n']}: {paper['key']} not in references.bib"
        )
        entry = BIB.entries[paper["key"]]
        if "arxiv" in paper:
            assert entry.fields.get("eprint") == paper["arxiv"], (
                f"{paper['key']}: eprint is not {paper['arxiv']}"
            )


def test_every_citation_exists():
    missing = [
        (name, key)
        for name, text in pages()
        for keys in CITATION.findall(text)
        for key in (k.strip() for k in keys.split(","))
        if key not in BIB.entries
    ]
    assert not missing, f"citation keys not in references.bib: {missing}"


def test_entries_have_title_year_and_link():
    for key, entry in BIB.entries.items():
        for field in ("title", "year"):
            assert field in entry.fields, f"{key}: no {field}"
        assert {"url", "doi"} & set(entry.fields), f"{key}: no url or doi"
