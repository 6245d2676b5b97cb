"""Estimate each notebook's minutes on an H100 from its GPU-tier sizes; write
figures/runs/estimates.json, which tools/gpu_run.py plans its calls with (--plan).

    python tools/gpu_estimate.py            # writes the file and prints the table

No GPU has run the book yet, so this is a model, stated here and in the file, to be replaced by
measured minutes (gpu_run.py's records) as soon as a GPU run has them. For each notebook its
parameters are resolved at the hopper tier (its setup, parameters and resolution cells run as
the compile check runs them), and its time is the sum of:

- start: 0.4 min (interpreter, torch and Triton imports, the CUDA context, plotting), and the
  checks at test sizes, 0.3 min unless the notebook's model says otherwise;
- compilation: 2 s per Triton compilation (the sm_90 compilations of its compile report,
  figures/compile/NN_name.json, every kept autotune configuration included), 40 s per
  torch.compile'd function;
- autotuning: Triton's autotuner times every kept configuration with do_bench for each new key
  (25 ms warm-up, 100 ms of repetitions): 0.15 s per configuration and key;
- timings: each do_bench call costs 5 t (its estimate) + max(25 ms, t) + max(100 ms, t) for
  a call of t seconds (max(rep, t) for a notebook's own `rep`), t = max(FLOPs / rate, bytes /
  bandwidth) at an H100's achievable rates: 600 TFLOP/s bf16/fp16 dense, 1000 fp8, 300 tf32,
  50 fp32 on CUDA cores, 2.8 TB/s of HBM;
- multi-process demos: 15 s per launch() of 4 ranks (4 interpreters importing torch, gloo's
  set-up; with one GPU they run on gloo at the small sizes), more where a worker times things;
- loops: training steps of the small models at 6 ms a step (launch-bound: a few dozen kernels
  and an optimizer step), simulations at the minutes stated per notebook.

Each notebook's function below names its terms; the file keeps them, and --plan prints the
total with the largest terms."""

import contextlib
import io
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "figures" / "runs" / "estimates.json"
H100 = dict(bf16=600e12, fp8=1000e12, tf32=300e12, fp32=50e12, hbm=2.8e12)
START_MIN, CHECKS_MIN = 0.4, 0.3
COMPILE_S, TORCH_COMPILE_S, AUTOTUNE_S, LAUNCH_S, STEP_S = 2.0, 40.0, 0.15, 15.0, 0.006


def t_call(flops=0.0, nbytes=0.0, rate="bf16"):
    """Seconds of one call at an H100's achievable rates."""
    return max(flops / H100[rate], nbytes / H100["hbm"], 5e-6)


def do_bench_s(t, rep=0.1, warmup=0.025):
    """Seconds one triton.testing.do_bench call takes for a function of t seconds."""
    return 5 * t + max(warmup, t) + max(rep, t) + 0.01


