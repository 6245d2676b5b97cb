# @title Setup: device, tier and shared helpers (run first; the same in every notebook)
# It picks the device and its tier, and defines the helpers every notebook shares
# (tests/test_conventions.py keeps the copies equal).
import os, sys, re, json, signal, platform, pathlib, tempfile, datetime  # noqa: E401
import subprocess, importlib.util  # noqa: E401

# Colab ships torch and triton; install what else the book uses (ninja: for the CUDA
# extension that session 1 compiles with torch.utils.cpp_extension.load_inline).
if "google.colab" in sys.modules:
    wanted = [("matplotlib", "matplotlib"), ("pyyaml", "yaml"), ("ninja", "ninja")]
    for pkg, module in wanted:
        if importlib.util.find_spec(module) is None:
            pip = [sys.executable, "-m", "pip", "install", "-q", pkg]
            subprocess.run(pip, check=True)

import torch

ON_GPU = torch.cuda.is_available()
if not ON_GPU:  # before `import triton`: kernels then run in Triton's interpreter
    os.environ["TRITON_INTERPRET"] = "1"
import triton
import triton.language as tl  # noqa: F401 (not every notebook writes a kernel)

# The device's tier sets sizes, dtypes and autotune configurations, once per notebook:
#   "cpu"         Triton's interpreter, gloo, small sizes, fp16/fp32 (no bf16 tl.dot)
#   "pre-ampere"  sm_7x (Colab's T4, V100): fp16, 64 KiB shared memory, few autotune
#                 configurations (Triton lowers tl.dot to FP32 FMAs there: no tensor
#                 cores), medium sizes
#   "ampere"      sm_8x (A100, A10, L4, RTX 30xx/40xx): bf16, full sizes
#   "hopper"      sm_90 and newer (H100, H200, Blackwell): bf16, full sizes
if ON_GPU:
    CAPABILITY = torch.cuda.get_device_capability()
    TIER = {9: "hopper", 8: "ampere"}.get(min(CAPABILITY[0], 9), "pre-ampere")
    DEVICE_NAME = torch.cuda.get_device_name()
    _props = torch.cuda.get_device_properties()
    SMEM_BYTES = _props.shared_memory_per_block_optin  # what one Triton program may use
    _bf16 = torch.cuda.is_bf16_supported(including_emulation=False)  # native bf16 math
    HALF = torch.bfloat16 if _bf16 else torch.float16
else:
    CAPABILITY, TIER, SMEM_BYTES, HALF = None, "cpu", None, torch.float16
    DEVICE_NAME = f"CPU ({platform.machine()}, {os.cpu_count()} cores)"
DEVICE = torch.device("cuda" if ON_GPU else "cpu")
_here = pathlib.Path.cwd()
REPO = next((p for p in (_here, *_here.parents) if (p / "_toc.yml").exists()), None)
FIGURES = REPO / "figures" if REPO else None  # committed GPU results; None in a lone copy
SCRATCH = pathlib.Path(tempfile.mkdtemp(prefix="mlsys-book-"))  # workers' files go here
FLOOR = {"torch": (2, 11), "triton": (3, 6)}  # the oldest versions the book is tested on
for _mod in (torch, triton):
    _version = tuple(int(x) for x in re.findall(r"\d+", _mod.__version__)[:2])
    if _version < FLOOR[_mod.__name__]:
        print(f"Warning: {_mod.__name__} {_mod.__version__} is below the book's floor.")
if not ON_GPU and triton.__version__.startswith("3.6."):
    # Triton 3.6's interpreter reads a loop bound with int() of a one-element array, which
    # NumPy 2.4 refuses; Triton 3.7 squeezes the array first, and so does this patch.
    from triton.runtime import interpreter as _interpreter

    _patch_tensor = _interpreter._patch_lang_tensor

    def _patch_lang_tensor(tensor, scope):
        _patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda t: int(t.handle.data.squeeze()))

    _interpreter._patch_lang_tensor = _patch_lang_tensor
# Every random draw of the notebook and its workers derives from BOOK_SEED (default 0):
# `BOOK_SEED=3 make test` (make seed-test) checks that no claim rests on one seed.
BOOK_SEED = int(os.environ.get("BOOK_SEED", "0"))
os.environ["BOOK_SEED"] = str(BOOK_SEED)  # workers started by launch() read it too
torch.manual_seed(BOOK_SEED)  # the default generator: unseeded draws follow BOOK_SEED
print(f"torch {torch.__version__} | triton {triton.__version__} | {DEVICE_NAME} | {TIER}")
if not ON_GPU:
    print("No CUDA: Triton runs in its interpreter (TRITON_INTERPRET=1), collectives on")
    print("gloo, sizes are small, and every timing below is a CPU timing.")


def by_tier(cpu, gpu, pre_ampere=None):
    """This tier's value: `cpu`; on a GPU `gpu`, or `pre_ampere` (if given) on sm_7x."""
    if TIER == "cpu":
        return cpu
    return pre_ampere if TIER == "pre-ampere" and pre_ampere is not None else gpu


def param(name, value, auto, ok, expected):
    """Resolve a notebook parameter: "auto" becomes `auto`; a value failing `ok` is a
    ValueError that names the parameter."""
    value = auto if value == "auto" else value
    if not ok(value):
        raise ValueError(f"parameter {name}={value!r} is invalid: expected {expected}")
    return value


