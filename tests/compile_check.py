"""Compile every Triton kernel of a notebook for the GPUs readers have, without a GPU.

For each tier (sm_75: a T4; sm_80: an A100; sm_90: an H100) this runs the notebook's setup,
parameters and resolution cells and its cells tagged `kernel` as that GPU would (its TIER,
CAPABILITY, SMEM_BYTES and HALF), then calls the notebook's `launch_kernels(full)`, with every
kernel launch turned into a compilation for that GPU by Triton's own backend and ptxas (an
autotuned kernel compiles every configuration its pruning keeps). It reads the shared memory of
each compiled kernel, its registers and local memory (spills) from the cubin, and the matrix
instructions from the PTX, and fails on:
- a kernel that does not compile (the notebook, kernel, tier, configuration and dtypes named);
- shared memory above the tier's limit;
- spills not listed in tests/compile_allowlist.py;
- a `@triton.jit` function that no launch reaches (directly or from a kernel it calls);
- on sm_90, a dot of at least 64 rows without `wgmma`; on sm_80, a dot without `mma`
  (unless allowlisted). On sm_75 Triton lowers every dot to FMA: that is recorded.

    python tests/compile_check.py sessions/02_flash_attention.ipynb [--tier sm_90] [--full]
        [--report DIR]

Without --full (what make test runs), `launch_kernels()` launches a subset that covers every
code path, and an autotuned kernel compiles every configuration its pruning keeps on its first
launch with each set of dtypes, and its first kept configuration on later launches; --full
calls `launch_kernels(full=True)` and compiles every kept configuration of every launch.

Each notebook runs in a process of its own (the check replaces Triton's driver there), its
tiers one after another, each in a fresh namespace.
"""

import argparse
import ast
import contextlib
import datetime
import io
import json
import linecache
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Shared memory per block (the opt-in maximum one program may use), and the half type the
# setup cell picks there.
TIERS = {
    "sm_75": dict(tier="pre-ampere", capability=(7, 5), smem=65536, half="float16"),
    "sm_80": dict(tier="ampere", capability=(8, 0), smem=166912, half="bfloat16"),
    "sm_90": dict(tier="hopper", capability=(9, 0), smem=232448, half="bfloat16"),
}
DOT = re.compile(r"=\s*tt\.dot(?:_scaled)?\b.*->\s*tensor<(\d+)x(\d+)x(\w+)")


def jit_names(nb):
    """The names of the notebook's @triton.jit functions (outside %%writefile workers)."""
    names = {}
    for index, cell in enumerate(nb["cells"]):
        text = "".join(cell["source"])
        if cell["cell_type"] != "code" or text.startswith("%%"):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and any(
                "triton.jit" in ast.unparse(d) for d in node.decorator_list
            ):
                names[node.name] = (index, ast.unparse(node))
    return names


def cells(nb):
    """Setup, parameters, resolution and `kernel` cells, in the notebook's order."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tags = lambda c: c.get("metadata", {}).get("tags", [])  # noqa: E731
    params = next((i for i, c in enumerate(code) if "parameters" in tags(c)), None)
    keep = {0} | ({params, params + 1} if params is not None else set())
    keep |= {i for i, c in enumerate(code) if "kernel" in tags(c)}
    return [(i, "".join(code[i]["source"])) for i in sorted(keep)]


class CompileOnlyDriver:
    """Triton's driver for a GPU that is not there: it names the target, nothing else."""

    def __init__(self, capability):
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", capability[0] * 10 + capability[1], 32)

    def get_current_target(self):
        return self.target

    def get_current_device(self):  # one per target: Triton caches kernels per device
        return self.target.arch

    def get_current_stream(self, device=None):
        return 0


def tool(name):
    import triton.backends.nvidia as nvidia

    return str(pathlib.Path(nvidia.__file__).parent / "bin" / name)