def resolved(notebook):
    """The notebook's namespace after its setup, parameters and resolution cells, at the
    hopper tier (as the compile check runs them)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import torch
    from compile_check import TIERS, cells

    from gpu_run import cell_program

    spec = TIERS["sm_90"]
    namespace = {"__name__": "__main__"}
    nb = json.loads(pathlib.Path(notebook).read_text())
    for index, text, tags in cells(nb):
        if "kernel" in tags:
            continue
        kind, _, code = cell_program(text)
        if kind != "python":
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"<{index}>", "exec"), namespace)
        if index == 0:
            namespace.update(
                ON_GPU=True,
                TIER=spec["tier"],
                CAPABILITY=spec["capability"],
                SMEM_BYTES=spec["smem"],
                HALF=getattr(torch, spec["half"]),
            )
    return namespace


def compilations(stem):
    path = ROOT / "figures" / "compile" / f"{stem}.json"
    if not path.exists():
        return 0
    return sum(r["arch"] == "sm_90" for r in json.loads(path.read_text())["results"])


# ---- the notebooks' models: (label, seconds) terms beyond start, checks and compilation


def m01(p):
    # strides, roofline ops, copy sweep, cuBLAS wave sweep, launch-size sweep, copies:
    # about 90 do_bench calls of sub-millisecond work; torch.compile once; the all-reduce
    # worker (4 ranks, gloo) and, where ncu exists, the DRAM-bytes worker
    matmul = t_call(2 * p["MATMUL_N"] ** 3)
    return [
        ("~90 timings, mostly < 1 ms", 90 * do_bench_s(1e-3)),
        ("matmul and copies at full size", 6 * do_bench_s(matmul)),
        ("torch.compile", TORCH_COMPILE_S),
        ("launches: all-reduce (4 ranks), ncu", 2 * LAUNCH_S + 20),
        ("tiny-op chains, CUDA graphs, syncs", 20),
    ]


def m02(p):
    B, H = p["BENCH_BATCH"], p["BENCH_HEADS"]
    impls = {"ours": 350e12, "ours atomic dQ": 300e12, "FLASH": 450e12}
    impls |= {"EFFICIENT": 250e12, "CUDNN": 500e12, "MATH": None}
    total, autotune = 0.0, 0
    for D in p["BENCH_HEAD_DIMS"]:
        for causal in (False, True):
            for N in p["BENCH_SEQ_LENS"]:
                fwd = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
                for name, rate in impls.items():
                    if rate is None:  # MATH: the (N, N) scores through memory
                        if B * H * N * N * 4 * 3 > 70e9:
                            continue  # out of memory: an error at once
                        t_f = t_call(nbytes=B * H * N * N * 12)
                    else:
                        t_f = fwd / rate
                    for t in (t_f, 2.5 * t_f):  # forward, backward
                        probe = do_bench_s(t, rep=0.001, warmup=0.001)
                        total += probe + do_bench_s(t, rep=max(0.1, 30 * t))
                autotune += 1
    configs = 17 + 12  # the sm_90 report's forward and dK/dV configurations
    return [
        (f"{autotune * 12} timed cases (fwd + bwd, rep 30 calls)", total),
        ("autotuning per key", autotune * configs * AUTOTUNE_S),
        ("memory sweep, matmul ceiling", 20),
        ("checks at 4097 tokens, 4 head sizes, fp64 references", 30),
    ]


def m03(p):
    return [("the ZeRO worker, 4 ranks on gloo", LAUNCH_S + 20)]


def m04(p):
    tokens, worlds = p["BENCH_SEQ"], p["BENCH_RANKS"]
    heads, d = p["HEADS"], p["HEAD_DIM"]
    total = 0.0
    for w in worlds:
        flops = 2 * heads * (w * tokens) ** 2 * d
        total += 2 * do_bench_s(t_call(flops)) + 1.0  # the one call, the ring; the check
    return [
        ("launches: ring checks and measurements (3 x 4 ranks)", 3 * LAUNCH_S + 30),
        (f"one-device ring at {worlds} ranks", total),
        ("torch.compile of the merge", TORCH_COMPILE_S),
        ("BPT memory at 1-4K tokens", 10),
    ]


def m05(p):
    QH, KVH, D = p["BENCH_HEADS"]
    total, configs = 0.0, 0
    for b in p["BENCH_BATCHES"]:
        for c in p["BENCH_CONTEXTS"]:
            kv = 2 * b * c * KVH * D * 2
            total += 2 * do_bench_s(t_call(nbytes=kv)) + do_bench_s(t_call(nbytes=2 * kv))
            total += 0.3  # the paged cache and its check
            configs += 1
    return [
        (f"{configs} points x (paged, contiguous, copy)", total),
        ("autotuning the decode kernel per key", configs * 8 * AUTOTUNE_S),
        ("memory simulation (4000 requests) and the engine (400)", 45),
    ]


def m06(p):
    return [
        ("launches: pipeline checks (4 and 3 ranks) and timelines", 3 * LAUNCH_S + 30),
        ("F, B, W timings of one layer", 4 * do_bench_s(5e-3)),
    ]


def m07(p):
    total = 0.0
    for S in p["GEMM_BENCH_SIZES"]:
        for rate in ("fp8", "bf16", "fp8", "fp8"):  # ours, 16-bit, rowwise, blockwise
            total += do_bench_s(t_call(2 * S**3, rate=rate)) + 0.5  # + its fp32 check
    moe = sum(
        do_bench_s(t_call(nbytes=T * 7168 * 2 * 4)) * 4 for T in p["MOE_BENCH_TOKENS"]
    )
    return [
        ("FP8 GEMMs, 4 sizes x 4 implementations", total),
        ("MoE dispatch timings", moe),
        ("balance (600 steps), MTP (1500 steps)", (600 + 1500) * STEP_S),
        ("EP worker (4 ranks)", LAUNCH_S + 10),
        ("K sweep of the scaled accumulation", 15),
    ]


def m08(p):
    return [("launches: TP checks, the failing run, the timings", 3 * LAUNCH_S + 15)]


def m09(p):
    return [
        ("4 modes x (fwd, fwd+bwd) at s=2048, h=6144", 8 * do_bench_s(0.03, rep=0.2)),
        ("the sequence-parallel worker (4 ranks)", LAUNCH_S + 10),
    ]


def m10(p):
    N, K = p["BENCH_SHAPE"]
    rows = sum(
        do_bench_s(t_call(nbytes=N * K * bits / 8))
        for _ in p["BENCH_M"]
        for bits in (16, 8, 4)
    )
    return [
        ("decode: M x (16, 8, 4 bits)", rows),
        ("autotuning the weight-only kernel", len(p["BENCH_M"]) * 2 * 7 * AUTOTUNE_S),
        ("prefill 4096^3 int8 and 16-bit", 2 * do_bench_s(t_call(2 * 4096**3))),
        ("TaCQ calibration (10 draws x 3 models)", 30),
    ]


def m11(p):
    slow = len(p["SLOWDOWNS"])
    return [
        ("launches: ring worker and the failing run", 2 * LAUNCH_S + 15),
        ("emulation: 5 schedules x slowdowns", (2 + 5 * slow) * do_bench_s(0.02)),
    ]


def m12(p):
    return [
        ("launches: Comet worker and the failing run", 2 * LAUNCH_S + 15),
        ("one-device emulation", 8 * do_bench_s(0.02)),
    ]


def m13(p):
    L, H, d = p["BENCH_SEQ"], p["HEADS"], p["HEAD_DIM"]
    flops = 4 * H * L * L * d * 0.5
    return [
        ("launches: USP checks", 2 * LAUNCH_S + 20),
        ("one-device mesh: the call and each mesh", 4 * do_bench_s(t_call(flops))),
        ("torch.compile of the merge", TORCH_COMPILE_S),
    ]


def m14(p):
    n = 8192 * 8192
    return [
        (
            "training and QAT",
            (p["TRAIN_STEPS"] + len(p["QAT_BITS"]) * p["QAT_STEPS"]) * STEP_S,
        ),
        (f"Hutchinson, {p['PROBES']} probes", 10),
        ("MX quantization timings (2 formats x 2)", 4 * do_bench_s(t_call(nbytes=3 * n))),
    ]


def m15(p):
    tokens = sorted({*p["BENCH_TOKENS"], 16384})
    kernel = 0.0
    for T in tokens:
        flops = 2 * T * 2 * 1024 * 4096 * 2  # top-2, d 1024, ffn 4096, two matmuls
        kernel += 2 * 4 * do_bench_s(t_call(flops))  # 2 load scenarios x 4 formulations
    layers = sum(3 * do_bench_s(t_call(6 * T * 2 * 1024 * 4096 * 2)) for T in tokens)
    return [
        (f"training, 3 runs x {p['TRAIN_STEPS']} steps", 3 * p["TRAIN_STEPS"] * STEP_S),
        ("kernel timings (loads x formulations)", kernel),
        ("autotuning per (T, scenario)", len(tokens) * 2 * 12 * AUTOTUNE_S),
        ("MoE layers fwd + bwd", layers),
    ]


def m16(p):
    return [
        ("the engine's workloads (tiny model, python-bound)", 60),
        ("load-or-recompute at 1-64 chunks, cold disk reads", 30),
    ]


def m17(p):
    rows = 0.0
    for T, K, N, E in p["BENCH_SHAPES"]:
        flops = 3 * 2 * T * K * N  # forward and both backward products
        rows += 4 * do_bench_s(
            t_call(flops)
        )  # bf16, ours, emulated, TorchAO where it runs
    return [
        ("training runs (3 x steps)", 3 * p["TRAIN_STEPS"] * STEP_S),
        ("grouped GEMM timings", rows),
    ]


def m18(p):
    total = 0.0
    for T in p["BENCH_LENGTHS"]:
        H, K, V = 16, 128, 64  # the benchmark's heads and (K, V) head sizes
        kda = t_call(4 * T * H * 64 * (K + V) + 2 * T * H * K * V)
        sdpa = t_call(2 * T * T * H * K)
        total += do_bench_s(kda) + do_bench_s(sdpa)
        if T <= 4096:  # the recurrent reference: a python loop over T
            total += do_bench_s(T * 60e-6)
    return [
        ("recall training (models x steps)", 3 * p["TRAIN_STEPS"] * STEP_S * 2),
        ("KDA vs SDPA at 1K-64K tokens", total),
    ]


MODELS = {f"{i:02d}": fn for i, fn in enumerate(
    [None, m01, m02, m03, m04, m05, m06, m07, m08, m09, m10, m11, m12, m13, m14, m15,
     m16, m17, m18])}  # fmt: skip


def estimate(notebook):
    stem = pathlib.Path(notebook).stem
    p = resolved(notebook)
    terms = [("start", START_MIN * 60), ("checks at test sizes", CHECKS_MIN * 60)]
    n = compilations(stem)
    if n:
        terms.append((f"{n} Triton compilations", n * COMPILE_S))
    model = MODELS.get(stem[:2])
    try:
        terms += model(p) if model else []
    except (KeyError, TypeError) as error:  # a parameter renamed: say so, guess 3 min
        terms.append((f"model out of date ({error!r}): 2 min assumed", 120))
    minutes = sum(s for _, s in terms) / 60
    top = sorted(terms, key=lambda t: -t[1])[:3]
    basis = "; ".join(f"{label} {s / 60:.1f}" for label, s in top)
    return {
        "minutes": round(minutes, 1),
        "basis": basis,
        "terms": {label: round(s, 1) for label, s in terms},
    }


def main():
    notebooks = sorted((ROOT / "sessions").glob("[0-9][0-9]_*.ipynb"))
    found = {}
    for nb in notebooks:
        found[nb.stem] = estimate(nb)
        print(f"{nb.stem:34} {found[nb.stem]['minutes']:6.1f}  {found[nb.stem]['basis']}")
    total = sum(e["minutes"] for e in found.values())
    print(f"{'whole book':34} {total:6.1f} minutes on an H100 (estimated)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    model = __doc__.split("\n\n", 3)[3].split("\n\nEach notebook")[0]
    record = {"model": " ".join(model.split()), "h100": H100, "notebooks": found}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
