"""The RecMetric framework: ``RecMetricComputation`` (the math of one metric over states),
``RecMetric`` (tasks, inputs and keys around computations) and ``RecMetricList``.

Note [lifetime and window states]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A computation keeps two views of each state. The lifetime state sums every update since the last
``reset()``. The window state covers the most recent batches whose example counts sum to at most
the local window size (``ceil(window_size / world_size)`` examples), at most ``MAX_BUFFER_COUNT``
batches: a batch enters whole and the oldest batches leave whole, as in TorchRec. Both are module
buffers of fixed shape, so ``state_dict()`` holds them and a restored metric computes the same
window and lifetime values (TorchRec does not checkpoint window states). The window value is the
sum of the kept batches, recomputed at ``compute()``, so evicting a batch leaves no rounding drift.

    WindowBuffer (capacity slots, ring order)      window state = values.sum(0)
    values  [ b3 | b4 | 0  | b1 | b2 ]             cursor = [oldest slot 3, held 4]
    sizes   [ 64 | 64 | 0  | 64 | 64 ]             used   = sizes.sum() <= max_size

Note [state reduction across ranks]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``compute()`` reduces every computation's states over the ranks with one function,
``reduce_states``, built on a single collective: ``reduce_fn(tensor)`` returns the element-wise SUM
of ``tensor`` over all ranks (an all-reduce). Sum states (counts, weighted sums, histograms, window
sums) are reduced directly. Concatenated states (AUC's window samples) are gathered through the
same SUM: each rank writes its samples into its own row of a zero tensor ``(world_size, ...,
max_len)``, the SUM of those tensors holds every rank's samples, and the rows are concatenated in
rank order. Every rank must call ``compute()`` (the collectives are matched by call order); only
rank 0 returns values unless ``compute_on_all_ranks``. Without a ``reduce_fn`` the metric uses
``ember.distributed.all_reduce`` over ``process_group`` when ``ember.distributed`` is importable and
initialized with more than one rank, and otherwise computes on the local states (as torchmetrics
does when no process group is initialized).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import ember
import ember.nn as nn
from ember import Tensor
from emberrec.metrics.metrics_config import RecComputeMode, RecTaskInfo
from emberrec.metrics.metrics_namespace import (
    MetricNameBase,
    MetricNamespaceBase,
    MetricPrefix,
    compose_customized_metric_key,
    compose_metric_namespace,
)

RecModelOutput = Tensor | dict[str, Tensor]
# reduce_fn(t) -> the element-wise SUM of t over all ranks, as a new tensor (Note [state reduction
# across ranks]).
ReduceFn = Callable[[Tensor], Tensor]

MAX_BUFFER_COUNT = 1000


class RecMetricException(Exception):
    pass


@dataclass(frozen=True)
class MetricComputationReport:
    name: MetricNameBase
    metric_prefix: MetricPrefix
    value: Tensor
    description: str | None = None


def _distributed():
    """``ember.distributed`` when it exists and is initialized, else None."""
    try:
        from ember import distributed as dist
    except ImportError:
        return None
    available = getattr(dist, "is_available", lambda: True)()
    return dist if available and dist.is_initialized() else None


def default_reduce_fn(world_size: int, process_group: Any = None) -> ReduceFn | None:
    """The SUM all-reduce over ``process_group`` when ``ember.distributed`` is initialized and
    ``world_size > 1``; None (states stay local) otherwise."""
    dist = _distributed() if world_size > 1 else None
    if dist is None:
        return None

    def all_reduce_sum(tensor: Tensor) -> Tensor:
        out = tensor.clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM, group=process_group)
        return out

    return all_reduce_sum


def reduce_states(
    states: Mapping[str, Tensor],
    kinds: Mapping[str, str],
    reduce_fn: ReduceFn | None,
    world_size: int,
    my_rank: int,
) -> dict[str, Tensor]:
    """Reduce named states over the ranks (Note [state reduction across ranks]).

    ``kinds[name]`` is ``"sum"`` (element-wise sum) or ``"cat"`` (concatenate the ranks' tensors
    along the last dimension, in rank order). With ``reduce_fn`` None the states are returned as
    they are. Every rank must pass the same names in the same order.
    """
    if reduce_fn is None:
        return dict(states)
    out = {}
    for name, state in states.items():
        kind = kinds[name]
        if kind == "sum":
            out[name] = reduce_fn(state)
        elif kind == "cat":
            lengths = ember.zeros(world_size, dtype=ember.int64, device=state.device)
            lengths[my_rank] = state.shape[-1]
            lengths = reduce_fn(lengths).tolist()
            rows = ember.zeros((world_size, *state.shape[:-1], max(lengths)), dtype=state.dtype, device=state.device)
            rows[my_rank, ..., : state.shape[-1]] = state
            rows = reduce_fn(rows)
            out[name] = ember.cat([rows[rank, ..., :n] for rank, n in enumerate(lengths)], dim=-1)
        else:
            raise ValueError(f"reduce_states: unknown reduction {kind!r} for state {name!r}")
    return out


class WindowBuffer(nn.Module):
    """Per-batch values of one state over the most recent batches (Note [lifetime and window
    states]); ``state()`` is their sum."""

    def __init__(self, max_size: int, max_buffer_count: int, shape: tuple[int, ...], dtype: Any) -> None:
        super().__init__()
        self._max_size = max_size
        # Every kept batch holds at least one example, so no more than max_size batches fit.
        capacity = max(1, min(max_buffer_count, max_size))
        self.register_buffer("values", ember.zeros((capacity, *shape), dtype=dtype))
        self.register_buffer("sizes", ember.zeros(capacity, dtype=ember.int64))
        self.register_buffer("cursor", ember.zeros(2, dtype=ember.int64))  # [oldest slot, held]

    def aggregate_state(self, curr_state: Tensor, size: int) -> None:
        capacity = self.sizes.shape[0]
        oldest, held = self.cursor.tolist()

        def pop() -> None:
            nonlocal oldest, held
            self.values[oldest] = 0
            self.sizes[oldest] = 0
            oldest, held = (oldest + 1) % capacity, held - 1

        if held == capacity:
            pop()
        slot = (oldest + held) % capacity
        self.values[slot] = curr_state
        self.sizes[slot] = size
        held += 1
        used = int(self.sizes.sum().item())
        while used > self._max_size:
            used -= int(self.sizes[oldest].item())
            pop()
        self.cursor[0], self.cursor[1] = oldest, held

    def state(self) -> Tensor:
        return self.values.sum(0)

    def reset(self) -> None:
        self.values.zero_()
        self.sizes.zero_()
        self.cursor.zero_()


class RecMetricComputation(nn.Module, abc.ABC):
    r"""The math of one metric: ``update()`` folds a batch into states, ``_compute()`` turns states
    into ``MetricComputationReport``\ s. It knows nothing of tasks or model outputs.

    Args:
        my_rank: this trainer's rank.
        batch_size: the batch size of this trainer.
        n_tasks: how many tasks this computation holds (the leading dimension of every state).
        window_size: the local window size in examples (Note [lifetime and window states]).
        compute_on_all_ranks: compute values on every rank, not only rank 0.
        should_validate_update: skip a task's batch whose weights are all zero, and report 0 for a
            task that never had a valid batch.
        process_group: the process group states are reduced over.
        fused_update_limit: accepted for RecMetric's sake (it does the fusing).
        world_size: the number of ranks (an Ember addition: reductions need it).
        reduce_fn: the SUM all-reduce to use instead of ``ember.distributed`` (an Ember addition).
    """

    def __init__(
        self,
        my_rank: int,
        batch_size: int,
        n_tasks: int,
        window_size: int,
        compute_on_all_ranks: bool = False,
        should_validate_update: bool = False,
        process_group: Any = None,
        fused_update_limit: int = 0,
        *,
        world_size: int = 1,
        reduce_fn: ReduceFn | None = None,
    ) -> None:
        super().__init__()
        self._my_rank = my_rank
        self._world_size = world_size
        self._n_tasks = n_tasks
        self._batch_size = batch_size
        self._window_size = window_size
        self._compute_on_all_ranks = compute_on_all_ranks
        self._should_validate_update = should_validate_update
        self._process_group = process_group
        self._reduce_fn = reduce_fn
        self._window_buffers = nn.ModuleDict()
        self._defaults: dict[str, Tensor] = {}
        self._reductions: dict[str, str] = {}
        self._synced: dict[str, Tensor] | None = None
        if should_validate_update:
            self._add_state("has_valid_update", ember.zeros(n_tasks, dtype=ember.int64), add_window_state=False)

    @staticmethod
    def get_window_state_name(state_name: str) -> str:
        return f"window_{state_name}"

    def _add_state(
        self,
        name: str,
        default: Tensor,
        add_window_state: bool,
        dist_reduce_fx: str = "sum",
        persistent: bool = True,
    ) -> None:
        """Register a state, ``self.<name>``, starting at ``default``; with ``add_window_state`` also
        its window (``get_window_state(name)``). ``dist_reduce_fx`` is ``"sum"`` or ``"cat"`` (along
        the last dimension; such a state may change length and has no window)."""
        if dist_reduce_fx not in ("sum", "cat"):
            raise ValueError(f"dist_reduce_fx must be 'sum' or 'cat', got {dist_reduce_fx!r}")
        if dist_reduce_fx == "cat" and add_window_state:
            raise ValueError("a 'cat' state cannot have a window state")
        self.register_buffer(name, default.clone(), persistent=persistent)
        self._defaults[name] = default.clone()
        self._reductions[name] = dist_reduce_fx
        if add_window_state:
            if self._window_size <= 0:
                raise RuntimeError("Users is adding a window state while window metric is disabled.")
            window_name = self.get_window_state_name(name)
            self._window_buffers[window_name] = WindowBuffer(
                self._window_size, MAX_BUFFER_COUNT, tuple(default.shape), default.dtype
            )
            self._reductions[window_name] = "sum"

    def _aggregate_window_state(self, state_name: str, state: Tensor, num_samples: int) -> None:
        self._window_buffers[self.get_window_state_name(state_name)].aggregate_state(state, num_samples)

    def _fold_states(self, states: Mapping[str, Tensor], num_samples: int) -> None:
        """Add one batch's per-task sums to the lifetime states and to their windows."""
        for name, value in states.items():
            getattr(self, name).add_(value)
            self._aggregate_window_state(name, value, num_samples)

    def get_window_state(self, state_name: str) -> Tensor:
        name = self.get_window_state_name(state_name)
        if self._synced is not None:
            return self._synced[name]
        return self._window_buffers[name].state()

    def _state(self, name: str) -> Tensor:
        """A state's value: reduced over the ranks inside ``sync()``, local otherwise."""
        return self._synced[name] if self._synced is not None else getattr(self, name)

    def validate(self, predictions: Tensor, labels: Tensor, weights: Tensor) -> None:
        """Raise on a batch this metric cannot take; RecMetric calls it for every task before any
        state changes. Accepts everything by default."""

    @abc.abstractmethod
    def update(
        self, *, predictions: Tensor | None, labels: Tensor, weights: Tensor | None, **kwargs: Any
    ) -> None:
        """Fold one batch, tensors of shape ``(n_tasks, n_examples)``, into the states."""

    @abc.abstractmethod
    def _compute(self) -> list[MetricComputationReport]:
        """The reports from the states, read through ``_state`` and ``get_window_state``."""

    def pre_compute(self) -> None:
        """Work on the local states before they are reduced; nothing by default."""

    # ---- reduction --------------------------------------------------------------------------

    def _local_states(self) -> dict[str, Tensor]:
        states = {}
        for name in self._reductions:
            if name in self._window_buffers:
                states[name] = self._window_buffers[name].state()
            else:
                states[name] = getattr(self, name)
        return states

    def sync(self, reduce_fn: ReduceFn | None = None) -> None:
        """Reduce the states over the ranks until ``unsync()``; ``compute()`` does this itself."""
        if reduce_fn is None:
            reduce_fn = self._reduce_fn or default_reduce_fn(self._world_size, self._process_group)
        self._synced = reduce_states(
            self._local_states(), self._reductions, reduce_fn, self._world_size, self._my_rank
        )

    def unsync(self) -> None:
        self._synced = None

    @property
    def _is_synced(self) -> bool:
        return self._synced is not None

    def _masked(self, reports: list[MetricComputationReport]) -> list[MetricComputationReport]:
        if not self._should_validate_update:
            return reports
        # A task that never had a valid batch reports 0: its value would mean nothing.
        valid = self._state("has_valid_update") > 0
        return [
            MetricComputationReport(r.name, r.metric_prefix, ember.where(valid, r.value, 0.0), r.description)
            for r in reports
        ]

    def compute(self) -> list[MetricComputationReport]:
        """Reduce over the ranks, then compute on rank 0 (or every rank if compute_on_all_ranks)."""
        self.sync()
        try:
            if self._my_rank == 0 or self._compute_on_all_ranks:
                return self._masked(self._compute())
            return []
        finally:
            self.unsync()

    def local_compute(self) -> list[MetricComputationReport]:
        """The values of this rank's states alone."""
        return self._masked(self._compute())

    def reset(self) -> None:
        for name, default in self._defaults.items():
            setattr(self, name, default.clone().to(getattr(self, name).device))
        for buffer in self._window_buffers.values():
            buffer.reset()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # A "cat" state's length is data: take the checkpoint's, if the rest of its shape agrees.
        for name, kind in self._reductions.items():
            key = prefix + name
            if kind == "cat" and key in state_dict:
                value, current = state_dict[key], getattr(self, name)
                if isinstance(value, Tensor) and tuple(value.shape[:-1]) == tuple(current.shape[:-1]):
                    setattr(self, name, ember.zeros(tuple(value.shape), dtype=current.dtype, device=current.device))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


