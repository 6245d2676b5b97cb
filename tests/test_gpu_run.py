"""The GPU runner (tools/gpu_run.py), rehearsed without a GPU: it runs notebooks with nothing but
torch, Triton, numpy and matplotlib (no Jupyter, no papermill, no IPython), writes a record per
notebook (pass, fail with its cell, timeout with its cell; tier, device and versions; headline
numbers), retries what failed, packs what it wrote into one archive, and plans its calls."""

import json
import os
import pathlib
import subprocess
import sys
import tarfile

import nbformat
import pytest

import gpu_run
from conftest import ROOT
from test_colab_env import closure

# What a lent GPU machine's python3 has: torch, Triton, numpy, matplotlib (and what they need).
BARE_ENV = ["torch", "triton", "numpy", "matplotlib"]
REHEARSED = [
    "08",
    "16",
]  # the CPU rehearsal's notebooks: multi-process workers, files written


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A virtual environment with only BARE_ENV and what they need: links to this
    environment's copies, so nothing is downloaded."""
    env = tmp_path_factory.mktemp("bare") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next(env.glob("lib/python*/site-packages"))
    for dist in closure(BARE_ENV).values():
        tops = {pathlib.PurePath(f).parts[0] for f in dist.files or []}
        for top in tops - {"..", "__pycache__"}:
            source = pathlib.Path(dist.locate_file(top))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return env / "bin" / "python"


def test_the_cpu_rehearsal_runs_in_a_bare_interpreter(bare_python, tmp_path):
    check = [str(bare_python), "-c", "import IPython"]
    assert subprocess.run(check, capture_output=True).returncode != 0, "IPython is there"
    out = tmp_path / "out"
    cmd = [str(bare_python), "tools/gpu_run.py", "--cpu", "--out", str(out), *REHEARSED]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = sorted((out / "figures" / "runs" / "cpu").glob("*.json"))
    assert [r.name[:2] for r in records] == REHEARSED, records
    for path in records:
        record = json.loads(path.read_text())
        assert record["status"] == "pass" and record["tier"] == "cpu", record
        assert record["device"].startswith("CPU") and record["torch"], record
        assert record["cells_run"] > 5 and "headline" in record, record
    with tarfile.open(out / "gpu-run-cpu.tar.gz") as tar:
        names = tar.getnames()
    assert {f"figures/runs/cpu/{r.name}" for r in records} <= set(names), names
    assert any(n.endswith("08_megatron_tp.log") for n in names), names
    assert not (ROOT / "figures" / "runs" / "cpu").exists(), "a rehearsal wrote figures/"


