"""Run the book's notebooks on this machine's GPU, at its tier's sizes, in resumable batches.

    python tools/gpu_run.py [01 02 ...] [--budget-min 9] [--timeout-min M] [--force]
                            [--out DIR] [--plan] [--cpu]

It needs nothing but torch, Triton, numpy and matplotlib (a GPU image's python3 has them; no
Jupyter, papermill or network). Each notebook runs in a child process of its own, which executes
its code cells in order in one namespace as a kernel would: `%%writefile` cells write their file,
`%%time` and `%%capture` cells run their body, `%matplotlib` lines are dropped, and any other
magic or shell line stops the notebook with a message naming it; IPython's `display` is stood in
for where IPython is missing, and figures draw off-screen. Its "auto" parameters take this GPU's
tier sizes, and it runs in the repository, so its benchmarks write their results with provenance
under figures/NN_name/ (save_results).

Each run leaves a record in figures/runs/<device>/NN_name.json: pass, fail (the failing cell and
the error's last lines) or timeout (the cell it was in); minutes; the tier, device, driver and
versions (the notebook's own provenance()); the figures it wrote; and the "headline" numbers of
every save_results call. A notebook with a passing record for this device is skipped, so the
next call resumes where the last one stopped; a failed one runs again; one that timed out runs
again only if it was cut short by the call's budget rather than by its own --timeout-min
(--force runs everything again). A notebook starts only if its estimated time (--plan) fits what
is left of --budget-min (the first of a call always starts), and is stopped at its timeout or at
the end of the budget, so a call fits a machine's per-command limit. Each notebook's output goes
to _build/gpu-run/NN_name.log. With --out DIR, everything the call wrote (records, figures,
logs, the summary) is also packed into DIR/gpu-run-<device>.tar.gz, whose paths are relative to
the repository (unpack it there), with DIR/summary.txt beside it.

--plan prints each notebook's estimated minutes on an H100 and the calls the remaining ones
would take, and runs nothing. --cpu (with --out DIR) is the rehearsal: the same runner on the
CPU path (CUDA hidden), records and logs under DIR, which `make test` runs in a lone interpreter.
The summary table is printed last."""

import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tarfile
import time
import traceback
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "sessions"
FIGURES = ROOT / "figures"
ESTIMATES = ROOT / "figures" / "runs" / "estimates.json"
# Cell magics the runner understands; the others stop the notebook with a message.
RUN_BODY = {"time", "capture"}


def cell_program(text):
    """How the runner (and the compile check) executes a code cell: (kind, argument, code).

    kind "python": `code` is the cell as Python (`%%time`/`%%capture` cells: their body;
    `%matplotlib` lines removed); "writefile": `argument` is the magic's line after
    `%%writefile` (the path, maybe `-a` first, with `{expressions}` to expand) and `code` the
    file's text; "refused": `argument` says why this cell cannot run without IPython."""
    first, _, body = text.partition("\n")
    if first.startswith("%%"):
        name, _, argument = first[2:].partition(" ")
        if name == "writefile":
            return "writefile", argument.strip(), body
        if name not in RUN_BODY or (name == "capture" and argument.strip()):
            return "refused", f"the cell magic %%{first[2:]} needs IPython", ""
        text = body
    lines = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("%matplotlib"):
            line = line.replace(stripped, "pass  # " + stripped)
        elif stripped.startswith(("%", "!")) and not stripped.startswith("%="):
            return (
                "refused",
                f"the line {stripped!r} needs IPython (a magic or shell)",
                "",
            )
        lines.append(line)
    return "python", "", "\n".join(lines)


def expand(argument, namespace):
    """IPython's expansion of a magic's line: {expression} and $name from the namespace."""
    argument = re.sub(r"\{([^{}]+)\}", lambda m: str(eval(m[1], namespace)), argument)
    return re.sub(r"\$(\w+)", lambda m: str(namespace.get(m[1], m[0])), argument)


def show(*objects, **kwargs):
    """IPython's display outside a kernel: the text of Markdown, HTML... objects, else repr."""
    for obj in objects:
        data = getattr(obj, "data", None)
        print(data if isinstance(data, str) else repr(obj))


