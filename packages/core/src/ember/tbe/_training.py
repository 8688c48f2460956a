"""The training TBE: fbgemm_gpu's SplitTableBatchedEmbeddingBagsCodegen (ember.tbe's name for it,
as `fbgemm_gpu.split_table_batched_embeddings_ops_training`'s). Many embedding tables in one flat
buffer, looked up by one op, trained by an optimizer fused into the backward (Notes [table-batched
embeddings], [bounds check] and [fused optimizer backward] in native/src/ops/fbgemm/tbe.cpp)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import accumulate

import ember
from ember import nn
from ember import sparse as _sparse
from ember.autograd import Function
from ember.autograd._engine import _accumulates_into_grad

from ._enums import (
    BoundsCheckMode,
    CacheAlgorithm,
    ComputeDevice,
    EmbeddingLocation,
    EmbOptimType,
    PoolingMode,
    SparseType,
    WeightDecayMode,
)

_fbgemm = ember.ops.fbgemm


@dataclass(frozen=True)
class _Optimizer:
    code: int  # its TbeOptimizer in native/src/ops/fbgemm/tbe_kernels.h
    states: tuple[str, ...]  # its state buffers, in split_optimizer_states() order
    rowwise: bool  # momentum1 holds one value per row (else one per weight)
    reads: tuple[str, ...]  # the hyperparameters its update reads


# The fused optimizers, declared once: the kernels' update per code is in tbe_kernels.cpp's apply().
OPTIMIZERS: dict[EmbOptimType, _Optimizer] = {
    EmbOptimType.NONE: _Optimizer(0, (), False, ()),
    EmbOptimType.EXACT_SGD: _Optimizer(1, (), False, ("learning_rate",)),
    EmbOptimType.EXACT_ADAGRAD: _Optimizer(2, ("momentum1",), False, ("learning_rate", "eps")),
    EmbOptimType.EXACT_ROWWISE_ADAGRAD: _Optimizer(
        3, ("momentum1",), True, ("learning_rate", "eps", "weight_decay", "weight_decay_mode")),
    EmbOptimType.ADAM: _Optimizer(4, ("momentum1", "momentum2"), False,
                                  ("learning_rate", "eps", "beta1", "beta2", "weight_decay")),
}

_OUTPUT_DTYPES = {SparseType.FP32: 0, SparseType.FP16: 1, SparseType.BF16: 5}


class _Lookup(Function):
    """One lookup; its backward runs the module's optimizer on the rows it read."""

    @staticmethod
    def forward(ctx, module, placeholder, weights, indices, offsets, per_sample_weights, batch_sizes):
        ctx.module, ctx.batch_sizes = module, batch_sizes
        ctx.save_for_backward(indices, offsets, per_sample_weights)
        m = module
        return _fbgemm.tbe_forward(weights.reshape(-1), m.weights_offsets, m.D_offsets, m.rows_per_table, m.hash_size_cumsum,
                                   indices, offsets, int(m.pooling_mode), per_sample_weights, batch_sizes,
                                   _OUTPUT_DTYPES[m.output_dtype])

    @staticmethod
    def backward(ctx, grad):
        indices, offsets, psw = ctx.saved_tensors
        m = ctx.module
        args = (m.weights_offsets, m.D_offsets, m.rows_per_table, m.hash_size_cumsum, indices, offsets)
        grad_psw = None
        if psw is not None and ctx.needs_input_grad[5]:
            grad_psw = _fbgemm.tbe_per_sample_weights_backward(grad, m.weights_host.detach().reshape(-1), *args,
                                                                int(m.pooling_mode), ctx.batch_sizes)
        grad_weights = None
        if m.optimizer == EmbOptimType.NONE:
            grad_weights = m._row_gradient(grad, indices, offsets, psw, ctx.batch_sizes)
            if _accumulates_into_grad(m.weights_host):
                _sparse._accumulate_grad(m.weights_host, grad_weights)
                grad_weights = None
            else:  # autograd.grad(): PyTorch's engine would densify a sparse gradient here too
                grad_weights = grad_weights.to_dense()
        else:
            m._step(grad, indices, offsets, psw, ctx.batch_sizes)
        return None, None, grad_weights, None, None, grad_psw, None


