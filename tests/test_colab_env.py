"""Colab, reproduced: a Colab copy runs alone, with Colab's packages and nothing from this
repository. Every import of every notebook and worker is in Colab's package list
(tests/colab/pip-freeze.gpu.txt) or installed by the setup cell on Colab; and one Colab copy
with multi-process workers executes outside the repository in an environment that has only
torch, Triton, numpy, matplotlib, pyyaml and ipykernel (and what they need)."""

import ast
import importlib.metadata
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from colab import colab_copy
from conftest import ROOT, SETUP_CELL, code_cells, load, source

# googlecolab/backend-info, pip-freeze.gpu.txt at commit a72407924822 (2026-08-19, "Upgrade
# to Python 3.13"): Colab's GPU runtime, with torch 2.11.0+cu128 and triton 3.6.0.
COLAB_FREEZE = ROOT / "tests" / "colab" / "pip-freeze.gpu.txt"
# The packages the lone environment gets, with what they need (as installed here).
LONE_ENV = ["torch", "triton", "numpy", "matplotlib", "pyyaml", "ipykernel"]
LONE_NOTEBOOK = "08_megatron_tp.ipynb"  # multi-process workers, and fast on a CPU


def normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def colab_packages():
    names = set()
    for line in COLAB_FREEZE.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(==|@)", line)
        if match:
            names.add(normal(match[1]))
    return names


def setup_cell_installs():
    """The packages the setup cell installs on Colab."""
    return {normal(pkg) for pkg, _ in re.findall(r'\("([\w-]+)", "(\w+)"\)', SETUP_CELL)}


def guarded(tree):
    """Import nodes inside a try whose handler catches ImportError (optional imports)."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            caught = " ".join(ast.unparse(h.type) for h in node.handlers if h.type)
            if re.search(r"ImportError|ModuleNotFoundError|Exception", caught):
                for child in node.body:
                    inside |= {id(n) for n in ast.walk(child)}
    return inside


def imports(nb):
    """(module, where) for every top-level module a notebook or its workers import."""
    workers = set()
    found = []
    for i, cell in enumerate(code_cells(nb)):
        text = source(cell)
        first, _, body = text.partition("\n")
        if first.startswith("%%writefile"):
            workers.add(re.sub(r"\.py$", "", first.split("/")[-1].strip()))
            text = body
        elif text.startswith("%"):
            continue
        tree = ast.parse(text)
        optional = guarded(tree)
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                found += [(a.name.split(".")[0], i) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.append((node.module.split(".")[0], i))
    return [(m, i) for m, i in found if m not in workers]


def test_every_import_is_on_colab(notebook):
    nb = load(notebook)
    available = colab_packages() | setup_cell_installs()
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module, cell in imports(nb):
        if module in sys.stdlib_module_names:
            continue
        dists = {normal(d) for d in distributions.get(module, [module])}
        if not dists & available:
            missing.append(f"{module} (code cell {cell})")
    assert not missing, (
        f"{notebook.name} imports what Colab lacks and the setup cell does not install:"
        f" {', '.join(missing)}; guard it (try/except ImportError) or install it there"
    )


def test_the_setup_cell_is_folded_in_colab(notebook):
    copy = colab_copy(load(notebook), notebook.name)
    setup = code_cells(copy)[0]
    assert setup["metadata"]["cellView"] == "form"
    assert setup["metadata"]["jupyter"]["source_hidden"] is True
    assert source(setup).startswith("# @title "), "Colab's form view shows this title"


def closure(names):
    """The installed distributions `names` need, themselves included (no extras)."""
    from packaging.requirements import Requirement

    todo, found = list(names), {}
    while todo:
        name = normal(todo.pop())
        if name in found:
            continue
        try:
            found[name] = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a dependency of another platform or Python
        for text in found[name].requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


@pytest.fixture(scope="session")
def lone_python(tmp_path_factory):
    """A virtual environment whose site-packages holds only the LONE_ENV packages and what
    they need: links to this environment's copies, so nothing is downloaded or unpacked."""
    env = tmp_path_factory.mktemp("lone") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next(env.glob("lib/python*/site-packages"))
    for dist in closure(LONE_ENV).values():
        tops = {pathlib.PurePath(f).parts[0] for f in dist.files or []}
        for top in tops - {"..", "__pycache__"}:
            source = pathlib.Path(dist.locate_file(top))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return env / "bin" / "python"


def test_a_colab_copy_runs_alone(lone_python, tmp_path):
    """The Colab copy of a notebook with workers, executed in a folder outside the
    repository by a kernel of the lone environment (nbclient drives it from here)."""
    import nbformat
    from nbclient import NotebookClient

    copy = colab_copy(load(ROOT / "sessions" / LONE_NOTEBOOK), LONE_NOTEBOOK)
    nb = nbformat.reads(json.dumps(copy), as_version=4)
    kernels = tmp_path / "kernels"
    spec = {
        "argv": [str(lone_python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    }
    (kernels / "kernels" / "lone").mkdir(parents=True)
    (kernels / "kernels" / "lone" / "kernel.json").write_text(
        json.dumps({**spec, "display_name": "lone", "language": "python"})
    )
    os.environ["JUPYTER_PATH"] = str(kernels)
    try:
        client = NotebookClient(
            nb,
            kernel_name="lone",
            timeout=300,
            resources={"metadata": {"path": tmp_path}},
        )
        client.execute()
    finally:
        del os.environ["JUPYTER_PATH"]
    printed = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "[rank1]" in printed, "the workers did not report"
    assert not reaches_into(printed, ROOT), "the lone copy reached into the repository"


def reaches_into(printed, root):
    """Whether `printed` names a path in `root` other than an installed package's file: the
    lone environment links to this environment's packages, which may live in the tree
    (.venv), and a warning prints its file (a CUDA torch with nvcc on the PATH warns "No
    CUDA runtime is found, using CUDA_HOME=..." from torch/utils/cpp_extension.py)."""
    paths = re.findall(re.escape(str(root)) + r"[^\s'\":]*", printed)
    return [p for p in paths if "site-packages" not in pathlib.PurePath(p).parts]


def test_reaches_into_ignores_installed_packages():
    root = pathlib.Path("/repo")
    warning = (
        "/repo/.venv/lib/python3.13/site-packages/torch/utils/cpp_extension.py:1:"
        " UserWarning: No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'"
    )
    assert not reaches_into(warning, root)
    assert reaches_into(warning + "\nsaved /repo/figures/08_megatron_tp/x.json", root)