def book_seed(stream=0):
    """The seed of random stream `stream` (0-999) of this notebook, under BOOK_SEED."""
    if not 0 <= stream < 1000:
        raise ValueError(f"book_seed: stream={stream!r} is not in 0..999")
    return 1000 * BOOK_SEED + stream


def roundoff(dtype):
    """Unit roundoff u of a floating dtype (fp64 2^-53, fp32 2^-24, fp16 2^-11, bf16
    2^-8): |fl(x) - x| <= u|x| for a result rounded to nearest."""
    return torch.finfo(dtype).eps / 2


def gamma(n, dtype):
    """Higham's bound on a length-n sum or dot product computed in `dtype`, in any order:
    |error| <= gamma(n) * sum |terms|, gamma(n) = n u / (1 - n u) (Accuracy and Stability
    of Numerical Algorithms, 2nd ed., Lemma 3.1 and eq. 3.5)."""
    nu = max(n, 1) * roundoff(dtype)
    if nu >= 1:
        raise ValueError(f"gamma: n={n} is too long for {dtype} (n*u={nu:.2f} >= 1)")
    return nu / (1 - nu)


def assert_within(actual, expected, bound, what):
    """Assert |actual - expected| <= bound elementwise (bound: a number or a tensor that
    broadcasts), naming `what` and the worst element's error against its bound."""
    if actual.shape != expected.shape:
        raise AssertionError(
            f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
        )
    err = (actual.double() - expected.double()).abs()
    bound = torch.as_tensor(bound, dtype=torch.float64, device=err.device).expand_as(err)
    bad = ~(err <= bound)  # NaN in either fails
    if bad.any():
        excess = torch.where(bad, (err - bound).nan_to_num(torch.inf), -torch.inf)
        i = tuple(int(j) for j in torch.unravel_index(excess.argmax(), err.shape))
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.numel()} elements off; the worst, at {i}:"
            f" error {err[i]:.3g} > bound {bound[i]:.3g}"
        )


def provenance():
    """Where a measurement was taken; saved beside every number under figures/."""
    smi = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
    run = subprocess.run(smi, capture_output=True, text=True) if ON_GPU else None
    return {
        "device": DEVICE_NAME,
        "tier": TIER,
        "capability": CAPABILITY,
        "driver": run.stdout.strip() if run else None,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }


def save_results(name, results, params, fig=None):
    """On a GPU, in the repository: store results with their provenance as
    figures/NAME.json (and the figure as NAME.png). Elsewhere: do nothing."""
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
    """The GPU results committed as figures/NAME.json ({"provenance", "params",
    "results"}), or None when there are none."""
    path = FIGURES / f"{name}.json" if FIGURES else None
    if path is None or not path.exists():
        print(
            f"No GPU reference results are committed yet (figures/{name}.json);"
            " a GPU run of this notebook in the repository writes them."
        )
        return None
    record = json.loads(path.read_text())
    prov = record["provenance"]
    print(
        f"GPU reference results from figures/{name}.json, measured on {prov['device']}"
        f" ({prov['date'][:10]}, torch {prov['torch']}):"
    )
    return record


def launch(script, nproc, *args, timeout=120):
    """Run `script` on `nproc` processes (torchrun --standalone), print lines by rank.

    The script gets --backend=nccl when there are at least `nproc` GPUs (rank r then uses
    cuda:r), else --backend=gloo on CPU tensors. A failing rank raises RuntimeError with
    that rank's traceback; a run past `timeout` seconds is killed, every rank with it."""
    backend = "nccl" if torch.cuda.device_count() >= nproc else "gloo"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--tee=3"]
    cmd = [*torchrun, f"--nproc-per-node={nproc}", str(script), f"--backend={backend}"]
    cmd += map(str, args)
    # no colours (ipykernel 7 sets FORCE_COLOR): tracebacks come back as plain text
    env = {
        k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")
    }
    env.update(NO_COLOR="1", PYTHON_COLORS="0", BOOK_SEED=str(BOOK_SEED))
    pipes = dict(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    # start_new_session: the ranks form a process group of their own, killed on a timeout
    proc = subprocess.Popen(cmd, **pipes, start_new_session=True)
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.terminate()  # on SIGTERM torchrun stops its ranks (each in its own session)
        try:
            out = proc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate()[0]
        raise TimeoutError(
            f"{script} on {nproc} ranks ran past {timeout} s and was stopped:\n{out}"
        ) from None
    out = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out)  # any colour codes that got through
    by_rank = {}
    for rank, text in re.findall(r"^\[default(\d+)\]:(?:\[rank\d+\]: )?(.*)$", out, re.M):
        by_rank.setdefault(int(rank), []).append(text)
    if proc.returncode != 0:
        root = re.search(r"Root Cause.*?rank\s*:\s*(\d+)", out, re.S)
        rank = int(root[1]) if root else min(by_rank, default=0)
        raise RuntimeError(
            f"{script}: rank {rank} of {nproc} failed (exit code"
            f" {proc.returncode}):\n" + "\n".join(by_rank.get(rank, [out]))
        )
    print("\n".join(f"[rank{r}] {text}" for r in sorted(by_rank) for text in by_rank[r]))
