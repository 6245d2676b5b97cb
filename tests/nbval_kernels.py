"""pytest plugin: under nbval, every Triton kernel a notebook creates is created by a cell tagged
`kernel`, so that the compile check (tests/compile_check.py), which runs only those cells, sees
it.

nbval executes every cell of a notebook; after its setup cell this plugin asks the kernel (a
silent request, which adds nothing to the cell outputs) to record every jit function Triton
creates from then on (`JITFunction`, or `InterpretedFunction` under the interpreter) however it
is made: `@triton.jit`, `triton.jit(fn)`, a bare `jit`, inside a `%%time` cell or a function.
After each cell it takes the list, and a cell that is not tagged `kernel` and created one fails:
the compile check would never compile that kernel for a GPU. `make test` loads it
(`-p nbval_kernels`)."""

import ast

import pytest

# Runs in the notebook's kernel, once, after the setup cell imported triton.
INSTALL = r"""
def _book_jit_registry():
    import re, sys, types
    from triton.runtime.jit import JITFunction
    from triton.runtime.interpreter import InterpretedFunction

    registry = types.ModuleType("__book_jit__")
    registry.created = []
    registry.seen = {}  # id -> function: each function once (the interpreter makes a
    # JITFunction of a kernel's function again to name its file and line)

    def take():
        found, registry.created[:] = list(registry.created), []
        return found

    registry.take = take
    for cls in (JITFunction, InterpretedFunction):
        def init(self, fn, *args, __original=cls.__init__, **kwargs):
            __original(self, fn, *args, **kwargs)
            code = getattr(fn, "__code__", None)
            where = code.co_filename if code else ""
            if id(fn) in registry.seen or re.search(r"[/\\](site|dist)-packages[/\\]", where):
                return
            registry.seen[id(fn)] = fn
            registry.created.append(getattr(fn, "__name__", "?"))
        cls.__init__ = init
    sys.modules["__book_jit__"] = registry


_book_jit_registry()
del _book_jit_registry
"""
TAKE = "__import__('__book_jit__').take()"


def _is_nbval_cell(item):
    return type(item).__name__ == "IPyNbCell" and hasattr(item.parent, "kernel")


def ask(kernel, code, expression=None, timeout=60):
    """Run `code` silently in nbval's kernel; the value of `expression` (a Python literal)."""
    client = kernel.kc
    expressions = {"value": expression} if expression else {}
    msg_id = client.execute(
        code, silent=True, store_history=False, user_expressions=expressions
    )
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    content = reply["content"]
    if content.get("status") != "ok":
        raise RuntimeError(f"{content.get('ename')}: {content.get('evalue')}")
    if not expression:
        return None
    value = content["user_expressions"]["value"]
    if value.get("status") != "ok":
        raise RuntimeError(f"{value.get('ename')}: {value.get('evalue')}")
    return ast.literal_eval(value["data"]["text/plain"])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    if not _is_nbval_cell(item) or outcome.excinfo is not None:
        return
    kernel = item.parent.kernel
    if kernel is None or not kernel.is_alive():
        return
    if item.cell_num == 0:  # the setup cell: triton is imported now
        try:
            ask(kernel, INSTALL)
        except Exception as error:  # noqa: BLE001 (a notebook without triton, say)
            item.parent.book_jit = f"not recorded: {error}"
        else:
            item.parent.book_jit = "recording"
        return
    if getattr(item.parent, "book_jit", None) != "recording":
        return
    created = ask(kernel, "pass", TAKE)
    tags = item.cell.get("metadata", {}).get("tags", [])
    if created and "kernel" not in tags:
        outcome.force_exception(
            AssertionError(
                f"code cell {item.cell_num} creates the Triton kernel(s)"
                f" {', '.join(sorted(set(created)))} but is not tagged `kernel`: the"
                " compile check (tests/compile_check.py) runs only `kernel` cells, so it"
                " would never compile them for a GPU. Tag the cell `kernel` (a kernel cell"
                " only defines) and launch them from `launch_kernels`."
            )
        )
