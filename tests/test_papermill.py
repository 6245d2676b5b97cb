"""papermill runs a notebook with overridden parameters, and a bad parameter fails with the clear message."""

import nbformat
import papermill
import pytest

from conftest import ROOT, code_cells

NOTEBOOK = ROOT / "sessions" / "08_megatron_tp.ipynb"  # the quickest notebook on a CPU


def run(tmp_path, **parameters):
    return papermill.execute_notebook(
        str(NOTEBOOK),
        str(tmp_path / "out.ipynb"),
        parameters=parameters,
        cwd=str(NOTEBOOK.parent),
        kernel_name="python3",
        progress_bar=False,
    )


def outputs(cell):
    return "".join(
        o.get("text", "") for o in cell.get("outputs", []) if o["output_type"] == "stream"
    )


def test_overridden_parameters_run_the_whole_notebook(tmp_path):
    nb = run(tmp_path, HIDDEN=48, HEADS=4, SEQ_LEN=5, BATCH=3, COST_CONFIGS=[[64, 4]])
    cells = code_cells(nb)
    assert "injected-parameters" in cells[2]["metadata"]["tags"]
    printed = outputs(
        cells[3]
    )  # the resolution cell, after the parameters papermill injected
    assert "hidden 48, 4 heads, batch 3 x seq 5" in printed and "[[64, 4]]" in printed, (
        printed
    )
    assert all(c.get("execution_count") for c in cells), "every cell ran"
    assert not any(
        o["output_type"] == "error" for c in cells for o in c.get("outputs", [])
    )


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("HEADS", 6, "parameter HEADS=6 is invalid"),
        ("SEQ_LEN", "long", "parameter SEQ_LEN='long' is invalid"),
    ],
)
def test_bad_parameter_stops_with_a_clear_message(tmp_path, name, value, expected):
    with pytest.raises(papermill.PapermillExecutionError) as error:
        run(tmp_path, **{name: value})
    assert error.value.ename == "ValueError" and expected in error.value.evalue, (
        error.value.evalue
    )
    executed = [
        c
        for c in code_cells(nbformat.read(tmp_path / "out.ipynb", as_version=4))
        if c.get("execution_count")
    ]
    assert len(executed) == 4, (
        "it stops at the resolution cell: setup, parameters, injected, resolution"
    )
