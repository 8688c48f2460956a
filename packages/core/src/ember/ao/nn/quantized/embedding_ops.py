"""Quantized embedding tables (torch.ao.nn.quantized.Embedding and EmbeddingBag): quint8 or quint4x2
(4 bits per value, two to a byte) weights quantized per row with float qparams
(per_channel_affine_float_qparams, axis 0), looked up and summed in float32 by the native kernel of
Note [quantized embedding bags], with FBGEMM's roundings, so results equal PyTorch's x86 ones bit for
bit. State dicts use PyTorch's keys (`_packed_params.dtype`, `_packed_params._packed_weight`)."""

from __future__ import annotations

from .... import _C
from ...._quantized import per_channel_affine_float_qparams
from ....nn.modules.module import Module
from .modules import _quantize_weight

__all__ = ["Embedding", "EmbeddingBag", "EmbeddingPackedParams"]


_TABLE_DTYPES = (_C.quint8, _C.quint4x2)


def _empty_table(num_embeddings: int, embedding_dim: int, dtype):
    """A zero table with scale 1 and zero point 0 per row (what PyTorch starts from)."""
    return _C._make_per_channel_quantized_tensor(_C.zeros([num_embeddings, embedding_dim], dtype=_C.uint8),
                                                 _C.ones(num_embeddings, dtype=_C.float32),
                                                 _C.zeros(num_embeddings, dtype=_C.float32), 0, dtype=dtype)


def _check_dtype(dtype) -> None:
    if dtype not in _TABLE_DTYPES:
        raise NotImplementedError(f"Unsupported dtype on quantized embedding! Supports quint8 and quint4x2. "
                                  f"Got dtype: {dtype}")


class EmbeddingPackedParams(Module):
    """The quantized table of an Embedding or EmbeddingBag, saved as PyTorch saves its packed
    parameters: `<prefix>dtype` and `<prefix>_packed_weight` (the quantized weight)."""

    _version = 1

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype=_C.quint8) -> None:
        super().__init__()
        _check_dtype(dtype)
        self.dtype = dtype
        self.set_weight(_empty_table(num_embeddings, embedding_dim, dtype))

    def set_weight(self, weight) -> None:
        if (weight.dtype not in _TABLE_DTYPES or weight.dim() != 2
                or weight.qscheme() != per_channel_affine_float_qparams or weight.q_per_channel_axis() != 0):
            qscheme = weight.qscheme() if weight.is_quantized else None
            raise RuntimeError("a quantized embedding takes a 2-d quint8 or quint4x2 weight quantized per row "
                               f"(per_channel_affine_float_qparams, axis 0), but got a {weight.dim()}-d "
                               f"{weight.dtype} ({qscheme})")
        if weight.dtype != self.dtype:
            raise RuntimeError(f"a quantized embedding of dtype {self.dtype} takes a {self.dtype} weight, but got "
                               f"{weight.dtype}")
        self._packed_weight = weight

    def _weight(self):
        return self._packed_weight

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_weight"] = self._weight()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for name in ("dtype", "_packed_weight"):
            if prefix + name not in state_dict:
                missing_keys.append(prefix + name)
        if prefix + "dtype" in state_dict:
            _check_dtype(state_dict[prefix + "dtype"])
            self.dtype = state_dict[prefix + "dtype"]
        if prefix + "_packed_weight" in state_dict:
            self.set_weight(state_dict[prefix + "_packed_weight"])

    def __repr__(self) -> str:
        return repr(self._weight())