def code_notebook(path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


SETUP = """
import json
TIER, DEVICE_NAME = "cpu", "CPU (test)"
def provenance():
    return {"device": DEVICE_NAME, "tier": TIER, "driver": None, "torch": "t", "triton": "t"}
def save_results(name, results, params, fig=None):
    pass
"""


@pytest.fixture
def sessions(tmp_path, monkeypatch):
    """Three small notebooks (pass, fail, slow) in place of the book's sessions."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    code_notebook(
        folder / "01_pass.ipynb",
        SETUP,
        "%%writefile {FOLDER}/worker.py\nprint('hello')",
        "%%time\nimport pathlib\nFOLDER_TEXT = (pathlib.Path(FOLDER) / 'worker.py').read_text()",
        "from IPython.display import Markdown, display\ndisplay(Markdown('**table**'))",
        "save_results('01_pass/x', {'headline': {'speedup': 1.5}}, {})\n"
        "save_results('01_pass/y', {'rows': []}, {})",
        "%matplotlib inline\nFOLDER_TEXT",
    )
    code_notebook(folder / "02_fail.ipynb", SETUP, "x = 1", "raise ValueError('planted')")
    rank = (  # a process in a session of its own, as launch() starts torchrun
        "import subprocess, sys, time\n"
        "cmd = [sys.executable, '-c', 'import time; time.sleep(300)']\n"
        "rank = subprocess.Popen(cmd, start_new_session=True)\n"
        "open(FOLDER + '/rank.pid', 'w').write(str(rank.pid))\n"
        "time.sleep(120)"
    )
    code_notebook(folder / "03_slow.ipynb", SETUP, rank)
    for path in folder.glob("*.ipynb"):  # FOLDER: where %%writefile writes
        nb = nbformat.read(path, as_version=4)
        nb.cells[0].source = f"FOLDER = {str(tmp_path)!r}\n" + nb.cells[0].source
        nbformat.write(nb, path)
    monkeypatch.setattr(gpu_run, "SESSIONS", folder)
    monkeypatch.setattr(gpu_run, "ESTIMATES", tmp_path / "none.json")
    return tmp_path


def test_records_retries_timeouts_and_the_archive(sessions, capsys):
    out = sessions / "out"
    args = ["--cpu", "--out", str(out), "--timeout-min", "0.1"]
    assert gpu_run.main(args) == 1
    runs = out / "figures" / "runs" / "cpu"
    records = {p.stem: json.loads(p.read_text()) for p in runs.glob("*.json")}
    assert {k: r["status"] for k, r in records.items()} == {
        "01_pass": "pass",
        "02_fail": "fail",
        "03_slow": "timeout",
    }, records
    assert records["01_pass"]["headline"] == {"01_pass/x": {"speedup": 1.5}}
    assert records["01_pass"]["headline_missing"] == ["01_pass/y"]
    assert records["01_pass"]["tier"] == "cpu" and records["01_pass"]["cells_run"] == 6
    assert (
        "planted" in records["02_fail"]["error"]
        and records["02_fail"]["failed_cell"] == 2
    )
    assert (
        records["03_slow"]["failed_cell"] == 1
        and "stopped after" in records["03_slow"]["error"]
    )
    assert (sessions / "worker.py").read_text() == "print('hello')"
    rank = int((sessions / "rank.pid").read_text())  # stopped with the notebook
    assert (
        not pathlib.Path(f"/proc/{rank}").exists()
        or "Z"
        in pathlib.Path(f"/proc/{rank}/stat").read_text().rsplit(")", 1)[1].split()[0]
    ), "a rank outlived its notebook's timeout"
    log = (out / "_build" / "gpu-run" / "01_pass.log").read_text()
    assert "**table**" in log and "print('hello')" in log, log
    with tarfile.open(out / "gpu-run-cpu.tar.gz") as tar:
        names = set(tar.getnames())
    assert {f"figures/runs/cpu/{k}.json" for k in records} <= names, names
    printed = capsys.readouterr().out
    assert "speedup: 1.5" in printed and "timeout" in printed, printed

    # the next call: the failed notebook runs again; the passed one and the one that ran
    # into its own timeout do not
    gpu_run.main(args)
    again = {p.stem: json.loads(p.read_text()) for p in runs.glob("*.json")}
    assert again["01_pass"]["date"] == records["01_pass"]["date"]
    assert again["03_slow"]["date"] == records["03_slow"]["date"]
    assert again["02_fail"]["date"] != records["02_fail"]["date"]


def test_a_timeout_cut_by_the_budget_runs_again():
    record = {"status": "timeout", "limit_min": 2.0}
    assert gpu_run.to_run(record, timeout_min=9.5, force=False), "cut short: retried"
    assert not gpu_run.to_run({**record, "limit_min": 9.5}, timeout_min=9.5, force=False)
    assert gpu_run.to_run({**record, "limit_min": 9.5}, timeout_min=9.5, force=True)
    assert gpu_run.to_run({"status": "fail"}, 9.5, False)
    assert not gpu_run.to_run({"status": "pass"}, 9.5, False)


def test_cells_the_runner_refuses_and_accepts():
    assert gpu_run.cell_program("%%writefile -a {SCRATCH}/w.py\nx = 1")[:2] == (
        "writefile",
        "-a {SCRATCH}/w.py",
    )
    assert gpu_run.cell_program("%%time\nx = 1") == ("python", "", "x = 1")
    kind, why, _ = gpu_run.cell_program("%%bash\nls")
    assert kind == "refused" and "%%bash" in why
    kind, why, _ = gpu_run.cell_program("x = 1\n!ls")
    assert kind == "refused" and "!ls" in why
    assert gpu_run.cell_program("%matplotlib inline\nx = 1")[0] == "python"


def test_the_plan_packs_calls_within_the_budget():
    minutes = {"01": 4.0, "02": 8.0, "03": 3.0, "04": 12.0, "05": 1.0}
    calls = gpu_run.plan(list(minutes), minutes.get, 9.5)
    assert calls[0][0] == ["01", "03", "05"] and calls[1][0] == ["02"], calls
    assert calls[2][0] == ["04"], "longer than a call: alone (and stopped at its timeout)"
    assert all(used <= 9.5 or len(call) == 1 for call, used in calls)


def test_the_status_page_shows_headlines(tmp_path, monkeypatch):
    """Build status (tools/book_site.py): committed results and GPU runs with their headline
    numbers."""
    import book_site

    figure = tmp_path / "figures" / "02_flash_attention" / "benchmark.json"
    figure.parent.mkdir(parents=True)
    prov = {
        "device": "NVIDIA H100",
        "tier": "hopper",
        "torch": "2.13.0",
        "triton": "3.7.1",
    }
    results = {"rows": [], "headline": {"fwd_over_flash": 1.123, "bwd_over_flash": 0.9}}
    figure.write_text(json.dumps({"provenance": prov, "results": results}))
    run = tmp_path / "figures" / "runs" / "nvidia-h100" / "02_flash_attention.json"
    run.parent.mkdir(parents=True)
    record = {"notebook": "02_flash_attention", "status": "timeout", "minutes": 9.5}
    record["headline"] = {"02_flash_attention/benchmark": results["headline"]}
    run.write_text(json.dumps({**record, "tier": "hopper", "driver": "580.1"}))
    monkeypatch.setattr(book_site, "ROOT", tmp_path)
    (row,) = book_site.result_rows()
    assert row[-1] == "fwd_over_flash: 1.12; bwd_over_flash: 0.9", row
    (row,) = book_site.gpu_rows()
    assert row[2] == "hopper" and "driver 580.1" in row[3] and row[6] == "timeout", row
    assert row[-1] == "fwd_over_flash: 1.12; bwd_over_flash: 0.9", row


def test_every_notebook_has_an_estimate():
    """figures/runs/estimates.json (tools/gpu_estimate.py): minutes on an H100 per notebook,
    which the plan packs into calls; rerun the estimator after changing a notebook's sizes."""
    estimates = json.loads(gpu_run.ESTIMATES.read_text())
    stems = {p.stem for p in (ROOT / "sessions").glob("[0-9][0-9]_*.ipynb")}
    assert set(estimates["notebooks"]) == stems, "python tools/gpu_estimate.py"
    assert all(e["minutes"] > 0 and e["basis"] for e in estimates["notebooks"].values())
    assert "do_bench" in estimates["model"], "the file states its model"
