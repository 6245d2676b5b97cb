"""The compile check (tests/compile_check.py): every Triton kernel of every notebook compiles for
sm_75 (T4), sm_80 (A100) and sm_90 (H100) within shared memory, without unlisted spills, with
tensor cores where the GPU has them; and the check fails on planted breakage."""

import json
import subprocess
import sys

import nbformat

from compile_check import TIERS, check
from conftest import ROOT, SETUP_CELL


def test_kernels_compile(notebook):
    """On the Triton that runs the tests: the pinned one, or the floor's with BOOK_PYTHON."""
    records, failures = check(notebook, list(TIERS), full=False)
    assert not failures, "\n".join(failures)


def toy_notebook(path, kernel_cell, launch_cell):
    """A notebook of the book's shape: setup, parameters, resolution, kernel cells."""
    nb = nbformat.v4.new_notebook()
    tagged = lambda text, *tags: nbformat.v4.new_code_cell(  # noqa: E731
        text, metadata={"tags": list(tags)}
    )
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Toy"),
        tagged(SETUP_CELL, "hide-input"),
        tagged('SIZE = "auto"  # 64', "parameters"),
        tagged('SIZE = param("SIZE", SIZE, 64, lambda v: v > 0, "> 0")', "hide-input"),
        tagged(kernel_cell, "kernel"),
        tagged(launch_cell, "kernel"),
    ]
    nbformat.write(nb, path)
    return path


COPY = """
@triton.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i).to(tl.float32))
"""
LAUNCH_COPY = """
def launch_kernels(full=False):
    x, y = torch.empty(SIZE, dtype=XDTYPE), torch.empty(SIZE)
    copy_kernel[(1,)](x, y, BLOCK=SIZE)
"""


def failures_of(tmp_path, kernel_cell, launch_cell, arch):
    notebook = toy_notebook(tmp_path / "toy.ipynb", kernel_cell, launch_cell)
    return check(notebook, [arch], full=False)


def test_a_clean_kernel_passes(tmp_path):
    records, failures = failures_of(
        tmp_path, COPY + "XDTYPE = HALF", LAUNCH_COPY, "sm_80"
    )
    assert not failures and records[0]["args"]["x_ptr"] == "bfloat16", failures


def test_planted_fp8_argument_on_sm80_fails(tmp_path):
    # an A100 has no fp8e4nv: passing float8_e4m3fn tensors must be caught
    kernel = COPY + "XDTYPE = torch.float8_e4m3fn"
    _, failures = failures_of(tmp_path, kernel, LAUNCH_COPY, "sm_80")
    assert any("does not compile" in f and "fp8e4nv" in f for f in failures), failures
    _, failures = failures_of(tmp_path, kernel, LAUNCH_COPY, "sm_90")
    assert not failures, failures


def test_planted_shared_memory_overflow_fails(tmp_path):
    # two 128 x 128 fp32 tiles staged in shared memory: 128 KiB, more than a T4's 64 KiB
    kernel = """
@triton.jit
def mm_kernel(a_ptr, c_ptr, K, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + k + i[:, None] * K + i[None, :])
        b = tl.load(a_ptr + k * K + i[:, None] * K + i[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + i[:, None] * BLOCK + i[None, :], acc)
"""
    launch = """
def launch_kernels(full=False):
    a, c = torch.empty(4 * 128 * 128), torch.empty(128 * 128)
    mm_kernel[(1,)](a, c, 512, BLOCK=128, num_stages=2, num_warps=4)
"""
    _, failures = failures_of(tmp_path, kernel, launch, "sm_75")
    assert any("bytes of shared memory, above sm_75" in f for f in failures), failures


def test_planted_uncovered_kernel_fails(tmp_path):
    extra = COPY + "XDTYPE = HALF\n" + COPY.replace("copy_kernel", "forgotten_kernel")
    _, failures = failures_of(tmp_path, extra, LAUNCH_COPY, "sm_90")
    assert any("forgotten_kernel" in f and "never compiled" in f for f in failures)


def test_untagged_kernel_cell_fails(tmp_path):
    notebook = toy_notebook(tmp_path / "toy.ipynb", COPY + "XDTYPE = HALF", LAUNCH_COPY)
    nb = json.loads(notebook.read_text())
    nb["cells"][4]["metadata"]["tags"] = []  # the kernel's cell is not tagged
    notebook.write_text(json.dumps(nb))
    _, failures = check(notebook, ["sm_90"], full=False)
    assert failures, "a kernel in an untagged cell went unnoticed"


def test_cli_reports(tmp_path):
    notebook = toy_notebook(tmp_path / "toy.ipynb", COPY + "XDTYPE = HALF", LAUNCH_COPY)
    cli = [sys.executable, "tests/compile_check.py", str(notebook), "--tier", "sm_75"]
    done = subprocess.run(
        [*cli, "--report", str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "toy.json").read_text())
    assert report["provenance"]["triton"] and report["results"][0]["arch"] == "sm_75"


def test_planted_spill_fails(tmp_path):
    # a 128 x 128 fp32 tile in one warp: 512 values per thread, more than 255 registers
    kernel = """
@triton.jit
def big_tile_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tile = tl.load(x_ptr + i[:, None] * BLOCK + i[None, :])
    tile = tl.sqrt(tile * tile + tl.trans(tile))
    tl.store(y_ptr + i[:, None] * BLOCK + i[None, :], tl.cumsum(tile, 1))
"""
    launch = """
def launch_kernels(full=False):
    x, y = torch.empty(128 * 128), torch.empty(128 * 128)
    big_tile_kernel[(1,)](x, y, BLOCK=128, num_warps=1)
"""
    _, failures = failures_of(tmp_path, kernel, launch, "sm_80")
    assert any("spills" in f for f in failures), failures
