"""The launcher of the setup cell: output per rank, a failing rank's traceback, and a timeout that kills."""

import pathlib
import textwrap
import time

import pytest

WORKER_HEAD = """
import argparse, os, time
import torch, torch.distributed as dist
parser = argparse.ArgumentParser()
parser.add_argument("--backend", required=True)
parser.add_argument("--mode", default="ok")
args = parser.parse_args()
dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
"""


@pytest.fixture
def launch(setup_cell):
    return setup_cell["launch"]


def worker(tmp_path, body):
    path = tmp_path / "worker.py"
    path.write_text(WORKER_HEAD + textwrap.dedent(body))
    return path


def running(script):
    """Live processes (torchrun and its ranks) whose command line names `script`."""
    found = []
    for proc in pathlib.Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # not a process, or it ended while we looked
        if str(script).encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def test_output_is_prefixed_by_rank(launch, tmp_path, capsys):
    script = worker(
        tmp_path,
        """
        total = torch.tensor([float(rank)])
        dist.all_reduce(total)
        print(f"backend={args.backend} world={world} sum={total.item():.0f}")
        dist.destroy_process_group()
    """,
    )
    launch(script, 3, timeout=120)
    out = capsys.readouterr().out.splitlines()
    assert out == [f"[rank{r}] backend=gloo world=3 sum=3" for r in range(3)]


def test_failing_rank_raises_with_its_traceback(launch, tmp_path):
    script = worker(
        tmp_path,
        """
        if rank == 2:
            raise ValueError("the bad shard is on rank 2")
        dist.barrier()  # the other ranks wait for rank 2, which never comes
    """,
    )
    start = time.monotonic()
    with pytest.raises(RuntimeError) as error:
        launch(script, 3, timeout=120)
    elapsed = time.monotonic() - start
    message = str(error.value)
    assert "rank 2 of 3 failed" in message
    assert "Traceback (most recent call last)" in message
    assert "ValueError: the bad shard is on rank 2" in message
    raise_line = (
        script.read_text()
        .splitlines()
        .index('    raise ValueError("the bad shard is on rank 2")')
        + 1
    )
    assert (
        f"line {raise_line}, in <module>" in message
    )  # the failing line, from rank 2's own traceback
    # A RuntimeError, not the launcher's TimeoutError: the failure surfaced before the timeout
    # (how long it took is printed, not asserted: a busy machine starts ranks slowly).
    print(f"the failing rank surfaced after {elapsed:.0f} s (timeout 120 s)")


def test_hanging_worker_is_killed_at_the_timeout(launch, tmp_path):
    script = worker(
        tmp_path,
        """
        dist.barrier()
        time.sleep(600)
    """,
    )
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="ran past 15 s"):
        launch(script, 2, timeout=15)
    elapsed = time.monotonic() - start
    assert elapsed >= 15, f"stopped after {elapsed:.0f} s, before its timeout"
    print(f"stopped after {elapsed:.0f} s (timeout 15 s)")
    # Whether the ranks had started or torchrun was still importing torch (on a busy machine),
    # no process of the run may outlive it.
    time.sleep(1)
    assert not running(script), f"processes {running(script)} outlived the timeout"
