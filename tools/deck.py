"""A notebook's deck: what the presenter shows, made from the executed notebook.

    python tools/deck.py EXECUTED.ipynb [...] --out DIR [--measure]

The notebook is the one source: the site's page shows every cell, and the deck shows a talk
made of the same cells, following their slide types (tools/notebooks.py derives them) and this
metadata:

- the title slide shows the title cell's heading and its facts (the block quote: papers,
  presenter, links); the title cell's other paragraphs become that slide's speaker notes;
- a Markdown cell tagged `notes` is the speaker notes of the slide above it (reveal.js shows
  them in its speaker view, key S): prose that would crowd a slide goes there;
- a code cell with `"deck": {"from": "def attention(", "lines": 20}` in its metadata shows
  only that many lines of its source, from the first line that contains the text: the part
  that makes the slide's point, with a line that says the whole cell is on the page. A code
  cell longer than CODE_LINES lines needs one (tests/test_conventions.py);
- a text output longer than OUTPUT_LINES lines shows its first and last lines around an
  elision line (`"deck": {"output_lines": n}` sets another count for a cell); consecutive
  prints are one output; a Markdown output (a table) keeps its first lines;
- `"deck": {"outputs": n}` shows a cell's first n outputs (e.g. one GPU's table of several)
  and a line that says the others are on the page;
- `answer` cells (worked answers) are a sub-slide below their question;
- the `## References` slide shows its heading, and the list of works is its speaker notes.

`book_site.py` builds every session's deck with `deck_html` when the site is built; this
script builds decks outside the site (with their scripts beside them) and, with --measure,
opens each in headless Chromium and reports every slide that breaks a limit of LIMITS, which
the browser test (tests/test_browser.py) asserts for every deck of the site.
"""

import argparse
import copy
import functools
import http.server
import importlib.util
import json
import pathlib
import re
import shutil
import sys
import threading

HERE = pathlib.Path(__file__).resolve().parent
OUTPUT_LINES = 14  # lines of a text output a slide shows, at most
CODE_LINES = 30  # lines of code a slide shows, at most (about 560 px at 15 px a line)
# What a slide may hold (measured by MEASURE_JS): words of prose on screen (Markdown text, not
# code, outputs or math), and on the title slide; content no taller than the slide.
LIMITS = {"words": 120, "title_words": 90}
WIDTH, HEIGHT = 1200, 800  # the deck's size in CSS pixels (90 columns of code at 15 px)


def source(cell):
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def title_and_notes(text):
    """The title cell split into what its slide shows (headings and the facts' block quote)
    and what the presenter says (the other paragraphs)."""
    shown, said = [], []
    for block in re.split(r"\n\s*\n", text.strip()):
        kept = block.lstrip().startswith(("#", ">"))
        (shown if kept else said).append(block)
    return "\n\n".join(shown), "\n\n".join(said)


def excerpt(code, start, count):
    """`count` lines of `code` from the first line that contains `start`, after a line that
    says where the rest is (anchored on text, so that edits above it do not move it)."""
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if start in line), None)
    if first is None:
        raise ValueError(f"deck excerpt: no line of the cell contains {start!r}")
    part = lines[first : first + count]
    where = f"lines {first + 1}-{first + len(part)} of {len(lines)}"
    return "\n".join([f"# ... {where}; the whole cell is on the page", *part])


def shorten(text, keep):
    """A long text output: its first and last lines around a line that says how many are left
    out (a slide shows `keep` lines at most)."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= keep:
        return text
    head, tail = (keep - 1) // 2 + (keep - 1) % 2, (keep - 1) // 2
    gap = f"... {len(lines) - head - tail} more lines: the whole output is on the page"
    return "\n".join([*lines[:head], gap, *lines[len(lines) - tail :]]) + "\n"


def shorten_markdown(text, keep):
    """A long Markdown output (tables): its first `keep` lines, then a paragraph that says how
    many are left out (a table cut after a row is still a table)."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= keep:
        return text
    gap = f"*... {len(lines) - keep} more lines: the whole output is on the page*"
    return "\n".join([*lines[:keep], "", gap]) + "\n"


