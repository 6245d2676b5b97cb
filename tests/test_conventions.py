"""The notebook conventions of CONTRIBUTING.md, checked on every notebook in sessions/."""

import ast
import re
from urllib.parse import quote

import pytest

from conftest import (
    NOTEBOOKS,
    ROOT,
    SESSIONS,
    SETUP_CELL,
    code_cells,
    session_of,
    source,
)
from notebooks import slide_types

SHELL_ESCAPES = re.compile(r"^\s*(!|%%?(bash|sh|script|system|sx)\b)", re.M)
LONGEST_CELL = 60  # lines, as ruff formats them; CONTRIBUTING asks for about 40
LONGEST_WORKER_FILE = (
    150  # lines of one %%writefile cell: split longer workers into files
)
PAGE_WIDTH = 90  # characters the site's code column shows (ruff.toml's line-length)


def pinned_pdf_url(path):
    return f"{SESSIONS['upstream_repo']}/blob/{SESSIONS['upstream_commit']}/{quote(path)}"


def paper_url(paper):
    return f"https://arxiv.org/abs/{paper['arxiv']}" if "arxiv" in paper else paper["url"]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks in sessions/"


def test_every_listed_notebook_exists():
    for s in SESSIONS["sessions"]:
        if "notebook" in s:
            assert (ROOT / f"{s['notebook']}.ipynb").exists(), (
                f"session {s['n']}: {s['notebook']}.ipynb missing"
            )


def test_clean(nb, notebook):
    for i, cell in enumerate(code_cells(nb)):
        assert not cell.get("outputs"), (
            f"{notebook.name}: code cell {i} has stored outputs"
        )
        assert cell.get("execution_count") is None, (
            f"{notebook.name}: code cell {i} has an execution count"
        )


def test_setup_cell(nb, notebook):
    first = code_cells(nb)[0]
    assert source(first).rstrip("\n") == SETUP_CELL, (
        f"{notebook.name}: the first code cell differs from tests/setup_cell.py"
    )
    assert "hide-input" in first["metadata"].get("tags", []), (
        f"{notebook.name}: tag the setup cell hide-input"
    )


def test_resolution_cell_is_folded(nb, notebook):
    resolution = code_cells(nb)[2]
    assert "hide-input" in resolution["metadata"].get("tags", []), (
        f"{notebook.name}: tag the resolution cell (3rd code cell) hide-input, so the site folds it"
    )


def parameter_names(cell):
    names = []
    for stmt in ast.parse(source(cell)).body:
        assert isinstance(stmt, ast.Assign) and len(stmt.targets) == 1, (
            'only `NAME = "auto"` lines'
        )
        assert isinstance(stmt.value, ast.Constant) and stmt.value.value == "auto", (
            f'{ast.unparse(stmt)}: every parameter defaults to "auto"'
        )
        names.append(stmt.targets[0].id)
    return names


def test_parameters(nb, notebook):
    cell = code_cells(nb)[1]
    assert "parameters" in cell["metadata"].get("tags", []), (
        f"{notebook.name}: 2nd code cell not tagged parameters"
    )
    assert parameter_names(cell), f"{notebook.name}: the parameters cell defines nothing"
    for line in source(cell).splitlines():
        assert re.fullmatch(r'\w+ = "auto"  # \S.*', line), (
            f'{notebook.name}: say what "auto" means after each parameter (\'X = "auto"  # ...\'): {line}'
        )


@pytest.mark.parametrize("bad", ["bogus", -7])
def test_bad_parameters_raise(nb, notebook, setup_cell, bad):
    params, resolution = (source(c) for c in code_cells(nb)[1:3])
    for name in parameter_names(code_cells(nb)[1]):
        ns = dict(setup_cell)
        exec(params, ns)
        exec(resolution, ns)  # the defaults resolve
        exec(params, ns)
        ns[name] = bad
        with pytest.raises(ValueError, match=re.escape(name)):
            exec(resolution, ns)


def test_no_shell_lines(nb, notebook):
    for cell in code_cells(nb):
        assert not SHELL_ESCAPES.search(source(cell)), (
            f"{notebook.name}: a shell escape; its failure would not fail the cell:\n{source(cell)[:300]}"
        )


def test_workers(nb, notebook):
    scripts = []
    for text in (source(c) for c in code_cells(nb)[1:]):
        first_line = text.split("\n", 1)[0].strip()
        if first_line.startswith("%%writefile"):
            script = re.fullmatch(r"%%writefile\s+\{SCRATCH\}/(\S+\.py)", first_line)
            assert script, (
                f"{notebook.name}: write workers as %%writefile {{SCRATCH}}/name.py: {first_line}"
            )
            scripts.append(script[1])
        else:
            assert not re.search(
                r"init_process_group|torch\.distributed\.run|torchrun|subprocess", text
            ), (
                f"{notebook.name}: distributed code outside a %%writefile worker or launch():\n{text[:300]}"
            )
    launches = "\n".join(source(c) for c in code_cells(nb)[1:] if "launch(" in source(c))
    for script in scripts:
        assert f'"{script}"' in launches, (
            f"{notebook.name}: {script} is written but never launch()ed"
        )


