"""pytest plugin: keep what nbval executed, so that the site can be built from it.

`make test` runs every notebook once, under nbval (`-p nbval_record`). This plugin stores each
notebook nbval ran, with the outputs of its cells, as `_build/executed/sessions/NAME.ipynb`, and
records in its metadata (`book_execution`) when and how it ran, how long it took and whether
every cell passed. The site test then builds the site from those notebooks instead of executing
them a second time; `make book` executes them itself (jupyter-cache)."""

import datetime
import json
import pathlib
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXECUTED = ROOT / "_build" / "executed"
_runs = {}  # notebook path -> {"nb", "start", "end", "failed", "cells"}


def _is_nbval_cell(item):
    return type(item).__name__ == "IPyNbCell" and hasattr(item.parent, "nb")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not _is_nbval_cell(item):
        yield
        return
    run = _runs.setdefault(
        item.parent.path,
        {"nb": item.parent.nb, "start": time.time(), "failed": [], "cells": 0},
    )
    outcome = yield
    run["end"], run["cells"] = time.time(), run["cells"] + 1
    item.cell.outputs = [dict(out) for out in getattr(item, "test_outputs", [])]
    item.cell.execution_count = run["cells"]
    if outcome.excinfo is not None:
        run["failed"].append(item.cell_num)


def pytest_sessionfinish(session):
    for path, run in _runs.items():
        nb = run["nb"]
        code_cells = sum(c.cell_type == "code" for c in nb.cells)
        nb.metadata["book_execution"] = {
            "method": "nbval",
            "date": datetime.datetime.fromtimestamp(run["start"])
            .astimezone()
            .isoformat(),
            "runtime_s": round(run["end"] - run["start"], 1),
            "succeeded": not run["failed"] and run["cells"] == code_cells,
            "cells_run": run["cells"],
            "failed_cells": run["failed"],
        }
        out = EXECUTED / pathlib.Path(path).relative_to(ROOT)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(nb, indent=1) + "\n")
