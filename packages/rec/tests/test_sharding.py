"""Sharded execution (DistributedModelParallel) in 2 and 4 processes on loopback against the
unsharded module: every sharding type, dense and fused kernels, the planner's own plan, and
state_dict gathering. The checks run in sharding_jobs.py; each run has a deadline, so a hang fails."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import ember.distributed as dist

JOBS = pathlib.Path(__file__).with_name("sharding_jobs.py")
pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="ember was built without Gloo")


def run(job: str, world: int, tmp_path, deadline: float = 120) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    init = f"file://{tmp_path}/store"
    procs = [subprocess.Popen([sys.executable, str(JOBS), job, str(r), str(world), init], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]
    try:
        outputs = [p.communicate(timeout=deadline) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail(f"{job} on {world} processes did not finish within {deadline} s")
    for rank, (p, (out, err)) in enumerate(zip(procs, outputs, strict=True)):
        assert p.returncode == 0 and "checks: " in out, f"rank {rank} of {job}:\n{err[-4000:]}"


@pytest.mark.parametrize("world", [2, 4])
def test_every_sharding_type_matches_the_unsharded_module(world, tmp_path):
    run("dense", world, tmp_path)


@pytest.mark.parametrize("world", [2, 4])
def test_fused_kernels_train_like_the_unsharded_module(world, tmp_path):
    run("fused", world, tmp_path)


def test_planner_plans_and_executes(tmp_path):
    run("planned", 2, tmp_path)


def test_train_pipeline_matches_the_plain_loop(tmp_path):
    run("pipeline", 2, tmp_path)


@pytest.mark.parametrize("world", [2, 4])
def test_rec_metrics_reduce_across_processes(world, tmp_path):
    run("metrics", world, tmp_path)