def _as_2d(tensor: Tensor, rows: int) -> Tensor:
    return tensor.reshape(rows, -1).double()


class RecMetric(nn.Module, abc.ABC):
    r"""A recommendation metric over one or more tasks, computed over the lifetime and a window.

    Subclasses set ``_namespace`` and ``_computation_class``. ``update(predictions=, labels=,
    weights=)`` takes a dict keyed by task name (a tensor is accepted when there is one task, and in
    FUSED_TASKS_COMPUTATION a tensor ``(n_tasks, batch)``); ``weights`` None means weight 1.
    ``compute()`` returns ``{"{namespace}-{task}|{lifetime_|window_}{metric}": value}``, float64
    tensors of shape ``(1,)`` in UNFUSED and ``()`` in FUSED_TASKS_COMPUTATION, as in TorchRec.
    Bad input (mismatched element counts, a task name the metric does not have, negative weights)
    raises ValueError before any state changes.

    Args:
        world_size: the number of trainers.
        my_rank: the rank of this trainer.
        batch_size: the batch size of this trainer.
        tasks: the tasks (``RecTaskInfo``), unique by name.
        compute_mode: see ``RecComputeMode``.
        window_size: the global window in examples; this rank keeps ``ceil(window_size /
            world_size)``, which must be at least ``batch_size``.
        fused_update_limit: buffer this many ``update()`` calls and apply them at once (0: none).
        compute_on_all_ranks: every rank computes the global values (else only rank 0).
        should_validate_update: skip a task's batch whose weights are all zero; a task that never had
            a valid batch reports 0.
        process_group: the process group states are reduced over (Note [state reduction across
            ranks]).
        reduce_fn: Ember addition; the SUM all-reduce to use instead of ``ember.distributed``.
        **kwargs: passed to the computation (e.g. ``threshold`` for accuracy).

    Example::

        ne = NEMetric(world_size=1, my_rank=0, batch_size=128, tasks=[DefaultTaskInfo])
        ne.update(predictions={"DefaultTask": p}, labels={"DefaultTask": y}, weights=None)
        ne.compute()["ne-DefaultTask|window_ne"]
    """

    _computation_class: type[RecMetricComputation]
    _namespace: MetricNamespaceBase

    PREDICTIONS: str = "predictions"
    LABELS: str = "labels"
    WEIGHTS: str = "weights"

    def __init__(
        self,
        world_size: int,
        my_rank: int,
        batch_size: int,
        tasks: list[RecTaskInfo],
        compute_mode: RecComputeMode = RecComputeMode.UNFUSED_TASKS_COMPUTATION,
        window_size: int = 100,
        fused_update_limit: int = 0,
        compute_on_all_ranks: bool = False,
        should_validate_update: bool = False,
        process_group: Any = None,
        reduce_fn: ReduceFn | None = None,
        **kwargs: Any,
    ) -> None:
        if compute_mode == RecComputeMode.FUSED_TASKS_COMPUTATION and fused_update_limit > 0:
            raise ValueError("The fused tasks computation and the fused update cannot be set at the same time")
        if world_size < 1 or not 0 <= my_rank < world_size:
            raise ValueError(f"expected 0 <= my_rank < world_size, got my_rank={my_rank}, world_size={world_size}")
        if not tasks:
            raise ValueError(f"{type(self).__name__} needs at least one task")
        names = [task.name for task in tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names must be unique, got {names}")
        super().__init__()
        self._world_size = world_size
        self._my_rank = my_rank
        self._window_size = math.ceil(window_size / world_size)
        self._batch_size = batch_size
        self._tasks = list(tasks)
        self._compute_mode = compute_mode
        self._fused_update_limit = fused_update_limit
        self._should_validate_update = should_validate_update
        self._update_buffers: dict[str, list[RecModelOutput]] = {
            self.PREDICTIONS: [],
            self.LABELS: [],
            self.WEIGHTS: [],
        }
        if self._window_size < self._batch_size:
            raise ValueError(
                f"Local window size must be larger than batch size. Got local window size {self._window_size} "
                f"and batch size {self._batch_size}."
            )
        fused = compute_mode == RecComputeMode.FUSED_TASKS_COMPUTATION
        self._metrics_computations = nn.ModuleList(
            [
                self._computation_class(
                    my_rank,
                    batch_size,
                    len(self._tasks) if fused else 1,
                    self._window_size,
                    compute_on_all_ranks,
                    should_validate_update,
                    process_group,
                    fused_update_limit,
                    world_size=world_size,
                    reduce_fn=reduce_fn,
                    **kwargs,
                )
                for _ in ([self._tasks] if fused else self._tasks)
            ]
        )

    # ---- inputs -------------------------------------------------------------------------------

    def _task_inputs(
        self, what: str, value: RecModelOutput | None, present: list[str] | None
    ) -> dict[str, Tensor]:
        """``value`` as {task name: tensor} for the tasks in ``present`` (those it has if None)."""
        names = [task.name for task in self._tasks]
        if isinstance(value, Tensor):
            if len(names) != 1:
                raise ValueError(
                    f"{type(self).__name__} has tasks {names}: pass {what} as a dict keyed by task name"
                )
            return {names[0]: value}
        if not isinstance(value, Mapping):
            raise TypeError(f"{what} must be a Tensor or a dict of Tensors keyed by task name, got {type(value).__name__}")
        unknown = [key for key in value if key not in names]
        if unknown:
            raise ValueError(f"{what} has unknown task(s) {unknown}; the tasks of {type(self).__name__} are {names}")
        out = {}
        for name in names if present is None else present:
            if present is None and name not in value:
                continue
            if name not in value:
                raise ValueError(f"{what} has no entry for task {name!r}, which predictions has")
            if not isinstance(value[name], Tensor):
                raise TypeError(f"{what}[{name!r}] must be a Tensor, got {type(value[name]).__name__}")
            out[name] = value[name]
        return out

    def _check_task(self, name: str, predictions: Tensor, labels: Tensor, weights: Tensor | None) -> None:
        shapes = [tuple(predictions.shape), tuple(labels.shape)] + ([] if weights is None else [tuple(weights.shape)])
        counts = {predictions.numel(), labels.numel()} | ({weights.numel()} if weights is not None else set())
        if len(counts) != 1:
            raise ValueError(
                f"task {name!r}: predictions, labels and weights must have the same number of elements, "
                f"got shapes {', '.join(str(list(shape)) for shape in shapes)}"
            )
        if weights is not None and weights.numel() and bool((weights < 0).any()):
            raise ValueError(f"task {name!r}: weights must be non-negative, got a minimum of {weights.min().item()}")

    def _prepare(
        self, predictions: RecModelOutput, labels: RecModelOutput, weights: RecModelOutput | None
    ) -> list[tuple[RecMetricComputation, Tensor, Tensor, Tensor]]:
        """Check a batch and split it per computation into ``(rows, n)`` float64 tensors; raises
        before any state changes."""
        names = [task.name for task in self._tasks]
        fused = self._compute_mode == RecComputeMode.FUSED_TASKS_COMPUTATION
        if fused and isinstance(predictions, Tensor):
            # One tensor for all tasks: (n_tasks, batch) or the tasks one after another.
            if not isinstance(labels, Tensor) or not (weights is None or isinstance(weights, Tensor)):
                raise TypeError("in FUSED_TASKS_COMPUTATION, labels and weights must be Tensors like predictions")
            self._check_task("*", predictions, labels, weights)
            if predictions.numel() % len(names):
                raise ValueError(
                    f"predictions has {predictions.numel()} elements, not a multiple of the {len(names)} tasks"
                )
            batches = [(predictions, labels, weights)]
        else:
            preds = self._task_inputs(self.PREDICTIONS, predictions, None)
            present = [name for name in names if name in preds]
            labs = self._task_inputs(self.LABELS, labels, present)
            wts = None if weights is None else self._task_inputs(self.WEIGHTS, weights, present)
            for name in present:
                self._check_task(name, preds[name], labs[name], None if wts is None else wts[name])
            if fused:
                missing = [name for name in names if name not in preds]
                if missing:
                    raise ValueError(f"FUSED_TASKS_COMPUTATION needs every task in each update; missing {missing}")
                if len({preds[name].numel() for name in names}) != 1:
                    raise ValueError("FUSED_TASKS_COMPUTATION needs the same batch size for every task")

                def stack(d: dict[str, Tensor] | None) -> Tensor | None:
                    return None if d is None else ember.stack([d[name].reshape(-1) for name in names])

                batches = [(stack(preds), stack(labs), stack(wts))]
            else:
                batches = [
                    (preds.get(name), labs.get(name), None if wts is None else wts.get(name)) for name in names
                ]
        rows = len(names) if fused else 1
        work = []
        for computation, (p, y, w) in zip(self._metrics_computations, batches, strict=True):
            if p is None or p.numel() == 0:
                continue  # the task has no examples in this batch
            p, y = _as_2d(p.detach(), rows), _as_2d(y.detach(), rows)
            w = ember.ones_like(p) if w is None else _as_2d(w.detach(), rows)
            computation.validate(p, y, w)
            work.append((computation, p, y, w))
        return work

    def _update(
        self,
        *,
        predictions: RecModelOutput,
        labels: RecModelOutput,
        weights: RecModelOutput | None,
        **kwargs: Any,
    ) -> None:
        work = self._prepare(predictions, labels, weights)
        with ember.no_grad():
            for computation, p, y, w in work:
                if self._should_validate_update:
                    valid = (w != 0).any(dim=-1)
                    if not bool(valid.any()):
                        continue
                    computation.has_valid_update.add_(valid.long())
                computation.update(predictions=p, labels=y, weights=w, **kwargs)

    def update(
        self,
        *,
        predictions: RecModelOutput,
        labels: RecModelOutput,
        weights: RecModelOutput | None = None,
        **kwargs: Any,
    ) -> None:
        if self._fused_update_limit > 0:
            # Check now: a bad batch found at the fused update would take the good ones with it.
            self._prepare(predictions, labels, weights)
            if (weights is None) != (not self._update_buffers[self.WEIGHTS]) and self._update_buffers[self.PREDICTIONS]:
                raise RecMetricException("with fused_update_limit, pass weights in every update() or in none")
            self._update_buffers[self.PREDICTIONS].append(predictions)
            self._update_buffers[self.LABELS].append(labels)
            if weights is not None:
                self._update_buffers[self.WEIGHTS].append(weights)
            self._check_fused_update(force=False)
        else:
            self._update(predictions=predictions, labels=labels, weights=weights, **kwargs)

    def _check_fused_update(self, force: bool) -> None:
        buffered = self._update_buffers[self.PREDICTIONS]
        if self._fused_update_limit <= 0 or not buffered:
            return
        if not force and len(buffered) < self._fused_update_limit:
            return

        def fuse(outputs: list[RecModelOutput]) -> RecModelOutput:
            if isinstance(outputs[0], Tensor):
                return ember.cat([output.reshape(-1) for output in outputs])
            tasks: dict[str, list[Tensor]] = {}
            for output in outputs:
                for name, tensor in output.items():
                    tasks.setdefault(name, []).append(tensor.reshape(-1))
            return {name: ember.cat(tensors) for name, tensors in tasks.items()}

        fused = {key: fuse(outputs) for key, outputs in self._update_buffers.items() if outputs}
        for outputs in self._update_buffers.values():
            outputs.clear()
        self._update(
            predictions=fused[self.PREDICTIONS], labels=fused[self.LABELS], weights=fused.get(self.WEIGHTS)
        )

    # ---- results ------------------------------------------------------------------------------

    def _reports(self, scope: str) -> dict[str, Tensor]:
        self._check_fused_update(force=True)
        fused = self._compute_mode == RecComputeMode.FUSED_TASKS_COMPUTATION
        groups = (
            [(self._tasks, self._metrics_computations[0])]
            if fused
            else [([task], computation) for task, computation in zip(self._tasks, self._metrics_computations, strict=True)]
        )
        out = {}
        for tasks, computation in groups:
            computation.pre_compute()
            reports = computation.local_compute() if scope else computation.compute()
            for report in reports:
                # A fused computation reports one value per task; an unfused one a (1,) tensor.
                values = report.value if fused else [report.value]
                for task, value in zip(tasks, values, strict=True):
                    key = compose_customized_metric_key(
                        compose_metric_namespace(self._namespace, task.name),
                        f"{scope}{report.metric_prefix}{report.name}",
                        report.description,
                    )
                    out[key] = value
        return out

    def compute(self) -> dict[str, Tensor]:
        """The global values (states reduced over the ranks); empty on ranks other than 0 unless
        ``compute_on_all_ranks``. Every rank must call it."""
        return self._reports("")

    def local_compute(self) -> dict[str, Tensor]:
        """This rank's values, keys prefixed ``local_`` (e.g. ``ne-T|local_lifetime_ne``)."""
        return self._reports("local_")

    def sync(self) -> None:
        for computation in self._metrics_computations:
            computation.sync()

    def unsync(self) -> None:
        for computation in self._metrics_computations:
            computation.unsync()

    def reset(self) -> None:
        for outputs in self._update_buffers.values():
            outputs.clear()
        for computation in self._metrics_computations:
            computation.reset()

    def get_memory_usage(self) -> dict[Tensor, int]:
        """Bytes held by each state tensor."""
        return {buffer: buffer.numel() * buffer.element_size() for buffer in self.buffers()}

    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        # Buffered fused updates belong in the checkpoint: apply them first.
        self._check_fused_update(force=True)
        return super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)

    def get_required_inputs(self) -> set[str]:
        return set()