def ipython_stand_in():
    """IPython.display's `display` prints text (outside a kernel IPython's would print
    "<Markdown object>"); where IPython is missing, IPython.display is stood in for, with
    display, Markdown, HTML, Latex, Math, Pretty and Code, so cells that show tables as
    Markdown still run."""
    if importlib.util.find_spec("IPython") is not None:
        import IPython.display

        IPython.display.display = show
        return
    package, display_module = (
        types.ModuleType(n) for n in ("IPython", "IPython.display")
    )

    class Text:
        def __init__(self, data=None, **kwargs):
            self.data = data

    for name in ("Markdown", "HTML", "Latex", "Math", "Pretty", "Code"):
        setattr(display_module, name, type(name, (Text,), {}))
    display_module.display = show
    package.display, package.get_ipython = display_module, lambda: None
    # no shell to hook into: matplotlib reads the version before it would ask for one
    package.version_info, package.__version__ = (9, 0, 0, ""), "9.0.0 (gpu_run stand-in)"
    sys.modules.update({"IPython": package, "IPython.display": display_module})


def headline_of(results):
    """A save_results call's headline ({name: number}), or None when it has none."""
    headline = results.get("headline") if isinstance(results, dict) else None
    if not isinstance(headline, dict):
        return None
    return {str(k): v for k, v in headline.items() if isinstance(v, (int, float))}


def execute(notebook, result_path):
    """The child: run the notebook's code cells in this process, writing its progress and
    result to `result_path` after every cell (so a timeout still says where it was)."""
    import linecache
    import warnings

    os.environ.setdefault("MPLBACKEND", "Agg")
    warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")
    ipython_stand_in()
    notebook = pathlib.Path(notebook).resolve()
    os.chdir(notebook.parent)
    nb = json.loads(notebook.read_text())
    main = types.ModuleType("__main__")  # as in a kernel: pickling finds cell definitions
    sys.modules["__main__"] = main
    namespace = main.__dict__
    state = {"status": "running", "cells": 0, "cell": None, "saved": []}

    def save(**changes):
        state.update(changes)
        result_path.write_text(json.dumps(state, indent=1, default=str))

    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for index, cell in enumerate(code):
        text = (
            cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        )
        save(cell=index, cell_started=time.time())
        print(f"\n== cell {index}", flush=True)
        try:
            run_cell(text, index, notebook.stem, namespace, linecache)
        except BaseException:  # noqa: BLE001 (the record says what stopped it)
            lines = traceback.format_exc().strip().splitlines()
            print("\n".join(lines), flush=True)
            save(status="fail", error="\n".join(lines[-8:]), failed_cell=index)
            return 1
        if index == 0 and "save_results" in namespace:
            namespace["save_results"] = keeping_headlines(
                namespace["save_results"], state
            )
            if "provenance" in namespace:
                save(provenance=namespace["provenance"]())
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
        save(cells=index + 1)
    save(status="pass", cell=None)
    return 0


def keeping_headlines(save_results, state):
    def wrapped(name, results, params, fig=None):
        state["saved"].append({"name": name, "headline": headline_of(results)})
        return save_results(name, results, params, fig)

    wrapped.__doc__ = save_results.__doc__
    return wrapped


def run_cell(text, index, stem, namespace, linecache):
    import ast

    kind, argument, code = cell_program(text)
    if kind == "refused":
        raise RuntimeError(f"code cell {index}: {argument} (tools/gpu_run.py)")
    if kind == "writefile":
        words = expand(argument, namespace).split()
        append = words[0] in ("-a", "--append")
        path = pathlib.Path(words[-1])
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a" if append else "w") as f:
            f.write(code)
        print(f"{'Appending to' if append else 'Writing'} {path}")
        return
    filename = f"<{stem} cell {index}>"  # inspect (and Triton) read the source from here
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)
    if last is not None:  # a kernel shows the value of a cell's last expression
        value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
        if value is not None:
            print(repr(value))


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def device(cpu):
    import torch

    if cpu:
        return "cpu"
    if not torch.cuda.is_available():
        sys.exit(
            "no CUDA device: this command is for a GPU (--cpu --out DIR rehearses it on"
            " the CPU path; make test runs the CPU path)"
        )
    return torch.cuda.get_device_name()


def planned_device():
    """The device a plan is for: this GPU, or (without one) an H100, which the estimates
    are for."""
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "H100"


def figures_since(start):
    """The notebooks' figures/NN_name/* written since `start`."""
    return sorted(p for p in FIGURES.glob("[0-9]*/*") if p.stat().st_mtime >= start)


def estimates():
    """Estimated minutes of each notebook on an H100 (figures/runs/estimates.json)."""
    if not ESTIMATES.exists():
        return {}
    return {
        k: v["minutes"] for k, v in json.loads(ESTIMATES.read_text())["notebooks"].items()
    }


