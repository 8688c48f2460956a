"""A pytest plugin (not a test module): runs every test inside a TorchDispatchMode that hands each
op straight back (``func(*args, **kwargs)``), so that a whole test file checks that the boxing of
every op's arguments and results through a mode changes nothing. Used by
test_dispatch_mode.py::test_test_files_pass_through_a_mode (`pytest -p dispatch_passthrough`)."""

from __future__ import annotations

import pytest

from ember.utils._python_dispatch import TorchDispatchMode


class Passthrough(TorchDispatchMode):
    calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        Passthrough.calls += 1
        return func(*args, **(kwargs or {}))


@pytest.fixture(autouse=True)
def _through_a_mode():
    with Passthrough():
        yield


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.write_line(f"ops through the mode: {Passthrough.calls}")