class RecMetricList(nn.Module):
    """Several RecMetrics behind the RecMetric interface.

    Example::

        metrics = RecMetricList([NEMetric(...), AUCMetric(...)])
        metrics.update(predictions=p, labels=y, weights=w)
    """

    def __init__(self, rec_metrics: list[RecMetric]) -> None:
        super().__init__()
        self.rec_metrics = nn.ModuleList(rec_metrics)
        self.required_inputs = list(set().union(*[m.get_required_inputs() for m in rec_metrics])) or None

    def __len__(self) -> int:
        return len(self.rec_metrics)

    def __getitem__(self, idx: int) -> RecMetric:
        return self.rec_metrics[idx]

    def get_required_inputs(self) -> list[str] | None:
        return self.required_inputs

    def update(
        self,
        *,
        predictions: RecModelOutput,
        labels: RecModelOutput,
        weights: RecModelOutput | None,
        **kwargs: Any,
    ) -> None:
        for metric in self.rec_metrics:
            # Each metric sees only its own tasks: the dicts cover the whole module's tasks.
            names = {task.name for task in metric._tasks}

            def own(value: RecModelOutput | None, names: set[str] = names) -> RecModelOutput | None:
                if isinstance(value, Mapping):
                    return {name: tensor for name, tensor in value.items() if name in names}
                return value

            metric.update(predictions=own(predictions), labels=own(labels), weights=own(weights), **kwargs)

    def compute(self) -> dict[str, Tensor]:
        out = {}
        for metric in self.rec_metrics:
            out.update(metric.compute())
        return out

    def local_compute(self) -> dict[str, Tensor]:
        out = {}
        for metric in self.rec_metrics:
            out.update(metric.local_compute())
        return out

    def sync(self) -> None:
        for metric in self.rec_metrics:
            metric.sync()

    def unsync(self) -> None:
        for metric in self.rec_metrics:
            metric.unsync()

    def reset(self) -> None:
        for metric in self.rec_metrics:
            metric.reset()
