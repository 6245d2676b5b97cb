"""Sphinx extension of this book: decks, Colab copies, and the status page.

- Decks: when the build ends, each session notebook as executed for this build (myst-nb's copy
  in `_build/jupyter_execute/`) becomes a reveal.js deck, `slides/NN_name.slides.html`, through
  nbconvert and `tools/deck/book_deck.html.j2`. Its scripts are the site's own copies (reveal.js
  from sphinx-revealjs's package, MathJax from sphinx-mathjax-offline's), so decks work offline.
- Colab copies: `_build/colab/sessions/NN_name.ipynb` (`tools/colab.py`: plain Markdown instead
  of MyST). The publishing job pushes them to the branch the Colab button opens, and the page's
  `.ipynb` download button serves the same copy.
- Each session page opens with links to its deck and its Colab copy; `` {deck}`sessions/NN` ``
  links a deck from any page (the sessions table uses it).
- ``{book-status}``: per notebook, its last execution on this build (when, how long, passed or
  not, on which device); every committed GPU result with the device it was measured on and its
  headline numbers (`results["headline"]`); and every GPU run of tools/gpu_run.py
  (figures/runs/<device>/NN_name.json: tier, driver, minutes, result, headline numbers).
"""

import datetime
import json
import pathlib
import posixpath
import re

import yaml
from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from colab import colab_copy, load_bibliography
from deck import copy_scripts, deck_html

LOGGER = logging.getLogger(__name__)
HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
DECKS = "slides"  # folder of the site that holds the decks
REVEAL = "_static/revealjs"  # where the site serves its copy of reveal.js


def session_docs(app):
    return sorted(d for d in app.env.found_docs if re.fullmatch(r"sessions/\d\d_\w+", d))


def deck_uri(from_doc, docname):
    here = posixpath.dirname(from_doc) or "."
    return posixpath.relpath(f"{DECKS}/{posixpath.basename(docname)}.slides.html", here)


def colab_url(config, docname):
    options = config.html_theme_options
    repo = options["repository_url"].removeprefix("https://github.com/")
    base = options.get("launch_buttons", {}).get(
        "colab_url", "https://colab.research.google.com"
    )
    return f"{base}/github/{repo}/blob/{options['repository_branch']}/{docname}.ipynb"


def deck_role(name, rawtext, text, lineno, inliner, options=None, content=()):
    """{deck}`sessions/NN_name`: a link to that session's reveal.js deck."""
    env = inliner.document.settings.env
    return [nodes.reference(rawtext, "deck", refuri=deck_uri(env.docname, text))], []


def add_session_links(app, doctree):
    """Under a session page's title: its deck, and its notebook in Colab."""
    docname = app.env.docname
    if docname not in session_docs(app) or not doctree.next_node(nodes.title):
        return
    para = nodes.paragraph(classes=["book-session-links"])
    para += nodes.strong(text="Present or run it: ")
    para += nodes.reference("", "slides (reveal.js)", refuri=deck_uri(docname, docname))
    para += nodes.Text(" · ")
    para += nodes.reference("", "open in Colab", refuri=colab_url(app.config, docname))
    title = doctree.next_node(nodes.title)
    title.parent.insert(title.parent.index(title) + 1, para)
    title.parent.insert(title.parent.index(para) + 1, session_trail(docname))


def session_trail(docname):
    """Where a session sits in the book (papers/sessions.yml; the landing page's map): what it
    adds, the sessions it builds on and the sessions that build on it, linked."""
    sessions = yaml.safe_load((ROOT / "papers" / "sessions.yml").read_text())["sessions"]
    by_n = {s["n"]: s for s in sessions}
    this = next(s for s in sessions if s.get("notebook") == docname)
    para = nodes.paragraph(classes=["book-session-trail"])
    para += nodes.strong(text="In the book: ")
    para += nodes.Text(f"{this['adds'][0].upper()}{this['adds'][1:]}.")
    later = [s["n"] for s in sessions if this["n"] in s.get("builds_on", [])]
    for label, numbers in (("Builds on", this["builds_on"]), ("Leads to", later)):
        if not numbers:
            continue
        para += nodes.Text(" ")
        para += nodes.strong(text=f"{label}: ")
        for i, n in enumerate(numbers):
            other = by_n[n]
            uri = posixpath.relpath(
                f"{other['notebook']}.html", posixpath.dirname(docname)
            )
            para += nodes.Text(", " if i else "")
            para += nodes.reference("", f"{n} {other['short']}", refuri=uri)
        para += nodes.Text(".")
    return para