def test_cells_short(nb, notebook):
    for cell in code_cells(nb)[1:]:
        text = source(cell)
        n = len(text.splitlines())
        if text.startswith("%%writefile"):
            assert n <= LONGEST_WORKER_FILE, (
                f"{notebook.name}: a {n}-line worker file; split it into files (model, method, check):\n{text[:200]}"
            )
        else:
            assert n <= LONGEST_CELL, f"{notebook.name}: a {n}-line cell:\n{text[:200]}"


def test_code_fits_the_page(nb, notebook):
    for cell in code_cells(nb):
        for line in source(cell).splitlines():
            assert len(line) <= PAGE_WIDTH, (
                f"{notebook.name}: a {len(line)}-character line:\n{line}"
            )


def test_slide_structure(nb, notebook):
    wanted = slide_types(nb["cells"])
    for i, (cell, kind) in enumerate(zip(nb["cells"], wanted)):
        got = cell["metadata"].get("slideshow", {}).get("slide_type")
        assert got == kind, (
            f"{notebook.name}: cell {i} is slide type {got!r}, not {kind!r}; "
            "run python tools/notebooks.py"
        )


def test_in_toc(notebook):
    toc = (ROOT / "_toc.yml").read_text()
    assert f"sessions/{notebook.stem}" in toc, f"{notebook.name} is not in _toc.yml"


def test_facts(nb, notebook):
    session = session_of(notebook)
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown"
    facts = source(first)
    assert facts.startswith(f"# Session {session['n']}"), (
        f"{notebook.name}: title must be '# Session {session['n']}: ...'"
    )
    everything = "\n".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    for presenter in re.split(
        r",\s*|\s+and\s+", re.sub(r"\s*\(.*\)", "", session["presenter"])
    ):
        assert presenter in facts, (
            f"{notebook.name}: presenter {presenter} missing from the facts"
        )
    for link in ("recording", "slides"):
        if link in session:
            assert session[link] in facts, (
                f"{notebook.name}: {link} link missing from the facts"
            )
    for paper in session["papers"]:
        assert paper_url(paper) in facts, (
            f"{notebook.name}: link to {paper['title']} missing"
        )
        if "annotated" in paper:
            assert pinned_pdf_url(paper["annotated"]) in facts, (
                f"{notebook.name}: annotated PDF link missing"
            )
        assert re.search(
            r"\{footcite(:[pt])?\}`[^`]*\b" + re.escape(paper["key"]), everything
        ), f"{notebook.name}: {paper['key']} is never cited"
    last = source(nb["cells"][-1])
    assert nb["cells"][-1]["cell_type"] == "markdown" and "{footbibliography}" in last, (
        f"{notebook.name}: end with '## References' and a footbibliography directive"
    )


def test_kernelspec(nb, notebook):
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3", (
        f"{notebook.name}: kernel must be python3"
    )


def test_readme_lists_every_session():
    readme = (ROOT / "README.md").read_text()
    for session in SESSIONS["sessions"]:
        row = re.search(rf"^\| {session['n']} \| (.*)$", readme, re.M)
        assert row and session["title"] in row[1], (
            f"README: no row for session {session['n']}"
        )
        if "notebook" in session:
            assert f"({session['notebook']}.ipynb)" in row[1], (
                f"README: session {session['n']} lacks its notebook"
            )


SEEDERS = {
    "manual_seed",
    "manual_seed_all",
    "seed",
    "default_rng",
    "RandomState",
    "Random",
}


def literal_seeds(tree):
    """Seeds in `tree` that do not derive from BOOK_SEED: a seeding call (manual_seed,
    default_rng, random.seed...) with no argument or whose argument names nothing with
    "seed" in it (book_seed(3), BOOK_SEED, a function's `seed` parameter), a `seed=`
    keyword given a number, and a `seed` parameter whose default is a number."""

    def derived(node):
        names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
        names += [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
        return any("seed" in name.lower() for name in names)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            )
            if name in SEEDERS and not any(map(derived, [*node.args, *node.keywords])):
                found.append(ast.unparse(node))
            for kw in node.keywords:
                if "seed" in (kw.arg or "") and isinstance(kw.value, ast.Constant):
                    found.append(ast.unparse(node))
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)):
            args = node.args
            params = [*args.posonlyargs, *args.args][
                -len(args.defaults) or len(args.args) :
            ]
            pairs = [*zip(params, args.defaults), *zip(args.kwonlyargs, args.kw_defaults)]
            for arg, default in pairs:
                if "seed" in arg.arg.lower() and isinstance(default, ast.Constant):
                    found.append(f"{arg.arg}={ast.unparse(default)} in a definition")
    return found


