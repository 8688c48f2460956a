"""Taking the storage of what is not sharded off each rank before shards are placed."""

from __future__ import annotations

import copy
import logging
import math

from ember import nn
from emberrec.distributed.planner.constants import BIGINT_DTYPE, POOLING_FACTOR
from emberrec.distributed.planner.enumerators import _shardable_modules
from emberrec.distributed.planner.types import (
    ParameterConstraints,
    PlannerError,
    PlannerErrorType,
    Storage,
    StorageReservation,
    Topology,
)
from emberrec.distributed.planner.utils import sharder_name, storage_repr_in_gb
from emberrec.distributed.types import ModuleSharder, get_tensor_size_bytes

logger: logging.Logger = logging.getLogger(__name__)


def _on_compute_device(topology: Topology, nbytes: int) -> Storage:
    # what runs beside the shards lives where the compute does: HBM on cuda, DDR on cpu
    return Storage(hbm=nbytes, ddr=0) if topology.compute_device == "cuda" else Storage(hbm=0, ddr=nbytes)


def _module_size(module: nn.Module, multiplier: float) -> int:
    params = sum(multiplier * get_tensor_size_bytes(p) for p in module.parameters())
    buffers = sum(get_tensor_size_bytes(b) for b in module.buffers())
    return round(params + buffers)


def _reserve_percentage(topology: Topology, percent: float) -> None:
    # Keeps a margin of the memory the shards compete for: HBM on cuda. TorchRec cuts HBM only,
    # which on cpu would leave no margin at all, so on cpu the margin comes off DDR.
    for device in topology.devices:
        if topology.compute_device == "cuda":
            device.storage.hbm = int((1 - percent) * device.storage.hbm)
        else:
            device.storage.ddr = int((1 - percent) * device.storage.ddr)


def _batch_inputs_and_shardable_modules(
    module: nn.Module,
    sharders: list[ModuleSharder[nn.Module]],
    batch_size: int,
    constraints: dict[str, ParameterConstraints] | None,
) -> tuple[list[float], list[nn.Module]]:
    sharder_map = {sharder_name(s.module_type): s for s in sharders}
    batch_inputs: list[float] = []
    shardable = []
    for _, child in _shardable_modules(module, sharder_map):
        shardable.append(child)
        for name in sharder_map[sharder_name(type(child))].shardable_parameters(child):
            c = constraints.get(name) if constraints else None
            pooling_factors = c.pooling_factors if c else [POOLING_FACTOR]
            sizes = c.batch_sizes if c and c.batch_sizes else [batch_size] * len(pooling_factors)
            batch_inputs += [pf * b for pf, b in zip(pooling_factors, sizes, strict=True)]
    return batch_inputs, shardable


class FixedPercentageStorageReservation(StorageReservation):
    """Reserves a fixed share of each rank's compute-device memory."""

    def __init__(self, percentage: float) -> None:
        if not 0 <= percentage <= 1:
            raise ValueError(f"percentage must be in [0, 1], got {percentage}")
        self._percentage = percentage

    def reserve(
        self,
        topology: Topology,
        batch_size: int,
        module: nn.Module,
        sharders: list[ModuleSharder[nn.Module]],
        constraints: dict[str, ParameterConstraints] | None = None,
    ) -> Topology:
        reserved = copy.deepcopy(topology)
        _reserve_percentage(reserved, self._percentage)
        return reserved


class HeuristicalStorageReservation(StorageReservation):
    """Reserves, on every rank: ``percentage`` of the compute-device memory as a margin; the
    dense (unsharded) parameters times ``parameter_multiplier`` (weights, optimizer state about
    twice more, DDP buckets about three times more: 6) plus buffers, or ``dense_tensor_estimate``
    bytes; and the input ids (``KeyedJaggedTensor``s) of 2 pipelined batches with 10 internal
    copies each (20 x 8 bytes x ids per batch)."""

    def __init__(
        self,
        percentage: float,
        parameter_multiplier: float = 6.0,
        dense_tensor_estimate: int | None = None,
    ) -> None:
        if not 0 <= percentage <= 1:
            raise ValueError(f"percentage must be in [0, 1], got {percentage}")
        self._percentage = percentage
        self._parameter_multiplier = parameter_multiplier
        self._dense_tensor_estimate = dense_tensor_estimate
        self._dense_storage: Storage | None = None
        self._kjt_storage: Storage | None = None

    def reserve(
        self,
        topology: Topology,
        batch_size: int,
        module: nn.Module,
        sharders: list[ModuleSharder[nn.Module]],
        constraints: dict[str, ParameterConstraints] | None = None,
    ) -> Topology:
        reserved = copy.deepcopy(topology)
        batch_inputs, shardable = _batch_inputs_and_shardable_modules(module, sharders, batch_size, constraints)
        _reserve_percentage(reserved, self._percentage)

        dense = _module_size(module, self._parameter_multiplier) - sum(
            _module_size(m, self._parameter_multiplier) for m in shardable
        )
        if self._dense_tensor_estimate is not None:
            logger.info(f"dense tensor estimate {dense} bytes overridden by the user's {self._dense_tensor_estimate} bytes")
            dense = self._dense_tensor_estimate
        self._dense_storage = _on_compute_device(reserved, dense)
        self._kjt_storage = _on_compute_device(reserved, math.ceil(sum(batch_inputs) * BIGINT_DTYPE) * 20)
        for device in reserved.devices:
            device.storage -= self._dense_storage + self._kjt_storage

        free = reserved.devices[0].storage
        if free.hbm < 0 or free.ddr < 0:
            raise PlannerError(
                error_type=PlannerErrorType.INSUFFICIENT_STORAGE,
                message=(
                    f"The reserved topology ({storage_repr_in_gb(free)}) has negative available storage after "
                    f"the reserved percentage ({self._percentage}), the dense modules "
                    f"({storage_repr_in_gb(self._dense_storage)}) and the input ids "
                    f"({storage_repr_in_gb(self._kjt_storage)}), so no plan is possible. Reduce the batch size "
                    f"({batch_size}) or the percentage, or use ranks with more memory "
                    f"({storage_repr_in_gb(topology.devices[0].storage)} each)."
                ),
            )
        return reserved
