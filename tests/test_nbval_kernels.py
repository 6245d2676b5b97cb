"""Under nbval (make test), a Triton kernel created by a cell not tagged `kernel` fails that
cell (tests/nbval_kernels.py): the compile check runs only `kernel` cells."""

import os
import subprocess
import sys

import nbformat

from conftest import ROOT
from test_compile import COPY, LAUNCH_COPY, toy_notebook


def test_a_kernel_outside_the_kernel_cells_fails_under_nbval(tmp_path):
    notebook = toy_notebook(tmp_path / "toy.ipynb", COPY + "XDTYPE = HALF", LAUNCH_COPY)
    nb = nbformat.read(notebook, as_version=4)
    made = "def twice(x_ptr):\n    pass\n\n\nk = triton.jit(twice)"
    timed = "%%time\nfrom triton import jit\n\n\n@jit\ndef timed_kernel(x_ptr):\n    pass"
    nb.cells += [nbformat.v4.new_code_cell(made), nbformat.v4.new_code_cell(timed)]
    nbformat.write(nb, notebook)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "nbval_kernels",
         "--nbval-lax", "--nbval-current-env", "-q", str(notebook)],
        cwd=ROOT, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "tests")),
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert "2 failed" in out, out[-3000:]
    assert "creates the Triton kernel(s) twice but is not tagged `kernel`" in out, out
    assert "creates the Triton kernel(s) timed_kernel" in out, out
