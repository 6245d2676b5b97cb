"""The launcher of the setup cell: output per rank, a failing rank's traceback, and a timeout that kills."""

import os
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


def alive(pids):
    return [
        pid
        for pid in pids
        if os.path.exists(f"/proc/{pid}")
        and "Z" not in open(f"/proc/{pid}/stat").read().split()[2]
    ]


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
    assert elapsed < 60, (
        f"the failure took {elapsed:.0f} s to surface; it must come well within the timeout"
    )


def test_hanging_worker_is_killed_at_the_timeout(launch, tmp_path):
    script = worker(
        tmp_path,
        """
        open(os.path.join(os.path.dirname(__file__), f"pid{rank}"), "w").write(str(os.getpid()))
        dist.barrier()
        time.sleep(600)
    """,
    )
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="ran past 15 s"):
        launch(script, 2, timeout=15)
    elapsed = time.monotonic() - start
    assert 15 <= elapsed < 45, f"took {elapsed:.0f} s"
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in range(2)]
    time.sleep(1)
    assert not alive(pids), f"worker processes {alive(pids)} outlived the timeout"
