# Setup: this cell is the same in every notebook of the book (tests/test_conventions.py keeps the copies equal).
import os, sys, re, json, signal, platform, pathlib, tempfile, subprocess, importlib.util, datetime

if "google.colab" in sys.modules:  # Colab ships torch and triton; add the few other packages the book uses
    for pkg, module in [("matplotlib", "matplotlib"), ("pyyaml", "yaml")]:
        if importlib.util.find_spec(module) is None:
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", pkg], check=True)

import torch
ON_GPU = torch.cuda.is_available()
if not ON_GPU:
    os.environ["TRITON_INTERPRET"] = "1"  # before `import triton`: kernels then run in Triton's CPU interpreter
import triton
import triton.language as tl

DEVICE = torch.device("cuda" if ON_GPU else "cpu")
DEVICE_NAME = torch.cuda.get_device_name() if ON_GPU else f"CPU ({platform.machine()}, {os.cpu_count()} cores)"
REPO = next((p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "_toc.yml").exists()), None)
FIGURES = REPO / "figures" if REPO else None  # committed GPU reference results; None in a lone copy (Colab)
SCRATCH = pathlib.Path(tempfile.mkdtemp(prefix="mlsys-book-"))  # where %%writefile puts multi-process workers
print(f"torch {torch.__version__} | triton {triton.__version__} | {DEVICE_NAME}")
if not ON_GPU:
    print("No CUDA: Triton runs in its interpreter (TRITON_INTERPRET=1), collectives on gloo, sizes are small,"
          " and every timing below is a CPU timing.")


def param(name, value, auto, ok, expected):
    """Resolve a notebook parameter: "auto" becomes `auto`; a value failing `ok` is a ValueError naming it."""
    value = auto if value == "auto" else value
    if not ok(value):
        raise ValueError(f"parameter {name}={value!r} is invalid: expected {expected}")
    return value


def provenance():
    """Where a measurement was taken; saved beside every number under figures/."""
    smi = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
    driver = subprocess.run(smi, capture_output=True, text=True).stdout.strip() if ON_GPU else None
    return {"device": DEVICE_NAME, "driver": driver, "cuda": torch.version.cuda, "torch": torch.__version__,
            "triton": triton.__version__, "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}


def save_results(name, results, params, fig=None):
    """On a GPU, in the repository: store results with their provenance as figures/NAME.json (+ NAME.png)."""
    if not (ON_GPU and FIGURES):
        return
    path = FIGURES / name
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"provenance": provenance(), "params": params, "results": results}
    path.with_suffix(".json").write_text(json.dumps(record, indent=1))
    if fig is not None:
        fig.savefig(path.with_suffix(".png"), dpi=120, bbox_inches="tight")
    print(f"saved figures/{name}.json" + (" and .png" if fig is not None else ""))


def committed_results(name):
    """The GPU results committed as figures/NAME.json ({"provenance", "params", "results"}), or None."""
    path = FIGURES / f"{name}.json" if FIGURES else None
    if path is None or not path.exists():
        print(f"No GPU reference results are committed yet (figures/{name}.json); a GPU run of this notebook"
              " in the repository writes them.")
        return None
    record = json.loads(path.read_text())
    print(f"GPU reference results from figures/{name}.json, measured on {record['provenance']['device']}"
          f" ({record['provenance']['date'][:10]}, torch {record['provenance']['torch']}):")
    return record


def launch(script, nproc, *args, timeout=120):
    """Run `script` on `nproc` processes (torchrun --standalone) and print each line prefixed by its rank.

    The script gets --backend=nccl when there are at least `nproc` GPUs, else --backend=gloo (CPU tensors).
    A failing rank raises RuntimeError carrying that rank's traceback; a run past `timeout` s is killed."""
    backend = "nccl" if torch.cuda.device_count() >= nproc else "gloo"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "--tee=3", str(script), f"--backend={backend}", *map(str, args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # its own process group, so a timeout kills every rank
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.terminate()  # torchrun stops its ranks (each in a session of its own) on SIGTERM
        try:
            out = proc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate()[0]
        raise TimeoutError(f"{script} on {nproc} ranks ran past {timeout} s and was stopped:\n{out}") from None
    by_rank = {}
    for rank, text in re.findall(r"^\[default(\d+)\]:(?:\[rank\d+\]: )?(.*)$", out, re.M):
        by_rank.setdefault(int(rank), []).append(text)
    if proc.returncode != 0:
        root = re.search(r"Root Cause.*?rank\s*:\s*(\d+)", out, re.S)
        rank = int(root[1]) if root else min(by_rank, default=0)
        raise RuntimeError(f"{script}: rank {rank} of {nproc} failed (exit code {proc.returncode}):\n"
                           + "\n".join(by_rank.get(rank, [out])))
    print("\n".join(f"[rank{rank}] {text}" for rank in sorted(by_rank) for text in by_rank[rank]))
