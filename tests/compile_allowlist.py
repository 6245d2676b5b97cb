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
SPILLS = {
    ("07_deepseek", "fp8_block_matmul_kernel", "sm_75"): (88, _FP8_GEMM),
    ("07_deepseek", "fp8_block_matmul_kernel", "sm_80"): (336, _FP8_GEMM),
    ("07_deepseek", "fp8_block_matmul_kernel", "sm_90"): (224, _FP8_GEMM),
}

NO_TENSOR_CORES = {}
