"""Keep the notebooks of sessions/ in the book's shape.

    python tools/notebooks.py [--check] [sessions/NN_name.ipynb ...]   (default: every notebook)

For each notebook it pastes the setup cell (tests/setup_cell.py) into the first code cell, tags
the setup and resolution cells `hide-input` (the site folds them), gives every cell its slide
type (below), clears outputs and execution counts, and formats the code with ruff. With
--check it changes nothing and exits 1 if a notebook is not in that shape.

Slide types (cell metadata `slideshow.slide_type`, read by RISE and by nbconvert's reveal.js):
- the title cell, and every Markdown cell that opens with a `## ` heading: a new slide;
- a `### ` heading, a Markdown cell that follows code, and a code cell longer than
  LONG_CODE lines (or a %%writefile worker): a sub-slide, below the section's slide;
- the setup, parameters and resolution cells: skipped (run them before presenting);
- a Markdown cell tagged `notes`: speaker notes (RISE and reveal.js's `s` key show them);
- a code cell tagged `answer` (the worked answer of a question): a sub-slide below it;
- anything else continues the slide above it.

A code cell tagged `answer` is also folded on the site under a button that says "Answer"
(myst-nb's `hide-cell` tag and its `code_prompt_show` cell option).
"""

import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SETUP_CELL = (ROOT / "tests" / "setup_cell.py").read_text().rstrip("\n")
LONG_CODE = 15  # lines
SKIPPED = 3  # the first three code cells: setup, parameters, resolution
ANSWER_PROMPTS = {"code_prompt_show": "Answer", "code_prompt_hide": "Hide the answer"}


def source(cell):
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def slide_types(cells):
    """The slide type of every cell, derived from the notebook's structure (module doc)."""
    types, code_cells, last_shown = [], 0, None
    for i, cell in enumerate(cells):
        text = source(cell)
        if cell["cell_type"] == "code":
            long = len(text.splitlines()) > LONG_CODE or text.startswith("%%writefile")
            long = long or "answer" in cell["metadata"].get("tags", [])
            kind = "skip" if code_cells < SKIPPED else "subslide" if long else "-"
            code_cells += 1
        elif i == 0 or text.startswith("## "):
            kind = "slide"
        elif "notes" in cell["metadata"].get("tags", []):
            kind = "notes"
        elif text.startswith("### ") or last_shown == "code":
            kind = "subslide"
        else:
            kind = "-"
        if kind not in ("skip", "notes"):
            last_shown = cell["cell_type"]
        types.append(kind)
    return types


def tag(cell, name):
    tags = cell["metadata"].setdefault("tags", [])
    if name not in tags:
        tags.append(name)


def normalise(nb):
    """The notebook in the book's shape (without ruff's formatting), as a new dict."""
    nb = json.loads(json.dumps(nb))
    cells = nb["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    code[0]["source"] = SETUP_CELL
    for cell in code[0], code[2]:
        tag(cell, "hide-input")
    for cell in code:
        cell["outputs"], cell["execution_count"] = [], None
        if "answer" in cell["metadata"].get("tags", []):
            tag(cell, "hide-cell")  # folded on the site, under a button:
            cell["metadata"]["mystnb"] = ANSWER_PROMPTS
    for cell, kind in zip(cells, slide_types(cells)):
        cell["metadata"]["slideshow"] = {"slide_type": kind}
        cell["source"] = source(cell)
    return nb


def serialise(nb):
    import nbformat  # nbformat writes the layout JupyterLab and ruff keep

    return nbformat.writes(nbformat.from_dict(nb)) + "\n"


def ruff(*args, **kwargs):
    exe = pathlib.Path(sys.executable).parent / "ruff"
    cmd = [str(exe) if exe.exists() else "ruff", *args]
    return subprocess.run(cmd, check=True, cwd=ROOT, text=True, **kwargs)


def ruff_format(path):
    """Format the notebook's code cells, and the %%writefile workers that ruff skips there."""
    ruff("format", "--quiet", str(path))
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        head, _, body = source(cell).partition("\n")
        if cell["cell_type"] == "code" and head.startswith("%%writefile"):
            fmt = ruff(
                "format",
                "--stdin-filename",
                "worker.py",
                "-",
                input=body,
                capture_output=True,
            )
            cell["source"] = f"{head}\n{fmt.stdout}".rstrip("\n")
    path.write_text(serialise(nb))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if off"
    )
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "sessions").glob("[0-9][0-9]_*.ipynb"))
    off = []
    for path in paths:
        before = path.read_text()
        path.write_text(serialise(normalise(json.loads(before))))
        ruff_format(path)  # then derive the slide types again: formatting changes lengths
        path.write_text(serialise(normalise(json.loads(path.read_text()))))
        if args.check and path.read_text() != before:
            off.append(path)
            path.write_text(before)
    for path in off:
        print(f"{path}: not in shape; run `python tools/notebooks.py {path}`")
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
