"""`python -m ember.distributed.run`: torchrun for ember (static rendezvous, restarts on failure).

    python -m ember.distributed.run --nproc-per-node 2 [--max-restarts 1] train.py --lr 0.1

starts --nproc-per-node copies of the script with torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT,
TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID), so a script calls
`init_process_group("gloo")` with the default env:// rendezvous. When a worker fails, the others
are stopped and the whole group starts again, up to --max-restarts times; the failure report
shows the first failing rank's exit code and traceback (read from its stderr, which is passed
through as it comes). Several nodes work with a static --nnodes/--node-rank; restarting then
needs an elastic rendezvous, which ember does not have, so the two are refused together.
"""

from __future__ import annotations

import argparse
import collections
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

__all__ = ["main", "parse_args"]

_TAIL_LINES = 400  # stderr lines kept per worker, to find its traceback


def parse_args(args: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start a distributed ember job on this machine (torchrun's arguments).")
    p.add_argument("--nnodes", default="1", help="number of nodes, N or N:N (static)")
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node", default="1",
                   help="workers per node: a number, or 'cpu'/'auto' for one per CPU")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="single node on a free local port")
    p.add_argument("--max-restarts", "--max_restarts", dest="max_restarts", type=int, default=0)
    p.add_argument("--monitor-interval", "--monitor_interval", dest="monitor_interval", type=float, default=0.1)
    p.add_argument("--run-id", "--run_id", dest="run_id", default=None)
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                   help="run the script as a program, without python")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    ns = p.parse_args(args)
    ns.nnodes = _nnodes(p, ns.nnodes)
    if ns.nproc_per_node in ("cpu", "auto"):
        ns.nproc_per_node = os.cpu_count() or 1
    else:
        try:
            ns.nproc_per_node = int(ns.nproc_per_node)
        except ValueError:
            p.error(f"--nproc-per-node: expected a number, 'cpu' or 'auto', but got {ns.nproc_per_node!r}")
    if ns.nproc_per_node < 1:
        p.error(f"--nproc-per-node: expected at least 1, but got {ns.nproc_per_node}")
    if not 0 <= ns.node_rank < ns.nnodes:
        p.error(f"--node-rank: expected a rank in [0, {ns.nnodes}), but got {ns.node_rank}")
    if ns.max_restarts < 0:
        p.error(f"--max-restarts: expected at least 0, but got {ns.max_restarts}")
    if ns.nnodes > 1 and ns.max_restarts:
        p.error("--max-restarts with --nnodes > 1 needs an elastic rendezvous, which ember does not have")
    if ns.module and ns.no_python:
        p.error("--module and --no-python cannot be used together")
    if ns.standalone:
        if ns.nnodes != 1:
            p.error("--standalone runs a single node; drop --nnodes")
        ns.master_addr = "127.0.0.1"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ns.master_port = s.getsockname()[1]
    return ns


def _nnodes(p: argparse.ArgumentParser, text: str) -> int:
    lo, _, hi = text.partition(":")
    try:
        n, m = int(lo), int(hi or lo)
    except ValueError:
        p.error(f"--nnodes: expected N or N:N, but got {text!r}")
    if n != m:
        p.error(f"--nnodes {text}: elastic membership (min != max) needs an elastic rendezvous, which ember "
                "does not have")
    if n < 1:
        p.error(f"--nnodes: expected at least 1, but got {n}")
    return n


class _Worker:
    """One worker process: stderr passed through line by line, its tail kept for the report."""

    def __init__(self, cmd: list[str], env: dict[str, str], rank: int, local_rank: int,
                 exits: queue.Queue) -> None:
        self.rank, self.local_rank = rank, local_rank
        self.tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self.proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True, errors="replace",
                                     start_new_session=True)  # own process group: stopped as a whole
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        threading.Thread(target=self._wait, args=(exits,), daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stderr:
            self.tail.append(line)
            sys.stderr.write(line)
            sys.stderr.flush()

    def _wait(self, exits: queue.Queue) -> None:
        code = self.proc.wait()
        self._reader.join(timeout=5)  # the traceback is in the tail once the pipe is drained
        exits.put((self, code))

    def stop(self, grace: float = 5.0) -> None:
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass

    def traceback(self) -> str:
        lines = list(self.tail)
        starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
        return "".join(lines[starts[-1]:]) if starts else ""


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _command(ns: argparse.Namespace) -> list[str]:
    if ns.no_python:
        return [ns.training_script, *ns.training_script_args]
    if ns.module:
        return [sys.executable, "-u", "-m", ns.training_script, *ns.training_script_args]
    return [sys.executable, "-u", ns.training_script, *ns.training_script_args]


def _run_group(ns: argparse.Namespace, restart: int, run_id: str) -> tuple[_Worker | None, int]:
    """Runs one attempt of the worker group; returns the first failed worker and its code, or (None, 0)."""
    world = ns.nnodes * ns.nproc_per_node
    exits: queue.Queue = queue.Queue()
    workers = []
    for local in range(ns.nproc_per_node):
        rank = ns.node_rank * ns.nproc_per_node + local
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(ns.nproc_per_node), GROUP_RANK=str(ns.node_rank), GROUP_WORLD_SIZE=str(ns.nnodes),
                   ROLE_RANK=str(rank), ROLE_WORLD_SIZE=str(world), ROLE_NAME="default",
                   MASTER_ADDR=ns.master_addr, MASTER_PORT=str(ns.master_port),
                   TORCHELASTIC_RESTART_COUNT=str(restart), TORCHELASTIC_MAX_RESTARTS=str(ns.max_restarts),
                   TORCHELASTIC_RUN_ID=run_id)
        if ns.nproc_per_node > 1:
            env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun: workers must not oversubscribe the cores
        workers.append(_Worker(_command(ns), env, rank, local, exits))
    try:
        for _ in workers:
            worker, code = exits.get()
            if code != 0:
                return worker, code
        return None, 0
    finally:
        for w in workers:
            w.stop()


def main(args: list[str] | None = None) -> int:
    ns = parse_args(args)
    run_id = ns.run_id or uuid.uuid4().hex[:12]
    # A SIGTERM to the launcher stops the workers through the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    for restart in range(ns.max_restarts + 1):
        start = time.monotonic()
        failed, code = _run_group(ns, restart, run_id)
        if failed is None:
            return 0
        head = (f"ember.distributed.run: rank {failed.rank} (local_rank {failed.local_rank}) {_describe(code)} "
                f"after {time.monotonic() - start:.1f} s")
        if restart < ns.max_restarts:
            print(f"{head}; restarting the worker group ({restart + 1} of {ns.max_restarts} restarts)",
                  file=sys.stderr, flush=True)
            continue
        report = failed.traceback()
        lines = [
            "=" * 72,
            "ember.distributed.run: the worker group failed"
            + (f" after {ns.max_restarts} restart(s)" if ns.max_restarts else ""),
            f"  first failure: rank {failed.rank} (local_rank {failed.local_rank}) {_describe(code)}",
        ]
        if report:
            lines += ["  its traceback:", *("    " + line for line in report.rstrip("\n").split("\n"))]
        else:
            last = "".join(list(failed.tail)[-10:]).rstrip("\n")
            lines.append("  it printed no Python traceback; its last lines on stderr:" if last else
                         "  it printed nothing on stderr")
            lines += ["    " + line for line in last.split("\n") if last]
        lines.append("=" * 72)
        print("\n".join(lines), file=sys.stderr, flush=True)
        return 1
    return 1


if __name__ == "__main__":
    sys.exit(main())
