"""Run the book's notebooks on this machine's GPU, at its tier's sizes, in resumable batches.

    python tools/gpu_run.py [01 02 ...] [--budget-min 9] [--force]

Each notebook runs top to bottom with papermill (its "auto" parameters take this GPU's tier
sizes) in the repository, so its benchmarks write their results with provenance under
figures/NN_name/. Each run leaves a record in figures/runs/<device>/NN_name.json (minutes,
pass or fail with the error's last lines, the figures it wrote and their "headline" numbers),
and a notebook that has a record for this device is skipped, so the next call resumes where
the last one stopped (--force runs it again). No notebook starts once --budget-min minutes have
passed: a call fits a machine's per-command limit. The summary table is printed last."""

import argparse
import datetime
import json
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "sessions"
FIGURES = ROOT / "figures"


def device():
    import torch

    if not torch.cuda.is_available():
        sys.exit(
            "no CUDA device: this command is for a GPU (make test runs the CPU path)"
        )
    return torch.cuda.get_device_name()


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def figures_since(start):
    """The notebooks' figures/NN_name/*.json written since `start`."""
    return sorted(p for p in FIGURES.glob("[0-9]*/*.json") if p.stat().st_mtime >= start)


def headline(path):
    results = json.loads(path.read_text()).get("results", {})
    return results.get("headline", {}) if isinstance(results, dict) else {}


def run_one(notebook, record_path):
    import papermill
    import torch
    import triton

    out = ROOT / "_build" / "gpu-run" / notebook.name
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    error = None
    try:
        papermill.execute_notebook(
            str(notebook),
            str(out),
            cwd=str(SESSIONS),
            kernel_name="python3",
            progress_bar=False,
        )
    except Exception as exc:  # PapermillExecutionError, with the failing cell's error
        error = "\n".join(str(exc).strip().splitlines()[-6:])
    written = figures_since(start)
    record = {
        "notebook": notebook.stem,
        "device": device(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "minutes": round((time.time() - start) / 60, 2),
        "passed": error is None,
        "error": error,
        "figures": [str(p.relative_to(ROOT)) for p in written],
        "headline": {p.stem: h for p in written if (h := headline(p))},
    }
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def summary(records):
    lines = [f"{'notebook':34} {'min':>6}  result  headline"]
    for r in records:
        ratios = "; ".join(
            f"{k}: {v}" for figure in r["headline"].values() for k, v in figure.items()
        )
        result = "pass" if r["passed"] else "FAIL"
        lines.append(f"{r['notebook']:34} {r['minutes']:6.2f}  {result:6}  {ratios}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("numbers", nargs="*", help="session numbers (default: all)")
    parser.add_argument("--budget-min", type=float, default=9.0)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    runs = FIGURES / "runs" / slug(device())
    notebooks = sorted(SESSIONS.glob("[0-9][0-9]_*.ipynb"))
    if args.numbers:
        wanted = {f"{int(n):02d}" for n in args.numbers}
        notebooks = [n for n in notebooks if n.name[:2] in wanted]
    start, done = time.time(), []
    for notebook in notebooks:
        record_path = runs / f"{notebook.stem}.json"
        if record_path.exists() and not args.force:
            done.append(json.loads(record_path.read_text()))
            continue
        if time.time() - start > args.budget_min * 60:
            print(f"budget spent: {notebook.stem} and later wait for the next call")
            break
        print(f"running {notebook.stem} ...", flush=True)
        done.append(run_one(notebook, record_path))
    print(summary(done))
    return 0 if all(r["passed"] for r in done) else 1


if __name__ == "__main__":
    sys.exit(main())
