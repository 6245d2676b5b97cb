"""Exceptions to the compile check's rules (tests/compile_check.py), each with its reason.

SPILLS: (notebook, kernel, arch) -> (the most bytes of local memory per thread allowed, why).
NO_TENSOR_CORES: (notebook, kernel, arch) -> why its dots may run without wgmma (sm_90) or
mma (sm_80)."""

SPILLS = {}

NO_TENSOR_CORES = {}
