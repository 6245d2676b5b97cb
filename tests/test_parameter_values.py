"""Parameters that change a notebook's structure (ranks, degrees, head counts, lengths that are
not multiples of a block) list their documented values in their comment, as `(values: 1, 2, 3)`.
Every documented value must work with the defaults of every other parameter: its "auto" values
follow from it. make test resolves each of them (the resolution cell, on this machine's tier);
`make param-test` runs the whole notebook with each (papermill, the CPU's sizes)."""

import ast
import re

import papermill
import pytest

from conftest import NOTEBOOKS, code_cells, load, source

VALUES = re.compile(r"^(\w+) = .*\(values: (.+)\)\s*$", re.M)


def documented(nb):
    """{parameter: [value, ...]} from the parameters cell's `(values: ...)` comments."""
    text = source(code_cells(nb)[1])
    return {
        name: ast.literal_eval(f"[{values}]") for name, values in VALUES.findall(text)
    }


CASES = [
    (path, name, value)
    for path in NOTEBOOKS
    for name, values in documented(load(path)).items()
    for value in values
]
IDS = [f"{p.stem}-{n}={v}" for p, n, v in CASES]


def test_the_parallel_notebooks_document_their_values():
    for stem in ("04_ring_attention", "11_async_tensor_parallelism"):
        nb = load(next(p for p in NOTEBOOKS if p.stem == stem))
        assert "RANKS" in documented(nb), f"{stem}: RANKS lists no (values: ...)"


@pytest.mark.parametrize("path, name, value", CASES, ids=IDS)
def test_documented_value_resolves(setup_cell, path, name, value):
    params, resolution = (source(c) for c in code_cells(load(path))[1:3])
    namespace = dict(setup_cell)
    exec(params, namespace)
    namespace[name] = value
    exec(resolution, namespace)  # raises ValueError naming what does not follow
    assert namespace[name] == value


@pytest.mark.values
@pytest.mark.parametrize("path, name, value", CASES, ids=IDS)
def test_documented_value_runs_the_whole_notebook(tmp_path, path, name, value):
    papermill.execute_notebook(
        str(path),
        str(tmp_path / "out.ipynb"),
        parameters={name: value},
        cwd=str(path.parent),
        kernel_name="python3",
        progress_bar=False,
    )
