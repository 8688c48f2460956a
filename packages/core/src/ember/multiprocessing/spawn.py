"""spawn / start_processes (torch.multiprocessing.spawn): run fn(i, *args) in nprocs processes,
and when one fails, stop the others and raise its error in the parent.

A child that raises writes its formatted traceback to its own error file (a one-shot message
needs no Queue, which could deadlock with a dying process), so the parent's
ProcessRaisedException carries the child's traceback; a child that dies without one (a signal,
os._exit) gives ProcessExitedException with its exit code or signal name.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import traceback
import warnings


class ProcessException(Exception):
    """A child process of spawn / start_processes failed: its index and pid."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child process raised an exception; the message ends with the child's traceback."""


class ProcessExitedException(ProcessException):
    """A child process ended with a non-zero exit code or by a signal, without raising."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _die_with_parent() -> None:
    """Linux: SIGINT this process when its parent dies, so that no child outlives a killed parent."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGINT)  # 1: PR_SET_PDEATHSIG


def _wrap(fn, i: int, args: tuple, error_file: str) -> None:  # noqa: ANN001
    """A child's body: fn(i, *args), with an exception's traceback left in error_file."""
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted us while stopping the others
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes that start_processes(join=False) started; join() waits for them."""

    def __init__(self, processes: list, error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: until one ends) for processes to end. True when all
        have ended successfully, False while some still run; if one failed, the others are
        terminated and its error is raised (ProcessRaisedException or ProcessExitedException)."""
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        error = self._error(failed)
        self._cleanup()
        raise error

    def _error(self, index: int) -> ProcessException:
        process = self.processes[index]
        try:
            with open(self.error_files[index]) as f:
                trace = f.read()
        except FileNotFoundError:
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                return ProcessExitedException(f"process {index} terminated with signal {name}", error_index=index,
                                              error_pid=process.pid, exit_code=code, signal_name=name)
            return ProcessExitedException(f"process {index} terminated with exit code {code}", error_index=index,
                                          error_pid=process.pid, exit_code=code)
        return ProcessRaisedException(f"\n\n-- Process {index} terminated with the following error:\n{trace}",
                                      index, process.pid)

    def _cleanup(self) -> None:
        for name in self.error_files:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass


def start_processes(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,  # noqa: ANN001
                    start_method: str = "spawn") -> ProcessContext | None:
    """Start nprocs processes running fn(i, *args) (i = 0 .. nprocs-1) with the given start
    method. join=True waits for all of them (None); join=False returns their ProcessContext."""
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        # A name that does not exist yet: the child creates the file only when it fails.
        fd, name = tempfile.mkstemp(prefix="ember-errorfile-", suffix=".txt")
        os.close(fd)
        os.unlink(name)
        process = context.Process(target=_wrap, args=(fn, i, args, name), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(name)
    result = ProcessContext(processes, error_files)
    if not join:
        return result
    while not result.join():
        pass
    return None


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,  # noqa: ANN001
          start_method: str = "spawn") -> ProcessContext | None:
    """start_processes with the "spawn" start method (another start_method warns and is ignored,
    as in PyTorch: use start_processes for it)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      f"start_method use:\n\t\t ember.multiprocessing.start_processes(...)", stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