def run_one(notebook, records, logs, limit_min, cpu, estimate):
    """Run one notebook in a child process, stopped after `limit_min`; its record."""
    import torch
    import triton

    logs.mkdir(parents=True, exist_ok=True)
    log, result_path = logs / f"{notebook.stem}.log", logs / f"{notebook.stem}.state.json"
    result_path.unlink(missing_ok=True)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    cmd = [
        sys.executable,
        __file__,
        "--child",
        str(notebook),
        "--result",
        str(result_path),
    ]
    start = time.time()
    with open(log, "w") as out:
        child = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            child.wait(timeout=limit_min * 60)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            stop(child)
    state = json.loads(result_path.read_text()) if result_path.exists() else {}
    prov = state.get("provenance") or {}
    status = "timeout" if timed_out else state.get("status", "fail")
    if status == "running":  # the child died without a word (killed, out of memory)
        status = "fail"
    error = state.get("error")
    if timed_out:
        error = f"stopped after {limit_min:.1f} min in code cell {state.get('cell')}"
    elif status == "fail" and not error:
        error = f"the runner's child exited with {child.returncode}; see the log"
    saved = state.get("saved", [])
    written = figures_since(start) if not cpu else []
    record = {
        "notebook": notebook.stem,
        "status": status,
        "passed": status == "pass",
        "error": error,
        "failed_cell": state.get("failed_cell", state.get("cell") if timed_out else None),
        "minutes": round((time.time() - start) / 60, 2),
        "limit_min": round(limit_min, 2),
        "estimate_min": estimate,
        "cells_run": state.get("cells", 0),
        "tier": prov.get("tier"),
        "device": prov.get("device"),
        "capability": prov.get("capability"),
        "driver": prov.get("driver"),
        "cuda": prov.get("cuda", torch.version.cuda),
        "torch": prov.get("torch", torch.__version__),
        "triton": prov.get("triton", triton.__version__),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "figures": [str(p.relative_to(ROOT)) for p in written],
        "headline": {s["name"]: s["headline"] for s in saved if s["headline"]},
        "headline_missing": [s["name"] for s in saved if not s["headline"]],
        "log": log.name,
    }
    records.mkdir(parents=True, exist_ok=True)
    (records / f"{notebook.stem}.json").write_text(json.dumps(record, indent=1) + "\n")
    result_path.unlink(missing_ok=True)
    return record, written + [log]


def descendants(pid):
    """Every process below `pid` (Linux /proc): the notebook's, and the ranks of a launch(),
    which runs torchrun in a session of its own."""
    parents = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for kid in parents.get(todo.pop(), []):
            found.append(kid)
            todo.append(kid)
    return found


