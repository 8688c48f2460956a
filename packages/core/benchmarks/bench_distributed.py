"""ember.distributed on 2 processes beside PyTorch's Gloo backend (when torch is installed).

all_reduce (SUM, float32) from 1 KB to 64 MB: time per call and bus bandwidth; then a DDP
training step of an MLP against the same step in one process. Each library runs in its own pair
of worker processes (this script with --worker); rank 0 reports its timings as JSON.

ratio = Ember time / PyTorch time (lower is better; 1.00 is parity).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

SIZES = [1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 23, 1 << 26]  # bytes
WORLD = 2


def _best(fn, barrier, reps: int = 5) -> float:
    """Seconds per call: the best of `reps` rounds (each about 0.1 s, ranks started together)."""
    fn()
    barrier()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    number = max(1, min(200, int(0.1 / max(once, 1e-6))))
    # every rank must run the same number of calls: rank 0's count wins
    number = _agree(number)
    best = float("inf")
    for _ in range(reps):
        barrier()
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


_agree = None  # set by the worker: broadcasts rank 0's int


def worker(lib: str, rank: int, port: int) -> None:
    global _agree
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD))
    if lib == "ember":
        import ember as t
        import ember.distributed as dist
        from ember.nn.parallel import DistributedDataParallel as DDP
    else:
        import torch as t
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
    t.set_num_threads(1)
    dist.init_process_group("gloo")

    def agree(n: int) -> int:
        box = t.tensor([n], dtype=t.int64)
        dist.broadcast(box, 0)
        return int(box.item())

    _agree = agree
    results = {}
    for size in SIZES:
        x = t.ones(size // 4, dtype=t.float32)
        results[f"all_reduce {size // 1024} KB"] = _best(lambda x=x: dist.all_reduce(x), dist.barrier)

    t.manual_seed(0)
    model = t.nn.Sequential(t.nn.Linear(256, 512), t.nn.ReLU(), t.nn.Linear(512, 512), t.nn.ReLU(),
                            t.nn.Linear(512, 10))
    x, y = t.randn(64, 256), t.randint(0, 10, (64,))
    loss_fn = t.nn.CrossEntropyLoss()

    def step(m, opt):
        def run():
            opt.zero_grad()
            loss_fn(m(x), y).backward()
            opt.step()
        return run

    local = step(model, t.optim.SGD(model.parameters(), lr=0.01))
    results["MLP step, one process"] = _best(local, dist.barrier)
    ddp = DDP(model)
    results["MLP step, DDP on 2"] = _best(step(ddp, t.optim.SGD(ddp.parameters(), lr=0.01)), dist.barrier)
    if rank == 0:
        print(json.dumps(results), flush=True)
    dist.destroy_process_group()


def run_pair(lib: str) -> dict | None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", lib, str(r), str(port)], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, OMP_NUM_THREADS="1")) for r in range(WORLD)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode for p in procs):
        print(f"{lib}: a worker failed (codes {[p.returncode for p in procs]})", file=sys.stderr)
        return None
    return json.loads(outs[0].strip().splitlines()[-1])


def _bus_gbs(size: int | None, seconds: float) -> str:
    """Bus bandwidth of an all-reduce: 2 (n-1)/n of the buffer crosses each link."""
    return f"{2 * (WORLD - 1) / WORLD * size / seconds / 1e9:6.2f}" if size else " " * 6


def main() -> None:
    import ember.distributed
    if not ember.distributed.is_gloo_available():
        print("ember.distributed: Gloo is not available in this build; nothing to measure")
        return
    try:
        import torch.distributed
        has_torch = torch.distributed.is_available() and torch.distributed.is_gloo_available()
    except ImportError:
        has_torch = False
    ours = run_pair("ember")
    theirs = run_pair("torch") if has_torch else None
    if ours is None:
        sys.exit(1)
    width = max(map(len, ours))
    print(f"{'benchmark (2 processes, Gloo)':{width}s} {'ember':>11s} {'GB/s':>6s} {'torch':>11s} {'GB/s':>6s} {'ratio':>7s}")
    for name, e in ours.items():
        size = next((s for s in SIZES if name == f"all_reduce {s // 1024} KB"), None)
        if theirs:
            p = theirs[name]
            print(f"{name:{width}s} {e * 1e6:10.1f}us {_bus_gbs(size, e)} {p * 1e6:10.1f}us {_bus_gbs(size, p)} "
                  f"{e / p:7.2f}")
        else:
            print(f"{name:{width}s} {e * 1e6:10.1f}us {_bus_gbs(size, e)} {'(no torch)':>11s}")
    step, ddp = ours["MLP step, one process"], ours["MLP step, DDP on 2"]
    print(f"DDP step / one-process step: ember {ddp / step:.2f}"
          + (f", torch {theirs['MLP step, DDP on 2'] / theirs['MLP step, one process']:.2f}" if theirs else ""))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