def shorten_output(out, keep):
    out = copy.deepcopy(out)
    if out.get("output_type") == "stream":
        out["text"] = shorten("".join(out["text"]), keep)
    elif "data" in out:
        if "text/plain" in out["data"]:
            out["data"]["text/plain"] = shorten("".join(out["data"]["text/plain"]), keep)
        if "text/markdown" in out["data"]:
            markdown = "".join(out["data"]["text/markdown"])
            out["data"]["text/markdown"] = shorten_markdown(markdown, keep)
    return out


def joined_streams(outputs):
    """Consecutive outputs to the same stream as one (each print of a loop is its own output
    in an executed notebook; shortened one by one, none would be cut)."""
    joined = []
    for out in outputs:
        last = joined[-1] if joined else {}
        same = out.get("output_type") == last.get("output_type") == "stream"
        if same and out.get("name") == last.get("name"):
            last["text"] = "".join(last["text"]) + "".join(out["text"])
        else:
            joined.append(copy.deepcopy(out))
    return joined


def shown_outputs(outputs, deck):
    """What a slide shows of a cell's outputs (module docstring)."""
    outputs = joined_streams(outputs)
    count = deck.get("outputs", len(outputs))
    if count < len(outputs):
        left = len(outputs) - count
        note = f"... {left} more output{'s' * (left > 1)}: on the page\n"
        outputs = [
            *outputs[:count],
            {"output_type": "stream", "name": "stdout", "text": note},
        ]
    keep = deck.get("output_lines", OUTPUT_LINES)
    return [shorten_output(o, keep) for o in outputs]


def note_cell(cell_id):
    notes = {"slideshow": {"slide_type": "notes"}}
    return {"cell_type": "markdown", "id": cell_id, "metadata": notes}


def deck_cells(nb):
    """The notebook (a dict) as its deck shows it (module docstring), as a new dict."""
    nb = copy.deepcopy(nb)
    cells = []
    for i, cell in enumerate(nb["cells"]):
        meta = cell.setdefault("metadata", {})
        deck = meta.get("deck", {})
        if i == 0 and cell["cell_type"] == "markdown":
            shown, said = title_and_notes(source(cell))
            cell["source"] = shown
            cells.append(cell)
            if said:
                cells.append({**note_cell("title-notes"), "source": said})
            continue
        heading, _, rest = source(cell).partition("\n")
        if (
            cell["cell_type"] == "markdown"
            and heading == "## References"
            and rest.strip()
        ):
            cell["source"] = heading  # the list of works: in the notes, and on the page
            cells += [cell, {**note_cell("references-notes"), "source": rest.strip()}]
            continue
        if cell["cell_type"] == "code":
            if "from" in deck:
                cell["source"] = excerpt(source(cell), deck["from"], deck["lines"])
            cell["outputs"] = shown_outputs(cell.get("outputs", []), deck)
        cells.append(cell)
    nb["cells"] = cells
    return nb


def deck_html(nb, reveal_prefix, static_prefix):
    """The reveal.js deck of the notebook `nb` (a dict, executed, its Markdown plain), as HTML
    whose scripts are at `reveal_prefix` (reveal.js) and `static_prefix` (MathJax)."""
    import nbformat
    from nbconvert import SlidesExporter

    exporter = SlidesExporter(
        extra_template_paths=[str(HERE / "deck")],
        template_file="book_deck.html.j2",
        reveal_url_prefix=reveal_prefix,
        reveal_theme="white",
        reveal_width=str(WIDTH),
        reveal_height=str(HEIGHT),
    )
    node = nbformat.reads(json.dumps(deck_cells(nb)), as_version=4)
    html, _ = exporter.from_notebook_node(node, resources={"book_static": static_prefix})
    return html


def copy_scripts(static):
    """reveal.js (sphinx-revealjs's copy) and MathJax (sphinx-mathjax-offline's) into `static`,
    where the decks find them: the site serves its own copies, so decks work offline."""
    reveal = pathlib.Path(importlib.util.find_spec("sphinx_revealjs").origin).parent
    for part in ("dist", "plugin/notes"):
        src = reveal / "_static/revealjs" / part
        shutil.copytree(src, static / "revealjs" / part, dirs_exist_ok=True)
    site_packages = reveal.parent
    mathjax = site_packages / "sphinx-mathjax-offline" / "static" / "mathjax"
    if mathjax.exists() and not (static / "mathjax").exists():
        shutil.copytree(mathjax, static / "mathjax")


