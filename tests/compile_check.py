"""Compile every Triton kernel of a notebook for the GPUs readers have, without a GPU.

For each tier (sm_75: a T4; sm_80: an A100; sm_89: an L4, A10 or RTX 30/40, 99 KiB of shared
memory; sm_90: an H100) this runs the notebook's setup, parameters and resolution cells and its
cells tagged `kernel` as that GPU would (its TIER, CAPABILITY, SMEM_BYTES and HALF), then calls
the notebook's `launch_kernels(full)` and `launch_kernels(bench=True)` (one aligned,
benchmark-shaped launch per kernel: Triton specializes on divisibility by 16, so tiny unaligned
launches compile other binaries than the benchmarks run), with every kernel launch turned into
a compilation for that GPU by Triton's own backend and ptxas (an autotuned kernel compiles every
configuration its pruning keeps). It reads the shared memory of each compiled kernel, its
registers and local memory (spills) from the cubin, and the matrix instructions from the PTX.

Which kernels there are, and which of their lines were compiled, comes from Triton itself:
every `JITFunction` the executed cells create is recorded (`@triton.jit`, `triton.jit(fn)`, a
bare `jit` imported from triton, a kernel in a `%%time` cell), and Triton's code generator
reports each statement it generates code for, so a branch on a `constexpr` that no launch
takes is seen. It fails on:
- a kernel that does not compile (the notebook, kernel, tier, configuration and dtypes named);
- shared memory above the tier's limit;
- spills not listed, for that configuration (constexprs, warps, stages, dtypes) and Triton
  version, in tests/compile_allowlist.py;
- a jit function the cells create that no launch compiles on a tier;
- a statement of a jit function that no compilation on any tier generates (a `constexpr`
  branch no launch takes), judged when every tier is checked;
- a `launch_kernels` without the `bench` argument (the book's convention);
- on sm_90, a dot of at least 64 rows without `wgmma`; on sm_80/sm_89, a dot without `mma`
  (unless allowlisted). On sm_75 Triton lowers every dot to FMA: that is recorded.

    python tests/compile_check.py sessions/02_flash_attention.ipynb [--tier sm_90] [--full]
        [--report DIR] [--refresh-allowlist]

Without --full (what make test runs), `launch_kernels()` launches a subset that covers every
code path, and an autotuned kernel compiles every configuration its pruning keeps on its first
launch with each set of dtypes, and its first kept configuration on later launches; --full
calls `launch_kernels(full=True)` and compiles every kept configuration of every launch. The
bench launches compile every kept configuration in both modes. --refresh-allowlist (implies
--full) rewrites this Triton version's spills in tests/compile_spills.json for the kernels
that have a reason in tests/compile_allowlist.py.

Each notebook runs in a process of its own (the check replaces Triton's driver there), its
tiers one after another, each in a fresh namespace.
"""

import argparse
import ast
import concurrent.futures
import contextlib
import datetime
import hashlib
import inspect
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
sys.path.insert(0, str(ROOT / "tools"))
from gpu_run import cell_program  # noqa: E402 (the cell magics, as the GPU runner reads them)

# Shared memory per block (the opt-in maximum one program may use), and the half type the
# setup cell picks there. sm_89 stands for sm_86 too (A10, RTX 30): the same 99 KiB and the
# same instructions but FP8, which sm_89 adds (a notebook's FP8 path is compiled there).
TIERS = {
    "sm_75": dict(tier="pre-ampere", capability=(7, 5), smem=65536, half="float16"),
    "sm_80": dict(tier="ampere", capability=(8, 0), smem=166912, half="bfloat16"),
    "sm_89": dict(tier="ampere", capability=(8, 9), smem=101376, half="bfloat16"),
    "sm_90": dict(tier="hopper", capability=(9, 0), smem=232448, half="bfloat16"),
}
DOT = re.compile(r"=\s*tt\.dot(?:_scaled)?\b.*->\s*tensor<(\d+)x(\d+)x(\w+)")
BENCH_CONVENTION = (
    "its `launch_kernels` has no `bench` argument: the book's convention is"
    " `launch_kernels(full=False, bench=False)`, where bench=True launches each Triton"
    " kernel once at an aligned, benchmark-shaped size (CONTRIBUTING.md, Kernels and the"
    " compile check)"
)


