"""Colab copies: the session notebooks with their MyST turned into plain Markdown.

    python tools/colab.py OUT_DIR [sessions/NN_name.ipynb ...]   (default: every notebook)

The site renders MyST; Colab and JupyterLab render plain Markdown, where a citation role or a
directive shows as raw text. Each copy gets citations as linked "Dao et al., 2022" text, the
`{footbibliography}` directive as a list of the works the notebook cites, and admonitions as
block quotes; math (`$...$`, `$$...$$`) stays, since Jupyter renders it. The notebooks may use
exactly the MyST this converts (CONTRIBUTING.md); `myst_left` finds anything else.
"""

import codecs
import json
import pathlib
import re
import sys

import latexcodec  # noqa: F401 (registers the "ulatex" codec: R\\'e -> Ré)
import pybtex.database
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIB = ROOT / "papers" / "references.bib"
CITE = re.compile(r"\{footcite:([pt])\}`([^`]+)`")
FENCE = re.compile(r"^```\{(\w+)\}[ \t]*(.*?)\n(.*?)^```[ \t]*$", re.M | re.S)
ADMONITIONS = {
    "note": "Note",
    "tip": "Tip",
    "important": "Important",
    "warning": "Warning",
}
ANSWER_TITLE = "# @title Answer (run it; 'Show code' shows the working)"
# What only MyST renders: roles, directive fences (backticks or colons), targets, comments.
MYST_ONLY = re.compile(
    r"\{[\w:-]+\}`|^\s*(`{3,}|~{3,}|:{3,})\s*\{|^\s*\([\w-]+\)=\s*$|^%", re.M
)


def repository_url():
    """The repository the book's buttons point at: _config.yml is the one place it is set."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]


def load_bibliography(path=BIB):
    return pybtex.database.parse_file(str(path)).entries


def plain(text):
    """BibTeX text as plain text: LaTeX accents decoded, braces dropped."""
    return re.sub(r"[{}]", "", codecs.decode(text, "ulatex"))


def surnames(entry):
    people = entry.persons.get("author", [])
    names = [" ".join(p.last_names) for p in people] or [
        entry.fields.get("organization", "?")
    ]
    names = [plain(name) for name in names]
    if len(names) >= 3:
        return f"{names[0]} et al."
    return " and ".join(names)


def link(entry):
    fields = entry.fields
    if "url" in fields:
        return fields["url"]
    if "eprint" in fields:
        return f"https://arxiv.org/abs/{fields['eprint']}"
    if "doi" in fields:
        return f"https://doi.org/{fields['doi']}"
    return None


def cite(entry, mode):
    """`p`: "Dao et al., 2022"; `t`: "Dao et al. (2022)"; linked to the paper when it has a link."""
    who, year = surnames(entry), entry.fields["year"]
    text = f"{who}, {year}" if mode == "p" else f"{who} ({year})"
    url = link(entry)
    return f"[{text}]({url})" if url else text


def reference(entry):
    """One line of the bibliography: authors (year). *Title*. Venue. Link."""
    people = entry.persons.get("author", [])
    authors = ", ".join(
        " ".join(p.first_names + p.middle_names + p.last_names) for p in people
    )
    venue = entry.fields.get("booktitle") or entry.fields.get("journal") or ""
    line = f"{plain(authors) or surnames(entry)} ({entry.fields['year']})."
    line += f" *{plain(entry.fields['title'])}*." + (f" {plain(venue)}." if venue else "")
    url = link(entry)
    return line + (f" <{url}>" if url else "")


def convert_markdown(text, bib, cited):
    """Plain Markdown for one cell; appends the keys it cites to `cited` (in order, once)."""

    def citation(match):
        mode, keys = match[1], [k.strip() for k in match[2].split(",")]
        for key in keys:
            if key not in cited:
                cited.append(key)
        parts = "; ".join(cite(bib[key], mode) for key in keys)
        return f"({parts})" if mode == "p" else parts

    def fence(match):
        name, title, body = match[1], match[2].strip(), match[3].rstrip("\n")
        if name == "footbibliography":
            return "\n".join(f"- {reference(bib[key])}" for key in cited)
        if name in ADMONITIONS:
            head = f"**{title or ADMONITIONS[name]}.**"
            return "\n".join(f"> {line}".rstrip() for line in [head, *body.split("\n")])
        return match[0]  # left as it is: myst_left reports it

    return FENCE.sub(fence, CITE.sub(citation, text))


def myst_left(text):
    """The MyST-only constructs left in a Markdown text (empty when it reads everywhere)."""
    return [m.group(0).strip() for m in MYST_ONLY.finditer(text)]


def colab_copy(nb, name, bib=None, outputs=False):
    """The notebook `nb` (a dict) as Colab and JupyterLab should show it: clean, unless
    `outputs` (a deck shows what the notebook printed)."""
    bib = load_bibliography() if bib is None else bib
    nb = json.loads(json.dumps(nb))
    nb["metadata"].pop(
        "book_execution", None
    )  # how make test ran it (tests/nbval_record.py)
    cited = []
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    # Folded where readers meet it first: Colab's form view shows its "# @title" line,
    # JupyterLab hides the source.
    setup["metadata"].update(cellView="form", jupyter={"source_hidden": True})
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and not outputs:
            cell["outputs"], cell["execution_count"] = [], None
        if "answer" in cell["metadata"].get("tags", []) and not outputs:
            # a worked answer stays folded until the reader opens it: Colab's form view
            # shows its title, JupyterLab hides its source
            cell["metadata"].update(cellView="form", jupyter={"source_hidden": True})
            cell["source"] = f"{ANSWER_TITLE}\n{''.join(cell['source'])}"
        if cell["cell_type"] == "markdown":
            text = (
                "".join(cell["source"])
                if isinstance(cell["source"], list)
                else cell["source"]
            )
            cell["source"] = convert_markdown(text, bib, cited)
    note = (
        f"*A copy of `sessions/{name}` from [the book's repository]({repository_url()}),"
        " made for Colab and JupyterLab. Change the original, not this copy.*"
    )
    skip = {"slideshow": {"slide_type": "skip"}}  # not a slide when presented with RISE
    note_cell = {
        "cell_type": "markdown",
        "id": "colab-copy-note",
        "metadata": skip,
        "source": note,
    }
    nb["cells"].insert(1, note_cell)
    nb["metadata"]["accelerator"] = (
        "GPU"  # Colab opens it on a GPU runtime (a T4 on the free tier)
    )
    nb["metadata"].setdefault("colab", {"provenance": []})
    return nb


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = pathlib.Path(argv[0])
    paths = [pathlib.Path(p) for p in argv[1:]] or sorted(
        (ROOT / "sessions").glob("[0-9]*.ipynb")
    )
    bib = load_bibliography()
    for path in paths:
        copy = colab_copy(json.loads(path.read_text()), path.name, bib)
        (out / "sessions").mkdir(parents=True, exist_ok=True)
        (out / "sessions" / path.name).write_text(json.dumps(copy, indent=1) + "\n")
        print(f"wrote {out / 'sessions' / path.name}")


if __name__ == "__main__":
    main()