def build_decks(app, exception):
    """Each session's reveal.js deck (tools/deck.py), from the notebook as executed for this
    build, with reveal.js and MathJax served from the site's _static/."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    executed = outdir.parent / "jupyter_execute"
    copy_scripts(outdir / "_static")
    bib = load_bibliography()
    for docname in session_docs(app):
        source = executed / f"{docname}.ipynb"
        if not source.exists():
            LOGGER.warning(f"no executed notebook for {docname} at {source}: no deck")
            continue
        plain = colab_copy(json.loads(source.read_text()), source.name, bib, outputs=True)
        deck = outdir / deck_uri("", docname)
        deck.parent.mkdir(parents=True, exist_ok=True)
        deck.write_text(deck_html(plain, f"../{REVEAL}", "../_static"))


def write_colab_copies(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    outdir, bib = pathlib.Path(app.outdir), load_bibliography()
    for docname in session_docs(app):
        name = f"{docname}.ipynb"
        copy = colab_copy(
            json.loads((pathlib.Path(app.srcdir) / name).read_text()),
            posixpath.basename(name),
            bib,
        )
        text = json.dumps(copy, indent=1) + "\n"
        for target in (outdir.parent / "colab" / name, outdir / "_sources" / name):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


class StatusNode(nodes.General, nodes.Element):
    """Placeholder for the status tables, filled once every notebook has been executed."""


class BookStatus(SphinxDirective):
    def run(self):
        self.env.note_dependency(str(ROOT / "figures"))
        return [StatusNode()]


def _table(header, rows):
    table = nodes.table(classes=["colwidths-auto"])
    group = nodes.tgroup(cols=len(header))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in header]
    head, body = nodes.thead(), nodes.tbody()
    group += [head, body]
    for target, cells in ((head, [header]), (body, rows)):
        for cells_of_row in cells:
            row = nodes.row()
            for value in cells_of_row:
                entry = nodes.entry()
                entry += (
                    value
                    if isinstance(value, nodes.Node)
                    else nodes.paragraph(text=value)
                )
                row += entry
            target += row
    return table


def _device_line(nb):
    """What the setup cell printed about the device: 'torch ... | triton ... | DEVICE | TIER'."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            for out in cell.get("outputs", []):
                text = "".join(
                    out.get("text", "")
                )  # a string, or a list of lines on disk
                match = re.search(r"^torch .*\| (.+) \| ([\w-]+)$", text, re.M)
                if match:  # the tier, where the name does not say it
                    return match[1] if match[2] == "cpu" else f"{match[1]} ({match[2]})"
            return "not executed"
    return "not executed"


def last_run(app, doc):
    """How `doc` was last executed for this build, or None: by myst-nb through jupyter-cache
    (make book), or by nbval (make test), which records it in the notebook's metadata."""
    from myst_nb.sphinx_ import NbMetadataCollector

    exec_data = NbMetadataCollector.get_doc_data(app.env).get(doc, {}).get("exec_data")
    if exec_data:
        when = datetime.datetime.fromtimestamp(exec_data["mtime"]).astimezone()
        return {
            "date": when.isoformat(),
            "method": "jupyter-cache",
            "runtime_s": exec_data.get("runtime"),
            "succeeded": exec_data["succeeded"],
        }
    return executed_notebook(app, doc).get("metadata", {}).get("book_execution")


def executed_notebook(app, doc):
    path = pathlib.Path(app.outdir).parent / "jupyter_execute" / f"{doc}.ipynb"
    return json.loads(path.read_text()) if path.exists() else {}


def execution_rows(app, docname):
    rows = []
    for doc in session_docs(app):
        link = nodes.paragraph()
        uri = posixpath.relpath(f"{doc}.html", posixpath.dirname(docname))
        link += nodes.reference("", posixpath.basename(doc), refuri=uri)
        run = last_run(app, doc)
        if not run:
            rows.append([link, "not executed in this build", "", "", "", ""])
            continue
        when = str(run["date"])[:16].replace("T", " ")
        runtime = "–" if run.get("runtime_s") is None else f"{run['runtime_s']:.1f}"
        result = "passed" if run["succeeded"] else "FAILED"
        device = _device_line(executed_notebook(app, doc))
        rows.append([link, when, runtime, result, run["method"], device])
    return rows


