"""TrainPipelineSparseDist (TorchRec's ``torchrec.distributed.train_pipeline``): a training loop
that sends the next batch's sparse features to the shard owners while this batch trains (Note
[pipelined input distribution] in sharded_embeddingbag.py).

Each ``progress(dataloader_iter)`` trains one batch: it starts the next batch's lengths
all-to-all, runs forward and backward of the current batch, starts the next batch's ids
all-to-all, then steps the optimizer. The model is a DistributedModelParallel whose forward takes
the batch and returns ``(loss, output)``, as TorchRec's DLRMTrain does; the batch holds its KJT in
``sparse_features``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from emberrec.distributed.model_parallel import DistributedModelParallel


class TrainPipelineSparseDist:
    def __init__(self, model: DistributedModelParallel, optimizer: Any, device: Any = None,
                 execute_all_batches: bool = True) -> None:
        if not isinstance(model, DistributedModelParallel):
            raise TypeError(f"TrainPipelineSparseDist pipelines a DistributedModelParallel, got {type(model).__name__}")
        self._model, self._optimizer = model, optimizer
        self._execute_all_batches = execute_all_batches
        self._current: Any = None
        self._started = False

    def _start(self, batch: Any) -> list:
        features = getattr(batch, "sparse_features", None)
        if features is None:
            raise TypeError(f"the batch must carry its KeyedJaggedTensor as .sparse_features, got {type(batch).__name__}")
        return [sharded.input_dist(features) for sharded in self._model._sharded.values()]

    def progress(self, dataloader_iter: Iterator) -> Any:
        """Trains the next batch and returns its model output; StopIteration when none is left."""
        if not self._started:
            self._started = True
            self._current = next(dataloader_iter)
            for pending in self._start(self._current):
                pending.send_ids()
        if self._current is None:
            raise StopIteration
        batch = self._current
        try:
            upcoming = next(dataloader_iter)
            pending_next = self._start(upcoming)
        except StopIteration:
            upcoming, pending_next = None, []
        self._model.train()
        self._optimizer.zero_grad()
        loss, output = self._model(batch)
        loss.backward()
        for pending in pending_next:
            pending.send_ids()
        self._optimizer.step()
        self._current = upcoming
        return output
