"""The Makefile: with BOOK_PYTHON it uses that interpreter as it is and creates no .venv."""

import os
import shutil
import subprocess
import sys
import venv

from conftest import ROOT


def make(*args, cwd=ROOT):
    # Not the variables of a make this test may run under (make test BOOK_PYTHON=...).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    }
    env.pop("BOOK_PYTHON", None)
    return subprocess.run(
        ["make", *args], cwd=cwd, capture_output=True, text=True, env=env
    )


def copy_of_the_build_files(tmp_path):
    for name in ("Makefile", "requirements.txt", "tools/check_env.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    return tmp_path


def test_book_python_runs_everything_with_that_interpreter(tmp_path):
    plan = make("-n", "test", "book", f"BOOK_PYTHON={sys.executable}").stdout
    assert "-m venv" not in plan and "pip install" not in plan, plan
    assert (
        f"{sys.executable} -m pytest" in plan
        and f"{sys.executable} tools/build_site.py" in plan
    )
    assert f"{sys.executable} tools/check_env.py" in plan, (
        "it checks the interpreter first"
    )


def test_without_book_python_the_venv_is_used():
    plan = make("-n", "test").stdout
    assert ".venv/bin/python -m pytest" in plan, plan


def test_check_env_passes_here_and_creates_no_venv(tmp_path):
    folder = copy_of_the_build_files(tmp_path)
    result = make("check-env", f"BOOK_PYTHON={sys.executable}", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (folder / ".venv").exists()


def test_check_env_names_what_a_bare_interpreter_lacks(tmp_path):
    folder = copy_of_the_build_files(tmp_path / "book")
    venv.create(tmp_path / "bare", with_pip=False)
    bare = tmp_path / "bare" / "bin" / "python"
    result = make("check-env", f"BOOK_PYTHON={bare}", cwd=folder)
    assert result.returncode != 0
    assert (
        "lacks: torch, triton" in result.stdout and "pip install torch" in result.stdout
    )
    assert not (folder / ".venv").exists()


def test_gpu_run_builds_no_venv():
    """A lent GPU machine has torch and Triton in its python3 and no network: make gpu-run
    uses that (or BOOK_PYTHON) and creates nothing."""
    plan = make("-n", "gpu-run", "NB=08").stdout
    assert "-m venv" not in plan and "pip install" not in plan, plan
    assert "python3 tools/gpu_run.py" in plan and plan.strip().endswith("08"), plan
    plan = make("-n", "gpu-run", f"BOOK_PYTHON={sys.executable}").stdout
    assert f"{sys.executable} tools/gpu_run.py" in plan and "-m venv" not in plan, plan


def test_compile_refresh_covers_three_tritons():
    plan = make("-n", "compile-refresh").stdout
    for python in (
        ".venv/bin/python",
        ".venv-floor/bin/python",
        ".venv-newest/bin/python",
    ):
        assert python in plan, plan
    assert "--refresh-allowlist" in plan and "--report figures/compile" in plan, plan