def stop(child):
    """Stop a notebook's child process and everything it started: SIGTERM, then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in [child.pid, *descendants(child.pid)]:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            child.wait(timeout=10)
            if not descendants(child.pid):
                return
        except subprocess.TimeoutExpired:
            continue


def summary(records):
    lines = [f"{'notebook':34} {'min':>6} {'est':>5}  result   tier        headline"]
    for r in records:
        ratios = "; ".join(
            f"{k}: {v:.3g}"
            for figure in r.get("headline", {}).values()
            for k, v in figure.items()
        )
        if r.get("headline_missing"):
            ratios += f" (no headline: {', '.join(r['headline_missing'])})"
        est = r.get("estimate_min")
        est = f"{est:5.1f}" if isinstance(est, (int, float)) else "    –"
        lines.append(
            f"{r['notebook']:34} {r['minutes']:6.2f} {est}  {r['status']:8} "
            f"{r.get('tier') or '–':11} {ratios}"
        )
        if r["status"] != "pass" and r.get("error"):
            lines.append("    " + r["error"].strip().splitlines()[-1][:150])
    return "\n".join(lines)


def to_run(record, timeout_min, force):
    """Whether a notebook with this record (or None) runs in this call."""
    if record is None or force:
        return True
    if record.get("status", "pass" if record.get("passed") else "fail") == "pass":
        return False
    if record.get("status") == "timeout":  # cut by the budget, not by its own limit
        return record.get("limit_min", 0) < timeout_min - 0.01
    return True


def plan(pending, guess, budget_min):
    """The calls that run `pending` (notebook stems): each call takes, in order, the
    notebooks whose estimates fit what is left of its budget (its first always starts)."""
    calls, left = [], list(pending)
    while left:
        call, used = [], 0.0
        for stem in list(left):
            minutes = guess(stem)
            if not call or used + minutes <= budget_min:
                call.append(stem)
                used += minutes
                left.remove(stem)
        calls.append((call, used))
    return calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("numbers", nargs="*", help="session numbers (default: all)")
    parser.add_argument("--budget-min", type=float, default=9.0)
    parser.add_argument(
        "--timeout-min", type=float, help="per notebook (default: budget)"
    )
    parser.add_argument("--force", action="store_true")
    parser.add_argument(
        "--out", help="also write DIR/gpu-run-<device>.tar.gz and summary"
    )
    parser.add_argument("--plan", action="store_true", help="print the plan; run nothing")
    parser.add_argument(
        "--cpu", action="store_true", help="rehearse on the CPU (needs --out)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return execute(args.child, pathlib.Path(args.result))
    if args.cpu and not args.out:
        parser.error("--cpu writes its records under --out DIR, never into figures/")
    timeout_min = args.timeout_min or args.budget_min
    notebooks = sorted(SESSIONS.glob("[0-9][0-9]_*.ipynb"))
    if args.numbers:
        wanted = {f"{int(n):02d}" for n in args.numbers}
        notebooks = [n for n in notebooks if n.name[:2] in wanted]
    name = planned_device() if args.plan else device(args.cpu)
    base = pathlib.Path(args.out).resolve() if args.cpu else ROOT
    records_dir = base / "figures" / "runs" / slug(name)
    logs = base / "_build" / "gpu-run"
    existing = {
        n.stem: json.loads(p.read_text())
        for n in notebooks
        if (p := records_dir / f"{n.stem}.json").exists()
    }
    guesses = estimates()

    def guess(stem):
        """Minutes a notebook takes here: measured by an earlier run when one finished,
        at least its last limit when it ran out of time, else the estimate (3 min without)."""
        record, estimate = existing.get(stem), guesses.get(stem, 3.0)
        if record is None:
            return estimate
        if record.get("status") == "timeout":
            return max(estimate, record.get("limit_min", 0))
        return record.get("minutes", estimate)

    pending = [
        n.stem for n in notebooks if to_run(existing.get(n.stem), timeout_min, args.force)
    ]
    if args.plan:
        print(f"plan for {name} (records in {records_dir.relative_to(base)})")
        print(f"{'notebook':34} {'minutes':>8}  status   basis of the estimate")
        for n in notebooks:
            status = existing.get(n.stem, {}).get("status", "to run")
            basis = describe_estimate(n.stem)
            print(f"{n.stem:34} {guess(n.stem):8.1f}  {status:8} {basis}")
        total = sum(guess(n.stem) for n in notebooks)
        print(f"{'whole book':34} {total:8.1f}")
        for i, (call, used) in enumerate(plan(pending, guess, args.budget_min), 1):
            print(
                f"call {i} ({used:.1f} of {args.budget_min} min): {' '.join(s[:2] for s in call)}"
            )
        return 0
    start, done, written = time.time(), [], []
    deadline = start + args.budget_min * 60
    for notebook in notebooks:
        if notebook.stem not in pending:
            if notebook.stem in existing:
                done.append(existing[notebook.stem])
            continue
        left = (deadline - time.time()) / 60
        started = any(r.get("_ran") for r in done)
        if started and (guess(notebook.stem) > left or left < 0.5):
            print(f"{notebook.stem}: estimated {guess(notebook.stem):.1f} min, {left:.1f} left:"
                  " waits for the next call")  # fmt: skip
            continue
        print(
            f"running {notebook.stem} (at most {min(timeout_min, left):.1f} min) ...",
            flush=True,
        )
        record, files = run_one(
            notebook,
            records_dir,
            logs,
            min(timeout_min, left),
            args.cpu,
            guesses.get(notebook.stem),
        )
        done.append({**record, "_ran": True})
        written += files + [records_dir / f"{notebook.stem}.json"]
    text = summary(done)
    print(text)
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.txt").write_text(text + "\n")
        archive = out / f"gpu-run-{slug(name)}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            for path in sorted(set(written)):
                if path.exists():
                    tar.add(path, arcname=str(path.relative_to(base)))
            tar.add(out / "summary.txt", arcname="_build/gpu-run/summary.txt")
        print(f"wrote {archive} ({len(set(written))} files; unpack it in the repository)")
    return 0 if all(r["status"] == "pass" for r in done) else 1


def describe_estimate(stem):
    if not ESTIMATES.exists():
        return "no estimate: 3 min assumed"
    entry = json.loads(ESTIMATES.read_text())["notebooks"].get(stem)
    return entry["basis"] if entry else "no estimate: 3 min assumed"


if __name__ == "__main__":
    sys.exit(main())