def triton_minor():
    import triton

    return ".".join(triton.__version__.split(".")[:2])


def cells(nb):
    """Setup, parameters, resolution and `kernel` cells, in the notebook's order:
    (index among code cells, source, tags)."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tags = lambda c: c.get("metadata", {}).get("tags", [])  # noqa: E731
    params = next((i for i, c in enumerate(code) if "parameters" in tags(c)), None)
    keep = {0} | ({params, params + 1} if params is not None else set())
    keep |= {i for i, c in enumerate(code) if "kernel" in tags(c)}
    text = lambda c: c["source"] if isinstance(c["source"], str) else "".join(c["source"])  # noqa: E731
    return [(i, text(code[i]), tags(code[i])) for i in sorted(keep) if i < len(code)]


def might_have_kernels(nb):
    """Whether a notebook can make a Triton kernel at all: a code cell other than a worker
    names `jit` (`triton.jit`, `from triton import jit`, `JITFunction`). Only to skip the
    notebooks of multi-process demos; which kernels there are comes from Triton."""
    for cell in nb["cells"][1:]:
        text = (
            cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        )
        if cell["cell_type"] == "code" and not text.startswith("%%writefile"):
            if re.search(r"jit|JITFunction", text, re.I):
                return True
    return False


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


def jsonable(value):
    return value if isinstance(value, (bool, int, float, str, type(None))) else str(value)


def fn_key(jit_fn):
    """A jit function's identity across tiers, processes and Triton's cache: its name and
    the hash of its source."""
    return f"{jit_fn.fn.__name__}:{hashlib.sha1(jit_fn.src.encode()).hexdigest()[:16]}"


def statements(jit_fn):
    """Every statement of a jit function's body, and each arm of a conditional expression,
    as (line, column, node type), with the condition that guards it (for messages)."""
    tree = jit_fn.parse()
    found = {}

    def walk(node, guard):
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                here = guard
                if isinstance(node, (ast.If, ast.IfExp)) and field in ("body", "orelse"):
                    test = ast.unparse(node.test)
                    here = f"if {test}" if field == "body" else f"not ({test})"
                if isinstance(child, ast.stmt) or (
                    isinstance(node, ast.IfExp) and field in ("body", "orelse")
                ):
                    found[(child.lineno, child.col_offset, type(child).__name__)] = here
                walk(child, here)

    function = tree.body[0]
    for statement in function.body:
        found[(statement.lineno, statement.col_offset, type(statement).__name__)] = None
        walk(statement, None)
    return found


class Coverage:
    """What Triton's code generator visits, per jit function, for every compilation: a
    compilation Triton finds in its cache is not generated again, so what it visited is kept
    beside the cache (book-coverage/<hash>.json), and generated afresh where it is not."""

    def __init__(self):
        import triton

        self.visited = {}  # fn_key -> set of (line, column, node type)
        self.current = None
        base = os.environ.get("TRITON_CACHE_DIR") or triton.knobs.cache.dir
        self.store = pathlib.Path(base) / "book-coverage"

    def patches(self):
        import triton.compiler
        from triton.compiler.code_generator import CodeGenerator

        coverage, original_visit = self, CodeGenerator.visit
        original_compile = triton.compiler.compile

        def visit(self, node):
            fn = getattr(self, "jit_fn", None)
            if (
                coverage.current is not None
                and fn is not None
                and hasattr(node, "lineno")
            ):
                key = fn_key(fn)
                coverage.current.setdefault(key, set()).add(
                    (node.lineno, node.col_offset, type(node).__name__)
                )
            return original_visit(self, node)

        def compile(src, *args, **kwargs):
            coverage.current = seen = {}
            try:
                kernel = original_compile(src, *args, **kwargs)
                path = coverage.store / f"{kernel.hash}.json"
                if seen:
                    coverage.store.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps({k: sorted(v) for k, v in seen.items()}))
                elif path.exists():
                    seen.update(json.loads(path.read_text()))
                else:  # in Triton's cache, compiled before this check kept coverage
                    generate(src, *args, **kwargs)
                    coverage.store.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps({k: sorted(v) for k, v in seen.items()}))
                return kernel
            finally:  # what was generated counts, also when the compilation failed later
                coverage.current = None
                for key, nodes in seen.items():
                    coverage.visited.setdefault(key, set()).update(
                        tuple(n) for n in nodes
                    )

        def generate(src, target=None, options=None, _env_vars=None):
            """Triton's front end alone (the code generator, to TTIR), as compile() runs
            it: what a cached compilation visited, without LLVM and ptxas again."""
            from triton.compiler.compiler import ir, make_backend

            backend = make_backend(target)
            options = backend.parse_options(dict(options or {}, **src.parse_options()))
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            codegen = backend.get_codegen_implementation(options)
            src.make_ir(target, options, codegen, backend.get_module_map(), context)

        return [
            (CodeGenerator, "visit", visit),
            (triton.compiler, "compile", compile),
        ]


@contextlib.contextmanager
def patched(pairs):
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in pairs]
    for owner, name, value in pairs:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def created_by_notebook(jit_fn):
    """A jit function of the notebook (not one of Triton's or a library's own)."""
    filename = getattr(getattr(jit_fn, "fn", None), "__code__", None)
    filename = filename.co_filename if filename else ""
    return not re.search(r"[/\\](site|dist)-packages[/\\]", filename)


def run(notebook, arch, full=False):
    """Compile the notebook's kernels for `arch`: (records, failures, kernels, visited)."""
    os.environ.pop("TRITON_INTERPRET", None)
    import torch
    from triton.runtime import driver
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    spec = TIERS[arch]
    nb = json.loads(pathlib.Path(notebook).read_text())
    stem = pathlib.Path(notebook).stem
    namespace = {"__name__": "__main__"}
    records, failures = {}, []
    created = []  # every JITFunction the cells and launch_kernels create, in order
    original_init = JITFunction.__init__

    def init(self, fn, *args, **kwargs):
        original_init(self, fn, *args, **kwargs)
        if created_by_notebook(self):
            created.append(self)

    quiet = io.StringIO()
    coverage = Coverage()

    def kernels():
        found = {}
        for fn in created:
            code = fn.fn.__code__
            found.setdefault(fn_key(fn), {
                "name": fn.fn.__name__,
                "where": code.co_filename.strip("<>"),
                "first_line": code.co_firstlineno,
                "statements": [[*k, g] for k, g in statements(fn).items()],
            })  # fmt: skip
        return found

    def result():
        visited = {k: sorted(v) for k, v in coverage.visited.items()}
        return list(records.values()), failures, kernels(), visited

    with patched([(JITFunction, "__init__", init)]):
        for index, text, tags in cells(nb):
            kind, argument, source = cell_program(text)
            if kind == "refused":
                failures.append(f"{stem} [{arch}]: code cell {index}: {argument}")
                continue
            if kind == "writefile":
                if "kernel" in tags:
                    failures.append(
                        f"{stem}: code cell {index} is tagged `kernel` but writes a"
                        " worker (%%writefile): no Triton kernel in a worker"
                    )
                continue
            filename = f"<{stem} cell {index}>"  # where Triton finds a kernel's source
            linecache.cache[filename] = (
                len(source),
                None,
                source.splitlines(True),
                filename,
            )
            try:
                with contextlib.redirect_stdout(quiet):
                    exec(compile(source, filename, "exec"), namespace)
            except Exception:
                failures.append(
                    f"{stem} [{arch}]: code cell {index} failed:\n{traceback.format_exc()}"
                )
                return result()
            if (
                index == 0
            ):  # the setup cell ran on this CPU: now make it the GPU of `arch`
                os.environ.pop("TRITON_INTERPRET", None)
                namespace.update(
                    ON_GPU=True,
                    TIER=spec["tier"],
                    CAPABILITY=spec["capability"],
                    SMEM_BYTES=spec["smem"],
                    HALF=getattr(torch, spec["half"]),
                    DEVICE_NAME=f"compile check for {arch}",
                )
    if not created and "launch_kernels" not in namespace:
        return result()
    if "launch_kernels" not in namespace:
        names = ", ".join(sorted({fn.fn.__name__ for fn in created}))
        failures.append(
            f"{stem}: defines Triton kernels ({names}) but no `launch_kernels`"
            " in a cell tagged `kernel`"
        )
        return result()

    launch = {"now": "check"}

    def compile_only(self, *args, grid, warmup, **kwargs):
        bound = dict(zip(self.arg_names, args)) | {
            k: v for k, v in kwargs.items() if k in self.arg_names
        }
        config = {
            p.name: jsonable(bound.get(p.name, p.default))
            for p in self.params
            if p.is_constexpr
        }
        dtypes = {
            name: str(a.dtype).replace("torch.", "")
            for name, a in bound.items()
            if hasattr(a, "dtype") and hasattr(a, "data_ptr")
        }
        where = f"{stem}: {self.fn.__name__} [{arch}] config {config} dtypes {dtypes}"
        try:
            kernel = original_run(self, *args, grid=grid, warmup=True, **kwargs)
        except Exception as error:
            failures.append(f"{where}: does not compile: {error}")
            return None
        config["num_warps"] = kernel.metadata.num_warps
        config["num_stages"] = kernel.metadata.num_stages
        key = (kernel.hash, launch["now"])
        if key not in records:
            records[key] = {
                "notebook": stem,
                "kernel": self.fn.__name__,
                "tier": spec["tier"],
                "arch": arch,
                "launch": launch["now"],
                "config": config,
                "args": dtypes,
                "smem_limit": spec["smem"],
                **describe(kernel, arch),
            }
        return kernel

    def autotuned(self, *args, grid=None, warmup=False, **kwargs):
        # the autotuner never prunes a list of one configuration; otherwise it keeps what
        # its pruning keeps, and compiles each of those. Without --full, only a kernel's
        # first launch with given dtypes compiles them all; later launches with the same
        # dtypes (other code paths) compile the first one kept. A bench launch compiles
        # every kept configuration, as the benchmark's autotuning does.
        self.nargs = dict(zip(self.arg_names, args))
        kept = self.configs if len(self.configs) == 1 else self.prune_configs(kwargs)
        dtypes = tuple(str(a.dtype) for a in args if hasattr(a, "dtype"))
        if (
            not full
            and launch["now"] != "bench"
            and (self.fn.fn.__name__, dtypes) in swept
        ):
            kept = kept[:1]
        swept.add((self.fn.fn.__name__, dtypes))
        for config in kept:
            self.fn.run(*args, grid=grid, warmup=True, **kwargs, **config.all_kwargs())
        self.nargs = None

    swept = set()  # (kernel, dtypes) whose kept configurations all compiled
    original_run = JITFunction.run
    launcher = namespace["launch_kernels"]
    has_bench = "bench" in inspect.signature(launcher).parameters
    driver.set_active(CompileOnlyDriver(spec["capability"]))
    replaced = [
        (JITFunction, "run", compile_only),
        (Autotuner, "run", autotuned),
        (JITFunction, "__init__", init),
        *coverage.patches(),
    ]
    try:
        with patched(replaced), contextlib.redirect_stdout(quiet):
            for launch["now"], kwargs in [
                ("check", {"full": full}),
                ("bench", {"bench": True}),
            ]:
                if launch["now"] == "bench" and not has_bench:
                    failures.append(f"{stem} [{arch}]: {BENCH_CONVENTION}")
                    continue
                try:
                    launcher(**kwargs)
                except Exception:
                    call = ", ".join(f"{k}={v}" for k, v in kwargs.items())
                    failures.append(
                        f"{stem} [{arch}]: launch_kernels({call}) failed:\n"
                        f"{traceback.format_exc()}"
                    )
    finally:
        driver.set_active(None)  # (reset_active would look for a real GPU)
    found = result()
    failures += judge(stem, arch, found[0], found[2], found[3])
    return found


