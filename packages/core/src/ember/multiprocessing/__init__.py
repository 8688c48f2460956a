"""ember.multiprocessing: the standard library's multiprocessing, with Ember tensors shared between
processes (torch.multiprocessing).

Everything of `multiprocessing` is here under the same names (Process, Queue, Pipe, Pool,
get_context, ...). Importing ember registers reducers on multiprocessing's pickler, so an Ember
tensor or storage sent to another process (through a Queue, a Pipe, or a spawned Process's
arguments) is first moved into shared memory (Tensor.share_memory_) and the receiver maps the
same memory: writes on either side are seen by the other. How the memory is named depends on the
sharing strategy (set_sharing_strategy; see ember/_shared_memory.py). `spawn` and
`start_processes` run a function in N processes and re-raise a child's exception in the parent.
CUDA tensors cannot be sent (PyTorch's CUDA IPC is not implemented).
"""

import multiprocessing
from multiprocessing import *  # noqa: F403 - the standard API under the same names, as torch.multiprocessing

from .._shared_memory import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from . import reductions
from .spawn import (  # noqa: F401 - public here, as in torch.multiprocessing
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

# as torch.multiprocessing's: spawn & co. are attributes, not star-exported
__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", *multiprocessing.__all__]

reductions.init_reductions()
