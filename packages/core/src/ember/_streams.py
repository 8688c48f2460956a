"""The device-generic ``ember.Stream`` and ``ember.Event`` (torch.Stream, torch.Event) and
``ember.get_device_module`` (torch.get_device_module).

Ember's generic streams and events are CPU ones, as PyTorch's on its CPU-only build: a CPU op is
done when its call returns, so a stream has nothing pending (``query()`` is True,
``synchronize()`` returns at once) and CPU events cannot be recorded ("cpu backend doesn't support
events", PyTorch's RuntimeError, also from the stream calls that record one). Other device types
raise: an integer or no device means the accelerator, and a CPU-only build has none. CUDA
streams and events are ``ember.cuda.Stream`` / ``ember.cuda.Event``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import _C, accelerator

__all__ = ["Event", "Stream", "get_device_module"]

_NO_EVENTS = "cpu backend doesn't support events."


def _cpu_device(device: Any, what: str) -> Any:
    """The CPU device a generic stream or event is made on (PyTorch ignores a CPU index)."""
    if device is None or isinstance(device, int):
        if device is None and accelerator.current_accelerator() is None:
            return _C.device("cpu")
        raise RuntimeError("Cannot access accelerator device when none is available.")
    dev = _C.device(device) if isinstance(device, str) else device
    if not isinstance(dev, _C.device):
        raise TypeError(f"{what}: expected a device, a device string or an int, got {type(device).__name__}")
    if dev.type != "cpu":
        raise RuntimeError(f"ember.{what} is a CPU {what.lower()} in this build: a {dev.type!r} one is not "
                           f"supported (ember.cuda.{what} gives CUDA ones)")
    return _C.device("cpu")


class Stream:
    """A CPU stream: work on it is done as soon as it was issued."""

    def __init__(self, device: Any = None, *, priority: int = 0) -> None:
        self.device = _cpu_device(device, "Stream")
        self.device_type = "cpu"
        self.device_index = -1
        self.stream_id = 0
        self.priority = priority

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"Stream.wait_event: expected an ember.Event, got {type(event).__name__}")

    def wait_stream(self, stream: Stream) -> None:
        raise RuntimeError(_NO_EVENTS)

    def record_event(self, event: Event | None = None) -> Event:
        raise RuntimeError(_NO_EVENTS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        return (self.device_type, self.device_index, self.stream_id) == (
            other.device_type, other.device_index, other.stream_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_index, self.stream_id))

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __repr__(self) -> str:
        return f"ember.Stream device_type={self.device_type}, device_index={self.device_index}, stream_id=0"


class Event:
    """A CPU event: never pending, and (as PyTorch's) not recordable."""

    def __init__(self, device: Any = None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self.device = _cpu_device(device, "Event")
        self.device_type = "cpu"
        self.device_index = -1
        self.event_id = 0
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)

    def record(self, stream: Stream | None = None) -> None:
        raise RuntimeError(_NO_EVENTS)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def __repr__(self) -> str:
        return (f"ember.Event device_type={self.device_type}, device_index={self.device_index}, "
                f"event_flag={int(self.enable_timing)}, event_id=0")


def get_device_module(device: Any = None) -> Any:
    """The ``ember.<type>`` module of a device (an ember.device or a string), or of the current
    accelerator, or ``ember.cpu`` when there is none (``device=None``)."""
    import ember

    if isinstance(device, _C.device):
        name = device.type
    elif isinstance(device, str):
        name = _C.device(device).type
    elif device is None:
        current = accelerator.current_accelerator()
        name = current.type if current is not None else "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect ember.device, str, or None")
    module = getattr(ember, name, None)
    if not isinstance(module, ModuleType):
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as 'ember.{name}'.")
    return module