def never_compiled(stem, arch, kernels, visited):
    """Jit functions the cells created that no compilation for `arch` generated."""
    failures = []
    for key, k in kernels.items():
        if not visited.get(key):
            failures.append(
                f"{stem}: jit function {k['name']} ({k['where']}, line {k['first_line']})"
                f" is never compiled for {arch}: launch it from `launch_kernels` (and tag"
                " its cell `kernel`)"
            )
    return failures


def uncompiled_branches(stem, kernels, visited):
    """Statements that no compilation on any tier generated: each block reported once, by
    its first statement and the condition that guards it."""
    failures = []
    for key, k in kernels.items():
        seen = {tuple(n) for n in visited.get(key, [])}
        if not seen:
            continue  # never compiled at all: reported per tier
        guards = {}
        for line, column, kind, guard in k["statements"]:
            if (line, column, kind) not in seen:
                guards.setdefault(guard, []).append(line)
        for guard, lines in guards.items():
            if guard is None:
                continue  # outside every branch: follows from an uncompiled guard above
            line = k["first_line"] + min(lines) - 1
            failures.append(
                f"{stem}: {k['name']} ({k['where']}, line {line}): the branch under"
                f" `{guard}` is compiled by no launch on any tier (no launch passes the"
                " constexpr values that take it): launch it from `launch_kernels`"
            )
    return failures