def headline_text(headline):
    """A figure's or a run's headline numbers, {name: number} (or {figure: {name: number}}),
    as one line: "fwd_over_flash: 1.12; bwd_over_flash: 0.93"."""
    if not isinstance(headline, dict):
        return "–"
    flat = {}
    for key, value in headline.items():
        if isinstance(value, dict):
            flat.update(value)
        else:
            flat[key] = value
    parts = [
        f"{k}: {v:.3g}" if isinstance(v, (int, float)) else f"{k}: {v}"
        for k, v in flat.items()
    ]
    return "; ".join(parts) or "–"


def result_rows():
    rows = []
    # notebooks' folders only: compile/ holds compile reports (no GPU ran them), runs/ the
    # GPU runs' records (gpu_rows)
    for path in sorted((ROOT / "figures").glob("[0-9]*/*.json")):
        record = json.loads(path.read_text())
        prov, results = record.get("provenance", {}), record.get("results")
        rows.append(
            [
                str(path.relative_to(ROOT)),
                prov.get("device", "?"),
                prov.get("tier", "–"),
                f"torch {prov.get('torch')}, triton {prov.get('triton')}",
                str(prov.get("date", ""))[:10],
                headline_text(
                    results.get("headline") if isinstance(results, dict) else None
                ),
            ]
        )
    return rows


def gpu_rows():
    """The records of tools/gpu_run.py (figures/runs/<device>/NN_name.json): one row per
    notebook and device, with its headline numbers."""
    rows = []
    for path in sorted((ROOT / "figures" / "runs").glob("*/[0-9]*.json")):
        r = json.loads(path.read_text())
        status = r.get("status", "pass" if r.get("passed") else "fail")
        rows.append(
            [
                r.get("notebook", path.stem),
                r.get("device") or path.parent.name,
                r.get("tier") or "–",
                f"driver {r.get('driver') or '–'}, torch {r.get('torch')},"
                f" triton {r.get('triton')}",
                str(r.get("date", ""))[:10],
                f"{r.get('minutes', 0):.1f}",
                status,
                headline_text(r.get("headline")),
            ]
        )
    return rows


class StatusTransform(SphinxPostTransform):
    default_priority = 8

    def run(self, **kwargs):
        for node in list(self.document.findall(StatusNode)):
            header = [
                "Notebook",
                "Last executed",
                "Run time (s)",
                "Result",
                "How",
                "Device",
            ]
            tables = [_table(header, execution_rows(self.app, self.env.docname))]
            results = result_rows()
            if results:
                header = ["Committed GPU result", "Device", "Tier", "Versions", "Date"]
                tables.append(_table(header + ["Headline"], results))
            else:
                tables.append(
                    nodes.paragraph(text="No GPU result is committed under figures/ yet.")
                )
            runs = gpu_rows()
            if runs:
                header = ["GPU run", "Device", "Tier", "Versions", "Date", "Minutes"]
                tables.append(_table(header + ["Result", "Headline"], runs))
            else:
                tables.append(
                    nodes.paragraph(
                        text="No GPU run of tools/gpu_run.py is recorded under"
                        " figures/runs/ yet."
                    )
                )
            node.replace_self(tables)


def status_docs_to_update(app, env):
    """The status page always reflects the whole build."""
    return [d for d in env.found_docs if d == "status"]


def drop_thebe_scripts(app, pagename, templatename, context, doctree):
    """Live code on the page (Thebe) is off in this book, but jupyter-book loads sphinx-thebe,
    which declares its scripts twice on every page ("THEBE_JS_URL has already been declared")
    and names a script on unpkg.com. Leave both out of the pages."""

    def thebe(script):
        body = getattr(script, "attributes", {}).get("body", "")
        return "THEBE_JS_URL" in body or str(script).endswith("sphinx-thebe.js")

    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not thebe(s)]


def setup(app):
    app.add_role("deck", deck_role)
    app.add_directive("book-status", BookStatus)
    app.add_node(StatusNode)
    app.add_post_transform(StatusTransform)
    app.connect("doctree-read", add_session_links)
    app.connect("env-updated", status_docs_to_update)
    app.connect("html-page-context", drop_thebe_scripts)
    app.connect("build-finished", build_decks)
    app.connect("build-finished", write_colab_copies)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
