"""Exceptions to the compile check's rules (tests/compile_check.py), each with its reason.

Spills are allowed per configuration, never per kernel: one maximum per kernel would hide a
configuration going from 0 to 104 bytes. REASONS says, per (notebook, kernel), why its
configurations may spill; tests/compile_spills.json lists each configuration that does (the
notebook, kernel, GPU, its constexprs, warps and stages, and its dtypes) with the bytes per
thread it spills on each Triton version the book is checked on (ptxas changes between them).
That file is measured, not written by hand:

    python tests/compile_check.py --full --refresh-allowlist sessions/[0-9]*.ipynb

rewrites the entries of the Triton it runs on (for kernels with a reason here only: a new
spilling kernel fails until its reason is written), and `make compile-refresh` does so on the
pinned, the floor and the newest Triton and then rewrites the compile reports. A Triton version
that no entry lists gets the largest allowance any listed version has for that configuration.

NO_TENSOR_CORES: (notebook, kernel, arch) -> why its dots may run without wgmma (sm_90) or
mma (sm_80, sm_89)."""

import json
import pathlib

SPILLS_FILE = pathlib.Path(__file__).resolve().parent / "compile_spills.json"

_FP8_GEMM = (
    "07's FP8 block GEMM keeps an fp32 accumulator tile, the partial product of one scale"
    " group and the 64-bit address tiles of A and B live at once; splitting each group into"
    " 32-wide slices and scaling rows and columns separately cut the spills from 0.9-8.7 KB"
    " to these, and the rest needs block pointers or TMA descriptors (issue 15's follow-up)"
)
_KDA_FWD = (
    "18's one-kernel KDA forward keeps the (BT, K) tiles of k, g, their cumulative decay,"
    " W and q, the (BT, BT) pair and inverse matrices and the (K, BV) state of a chunk in"
    " registers at once; at K = 128 (the tests' and the benchmark's head size) that exceeds"
    " 255 registers per thread on every tier. 16 warps (128 registers a thread) spill more,"
    " and BV = 16 only cuts them by a third or so; removing them needs a restructured kernel"
    " (the pair matrices and their inverse in a kernel of their own, as fla does, or the"
    " pair terms on tensor cores, the notebook's Exercise 2): the tuning log's follow-up"
)
_FA_BWD = (
    "02's dK/dV backward at HEAD_DIM 128 keeps the dK and dV accumulators (BLOCK_N x 128,"
    " fp32) and the K and V tiles in registers while it streams Q and dO; in a few causal"
    " and atomic-dQ configurations ptxas leaves up to a few dozen bytes a thread on the"
    " stack (the amount moves with the Triton/ptxas version, 0 in most). The autotuner"
    " times these configurations against spill-free ones, so a spilling one runs only if it"
    " is still the fastest"
)
_SMALL_SPILL = (
    "a few bytes a thread (at most a handful of 4-byte registers) that ptxas of some Triton"
    " versions spills in this configuration and others do not: the kernel keeps its tiles"
    " in registers at the 255-register edge; the spill is measured per version and the"
    " configuration stays, since the spill-free versions show it is ptxas's choice"
)
_GROUPED_GEMM_SM89 = (
    "15's grouped GEMM keeps a 128-column fp32 accumulator tile and 64-deep A and B tiles"
    " in flight; on sm_89 ptxas leaves 16 or 32 bytes a thread on the stack"
    " at 255 registers in two of the Ampere tier's configurations (measured: none of them"
    " spills on sm_80 or sm_90). The autotuner times them against spill-free"
    " configurations, so a spilling one runs only if it is still the fastest"
)
REASONS = {
    ("02_flash_attention", "_attn_bwd_dkdv"): _FA_BWD,
    ("05_paged_attention", "_decode_kernel"): _SMALL_SPILL,
    ("07_deepseek", "fp8_block_matmul_kernel"): _FP8_GEMM,
    ("15_megablocks", "dsd_kernel"): _SMALL_SPILL,
    ("15_megablocks", "grouped_gemm_kernel"): _GROUPED_GEMM_SM89,
    ("18_kimi_delta_attention", "_kda_fwd_kernel"): _KDA_FWD,
}

NO_TENSOR_CORES = {}


def _identity(record):
    """What a spills entry is keyed by: notebook, kernel, GPU, configuration, dtypes."""
    config = json.dumps(record["config"], sort_keys=True)
    dtypes = json.dumps(record["args"], sort_keys=True)
    return (record["notebook"], record["kernel"], record["arch"], config, dtypes)


def _entries():
    return json.loads(SPILLS_FILE.read_text()) if SPILLS_FILE.exists() else []


_INDEX = None


def allowed_spills(record, triton):
    """(bytes per thread this compiled configuration may spill on Triton `triton`, e.g.
    "3.7", and why); (0, None) when it is not listed."""
    global _INDEX
    if _INDEX is None:
        _INDEX = {_identity_of_entry(e): e for e in _entries()}
    entry = _INDEX.get(_identity(record))
    reason = REASONS.get((record["notebook"], record["kernel"]))
    if entry is None or reason is None:
        return 0, None
    spills = entry["spills"]
    return spills.get(triton, max(spills.values(), default=0)), reason


def refresh(records, notebooks, triton, arches):
    """Rewrite Triton `triton`'s spills for `notebooks` (on `arches`) from `records` (the
    check's compilations): returns what it did, one line each."""
    global _INDEX
    kept, lines = {}, []
    for entry in _entries():
        mine = entry["notebook"] in notebooks and entry["arch"] in arches
        if mine:
            entry["spills"].pop(triton, None)
        if entry["spills"]:
            kept[_identity_of_entry(entry)] = entry
    for r in records:
        if not r["spills"]:
            continue
        if (r["notebook"], r["kernel"]) not in REASONS:
            lines.append(
                f"no reason for {r['notebook']} {r['kernel']} [{r['arch']}], which spills"
                f" {r['spills']} bytes on Triton {triton}: write one in REASONS"
                " (tests/compile_allowlist.py), or fix the kernel"
            )
            continue
        entry = kept.setdefault(
            _identity(r),
            {
                "notebook": r["notebook"],
                "kernel": r["kernel"],
                "arch": r["arch"],
                "config": r["config"],
                "dtypes": r["args"],
                "spills": {},
            },
        )
        entry["spills"][triton] = max(entry["spills"].get(triton, 0), r["spills"])
    entries = sorted(kept.values(), key=_identity_of_entry)
    SPILLS_FILE.write_text(json.dumps(entries, indent=1) + "\n")
    _INDEX = None
    counts = sum(triton in e["spills"] for e in entries)
    lines.append(
        f"{SPILLS_FILE.name}: {counts} spilling configurations on Triton {triton}"
    )
    return lines


def _identity_of_entry(entry):
    return _identity({**entry, "args": entry["dtypes"]})