class SplitTableBatchedEmbeddingBagsCodegen(nn.Module):
    """Embedding tables trained with a fused optimizer, fbgemm_gpu's constructor and forward.

    `embedding_specs` is one (rows, dim, EmbeddingLocation, ComputeDevice) per table;
    `feature_table_map[f]` names the table feature f looks up (default: one feature per table).
    forward(indices, offsets, per_sample_weights=None) takes table-local rows and offsets of
    F·B + 1 entries, feature-major, and returns (B, ΣD) for SUM/MEAN pooling, (len(indices), D)
    for NONE. With `batch_size_per_feature_per_rank` (VBE) offsets hold ΣB_fr + 1 entries and
    the output is flat, rank by rank and feature by feature (FBGEMM's layout). Its backward
    updates the tables in place with `optimizer`. Optimizer NONE instead leaves a sparse
    gradient in `weights_host.grad` for an ember.optim optimizer (SGD, SparseAdam, Adagrad), as
    FBGEMM does: every table then has one dim D, `weights_host` is (Σrows, D), and the gradient
    is a coalesced COO tensor of the rows the batch read (Note [sparse .grad] in ember.sparse).

    Tables start at zero (call init_embedding_weights_uniform or write split_embedding_weights()).
    What Ember does not implement raises NotImplementedError rather than being ignored: CUDA
    compute, UVM caching, gradient clipping, max_norm, stochastic rounding of 16-bit tables, and
    the optimizers outside ember.tbe.OPTIMIZERS. The default bounds_check_mode is FATAL."""

    def __init__(self, embedding_specs, feature_table_map=None, cache_algorithm=CacheAlgorithm.LRU,
                 cache_load_factor=0.2, cache_sets=0, cache_reserved_memory=0.0, cache_precision=None,
                 weights_precision=SparseType.FP32, output_dtype=SparseType.FP32, enforce_hbm=False,
                 optimizer=EmbOptimType.EXACT_SGD, record_cache_metrics=None, gather_uvm_cache_stats=False,
                 stochastic_rounding=True, gradient_clipping=False, max_gradient=1.0, max_norm=0.0,
                 learning_rate=0.01, eps=1.0e-8, momentum=0.9, weight_decay=0.0,
                 weight_decay_mode=WeightDecayMode.NONE, eta=0.001, beta1=0.9, beta2=0.999,
                 pooling_mode=PoolingMode.SUM, device=None, bounds_check_mode=BoundsCheckMode.FATAL):
        super().__init__()
        specs = [tuple(s) for s in embedding_specs]
        if not specs:
            raise ValueError("SplitTableBatchedEmbeddingBagsCodegen: expected at least one table spec, but got none")
        for t, spec in enumerate(specs):
            if len(spec) != 4:
                raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen: expected table {t}'s spec as "
                                 f"(rows, dim, EmbeddingLocation, ComputeDevice), but got {spec}")
            rows, dim, location, compute = spec
            if int(rows) < 0 or int(dim) <= 0:
                raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen: expected table {t} to have rows >= 0 "
                                 f"and dim > 0, but got rows {rows}, dim {dim}")
            if ComputeDevice(compute) != ComputeDevice.CPU:
                raise NotImplementedError(f"SplitTableBatchedEmbeddingBagsCodegen: table {t} asks for {compute!r}; "
                                          "Ember's table-batched embeddings compute on the CPU only")
            if EmbeddingLocation(location) != EmbeddingLocation.HOST:
                raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen: table {t}: CPU tables live in host "
                                 f"memory (EmbeddingLocation.HOST), but got {location!r}")
        optimizer = EmbOptimType(optimizer)
        if optimizer not in OPTIMIZERS:
            raise NotImplementedError(f"SplitTableBatchedEmbeddingBagsCodegen: optimizer {optimizer.name} is not "
                                      f"implemented; Ember fuses {', '.join(o.name for o in OPTIMIZERS)}")
        weights_precision, output_dtype = SparseType(weights_precision), SparseType(output_dtype)
        if weights_precision not in (SparseType.FP32, SparseType.FP16, SparseType.BF16):
            raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen: expected weights_precision FP32, FP16 or "
                             f"BF16, but got {weights_precision.name}")
        if output_dtype not in _OUTPUT_DTYPES:
            raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen: expected output_dtype FP32, FP16 or BF16, "
                             f"but got {output_dtype.name}")
        if stochastic_rounding and weights_precision != SparseType.FP32 and optimizer != EmbOptimType.NONE:
            raise NotImplementedError("SplitTableBatchedEmbeddingBagsCodegen: stochastic rounding of 16-bit tables "
                                      "is not implemented; pass stochastic_rounding=False (round to nearest)")
        if gradient_clipping or max_norm > 0.0:
            raise NotImplementedError("SplitTableBatchedEmbeddingBagsCodegen: gradient_clipping and max_norm are "
                                      "not implemented")
        if weight_decay_mode not in (WeightDecayMode.NONE, WeightDecayMode.L2, WeightDecayMode.DECOUPLE):
            raise NotImplementedError(f"SplitTableBatchedEmbeddingBagsCodegen: weight_decay_mode "
                                      f"{weight_decay_mode!r} is not implemented")
        if device is not None and ember.device(device).type != "cpu":
            raise NotImplementedError(f"SplitTableBatchedEmbeddingBagsCodegen: device {device} (CPU only)")
        rows = [int(s[0]) for s in specs]
        dims = [int(s[1]) for s in specs]
        T = len(specs)
        self.feature_table_map = list(range(T)) if feature_table_map is None else [int(t) for t in feature_table_map]
        bad = [t for t in self.feature_table_map if not 0 <= t < T]
        if bad or not self.feature_table_map:
            raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen: expected feature_table_map entries in "
                             f"[0, {T}), but got {self.feature_table_map}")
        self.embedding_specs = specs
        self.optimizer = optimizer
        self.pooling_mode = PoolingMode(pooling_mode)
        self.bounds_check_mode_int = int(BoundsCheckMode(bounds_check_mode))
        self.weights_precision, self.output_dtype = weights_precision, output_dtype
        self.stochastic_rounding = stochastic_rounding
        self.learning_rate, self.eps, self.momentum = float(learning_rate), float(eps), float(momentum)
        self.weight_decay, self.weight_decay_mode = float(weight_decay), WeightDecayMode(weight_decay_mode)
        self.beta1, self.beta2, self.eta = float(beta1), float(beta2), float(eta)
        fmap = self.feature_table_map
        table_start = [0, *accumulate(r * d for r, d in zip(rows, dims, strict=True))]
        row_start = [0, *accumulate(rows)]
        self.register_buffer("weights_offsets", ember.tensor([table_start[t] for t in fmap], dtype=ember.int64))
        self.register_buffer("D_offsets", ember.tensor([0, *accumulate(dims[t] for t in fmap)], dtype=ember.int32))
        self.register_buffer("rows_per_table", ember.tensor([rows[t] for t in fmap], dtype=ember.int64))
        self.register_buffer("hash_size_cumsum",
                             ember.tensor([row_start[t] for t in fmap] + [row_start[-1]], dtype=ember.int64))
        self.register_buffer("bounds_check_warning", ember.zeros(1, dtype=ember.int64))
        self.register_buffer("iter", ember.zeros(1, dtype=ember.int64))
        self._rows, self._dims, self._table_start, self._row_start = rows, dims, table_start, row_start
        if optimizer == EmbOptimType.NONE:
            if len(set(dims)) > 1:
                raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen: OptimType.NONE does not support mixed "
                                 f"embedding dimension (its sparse gradient has rows of one dim), but got dims {dims}")
            # FBGEMM's NONE buffer is 2-D, so that its gradient can be a sparse COO tensor of rows
            shape = (row_start[-1], dims[0])
        else:
            shape = (table_start[-1],)
        self.weights_host = nn.Parameter(ember.zeros(*shape, dtype=weights_precision.as_dtype()))
        # a leaf that requires grad, so the output has a history even when the tables do not
        self.placeholder_autograd_tensor = nn.Parameter(ember.zeros(0))
        spec = OPTIMIZERS[optimizer]
        for name in spec.states:
            n = row_start[-1] if spec.rowwise and name == "momentum1" else table_start[-1]
            self.register_buffer(f"{name}_host", ember.zeros(n, dtype=ember.float32))

    # ---- lookups --------------------------------------------------------------------------
    def forward(self, indices, offsets, per_sample_weights=None, feature_requires_grad=None,
                batch_size_per_feature_per_rank=None, total_unique_indices=None):
        if feature_requires_grad is not None:
            raise NotImplementedError("SplitTableBatchedEmbeddingBagsCodegen.forward: feature_requires_grad is not "
                                      "implemented")
        # total_unique_indices only sizes FBGEMM's GPU buffers for optimizer NONE: nothing to do here.
        batch_sizes = None
        if batch_size_per_feature_per_rank is not None:
            sizes = [[int(b) for b in ranks] for ranks in batch_size_per_feature_per_rank]
            if len(sizes) != len(self.feature_table_map) or len({len(r) for r in sizes}) != 1:
                raise ValueError(f"SplitTableBatchedEmbeddingBagsCodegen.forward: expected "
                                 f"batch_size_per_feature_per_rank as {len(self.feature_table_map)} lists (one per "
                                 f"feature) of one batch size per rank, but got {batch_size_per_feature_per_rank}")
            batch_sizes = ember.tensor(sizes, dtype=ember.int64)
        if per_sample_weights is not None and per_sample_weights.dtype != ember.float32:
            per_sample_weights = per_sample_weights.float()
        if self.bounds_check_mode_int in (BoundsCheckMode.WARNING, BoundsCheckMode.IGNORE):
            indices, offsets, per_sample_weights = self._repaired(indices, offsets, per_sample_weights, batch_sizes)
        return _Lookup.apply(self, self.placeholder_autograd_tensor, self.weights_host, indices, offsets,
                             per_sample_weights, batch_sizes)

    def _repaired(self, indices, offsets, per_sample_weights, batch_sizes):
        """WARNING / IGNORE (Note [bounds check]): offsets clamped by FBGEMM's bounds_check_indices
        (on copies: the caller's tensors are kept), then every bad index left out of its bag."""
        idx, off = indices.contiguous().clone(), offsets.contiguous().clone()
        F = len(self.feature_table_map)
        nbags = off.numel() - 1
        if batch_sizes is None:
            b_offsets = None
            bag_feature = ember.arange(max(nbags, 0)) // max(nbags // F, 1) if nbags >= 0 else None
        else:
            per_feature = batch_sizes.sum(1)
            b_offsets = ember.tensor([0, *accumulate(per_feature.tolist())], dtype=ember.int64)
            bag_feature = ember.repeat_interleave(ember.arange(F), per_feature)
        before = int(self.bounds_check_warning[0])
        _fbgemm.bounds_check_indices(self.rows_per_table, idx, off, self.bounds_check_mode_int,
                                     self.bounds_check_warning, None, b_offsets)
        end = int(off[-1])
        original = indices.contiguous()[:end].long()
        rows = self.rows_per_table[ember.repeat_interleave(bag_feature, (off[1:] - off[:-1]).long())]
        keep = (original >= 0) & (original < rows)
        kept_before = ember.cat([ember.zeros(1, dtype=ember.int64), ember.cumsum(keep.long(), 0)])
        off = kept_before[off.long()].to(offsets.dtype)
        idx = indices.contiguous()[:end][keep]
        weights = None if per_sample_weights is None else per_sample_weights[:end][keep]
        repairs = int(self.bounds_check_warning[0]) - before
        if self.bounds_check_mode_int == BoundsCheckMode.WARNING and repairs > 0:
            warnings.warn(f"SplitTableBatchedEmbeddingBagsCodegen: repaired {repairs} out-of-range indices or "
                          "offsets (BoundsCheckMode.WARNING): bad indices left out of their bags", stacklevel=3)
        return idx, off, weights

    def _row_gradient(self, grad, indices, offsets, per_sample_weights, batch_sizes):
        """Optimizer NONE's gradient: a coalesced sparse COO tensor over weights_host's (Σrows, D)
        rows. Entry i of `indices` sends its bag's output gradient (times its per-sample weight,
        over the bag's length for MEAN) to its table's row; duplicate rows are summed. Built from
        the output gradient and the indices alone: the dense (Σrows, D) gradient never exists."""
        D = self._dims[0]
        n = int(offsets[-1]) if offsets.numel() else 0
        rows = indices.reshape(-1)[:n].long()
        grad_rows = grad.reshape(-1, D)
        positions = ember.arange(n, dtype=ember.int64)
        bag = ember.searchsorted(offsets.long(), positions, right=True) - 1
        F = len(self.feature_table_map)
        if batch_sizes is None:
            B = (offsets.numel() - 1) // F
            feature = bag // max(B, 1)
            # pooled output (B, F·D): bag f·B + b is output row b·F + f of the (B·F, D) view
            out_row = (bag - feature * B) * F + feature
        else:
            per_bag_feature = ember.repeat_interleave(ember.arange(F), batch_sizes.sum(1))
            feature = per_bag_feature.index_select(0, bag)
            # VBE output: rank by rank, feature by feature; bags are ordered feature by feature,
            # rank by rank. Block (r, f) starts at the rows of every earlier rank, then of f's
            # earlier features within rank r.
            R = batch_sizes.shape[1]
            block_start = ember.cumsum(batch_sizes.t().reshape(-1), 0) - batch_sizes.t().reshape(-1)
            block_start = block_start.reshape(R, F).t().reshape(-1)  # (f, r) order, as the bags
            bag_block = ember.repeat_interleave(ember.arange(F * R), batch_sizes.reshape(-1))
            first_bag = ember.cumsum(batch_sizes.reshape(-1), 0) - batch_sizes.reshape(-1)
            out_row = (block_start.index_select(0, bag_block.index_select(0, bag))
                       + bag - first_bag.index_select(0, bag_block.index_select(0, bag)))
        if self.pooling_mode == PoolingMode.NONE:
            out_row = positions  # one output row per index
        values = grad_rows.index_select(0, out_row).float()
        scale = None
        if per_sample_weights is not None:
            scale = per_sample_weights.detach().reshape(-1)[:n].float()
        if self.pooling_mode == PoolingMode.MEAN:
            lengths = (offsets[1:] - offsets[:-1]).long()
            share = 1.0 / lengths.index_select(0, bag).float()
            scale = share if scale is None else scale * share
        if scale is not None:
            values = values * scale.unsqueeze(1)
        global_rows = self.hash_size_cumsum.index_select(0, feature) + rows
        shape = tuple(self.weights_host.shape)
        sparse_grad = _sparse.SparseTensor._coo(global_rows.unsqueeze(0), values.to(self.weights_host.dtype), shape)
        return sparse_grad.coalesce()

    def _step(self, grad, indices, offsets, per_sample_weights, batch_sizes):
        """The backward's fused optimizer step (every optimizer but NONE)."""
        spec = OPTIMIZERS[self.optimizer]
        if spec.code == 4:
            self.iter += 1
        states = {name: getattr(self, f"{name}_host") for name in spec.states}
        _fbgemm.tbe_backward(
            grad, self.weights_host.detach(), self.weights_offsets, self.D_offsets, self.rows_per_table,
            self.hash_size_cumsum, indices, offsets, int(self.pooling_mode), per_sample_weights, batch_sizes,
            spec.code, states.get("momentum1"), states.get("momentum2"), learning_rate=self.learning_rate,
            eps=self.eps, beta1=self.beta1, beta2=self.beta2, weight_decay=self.weight_decay,
            weight_decay_mode=int(self.weight_decay_mode), iter=int(self.iter[0]))

    # ---- tables and optimizer state -------------------------------------------------------
    def split_embedding_weights(self) -> list:
        """Each table as a (rows, dim) view of the flat buffer (writes go to the module)."""
        flat = self.weights_host.detach().reshape(-1)
        return [flat[s:s + r * d].view(r, d) for s, r, d in zip(self._table_start[:-1], self._rows, self._dims, strict=True)]

    def init_embedding_weights_uniform(self, min_val: float, max_val: float) -> None:
        with ember.no_grad():
            for table in self.split_embedding_weights():
                table.uniform_(min_val, max_val)

    def split_optimizer_states(self) -> list[list]:
        """Per table, its optimizer states in OPTIMIZERS order: (rows, dim) views, or (rows,) for a
        row-wise state."""
        spec = OPTIMIZERS[self.optimizer]
        if not spec.states:
            raise NotImplementedError(f"split_optimizer_states: {self.optimizer.name} has no optimizer state")
        out = []
        for t, (r, d) in enumerate(zip(self._rows, self._dims, strict=True)):
            per_table = []
            for name in spec.states:
                buf = getattr(self, f"{name}_host")
                if spec.rowwise and name == "momentum1":
                    per_table.append(buf[self._row_start[t]:self._row_start[t] + r])
                else:
                    per_table.append(buf[self._table_start[t]:self._table_start[t] + r * d].view(r, d))
            out.append(per_table)
        return out

    def get_optimizer_buffer(self, state: str):
        spec = OPTIMIZERS[self.optimizer]
        if state.removesuffix("_host") not in spec.states:
            raise ValueError(f"get_optimizer_buffer: {self.optimizer.name} keeps {list(spec.states)}, not {state!r}")
        return getattr(self, state if state.endswith("_host") else f"{state}_host")

    def set_learning_rate(self, lr: float) -> None:
        if self.optimizer == EmbOptimType.NONE:
            raise NotImplementedError("set_learning_rate: optimizer NONE has no learning rate")
        self.learning_rate = float(lr)

    def get_learning_rate(self) -> float:
        return self.learning_rate

    def set_optimizer_step(self, step: int) -> None:
        self.iter.fill_(int(step))