def judge(stem, arch, records, kernels, visited):
    """The rules, applied to what compiled."""
    from compile_allowlist import NO_TENSOR_CORES, allowed_spills

    failures = never_compiled(stem, arch, kernels, visited)
    version = triton_minor()
    for r in records:
        where = (
            f"{stem}: {r['kernel']} [{arch}] ({r['launch']} launch) config {r['config']}"
            f" dtypes {r['args']}"
        )
        if r["shared"] > r["smem_limit"]:
            failures.append(
                f"{where}: {r['shared']} bytes of shared memory, above {arch}'s"
                f" {r['smem_limit']}"
            )
        allowed, _ = allowed_spills(r, version)
        if r["spills"] > allowed:
            failures.append(
                f"{where}: spills {r['spills']} bytes per thread ({r['registers']} registers)"
                f" on Triton {version}, {allowed} allowed; fix it or list it with its reason"
                " in tests/compile_allowlist.py (--refresh-allowlist)"
            )
        excused = (stem, r["kernel"], arch) in NO_TENSOR_CORES
        if arch == "sm_90" and r["dot_rows"] >= 64 and not r["counts"]["wgmma"]:
            if not excused:
                failures.append(f"{where}: a dot of {r['dot_rows']} rows without wgmma")
        if arch in ("sm_80", "sm_89") and r["dot_rows"] and not r["counts"]["mma"]:
            if not excused:
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
        "launches": "check: launch_kernels(), or (full=True) with --full; bench:"
        " launch_kernels(bench=True), aligned and benchmark-shaped",
    }


