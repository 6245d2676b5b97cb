"""ruff lints and formats everything the book runs: notebooks, their %%writefile workers, and the
book's own Python files (configuration in ruff.toml; 90 characters a line fit the site)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import NOTEBOOKS, ROOT, code_cells, load, source

RUFF = pathlib.Path(sys.executable).parent / "ruff"


def ruff(*args, cwd=ROOT):
    cmd = [str(RUFF) if RUFF.exists() else "ruff", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)


def virtual_environments(root=ROOT):
    """Every virtual environment inside the tree (a folder holding pyvenv.cfg), whatever its
    name (.venv, .venv-floor, a reader's env/): ruff lints the book, not installed packages."""
    found = []
    for folder, subfolders, files in os.walk(root):
        if "pyvenv.cfg" in files:
            found.append(pathlib.Path(folder).relative_to(root))
            subfolders.clear()  # nothing inside an environment is the book's
        subfolders[:] = [d for d in subfolders if d not in (".git", "_build")]
    return sorted(found)


@pytest.mark.parametrize("command", [["check"], ["format", "--check", "--diff"]])
def test_ruff_on_the_repository(command):
    skip = [f"--extend-exclude={env}" for env in virtual_environments()]
    result = ruff(*command, *skip, ".")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_virtual_environments_are_found(tmp_path):
    for name in ("env", ".venv-floor", "deep/inside/venv"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "pyvenv.cfg").write_text("home = /usr/bin\n")
    found = {str(p) for p in virtual_environments(tmp_path)}
    assert found == {"env", ".venv-floor", "deep/inside/venv"}


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    """Each notebook's %%writefile cells as files (ruff skips cells that start with a magic)."""
    folder = tmp_path_factory.mktemp("workers")
    for notebook in NOTEBOOKS:
        for cell in code_cells(load(notebook)):
            head, _, body = source(cell).partition("\n")
            name = re.fullmatch(r"%%writefile\s+\{SCRATCH\}/(\S+\.py)", head.strip())
            if name:
                # a cell's source has no final newline; the file it writes does
                (folder / f"{notebook.stem}__{name[1]}").write_text(body + "\n")
    return folder


@pytest.mark.parametrize("command", [["check"], ["format", "--check", "--diff"]])
def test_ruff_on_the_workers(workers, command):
    config = ["--config", str(ROOT / "ruff.toml")]
    result = ruff(*command, *config, str(workers))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