def resources(cubin):
    """Registers and the stack frame per thread, from cuobjdump's resource usage: ptxas
    puts spilled registers on the stack (LOCAL stays 0 for them), and a Triton kernel has
    no stack otherwise."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run(
            [tool("cuobjdump"), "-res-usage", f.name], capture_output=True, text=True
        ).stdout
    return int(re.search(r"REG:(\d+)", out)[1]), int(re.search(r"STACK:(\d+)", out)[1])


def describe(kernel, arch):
    """What one compiled kernel uses: shared memory, registers, spills, instructions."""
    ptx, ttir = kernel.asm["ptx"], kernel.asm["ttir"]
    counts = {
        "wgmma": len(re.findall(r"\bwgmma\.mma_async", ptx)),
        "mma": len(re.findall(r"\bmma\.sync", ptx)),
        "fma": len(re.findall(r"\bfma\.rn\.f32", ptx)),
    }
    dots = [(int(m), int(n), t) for m, n, t in DOT.findall(ttir)]
    used = next((k for k in ("wgmma", "mma") if counts[k]), "fma" if dots else "none")
    registers, spills = resources(kernel.asm["cubin"])
    return {
        "shared": kernel.metadata.shared,
        "registers": registers,
        "spills": spills,
        "instructions": used,
        "counts": counts,
        "dot_rows": max((m for m, _, _ in dots), default=0),
    }


def run(notebook, arch, full=False):
    """Compile the notebook's kernels for `arch`: (records, failures)."""
    os.environ.pop("TRITON_INTERPRET", None)
    import torch
    from triton.runtime import driver
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    spec = TIERS[arch]
    nb = json.loads(pathlib.Path(notebook).read_text())
    stem = pathlib.Path(notebook).stem
    names = jit_names(nb)
    if not names:
        return [], []
    namespace = {"__name__": "__main__"}
    records, failures = [], []
    quiet = io.StringIO()
    for index, text in cells(nb):
        filename = f"<{stem} cell {index}>"  # where Triton finds a kernel's source
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        try:
            with contextlib.redirect_stdout(quiet):
                exec(compile(text, filename, "exec"), namespace)
        except Exception:
            return [], [
                f"{stem} [{arch}]: code cell {index} failed:\n{traceback.format_exc()}"
            ]
        if index == 0:  # the setup cell ran on this CPU: now make it the GPU of `arch`
            os.environ.pop("TRITON_INTERPRET", None)
            namespace.update(
                ON_GPU=True,
                TIER=spec["tier"],
                CAPABILITY=spec["capability"],
                SMEM_BYTES=spec["smem"],
                HALF=getattr(torch, spec["half"]),
                DEVICE_NAME=f"compile check for {arch}",
            )
    if "launch_kernels" not in namespace:
        return [], [
            f"{stem}: defines Triton kernels ({', '.join(names)}) but no `launch_kernels`"
            " in a cell tagged `kernel`"
        ]

    def compile_only(self, *args, grid, warmup, **kwargs):
        config = {  # the keywords: constexprs, scalars, options (as text when not JSON's)
            k: v if isinstance(v, (bool, int, float, str, type(None))) else str(v)
            for k, v in kwargs.items()
            if not hasattr(v, "data_ptr")
        }
        dtypes = {
            name: str(a.dtype).replace("torch.", "")
            for name, a in zip(self.arg_names, args)
            if hasattr(a, "dtype")
        }
        where = f"{stem}: {self.fn.__name__} [{arch}] config {config} dtypes {dtypes}"
        try:
            kernel = original_run(self, *args, grid=grid, warmup=True, **kwargs)
        except Exception as error:
            failures.append(f"{where}: does not compile: {error}")
            return None
        found = describe(kernel, arch)
        config.setdefault("num_warps", kernel.metadata.num_warps)
        config.setdefault("num_stages", kernel.metadata.num_stages)
        records.append(
            {
                "notebook": stem,
                "kernel": self.fn.__name__,
                "tier": spec["tier"],
                "arch": arch,
                "config": config,
                "args": dtypes,
                "smem_limit": spec["smem"],
                **found,
            }
        )
        return kernel

    def autotuned(self, *args, grid=None, warmup=False, **kwargs):
        # the autotuner never prunes a list of one configuration; otherwise it keeps what
        # its pruning keeps, and compiles each of those. Without --full, only a kernel's
        # first launch with given dtypes compiles them all; later launches with the same
        # dtypes (other code paths) compile the first one kept.
        self.nargs = dict(zip(self.arg_names, args))
        kept = self.configs if len(self.configs) == 1 else self.prune_configs(kwargs)
        dtypes = tuple(str(a.dtype) for a in args if hasattr(a, "dtype"))
        if not full and (self.fn.fn.__name__, dtypes) in swept:
            kept = kept[:1]
        swept.add((self.fn.fn.__name__, dtypes))
        for config in kept:
            self.fn.run(*args, grid=grid, warmup=True, **kwargs, **config.all_kwargs())
        self.nargs = None

    swept = set()  # (kernel, dtypes) whose kept configurations all compiled
    original_run = JITFunction.run
    JITFunction.run, Autotuner.run = compile_only, autotuned
    driver.set_active(CompileOnlyDriver(spec["capability"]))
    try:
        with contextlib.redirect_stdout(quiet):
            namespace["launch_kernels"](full=full)
    except Exception:
        failures.append(
            f"{stem} [{arch}]: launch_kernels failed:\n{traceback.format_exc()}"
        )
    finally:
        JITFunction.run = original_run
        driver.set_active(None)  # (reset_active would look for a real GPU)
    failures += judge(stem, arch, names, records)
    return records, failures


