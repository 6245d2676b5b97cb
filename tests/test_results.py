"""The setup cell's record of measured results: what a GPU run saves under figures/, a CPU run reads back."""

import json

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture
def setup(setup_cell, tmp_path):
    setup_cell["FIGURES"] = tmp_path / "figures"
    return setup_cell


def test_gpu_run_saves_and_cpu_run_reads_back(setup, capsys):
    fake = {
        "device": "NVIDIA H100 80GB HBM3",
        "driver": "580.1",
        "cuda": "13.0",
        "torch": "2.13.0",
        "triton": "3.7.1",
        "date": "2026-11-21T00:00:00+00:00",
    }
    setup.update(
        ON_GPU=True, provenance=lambda: fake
    )  # the cell's functions read these names at call time
    fig = plt.figure()
    setup["save_results"]("99_demo/speed", {"ms": [1.5, 2.5]}, {"N": 4}, fig)
    saved = setup["FIGURES"] / "99_demo"
    assert sorted(p.name for p in saved.iterdir()) == ["speed.json", "speed.png"]
    assert json.loads((saved / "speed.json").read_text()) == {
        "provenance": fake,
        "params": {"N": 4},
        "results": {"ms": [1.5, 2.5]},
    }
    setup["ON_GPU"] = False
    record = setup["committed_results"]("99_demo/speed")
    assert record["results"] == {"ms": [1.5, 2.5]}
    assert (
        "measured on NVIDIA H100 80GB HBM3 (2026-11-21, torch 2.13.0)"
        in capsys.readouterr().out
    )


def test_cpu_run_saves_nothing_and_says_when_nothing_is_committed(setup, capsys):
    setup["save_results"]("99_demo/speed", {"ms": [1.0]}, {}, plt.figure())
    assert not setup["FIGURES"].exists(), "a CPU run must not write GPU reference results"
    assert setup["committed_results"]("99_demo/speed") is None
    assert (
        "No GPU reference results are committed yet (figures/99_demo/speed.json)"
        in capsys.readouterr().out
    )
