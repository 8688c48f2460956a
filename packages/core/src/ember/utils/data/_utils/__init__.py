"""Helpers of the DataLoader (as torch.utils.data._utils): collation, fetchers, the worker loop.

``python_exit_status`` is set by an ``atexit`` hook so that iterators being finalized while the
interpreter shuts down skip their worker-shutdown protocol (the daemonic workers are terminated by
multiprocessing itself then), as PyTorch does.
"""

from __future__ import annotations

import atexit
import sys
import traceback

IS_WINDOWS = sys.platform == "win32"

# Interval (seconds) at which the main process and the workers check each other's liveness while
# blocked on a queue.
MP_STATUS_CHECK_INTERVAL = 5.0

python_exit_status = False


def _set_python_exit_flag() -> None:
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


class KeyErrorMessage(str):
    r"""str subclass that returns itself in repr, so a re-raised KeyError shows its lines as is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    r"""Wraps an exception plus its traceback text so it can cross a process boundary
    (as ``torch._utils.ExceptionWrapper``)."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        # It is important that we don't store exc_info, see
        # NOTE [ Python Traceback Reference Cycle Problem ]
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_name = self.exc_type.__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        r"""Reraises the wrapped exception in the current thread."""
        # Format a message such as: "Caught ValueError in DataLoader worker
        # process 2. Original Traceback:", followed by the traceback.
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            # KeyError calls repr() on its argument (usually a dict key). This
            # makes stack traces unreadable. It will not be changed in Python
            # (https://bugs.python.org/issue2651), so we work around it.
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            # Some exceptions have first argument as non-str but explicitly
            # have message field
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # If the exception takes multiple arguments or otherwise can't
            # be constructed, don't try to instantiate since we don't know how to
            raise RuntimeError(msg) from None
        raise exception


from . import collate, fetch, worker  # noqa: E402,F401 - after the names they import from here