# Per slide of the deck open in the page: its place, the words of prose it shows, the words of
# its speaker notes, and its content's height against the slide's.
MEASURE_JS = """() => {
  const height = Reveal.getConfig().height, out = [];
  Reveal.getSlides().forEach(s => {
    const idx = Reveal.getIndices(s);
    Reveal.slide(idx.h, idx.v);
    let words = 0;
    s.querySelectorAll('.jp-MarkdownCell').forEach(m => {
      if (m.closest('aside.notes')) return;
      const copy = m.cloneNode(true);
      copy.querySelectorAll('pre, code, mjx-container, .MathJax, script, style')
        .forEach(e => e.remove());
      words += copy.textContent.split(/\\s+/).filter(w => /[A-Za-z0-9]/.test(w)).length;
    });
    const notes = [...s.querySelectorAll('aside.notes')].map(n => n.textContent).join(' ');
    const heading = s.querySelector('h1, h2, h3');
    out.push({h: idx.h, v: idx.v, words: words,
              notes: notes.split(/\\s+/).filter(w => w).length,
              content: s.scrollHeight, height: height,
              heading: heading ? heading.textContent.replace('\\u00b6', '').trim() : ''});
  });
  Reveal.slide(0, 0);
  return out;
}"""


def measure(page):
    """Every slide's measures (MEASURE_JS) of the deck open in the Playwright `page`."""
    page.wait_for_function("window.Reveal && Reveal.isReady()")
    page.evaluate("window.MathJax && MathJax.startup && MathJax.startup.promise")
    return page.evaluate(MEASURE_JS)


def over_limits(slides):
    """The slides that break LIMITS, each as a line that says where and by how much."""
    bad = []
    for i, s in enumerate(slides):
        where = f"slide {s['h'] + 1}.{s['v'] + 1} ({s['heading'][:50] or 'no heading'})"
        limit = LIMITS["title_words"] if i == 0 else LIMITS["words"]
        if s["words"] > limit:
            bad.append(
                f"{where}: {s['words']} words of prose on screen (at most {limit})"
            )
        if s["content"] > s["height"]:
            bad.append(
                f"{where}: content {s['content']} px tall (slide {s['height']} px)"
            )
    if slides and slides[0]["notes"] == 0:
        bad.append("the title slide has no speaker notes (the introduction goes there)")
    return bad


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def browser():
    """Headless Chromium (as tests/conftest.py starts it) through Playwright."""
    from playwright.sync_api import sync_playwright

    names = ("chromium", "chromium-browser", "google-chrome")
    path = next(filter(None, map(shutil.which, names)), None)
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    playwright = sync_playwright().start()
    return playwright, playwright.chromium.launch(executable_path=path, args=flags)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path, help="executed ones")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--measure", action="store_true", help="report every slide")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from colab import colab_copy, load_bibliography

    bib, slides = load_bibliography(), args.out / "slides"
    slides.mkdir(parents=True, exist_ok=True)
    copy_scripts(args.out / "_static")
    decks = []
    for path in args.notebooks:
        plain = colab_copy(json.loads(path.read_text()), path.name, bib, outputs=True)
        deck = slides / f"{path.stem}.slides.html"
        deck.write_text(deck_html(plain, "../_static/revealjs", "../_static"))
        decks.append(deck)
        print(f"wrote {deck}")
    if not args.measure:
        return 0
    handler = functools.partial(QuietHandler, directory=args.out)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    playwright, chromium = browser()
    failed = 0
    try:
        page = chromium.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(180_000)  # a busy machine loads a long deck slowly
        for deck in decks:
            page.goto(f"http://127.0.0.1:{httpd.server_port}/slides/{deck.name}")
            found = measure(page)
            bad = over_limits(found)
            failed += bool(bad)
            print(f"{deck.name}: {len(found)} slides, {len(bad)} over the limits")
            for line in bad:
                print(f"  {line}")
    finally:
        chromium.close()
        playwright.stop()
        httpd.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
