"""Sphinx extension of this book: the sessions table and the Papers page, generated from papers/sessions.yml.

- ``{sessions-table}``: one row per session (title, presenter, papers, recording and links, the
  group's slides, the book's deck, notebook).
- ``{papers-by-session}``: every paper, grouped by session, with its citation and links.
- ``{annotated}`upstream/path.pdf```: a link to an annotated PDF: the verified local copy in papers/pdf/ when
  `make papers` has fetched it, else the pinned page in the group's repository.
"""

import posixpath
import shutil

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from fetch_pdfs import SESSIONS, load_sessions, local_name, pinned_url, verified_copies

LOCAL_PDF_DIR = (
    "papers/pdf"  # where verified copies are served, relative to the site's root
)


def paper_link(paper):
    if "arxiv" in paper:
        return f"[arXiv:{paper['arxiv']}](https://arxiv.org/abs/{paper['arxiv']})"
    site = (
        "ACL Anthology"
        if "aclanthology" in paper["url"]
        else "ACM DL"
        if "acm.org" in paper["url"]
        else "paper"
    )
    return f"[{site}]({paper['url']})"


def paper_line(paper, cite):
    links = [paper_link(paper)] + (
        [f"{{annotated}}`{paper['annotated']}`"] if "annotated" in paper else []
    )
    who = f"{{cite:t}}`{paper['key']}`: " if cite else ""
    return f"{who}*{paper['title']}* ({', '.join(links)})"


def extra_links(session):
    names = [
        ("recording", "recording"),
        ("blog", "blog post"),
        ("pytorch_post", "PyTorch post"),
        ("code", "code"),
    ]
    return (
        ", ".join(f"[{label}]({session[key]})" for key, label in names if key in session)
        or "–"
    )


def sessions_table_lines(sessions):
    header = [
        "Session",
        "Title",
        "Presenter",
        "Papers",
        "Recording and links",
        "Slides (group)",
        "Slides (book)",
        "Notebook",
    ]
    lines = ["```{list-table}", ":header-rows: 1", ""]
    for i, cell in enumerate(header):
        lines.append(f"{'* ' if i == 0 else '  '}- {cell}")
    for s in sessions["sessions"]:
        papers = [
            f"  - - {paper_line(p, cite=False)}"
            if i == 0
            else f"    - {paper_line(p, cite=False)}"
            for i, p in enumerate(s["papers"])
        ] or ["  - –"]
        lines += [
            f"* - {s['n']}",
            f"  - {s['title']}",
            f"  - {s['presenter']}",
            *papers,
            f"  - {extra_links(s)}",
            f"  - [slides]({s['slides']})" if "slides" in s else "  - –",
            f"  - {{deck}}`{s['notebook']}`" if "notebook" in s else "  - –",
            f"  - {{doc}}`notebook </{s['notebook']}>`"
            if "notebook" in s
            else "  - not yet",
        ]
    return lines + ["```"]


def papers_by_session_lines(sessions):
    lines = []
    for s in sessions["sessions"]:
        lines += [f"**Session {s['n']}: {s['title']}**", ""]
        lines += [f"- {paper_line(p, cite=True)}" for p in s["papers"]] or [
            "- No paper was assigned."
        ]
        lines.append("")
    return lines


class GeneratedMarkdown(SphinxDirective):
    """Parses Markdown generated from sessions.yml in place of the directive."""

    make_lines = None

    def run(self):
        self.env.note_dependency(str(SESSIONS))
        container = nodes.container()
        self.state.nested_parse(
            StringList(self.make_lines(load_sessions())), self.content_offset, container
        )
        return container.children


class SessionsTable(GeneratedMarkdown):
    make_lines = staticmethod(sessions_table_lines)


class PapersBySession(GeneratedMarkdown):
    make_lines = staticmethod(papers_by_session_lines)


def annotated_role(name, rawtext, text, lineno, inliner, options=None, content=()):
    env = inliner.document.settings.env
    local = local_name(text)
    if local in env.config.book_local_pdfs:
        here = posixpath.dirname(env.docname)
        uri, label = (
            posixpath.relpath(f"{LOCAL_PDF_DIR}/{local}", here or "."),
            "annotated PDF (local copy)",
        )
    else:
        uri, label = pinned_url(load_sessions(), text), "annotated PDF"
    return [nodes.reference(rawtext, label, refuri=uri)], []


def find_local_pdfs(app, config):
    """Record the verified local copies; a change in them rebuilds the pages that link to them."""
    config.book_local_pdfs = sorted(verified_copies())


def copy_local_pdfs(app, exception):
    if exception is None and app.builder.format == "html":
        out = app.builder.outdir / LOCAL_PDF_DIR
        for name, path in verified_copies().items():
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out / name)


def setup(app):
    app.add_config_value("book_local_pdfs", [], "env")
    app.connect("config-inited", find_local_pdfs)
    app.connect("build-finished", copy_local_pdfs)
    app.add_directive("sessions-table", SessionsTable)
    app.add_directive("papers-by-session", PapersBySession)
    app.add_role("annotated", annotated_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
