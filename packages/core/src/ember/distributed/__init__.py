"""ember.distributed: process groups and collectives on Gloo (torch.distributed's API, CPU tensors).

Importing this package never needs libgloo: the engine (ember._C_gloo) loads on first use, and
is_available() / is_gloo_available() say whether it can. See distributed_c10d.py for the notes on
how collectives run, and ember.distributed.run for the launcher.
"""

from ._errors import DistBackendError, DistError, DistStoreError
from ._grad_bucket import GradBucket
from ._store import FileStore, HashStore, PrefixStore, Store, TCPStore
from .distributed_c10d import *  # noqa: F403 - the public API, listed in its __all__
from .distributed_c10d import __all__ as _c10d_all

__all__ = ["DistBackendError", "DistError", "DistStoreError", "FileStore", "GradBucket", "HashStore", "PrefixStore", "Store",
           "TCPStore", *_c10d_all]
