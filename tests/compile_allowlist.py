"""Exceptions to the compile check's rules (tests/compile_check.py), each with its reason.

SPILLS: (notebook, kernel, arch) -> (the most bytes of local memory per thread allowed, why).
NO_TENSOR_CORES: (notebook, kernel, arch) -> why its dots may run without wgmma (sm_90) or
mma (sm_80)."""

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
SPILLS = {
    ("07_deepseek", "fp8_block_matmul_kernel", "sm_75"): (88, _FP8_GEMM),
    ("07_deepseek", "fp8_block_matmul_kernel", "sm_80"): (336, _FP8_GEMM),
    ("07_deepseek", "fp8_block_matmul_kernel", "sm_90"): (224, _FP8_GEMM),
    ("18_kimi_delta_attention", "_kda_fwd_kernel", "sm_75"): (864, _KDA_FWD),
    ("18_kimi_delta_attention", "_kda_fwd_kernel", "sm_80"): (504, _KDA_FWD),
    ("18_kimi_delta_attention", "_kda_fwd_kernel", "sm_90"): (744, _KDA_FWD),
}

NO_TENSOR_CORES = {}