def test_seeds_derive_from_book_seed(nb, notebook):
    """Every random draw derives from BOOK_SEED (the setup cell's book_seed(stream) in a
    notebook; BOOK_SEED from the environment in a worker), so make seed-test varies it."""
    for i, cell in enumerate(code_cells(nb)[1:], 1):
        text = source(cell)
        if text.startswith("%%writefile"):
            text = text.partition("\n")[2]
        elif text.startswith("%"):
            continue
        found = literal_seeds(ast.parse(text))
        assert not found, (
            f"{notebook.name}, code cell {i}: seeds that ignore BOOK_SEED: {found};"
            " use book_seed(stream) (workers: BOOK_SEED from os.environ)"
        )


def test_the_seed_check_catches_literal_seeds():
    planted = [
        "torch.manual_seed(0)",
        "g = torch.Generator().manual_seed(1000 * n + rank)",
        "rng = np.random.default_rng()",
        "random.seed(3)",
        "data = make(seed=4)",
        "def make(n, seed=1): pass",
    ]
    for text in planted:
        assert literal_seeds(ast.parse(text)), f"not caught: {text}"
    fine = [
        "torch.manual_seed(book_seed(2))",
        "g = torch.Generator().manual_seed(BOOK_SEED * 1000 + rank)",
        "def make(n, seed): return np.random.default_rng(seed)",
        "data = make(seed=book_seed(5))",
        "rng = random.Random(args.seed)",
    ]
    for text in fine:
        assert not literal_seeds(ast.parse(text)), f"wrongly caught: {text}"


def words(markdown):
    """Words of prose in a Markdown text: math, code and link targets left out."""
    text = re.sub(
        r"\$\$.*?\$\$|\$[^$\n]+\$|`[^`]*`|\]\([^)]*\)", " ", markdown, flags=re.S
    )
    return len(re.findall(r"[A-Za-z0-9][\w'-]*", text))


def test_the_question_follows_the_title(nb, notebook):
    """The deck opens with a title slide and then the session's question (CONTRIBUTING.md,
    Slides): the cell after the title is `## The question`, short enough for one slide."""
    second = nb["cells"][1]
    text = source(second)
    assert second["cell_type"] == "markdown" and text.startswith("## The question"), (
        f"{notebook.name}: the cell after the title must open with '## The question'"
    )
    assert words(text) <= 80, f"{notebook.name}: the question has {words(text)} words"


def test_worked_questions(nb, notebook):
    """At least three worked questions: a Markdown cell `### Question N: ...` followed by a
    code cell tagged `answer` that works the answer out, prints it and asserts it."""
    cells = nb["cells"]
    answers = [
        i for i, c in enumerate(cells) if "answer" in c["metadata"].get("tags", [])
    ]
    assert len(answers) >= 3, (
        f"{notebook.name}: {len(answers)} worked answers (at least 3)"
    )
    for n, i in enumerate(answers, 1):
        question, answer = cells[i - 1], cells[i]
        assert answer["cell_type"] == "code", f"{notebook.name}: answer {n} is not code"
        head = source(question).split("\n", 1)[0]
        assert question["cell_type"] == "markdown" and re.match(
            rf"### Question {n}\b", head
        ), (
            f"{notebook.name}: answer {n} must follow a Markdown cell '### Question {n}: ...'"
        )
        code = source(answer)
        assert "print(" in code and re.search(r"^\s*assert\b", code, re.M), (
            f"{notebook.name}: answer {n} must print its answer and assert it"
        )


def test_long_code_shows_an_excerpt_on_its_slide(nb, notebook):
    """A code cell longer than a slide holds says which part its slide shows (tools/deck.py:
    metadata `deck: {from: <text of its first line>, lines: n}`)."""
    from deck import CODE_LINES

    for i, cell in enumerate(code_cells(nb)[3:], 3):
        text = source(cell)
        deck = cell["metadata"].get("deck", {})
        where = f"{notebook.name}, code cell {i} ({len(text.splitlines())} lines)"
        if len(text.splitlines()) <= CODE_LINES:  # an excerpt, if any, must still anchor
            assert deck.get("from", "") in text, f"{where}: no line has {deck['from']!r}"
            continue
        assert "from" in deck and deck.get("lines", 99) <= CODE_LINES, (
            f"{where}: give it metadata deck: {{from: ..., lines: <= {CODE_LINES}}}"
        )
        assert deck["from"] in text, f"{where}: no line contains {deck['from']!r}"


def test_the_book_map_is_drawn_from_sessions_yml():
    """figures/book_map.svg (the landing page's map) is what tools/book_map.py draws from
    papers/sessions.yml now, and every session says where it sits."""
    import book_map

    for s in SESSIONS["sessions"]:
        assert {"short", "theme", "adds", "builds_on"} <= s.keys(), f"session {s['n']}"
        assert all(n < s["n"] for n in s["builds_on"]), (
            f"session {s['n']}: builds on later"
        )
    assert book_map.main(["--check"]) == 0, "run python tools/book_map.py"