def jobs():
    """Processes to compile in at once: BOOK_COMPILE_JOBS, or half the CPUs (pytest-xdist
    runs two notebooks at once)."""
    return int(os.environ.get("BOOK_COMPILE_JOBS", 0)) or max(
        1, (os.cpu_count() or 2) // 2
    )


def check(notebook, arches, full, processes=None):
    """Compile the notebook for `arches`, the tiers shared among `processes` processes (each
    tier in a fresh namespace), then judge the branches over all of them: (records,
    failures)."""
    if not might_have_kernels(json.loads(pathlib.Path(notebook).read_text())):
        return [], []  # no kernel can be made: nothing to start a process for
    processes = min(processes or jobs(), len(arches))
    groups = [arches[i::processes] for i in range(processes)]
    running = []
    for group in groups:
        cmd = [sys.executable, __file__, str(notebook), "--json", "-"]
        cmd += [f"--tier={arch}" for arch in group] + (["--full"] if full else [])
        pipes = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        running.append((group, subprocess.Popen(cmd, **pipes)))
    records, failures, kernels, visited = [], [], {}, {}
    for group, proc in running:
        out, err = proc.communicate()
        try:
            result = json.loads(out.splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            failures.append(f"{notebook} {group}: the check itself failed:\n{err}")
            continue
        records += result["records"]
        failures += result["failures"]
        kernels.update(result["kernels"])
        for key, nodes in result["visited"].items():
            visited.setdefault(key, set()).update(tuple(n) for n in nodes)
    order = {arch: i for i, arch in enumerate(TIERS)}
    records.sort(key=lambda r: order[r["arch"]])
    crashed = any("the check itself failed" in f for f in failures)
    if set(arches) == set(TIERS) and not crashed:
        failures += uncompiled_branches(pathlib.Path(notebook).stem, kernels, visited)
    return records, failures


def check_tiers(notebook, arches, full):
    """In this process: every tier of `arches`, one after another."""
    records, failures, kernels, visited = [], [], {}, {}
    for arch in arches:  # each in a fresh namespace
        found = run(notebook, arch, full)
        records += found[0]
        failures += found[1]
        kernels.update(found[2])
        for key, nodes in found[3].items():
            visited.setdefault(key, []).extend(nodes)
    return {
        "records": records,
        "failures": failures,
        "kernels": kernels,
        "visited": visited,
    }


def table(records):
    head = "kernel | GPU | launch | config | shared | registers | spills | instructions"
    lines = [head, "-" * len(head)]
    for r in records:
        config = "/".join(str(v) for v in r["config"].values())
        lines.append(
            f"{r['kernel']} | {r['arch']} | {r['launch']} | {config} | {r['shared']}"
            f" | {r['registers']} | {r['spills']} | {r['instructions']} {r['counts']}"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument("--tier", action="append", choices=list(TIERS))
    parser.add_argument("--full", action="store_true", help="launch_kernels(full=True)")
    parser.add_argument("--report", help="write DIR/<notebook>.json with provenance")
    parser.add_argument(
        "--refresh-allowlist",
        action="store_true",
        help="rewrite this Triton's spills in tests/compile_spills.json (implies --full)",
    )
    parser.add_argument("--json", help=argparse.SUPPRESS)  # in this process
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    arches = args.tier or list(TIERS)
    full = args.full or args.refresh_allowlist
    if args.json:
        print(json.dumps(check_tiers(args.notebooks[0], arches, full)))
        return 0
    if set(arches) != set(TIERS):
        print("(the branch rule needs every tier: not judged for --tier", *arches, ")")
    bad, everything = False, []
    # notebooks at once, each with its tiers in `per` processes: about jobs() x 2 in all
    per = min(len(arches), jobs())
    pool = concurrent.futures.ThreadPoolExecutor(max(1, 2 * jobs() // per))
    found = pool.map(lambda nb: check(nb, arches, full, per), args.notebooks)
    for notebook, (records, failures) in zip(args.notebooks, found):  # in order
        everything += records
        print(
            f"{notebook}: {len(records)} compilations, {len(failures)} failures",
            flush=True,
        )
        if records:
            print(table(records))
        print("\n".join(failures))
        if args.report and records:
            out = pathlib.Path(args.report) / f"{pathlib.Path(notebook).stem}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            record = {"provenance": provenance(), "results": records}
            out.write_text(json.dumps(record, indent=1) + "\n")
        if args.refresh_allowlist:  # spills with a reason are no failure once written
            failures = [f for f in failures if " spills " not in f or "allowed;" not in f]
        bad |= bool(failures)
    pool.shutdown()
    if args.refresh_allowlist:
        from compile_allowlist import refresh

        stems = [pathlib.Path(n).stem for n in args.notebooks]
        for line in refresh(everything, stems, triton_minor(), arches):
            print(line)
            bad |= line.startswith("no reason")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
