"""DataLoader2: runs a DataPipe graph through a reading service (``torchdata.dataloader2``).

Note [DataLoader2 seeds and state]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A DataLoader2 holds a root seed (``seed(s)``, or one drawn from ember's default generator, so
``ember.manual_seed`` reproduces an unseeded loader) and an epoch counter. Epoch ``e`` runs with
``SeedGenerator(derive(root, e))``; the reading services spawn it per rank and per worker, so
every seed is a pure function of (root, epoch, rank, worker) (Note [counter-based seeds]): the
same root gives the same epochs, and each epoch differs from the last.

``state_dict()`` records the pipeline as it was before the reading service adapted it, the
root seed, the epoch and how many items of it were yielded. ``from_state`` /
``load_state_dict`` rebuild the loader; its next epoch replays the recorded one with the same
seeds and skips the items already yielded, so iteration resumes where the checkpoint was taken
(for pipelines whose output depends only on their seeds).
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from emberdata._seeds import SeedGenerator, _check_seed, _random_root, derive
from emberdata.dataloader2.reading_service import (
    CheckpointableReadingServiceInterface,
    InProcessReadingService,
    ReadingServiceInterface,
)
from emberdata.datapipes._base import IterDataPipe, MapDataPipe

T_co = TypeVar("T_co", covariant=True)

SERIALIZED_DATAPIPE_KEY_NAME = "serialized_datapipe"
READING_SERVICE_STATE_KEY_NAME = "reading_service_state"
RANDOMNESS_STATE_KEY_NAME = "randomness_state"

__all__ = ["DataLoader2", "DataLoader2Iterator"]


class DataLoader2Iterator(Iterator[T_co]):
    """The iterator ``iter(DataLoader2)`` returns; only the newest one of a loader is valid."""

    def __init__(self, dataloader: DataLoader2[T_co], iterator_id: int) -> None:
        self.dataloader = dataloader
        self.iterator_id = iterator_id

    def __next__(self) -> T_co:
        loader = self.dataloader
        if loader._terminated:
            raise RuntimeError("Cannot iterate over the DataLoader as it has already been shut down")
        if self.iterator_id != loader._valid_iterator_id:
            raise RuntimeError(
                "This iterator has been invalidated because another iterator has been created "
                "from the same DataLoader2. This may be caused by multiple references to the "
                "same DataLoader2."
            )
        if loader._reset_iter:
            raise StopIteration  # this epoch is over; iter() starts the next
        assert loader._datapipe_iter is not None
        try:
            item = next(loader._datapipe_iter)
        except StopIteration:
            loader._end_epoch()
            raise
        except BaseException:
            loader._reset_iter = True  # a failed epoch starts over (same seeds) on the next iter()
            raise
        loader._num_yielded += 1
        return item


class DataLoader2(Generic[T_co]):
    """Loads from a DataPipe graph through a reading service.

    Args:
        datapipe: the IterDataPipe or MapDataPipe; a deep copy is taken, so the same pipe can
            feed several loaders. None only with ``load_state_dict`` right after.
        datapipe_adapter_fn: an Adapter (or several) applied to the copy once, now
        reading_service: how to run it; default :class:`InProcessReadingService` (which seeds
            the graph every epoch; torchdata iterates it unseeded)

    ``iter()`` starts an epoch, or continues the current one (invalidating older iterators);
    the epoch ends when its iterator is exhausted. An epoch whose iterator raised starts over,
    with the same seeds, at the next ``iter()``. See Note [DataLoader2 seeds and state].
    """

    def __init__(
        self,
        datapipe: IterDataPipe[T_co] | MapDataPipe[T_co] | None,
        datapipe_adapter_fn: Iterable[Callable[[Any], Any]] | Callable[[Any], Any] | None = None,
        reading_service: ReadingServiceInterface | None = None,
    ) -> None:
        if datapipe is not None and not isinstance(datapipe, (IterDataPipe, MapDataPipe)):
            raise TypeError(
                f"DataLoader2 expected an IterDataPipe or a MapDataPipe, but got "
                f"{type(datapipe).__name__}; wrap a Dataset in SequenceWrapper and an iterable "
                "in IterableWrapper"
            )
        if reading_service is not None and not isinstance(reading_service, ReadingServiceInterface):
            raise TypeError(
                f"DataLoader2 expected a ReadingServiceInterface reading_service, but got "
                f"{type(reading_service).__name__}"
            )
        if datapipe_adapter_fn is None:
            adapters: list[Callable[[Any], Any]] = []
        elif callable(datapipe_adapter_fn):
            adapters = [datapipe_adapter_fn]
        else:
            adapters = list(datapipe_adapter_fn)
        for adapter in adapters:
            if not callable(adapter):
                raise TypeError(f"DataLoader2 expected callable adapters, but got {adapter!r}")
        self.datapipe_adapter_fns = adapters
        self.reading_service = reading_service or InProcessReadingService()
        self.datapipe = self._adapt(self._copy(datapipe)) if datapipe is not None else None
        self._root = _random_root()
        self._epoch = 0
        self._num_yielded = 0
        self._skip = 0  # items of the current epoch to skip (resuming from a state dict)
        self._initialized = False
        self._restore_state: bytes | None = None
        self._reset_iter = True
        self._terminated = False
        self._valid_iterator_id: int | None = None
        self._datapipe_iter: Iterator[T_co] | None = None
        self._pristine: Any = None  # the graph before the reading service adapted it

    @staticmethod
    def _copy(datapipe: Any) -> Any:
        try:
            return copy.deepcopy(datapipe)
        except TypeError:
            warnings.warn(
                "The DataPipe graph could not be deep-copied; DataLoader2 uses it as it is, so "
                "its state is shared with other users of the graph.",
                stacklevel=3,
            )
            return datapipe

    def _adapt(self, datapipe: Any) -> Any:
        for adapter in self.datapipe_adapter_fns:
            datapipe = adapter(datapipe)
        return datapipe

    def seed(self, seed: int) -> None:
        """Set the root seed; the next epoch is epoch 0 of that seed."""
        self._root = _check_seed("DataLoader2.seed", seed)
        self._epoch = 0

    def __iter__(self) -> DataLoader2Iterator[T_co]:
        if self._terminated:
            raise RuntimeError("Cannot iterate over the DataLoader as it has already been shut down")
        if self.datapipe is None:
            raise RuntimeError("DataLoader2 has no datapipe: call load_state_dict first")
        if self._reset_iter:
            if not self._initialized:
                self._pristine = self._copy(self.datapipe)  # pickled by state_dict only
                if self._restore_state is not None and isinstance(
                    self.reading_service, CheckpointableReadingServiceInterface
                ):
                    self.datapipe = self.reading_service.restore(self.datapipe, self._restore_state)
                else:
                    self.datapipe = self.reading_service.initialize(self.datapipe)
                self._initialized = True
            self._close_epoch_iterator()
            generator = SeedGenerator(derive(self._root, self._epoch))
            reset = self.reading_service.initialize_iteration(generator)
            if reset is not None:
                self.datapipe = reset(self.datapipe)
            self._datapipe_iter = iter(self.datapipe)
            self._num_yielded = 0
            for _ in range(self._skip):
                if next(self._datapipe_iter, _END) is _END:
                    break
                self._num_yielded += 1
            self._skip = 0
            self._reset_iter = False
        self._valid_iterator_id = 0 if self._valid_iterator_id is None else self._valid_iterator_id + 1
        return DataLoader2Iterator(self, self._valid_iterator_id)

    def _end_epoch(self) -> None:
        self.reading_service.finalize_iteration()
        self._epoch += 1
        self._reset_iter = True

    def _close_epoch_iterator(self) -> None:
        close = getattr(self._datapipe_iter, "close", None)
        if close is not None:
            close()  # stops read-ahead threads of the previous epoch
        self._datapipe_iter = None

    def shutdown(self) -> None:
        """Stop the reading service (its worker processes); the loader cannot be iterated after."""
        if not self._terminated:
            self._terminated = True
            self._close_epoch_iterator()
            self.reading_service.finalize()

    def __enter__(self) -> DataLoader2[T_co]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown nothing is left to tell
            self.shutdown()

    # --- state ---------------------------------------------------------------------------

    @staticmethod
    def _serialize(datapipe: Any) -> bytes:
        try:
            return pickle.dumps(datapipe)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            raise TypeError(
                f"DataLoader2.state_dict needs a picklable DataPipe graph: {error} (use named "
                "functions instead of lambdas)"
            ) from error

    def state_dict(self) -> dict[str, Any]:
        """The loader's state: see Note [DataLoader2 seeds and state]."""
        if self.datapipe is None:
            raise RuntimeError("DataLoader2 has no datapipe to save")
        serialized = self._serialize(self._pristine if self._initialized else self.datapipe)
        rs_state = None
        if isinstance(self.reading_service, CheckpointableReadingServiceInterface):
            rs_state = self.reading_service.checkpoint()
        mid_epoch = not self._reset_iter
        return {
            SERIALIZED_DATAPIPE_KEY_NAME: serialized,
            READING_SERVICE_STATE_KEY_NAME: rs_state,
            RANDOMNESS_STATE_KEY_NAME: {
                "root": self._root,
                "epoch": self._epoch,
                "num_yielded": self._num_yielded if mid_epoch else 0,
            },
        }

    @classmethod
    def from_state(
        cls, state: dict[str, Any], reading_service: ReadingServiceInterface | None = None
    ) -> DataLoader2[Any]:
        """A new loader from ``state_dict()``'s output (adapters were applied before saving)."""
        loader: DataLoader2[Any] = cls(None, reading_service=reading_service)
        loader.load_state_dict(state)
        return loader

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore ``state_dict()``'s output; only before the loader is first iterated."""
        if self._initialized:
            raise RuntimeError("DataLoader2.load_state_dict must be called before iterating")
        try:
            serialized = state_dict[SERIALIZED_DATAPIPE_KEY_NAME]
            randomness = state_dict[RANDOMNESS_STATE_KEY_NAME]
        except (KeyError, TypeError):
            raise ValueError(
                "DataLoader2.load_state_dict expected the dict that state_dict() returns"
            ) from None
        # The state dict is the user's own checkpoint: unpickling it is loading their pipeline.
        self.datapipe = pickle.loads(serialized)
        self._restore_state = state_dict.get(READING_SERVICE_STATE_KEY_NAME)
        self._root = _check_seed("DataLoader2.load_state_dict", randomness["root"])
        self._epoch = randomness["epoch"]
        self._skip = randomness["num_yielded"]


_END = object()
