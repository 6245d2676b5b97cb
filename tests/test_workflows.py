"""The GitHub workflows parse and name the jobs the README documents."""

import pytest
import yaml

from conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def workflow(name):
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    assert data.get("on", data.get(True)), (
        f"{name}: no trigger"
    )  # PyYAML reads the key `on` as True
    return data["jobs"]


def commands(job):
    return [step.get("run", "") for step in job["steps"]] + [
        step.get("uses", "") for step in job["steps"]
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_parses(name):
    for job_id, job in workflow(name).items():
        assert "runs-on" in job and job["steps"], f"{name}:{job_id}"


def test_cpu_job_runs_make_test():
    job = workflow("ci.yml")["cpu"]
    assert job["runs-on"] == "ubuntu-latest" and "make test" in commands(job)


def test_gpu_job_runs_make_test_on_self_hosted_gpu_runner():
    job = workflow("gpu.yml")["gpu"]
    assert {"self-hosted", "gpu"} <= set(job["runs-on"])
    assert any(c.startswith("make test") for c in commands(job))


def test_site_job_builds_and_publishes():
    jobs = workflow("pages.yml")
    assert "make book" in commands(jobs["build"])
    assert any(
        u.startswith("actions/upload-pages-artifact") for u in commands(jobs["build"])
    )
    assert jobs["deploy"]["needs"] == "build"
    assert any(u.startswith("actions/deploy-pages") for u in commands(jobs["deploy"]))


def test_publishing_pushes_the_colab_copies_to_the_branch_the_buttons_open():
    jobs = workflow("pages.yml")
    branch = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["branch"]
    assert jobs["colab"]["needs"] == "build"
    assert any(f"origin colab-new:{branch}" in c for c in commands(jobs["colab"]))
    assert any(u.startswith("actions/upload-artifact") for u in commands(jobs["build"]))


def test_cpu_workflow_runs_every_seed_and_both_version_environments():
    jobs = workflow("ci.yml")
    assert "make seed-test" in commands(jobs["seeds"])
    versions = jobs["versions"]
    assert set(versions["strategy"]["matrix"]["versions"]) == {"floor", "newest"}
    assert any(c.startswith("make version-test") for c in commands(versions))
    for name in versions["strategy"]["matrix"]["versions"]:
        assert (ROOT / "tests" / "versions" / f"{name}.txt").exists(), name


def test_gpu_job_runs_one_notebook_at_a_time():
    """Two notebooks benchmarking on one GPU at once would time each other's kernels."""
    job = workflow("gpu.yml")["gpu"]
    runs = [c for c in commands(job) if c.startswith("make test")]
    assert runs and all(
        "XDIST=" in c and "-n" not in c.replace("XDIST=", "") for c in runs
    )


def test_cpu_job_checks_the_compile_matrix_on_three_tritons():
    job = workflow("ci.yml")["cpu"]
    assert "make compile-check-full" in commands(job)
    assert any(c.startswith("make compile-check-versions") for c in commands(job))
    versions = str(
        next(s for s in job["steps"] if "setup-python" in s.get("uses", ""))["with"]
    )
    assert "3.13" in versions, "the floor's and the newest environments use Python 3.13"
