"""`python -m ember.distributed.run`: torchrun's environment, restarts, and the failing rank's traceback."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import textwrap

import pytest

import ember.distributed as dist
from ember.distributed.run import _describe, parse_args

needs_gloo = pytest.mark.skipif(not dist.is_gloo_available(),
                                reason="ember was built without Gloo (ember._C_gloo or libgloo missing)")

SCRIPT = textwrap.dedent("""
    import os, sys
    import ember
    import ember.distributed as dist

    env = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                      "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT")}
    dist.init_process_group("gloo")  # env:// from the launcher's variables
    t = ember.full((2,), float(dist.get_rank() + 1))
    dist.all_reduce(t)
    restart = int(env["TORCHELASTIC_RESTART_COUNT"])
    print(f"rank {env['RANK']}/{env['WORLD_SIZE']} local {env['LOCAL_RANK']}/{env['LOCAL_WORLD_SIZE']} "
          f"sum {t.tolist()} restart {restart} args {sys.argv[1:]}", flush=True)
    mode = sys.argv[1]
    if dist.get_rank() == 1 and (mode == "always" or (mode == "once" and restart == 0)):
        raise ValueError(f"boom on rank 1 (restart {restart})")
    dist.destroy_process_group()
""")


DDP_SCRIPT = textwrap.dedent("""
    # A torchrun-style training script, as written for PyTorch with the imports renamed.
    import os
    import ember
    import ember.distributed as dist
    from ember import nn
    from ember.nn.parallel import DistributedDataParallel as DDP
    from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

    def main():
        dist.init_process_group(backend="gloo")
        local_rank = int(os.environ["LOCAL_RANK"])
        ember.manual_seed(1234 + local_rank)  # replicas differ until DDP broadcasts rank 0's weights
        model = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)))
        g = ember.Generator().manual_seed(0)
        x = ember.randn(64, 4, generator=g)
        data = TensorDataset(x, x.sum(1, keepdim=True))
        sampler = DistributedSampler(data, shuffle=True, seed=0)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
        opt = ember.optim.SGD(model.parameters(), lr=0.05)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for xb, yb in loader:
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(xb), yb)
                loss.backward()
                opt.step()
        checksum = sum(float(p.double().sum()) for p in model.parameters())
        print(f"rank {dist.get_rank()} checksum {checksum:.12f} loss {float(loss):.4f}", flush=True)
        dist.destroy_process_group()

    if __name__ == "__main__":
        main()
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(tmp_path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port()),
           *args[:-1], str(script), args[-1]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@needs_gloo
def test_launcher_sets_torchruns_environment(tmp_path):
    res = launch(tmp_path, "never")
    assert res.returncode == 0, res.stderr
    for rank in (0, 1):
        assert f"rank {rank}/2 local {rank}/2 sum [3.0, 3.0] restart 0 args ['never']" in res.stdout


@needs_gloo
def test_launcher_restarts_then_succeeds(tmp_path):
    res = launch(tmp_path, "--max-restarts", "1", "once")
    assert res.returncode == 0, res.stderr
    assert "rank 1 (local_rank 1) exited with code 1" in res.stderr
    assert "restarting the worker group (1 of 1 restarts)" in res.stderr
    assert "rank 1/2 local 1/2 sum [3.0, 3.0] restart 1" in res.stdout


@needs_gloo
def test_launcher_reports_the_failing_ranks_traceback(tmp_path):
    res = launch(tmp_path, "--max-restarts", "1", "always")
    assert res.returncode == 1
    report = res.stderr[res.stderr.index("the worker group failed after 1 restart(s)"):]
    assert "first failure: rank 1 (local_rank 1) exited with code 1" in report
    assert "its traceback:" in report and "ValueError: boom on rank 1 (restart 1)" in report


@needs_gloo
def test_launcher_runs_an_unmodified_ddp_training_script(tmp_path):
    script = tmp_path / "train_ddp.py"
    script.write_text(DDP_SCRIPT)
    res = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone", "--nproc-per-node", "2",
                          str(script)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    # (the workers share the launcher's stdout, so their lines may interleave)
    sums = re.findall(r"rank \d checksum (\S+)", res.stdout)
    assert len(sums) == 2 and sums[0] == sums[1], res.stdout  # the replicas stayed identical


def test_exit_descriptions():
    assert _describe(1) == "exited with code 1"
    assert _describe(-9) == "was killed by signal SIGKILL"


def test_launcher_arguments(capsys):
    ns = parse_args(["--nproc_per_node", "3", "--nnodes", "2:2", "--node-rank", "1", "x.py", "--lr", "1"])
    assert (ns.nproc_per_node, ns.nnodes, ns.node_rank, ns.training_script, ns.training_script_args) == \
        (3, 2, 1, "x.py", ["--lr", "1"])
    assert parse_args(["--standalone", "x.py"]).master_port > 0
    for bad, message in [(["--nnodes", "1:4", "x.py"], "elastic membership"),
                         (["--nproc-per-node", "0", "x.py"], "expected at least 1"),
                         (["--nnodes", "2", "--max-restarts", "1", "x.py"], "needs an elastic rendezvous"),
                         (["--nnodes", "2", "--node-rank", "2", "x.py"], "expected a rank in [0, 2)")]:
        with pytest.raises(SystemExit):
            parse_args(bad)
        assert message in capsys.readouterr().err
