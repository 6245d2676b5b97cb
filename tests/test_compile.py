"""The compile check (tests/compile_check.py): every Triton kernel of every notebook compiles for
sm_75 (T4), sm_80 (A100), sm_89 (L4, A10, RTX 30/40) and sm_90 (H100) within shared memory,
without unlisted spills, with tensor cores where the GPU has them; and the check fails on planted
breakage, each blind spot of its first version included."""

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
def launch_kernels(full=False, bench=False):
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
def launch_kernels(full=False, bench=False):
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
def launch_kernels(full=False, bench=False):
    x, y = torch.empty(128 * 128), torch.empty(128 * 128)
    big_tile_kernel[(1,)](x, y, BLOCK=128, num_warps=1)
"""
    _, failures = failures_of(tmp_path, kernel, launch, "sm_80")
    assert any("spills" in f for f in failures), failures


# The blind spots of the check's first version (issue 26), each planted in a toy notebook.


def toy_cells(path, *cells):
    """A toy notebook whose cells after the resolution are `cells`: (source, tags)."""
    notebook = toy_notebook(path, "", "")
    nb = nbformat.read(notebook, as_version=4)
    nb.cells = nb.cells[:4] + [
        nbformat.v4.new_code_cell(text, metadata={"tags": list(tags)})
        for text, tags in cells
    ]
    nbformat.write(nb, notebook)
    return notebook


BRANCHY = """
@triton.jit
def branchy_kernel(x_ptr, y_ptr, BITS: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    if BITS == 8:
        x = x + tl.zeros([BLOCK, 3], tl.float32)  # a compile error no launch reaches
    else:
        x = x * 2
    tl.store(y_ptr + i, x)
"""


LAUNCH_BRANCHY = """
def launch_kernels(full=False, bench=False):
    x, y = torch.empty(SIZE), torch.empty(SIZE)
    for bits in BITS_LAUNCHED:
        branchy_kernel[(1,)](x, y, BITS=bits, BLOCK=SIZE)
"""


def test_each_blind_spot_of_the_first_check_fails(tmp_path):
    """Planted together, checked once on every tier: a kernel made by a call, one decorated
    with a bare `jit`, one in a `%%time` cell, none of them launched; a cell magic that
    needs IPython; a constexpr branch (with a compile error in it) that no launch takes;
    and a launcher without the `bench` argument."""
    made = "def twice(x_ptr):\n    pass\n\n\nk = triton.jit(twice)\n"
    bare = "from triton import jit\n\n\n@jit\ndef bare_kernel(x_ptr):\n    pass\n"
    timed = "%%time\n" + COPY.replace("copy_kernel", "timed_kernel")
    launch = LAUNCH_BRANCHY.replace("full=False, bench=False", "full=False")
    notebook = toy_cells(
        tmp_path / "toy.ipynb",
        (BRANCHY + "BITS_LAUNCHED = [4]\n" + made, ["kernel"]),
        (bare, ["kernel"]),
        (timed, ["kernel"]),
        ("%%bash\necho hi", ["kernel"]),
        (launch, ["kernel"]),
    )
    records, failures = check(notebook, list(TIERS), full=False)
    assert records, "the rest of the check still runs"
    text = "\n".join(failures)
    for name in ("twice", "bare_kernel", "timed_kernel"):
        assert f"jit function {name} " in text and "never compiled" in text, text
    assert "%%bash" in text and "needs IPython" in text, text
    assert "branchy_kernel" in text and "`if BITS == 8` is compiled by no launch" in text
    assert "no `bench` argument" in text, text
    # launched with BITS = 8 too, the planted error is a compile error
    kernel = BRANCHY + "BITS_LAUNCHED = [4, 8]"
    notebook = toy_notebook(tmp_path / "toy.ipynb", kernel, LAUNCH_BRANCHY)
    _, failures = check(notebook, ["sm_90"], full=False)
    assert any("branchy_kernel" in f and "does not compile" in f for f in failures)


def test_every_branch_taken_on_some_tier_passes(tmp_path):
    # BITS = 8 on sm_90 only: a branch counts as compiled when any tier compiles it
    fixed = BRANCHY.replace("tl.zeros([BLOCK, 3], tl.float32)", "1")
    kernel = fixed + 'BITS_LAUNCHED = [4, 8] if TIER == "hopper" else [4]'
    notebook = toy_notebook(tmp_path / "toy.ipynb", kernel, LAUNCH_BRANCHY)
    _, failures = check(notebook, list(TIERS), full=False)
    assert not failures, failures


def test_the_bench_launch_is_compiled_and_reported(tmp_path):
    # a tiny unaligned launch and an aligned benchmark-shaped one: two binaries
    kernel = """
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)
"""
    launch = """
def launch_kernels(full=False, bench=False):
    n = 4096 if bench else 33
    x, y = torch.empty(n), torch.empty(n)
    scale_kernel[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128)
"""
    records, failures = failures_of(tmp_path, kernel, launch, "sm_90")
    assert not failures, failures
    assert {r["launch"] for r in records} == {"check", "bench"}, records


def test_the_99_kib_tier_catches_what_fits_an_a100(tmp_path):
    # 8 stages of two 64 x 64 bf16 tiles, 128 KiB: within an A100's 163 KiB, above an L4's
    # or an A10's 99 KiB
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
def launch_kernels(full=False, bench=False):
    a, c = torch.empty(16 * 64 * 1024, dtype=HALF), torch.empty(64 * 64)
    mm_kernel[(1,)](a, c, 1024, BLOCK=64, num_stages=9, num_warps=4)
"""
    notebook = toy_notebook(tmp_path / "toy.ipynb", kernel, launch)
    _, failures = check(notebook, ["sm_80", "sm_89"], full=False)
    assert any("shared memory, above sm_89" in f for f in failures), failures
    assert not any("[sm_80]" in f for f in failures), failures


def test_the_allowlist_is_per_configuration(monkeypatch):
    import compile_allowlist

    record = {
        "notebook": "toy",
        "kernel": "k",
        "arch": "sm_90",
        "config": {"BLOCK": 64, "num_warps": 4, "num_stages": 3},
        "args": {"x_ptr": "bfloat16"},
    }
    entry = {**record, "dtypes": record["args"], "spills": {"3.7": 16, "3.6": 8}}
    del entry["args"]
    monkeypatch.setattr(compile_allowlist, "_entries", lambda: [entry])
    monkeypatch.setattr(compile_allowlist, "_INDEX", None)
    monkeypatch.setitem(compile_allowlist.REASONS, ("toy", "k"), "a reason")
    allowed = compile_allowlist.allowed_spills
    assert allowed(record, "3.7")[0] == 16 and allowed(record, "3.6")[0] == 8
    assert allowed(record, "3.8")[0] == 16, "an unlisted version: the largest listed"
    other = {**record, "config": {**record["config"], "num_stages": 4}}
    assert allowed(other, "3.7") == (0, None), "another configuration is not allowed"
    monkeypatch.delitem(compile_allowlist.REASONS, ("toy", "k"))
    assert allowed(record, "3.7") == (0, None), "no reason, no allowance"
