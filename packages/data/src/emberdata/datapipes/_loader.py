"""emberdata's side of the DataLoader's pipeline protocol.

Note [DataLoader pipeline protocol]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``ember.utils.data.DataLoader`` knows nothing of emberdata; it calls two optional methods of
an iterable dataset, which IterDataPipe defines:

- ``_dataloader_shuffle(shuffle)`` once, when the loader is built with ``shuffle`` not None:
  every Shuffler in the graph is turned on or off (one is appended, with a warning, when
  ``shuffle=True`` finds none). The loader uses the pipe this returns.
- ``_dataloader_start_epoch(seed, worker_id, num_workers, batch_size)`` in the process that
  iterates the pipe (the main one or each worker), before each epoch. ``seed`` is the loader's
  seed of the epoch, the same in every process and for any ``num_workers``. Here:
    * with workers, the ShardingFilter keeps shard ``worker_id`` of ``num_workers``
      (MULTIPROCESSING group), in runs of ``batch_size`` items when the loader batches, so a
      worker's batches are exactly the batches of the unsharded order and the loader's
      round-robin hands them out in that order: the same seed gives the same batches for any
      number of workers;
    * random pipes are seeded from a SeedGenerator of ``seed``: upstream of the sharding
      point all alike, downstream per worker (Note [shared and local seeds]). A new seed each
      epoch gives a new order each epoch.
"""

from __future__ import annotations

import warnings
from typing import Any

from emberdata._seeds import SeedGenerator
from emberdata.datapipes.iter._sharding import SHARDING_PRIORITIES
from emberdata.datapipes.utils import (
    _is_sharding,
    apply_sharding,
    apply_shuffle_settings,
    list_dps,
    set_graph_random_seed,
    traverse_dps,
)


def dataloader_shuffle(datapipe: Any, shuffle: bool) -> Any:
    return apply_shuffle_settings(datapipe, shuffle=bool(shuffle))


def dataloader_start_epoch(
    datapipe: Any, seed: int, worker_id: int, num_workers: int, batch_size: int | None
) -> None:
    if num_workers > 0:
        sharding = [dp for dp in list_dps(traverse_dps(datapipe)) if _is_sharding(dp)]
        if not sharding and num_workers > 1 and worker_id == 0:
            warnings.warn(
                f"The DataLoader runs {num_workers} workers over a DataPipe without a "
                "sharding_filter(): every worker yields every sample. Add .sharding_filter() "
                "(after the shuffle) to split the samples between workers.",
                UserWarning,
                stacklevel=2,
            )
        apply_sharding(datapipe, num_workers, worker_id, SHARDING_PRIORITIES.MULTIPROCESSING)
        for dp in sharding:
            set_block = getattr(dp, "_set_block_size", None)
            if set_block is not None:
                set_block(batch_size or 1)
    set_graph_random_seed(datapipe, SeedGenerator(seed).spawn(worker_id))