class Embedding(Module):
    """Rows of a quint8 or quint4x2 table, dequantized: out[..., :] = scale_r * q_r + bias_r for each
    index r (bias_r = -zero_point_r * scale_r; both rounded to float16 for quint4x2, as PyTorch's
    packed rows hold them), float32, of shape indices.shape + (embedding_dim,)."""

    _version = 1

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 dtype=_C.quint8) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim, self.dtype = num_embeddings, embedding_dim, dtype
        if _weight is not None and list(_weight.shape) != [num_embeddings, embedding_dim]:
            raise AssertionError(f"Shape of weight does not match num_embeddings and embedding_dim: expected "
                                 f"{[num_embeddings, embedding_dim]}, got {list(_weight.shape)}")
        self._packed_params = EmbeddingPackedParams(num_embeddings, embedding_dim, dtype)
        if _weight is not None:
            self._packed_params.set_weight(_weight)

    def forward(self, indices):
        flat = indices.reshape(-1)
        out = _C._quantized_embedding_bag(self.weight(), flat, _C.arange(flat.numel(), dtype=flat.dtype))
        return out.reshape(*indices.shape, self.embedding_dim)

    def _get_name(self) -> str:
        return "QuantizedEmbedding"

    def extra_repr(self) -> str:
        return (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
                f"dtype={self._packed_params.dtype}, qscheme={self.weight().qscheme()}")

    def __repr__(self) -> str:  # PyTorch hides the packed parameters' module
        return f"{self._get_name()}({self.extra_repr()})"

    def set_weight(self, w) -> None:
        self._packed_params.set_weight(w)

    def weight(self):
        return self._packed_params._weight()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The quantized twin of an nn.Embedding (or nn.EmbeddingBag, for EmbeddingBag) whose qconfig
        quantizes weights per row with float qparams (float_qparams_weight_only_qconfig, or
        float_qparams_weight_only_qconfig_4bit for a quint4x2 table)."""
        float_type = "EmbeddingBag" if cls is EmbeddingBag else "Embedding"
        if type(mod).__name__ != float_type or not hasattr(mod, "weight"):
            raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {float_type}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError(f"{float_type} input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            observer = mod.qconfig.weight()
        else:
            from ...quantization.qconfig import float_qparams_weight_only_qconfig

            observer = float_qparams_weight_only_qconfig.weight()
        if observer.qscheme != per_channel_affine_float_qparams:
            raise AssertionError(f"{float_type} quantization is only supported with "
                                 "float_qparams_weight_only_qconfig.")
        if observer.dtype not in _TABLE_DTYPES:
            raise AssertionError(f"The only supported dtype for nnq.{cls.__name__} is torch.quint8 and "
                                 f"torch.quint4x2, got {observer.dtype}")
        observer(mod.weight)
        qweight = _quantize_weight(mod.weight.float(), observer)
        extra = {"mode": mod.mode, "include_last_offset": mod.include_last_offset} if cls is EmbeddingBag else {}
        quantized = cls(mod.num_embeddings, mod.embedding_dim, **extra, dtype=observer.dtype)
        quantized.set_weight(qweight)
        return quantized


class EmbeddingBag(Embedding):
    """Bags of rows of a quint8 or quint4x2 table, each summed in float32 in FBGEMM's order (Note [quantized
    embedding bags]); per_sample_weights scale each member's row. As PyTorch's module does, a bag
    sums whatever `mode` says (its forward always asks the kernel for sums)."""

    _version = 1

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "sum", sparse: bool = False, _weight=None,
                 include_last_offset: bool = False, dtype=_C.quint8) -> None:
        super().__init__(num_embeddings, embedding_dim, _weight=_weight, dtype=dtype)
        self.mode = mode
        self.pruned_weights = False
        self.include_last_offset = include_last_offset

    def forward(self, indices, offsets=None, per_sample_weights=None, compressed_indices_mapping=None):
        if compressed_indices_mapping is not None:
            raise NotImplementedError("quantized EmbeddingBag: pruned tables (compressed_indices_mapping) are not "
                                      "in Ember")
        if offsets is None:
            if indices.dim() != 2:
                raise ValueError(f"quantized EmbeddingBag: without offsets, indices must be 2-d (one bag per row), "
                                 f"but got {indices.dim()}-d")
            bags, length = indices.shape
            offsets = _C.arange(0, bags * length, length, dtype=indices.dtype) if length else _C.zeros(
                bags, dtype=indices.dtype)
            indices = indices.reshape(-1)
            if per_sample_weights is not None:
                per_sample_weights = per_sample_weights.reshape(-1)
            return _C._quantized_embedding_bag(self.weight(), indices, offsets, per_sample_weights, False)
        return _C._quantized_embedding_bag(self.weight(), indices, offsets, per_sample_weights,
                                           self.include_last_offset)

    def _get_name(self) -> str:
        return "QuantizedEmbeddingBag"