def judge(stem, arch, names, records):
    """The rules, applied to what compiled."""
    from compile_allowlist import NO_TENSOR_CORES, SPILLS

    failures = []
    reached = {r["kernel"] for r in records}
    frontier = list(reached)
    while frontier:  # helper jit functions count as reached when a reached one calls them
        body = names.get(frontier.pop(), (None, ""))[1]
        for name in names:
            if name not in reached and re.search(rf"\b{name}\s*\(", body):
                reached.add(name)
                frontier.append(name)
    for name in sorted(set(names) - reached):
        failures.append(
            f"{stem}: @triton.jit {name} (cell {names[name][0]}) is never compiled for"
            f" {arch}: launch it from `launch_kernels` (and tag its cell `kernel`)"
        )
    for r in records:
        where = f"{stem}: {r['kernel']} [{arch}] config {r['config']} dtypes {r['args']}"
        if r["shared"] > r["smem_limit"]:
            failures.append(
                f"{where}: {r['shared']} bytes of shared memory, above {arch}'s"
                f" {r['smem_limit']}"
            )
        allowed = SPILLS.get((stem, r["kernel"], arch), (0, ""))[0]
        if r["spills"] > allowed:
            failures.append(
                f"{where}: spills {r['spills']} bytes per thread ({r['registers']} registers);"
                " fix it or list it with its reason in tests/compile_allowlist.py"
            )
        excused = (stem, r["kernel"], arch) in NO_TENSOR_CORES
        if arch == "sm_90" and r["dot_rows"] >= 64 and not r["counts"]["wgmma"]:
            if not excused:
                failures.append(f"{where}: a dot of {r['dot_rows']} rows without wgmma")
        if arch == "sm_80" and r["dot_rows"] and not r["counts"]["mma"] and not excused:
            failures.append(f"{where}: a dot without mma (tensor cores)")
    return failures


def provenance():
    import triton

    ptxas = subprocess.run([tool("ptxas"), "--version"], capture_output=True, text=True)
    return {
        "tool": "tests/compile_check.py",
        "triton": triton.__version__,
        "ptxas": ptxas.stdout.strip().splitlines()[-1],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }


def check(notebook, arches, full):
    """Run each tier in a process of its own; return (records, failures)."""
    if not jit_names(json.loads(pathlib.Path(notebook).read_text())):
        return [], []  # no Triton kernel: nothing to start a process for
    cmd = [sys.executable, __file__, str(notebook), "--json", "-"]
    cmd += [f"--tier={arch}" for arch in arches] + (["--full"] if full else [])
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    try:
        result = json.loads(done.stdout.splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return [], [f"{notebook} {arches}: the check itself failed:\n{done.stderr}"]
    return result["records"], result["failures"]


def table(records):
    head = "kernel | GPU | config | shared | registers | spills | instructions"
    lines = [head, "-" * len(head)]
    for r in records:
        config = "/".join(str(v) for v in r["config"].values())
        lines.append(
            f"{r['kernel']} | {r['arch']} | {config} | {r['shared']} | {r['registers']}"
            f" | {r['spills']} | {r['instructions']} {r['counts']}"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument("--tier", action="append", choices=list(TIERS))
    parser.add_argument("--full", action="store_true", help="launch_kernels(full=True)")
    parser.add_argument("--report", help="write DIR/<notebook>.json with provenance")
    parser.add_argument("--json", help=argparse.SUPPRESS)  # one tier, in this process
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    if args.json:
        records, failures = [], []
        for arch in args.tier or list(TIERS):  # each in a fresh namespace
            found = run(args.notebooks[0], arch, args.full)
            records += found[0]
            failures += found[1]
        print(json.dumps({"records": records, "failures": failures}))
        return 0
    bad = False
    for notebook in args.notebooks:
        records, failures = check(notebook, args.tier or list(TIERS), args.full)
        print(f"{notebook}: {len(records)} compilations, {len(failures)} failures")
        if records:
            print(table(records))
        print("\n".join(failures))
        bad |= bool(failures)
        if args.report and records:
            out = pathlib.Path(args.report) / f"{pathlib.Path(notebook).stem}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            record = {"provenance": provenance(), "results": records}
            out.write_text(json.dumps(record, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
