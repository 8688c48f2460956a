"""grouped_mm, scaled_mm and scaled_grouped_mm with their ScalingType and SwizzleType enums
(torch.nn.functional, PyTorch 2.13): the matrix products of Mixture-of-Experts layers, where
``offs`` (int32 cumulative group ends) cuts one operand into jagged groups, and the float8 products
whose operands carry decoding scales.

They are compositions of matmul, slicing and cat, so grouped_mm differentiates as matmul does. The
float8 products upcast to float32 (matmul has no float8 kernel), accumulate there, scale, add the
bias and cast to ``output_dtype`` once, as PyTorch's CPU path does.

Where Ember differs from PyTorch: ``offs`` is checked (non-negative, non-decreasing, within the
operand) where PyTorch reads it unchecked; the rows or columns past ``offs[-1]`` are zeros, not
uninitialized memory; operands of any strides are accepted (PyTorch's 16-byte stride alignment is
a CUDA kernel's); a swizzle on either scale is refused, not only when both are given; a zero-K
scaled_mm still adds its bias; scaled_grouped_mm's RowWise recipe runs on CPU, where PyTorch has no
kernel; a contraction_dim other than (1, 0) raises NotImplementedError (PyTorch's CPU checks it,
then multiplies as if it were (1, 0)).
"""

from __future__ import annotations

import enum

from .. import _C

__all__ = ["ScalingType", "SwizzleType", "grouped_mm", "scaled_mm", "scaled_grouped_mm"]


class ScalingType(enum.IntEnum):
    """How a scaled_mm operand was scaled (torch.nn.functional.ScalingType)."""

    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class SwizzleType(enum.IntEnum):
    """The memory layout of a block-scale tensor (torch.nn.functional.SwizzleType)."""

    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


_GROUPED_DTYPES = (_C.float32, _C.bfloat16, _C.float16)
_FLOAT8 = (_C.float8_e4m3fn, _C.float8_e5m2)
_BLOCKWISE = (ScalingType.BlockWise1x16, ScalingType.BlockWise1x32, ScalingType.BlockWise1x128,
              ScalingType.BlockWise128x128)


# ---- grouped_mm -------------------------------------------------------------------------------

def _check_offs(offs, limits):
    """offs as a list of ints, after PyTorch's checks (1-D int32) and Ember's on its values.
    limits: [(size, name)] every offset must stay within."""
    if offs.dim() != 1:
        raise RuntimeError("offs has to be 1D")
    if offs.dtype != _C.int32:
        raise RuntimeError("Offsets have to be int32")
    ends = offs.tolist()
    # PyTorch reads offs unchecked (a wild read past the operand); Ember refuses such offsets.
    if any(e < 0 for e in ends) or any(b < a for a, b in zip(ends, ends[1:], strict=False)):
        raise RuntimeError(f"[grouped_mm] expected offs to be non-negative and non-decreasing, but got {ends}")
    for size, name in limits:
        if ends and ends[-1] > size:
            raise RuntimeError(f"[grouped_mm] expected offs[-1] <= {size} (the size of {name}), but got {ends[-1]}")
    return ends


def _validate_grouped(mat_a, mat_b, offs):
    """PyTorch's shape checks for grouped_mm; returns the group ends (None for 3d x 3d)."""
    for name, mat in (("mat_a", mat_a), ("mat_b", mat_b)):
        if mat.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    a_2d, b_2d = mat_a.dim() == 2, mat_b.dim() == 2
    if not (a_2d and b_2d) and mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if (offs is not None) != (a_2d or b_2d):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d")
    if offs is None:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError("batched dimension has to match")
        return None
    if a_2d and b_2d:
        limits = [(mat_a.shape[1], "mat_a's dim 1"), (mat_b.shape[0], "mat_b's dim 0")]
    elif a_2d:
        limits = [(mat_a.shape[0], "mat_a's dim 0")]
    else:
        limits = [(mat_b.shape[1], "mat_b's dim 1")]
    ends = _check_offs(offs, limits)
    batched = mat_b if a_2d and not b_2d else mat_a
    if not (a_2d and b_2d) and len(ends) != batched.shape[0]:
        raise RuntimeError("matrix batch sizes have to match")
    return ends


def _grouped_product(mat_a, mat_b, ends, piece=None):
    """The grouped product of already-validated operands, in their dtype. piece(g, s, e, product)
    may rescale each group's product (scaled_grouped_mm); it must keep the product's dtype."""
    piece = piece or (lambda g, s, e, p: p)
    if ends is None:  # 3d x 3d: a plain batched product
        return piece(None, None, None, _C.matmul(mat_a, mat_b))
    bounds = list(zip([0, *ends][:-1], ends, strict=True))
    if mat_a.dim() == 2 and mat_b.dim() == 2:  # the groups cut K: one [M, N] product per group
        m, n = mat_a.shape[0], mat_b.shape[1]
        if not bounds:
            return _C.zeros((0, m, n), dtype=mat_a.dtype, device=mat_a.device)
        return _C.stack([piece(g, s, e, _C.matmul(mat_a[:, s:e], mat_b[s:e])) for g, (s, e) in enumerate(bounds)])
    if mat_a.dim() == 2:  # 2d x 3d: the groups cut mat_a's rows
        parts = [piece(g, s, e, _C.matmul(mat_a[s:e], mat_b[g])) for g, (s, e) in enumerate(bounds)]
        rest, dim = (mat_a.shape[0] - (ends[-1] if ends else 0), mat_b.shape[2]), 0
    else:  # 3d x 2d: the groups cut mat_b's columns
        parts = [piece(g, s, e, _C.matmul(mat_a[g], mat_b[:, s:e])) for g, (s, e) in enumerate(bounds)]
        rest, dim = (mat_a.shape[1], mat_b.shape[1] - (ends[-1] if ends else 0)), 1
    # What lies past offs[-1] belongs to no group: zeros (PyTorch leaves it uninitialized).
    if rest[dim] or not parts:
        parts.append(_C.zeros(rest, dtype=mat_a.dtype, device=mat_a.device))
    return parts[0] if len(parts) == 1 else _C.cat(parts, dim)


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Grouped matrix product (torch.nn.functional.grouped_mm), as in a Mixture-of-Experts layer.

    With offs (1-D int32 group ends: group i is ``[offs[i-1], offs[i])``, group 0 starts at 0):

    - 2d x 3d: mat_a [M, K] (rows cut into groups), mat_b [G, K, N] -> [M, N];
    - 3d x 2d: mat_a [G, M, K], mat_b [K, N] (columns cut) -> [M, N];
    - 2d x 2d: mat_a [M, K], mat_b [K, N], both cut along K -> [G, M, N].

    Without offs, 3d x 3d is a batched product. Rows or columns past ``offs[-1]`` are zeros. The
    operands must share a dtype among float32, bfloat16 and float16; as in PyTorch, bias is not
    supported yet and out_dtype must be mat_a's dtype. Differentiable in mat_a and mat_b."""
    for name, mat in (("mat_a", mat_a), ("mat_b", mat_b)):
        if mat.dtype not in _GROUPED_DTYPES:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got {mat.dtype}")
    ends = _validate_grouped(mat_a, mat_b, offs)
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {mat_a.dtype} != {mat_b.dtype}")
    return _grouped_product(mat_a, mat_b, ends)


# ---- scaled_mm / scaled_grouped_mm --------------------------------------------------------------

def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _recipes(value, kind):
    # PyTorch takes the enum members only; plain ints naming a member are accepted here too.
    return [kind(v) for v in _as_list(value)]


def _check_swizzles(swizzle_a, swizzle_b):
    # PyTorch's CPU checks only when both are given; a swizzle on one side is refused here as well.
    swizzles = _recipes(swizzle_a, SwizzleType) + _recipes(swizzle_b, SwizzleType)
    if any(s != SwizzleType.NO_SWIZZLE for s in swizzles):
        raise ValueError("CPU does not support swizzle.")


def _check_contraction(mat_a, mat_b, contraction_dim):
    shapes = f"({mat_a.shape[0]}x{mat_a.shape[1]} and {mat_b.shape[0]}x{mat_b.shape[1]})"
    if not contraction_dim:
        if mat_a.shape[1] != mat_b.shape[0]:
            raise ValueError(f"mat_a and mat_b shapes cannot be multiplied {shapes}")
        return
    if len(contraction_dim) != 2:
        raise ValueError("contraction_dim must have exactly 2 elements")
    dims = []
    for d in contraction_dim:
        if not -2 <= d <= 1:
            raise IndexError(f"Dimension out of range (expected to be in range of [-2, 1], but got {d})")
        dims.append(d % 2)
    if mat_a.shape[dims[0]] != mat_b.shape[dims[1]]:
        raise ValueError(f"mat_a and mat_b shapes cannot be multiplied {shapes} with contraction dims "
                         f"mat_a: {contraction_dim[0]}, mat_b: {contraction_dim[1]}")
    if dims != [1, 0]:
        raise NotImplementedError(f"[scaled_mm] contraction_dim {tuple(contraction_dim)} is not implemented for "
                                  "cpu: only (1, 0) (mat_a [M, K], mat_b [K, N]) is")


def _invalid_config(mat_a, mat_b, scale_a, scale_b):
    def describe(s):
        return f"{s.dtype}, size {list(s.shape)}" if isinstance(s, _C.Tensor) else "none"

    m, n = mat_a.shape[0], mat_b.shape[-1]
    return ValueError(
        "Invalid scaling configuration.\n"
        "- For TensorWise scaling, a and b should be float8, scales should be float and singletons.\n"
        f"- For RowWise scaling, a and b should be float8, scales should be float, scale_a should be ({m}, 1) "
        f"and scale_b should be (1, {n}).\n"
        f"Got mat_a {mat_a.dtype}, scale_a {describe(scale_a)}, mat_b {mat_b.dtype}, scale_b {describe(scale_b)}")


def _one_recipe(scales, recipes, accepted):
    """The recipe when the lists name exactly one float32 scale with an accepted recipe, else None."""
    if len(scales) != 1 or len(recipes) != 1 or recipes[0] not in accepted:
        return None
    scale = scales[0]
    if not isinstance(scale, _C.Tensor) or scale.dtype != _C.float32:
        return None
    return recipes[0]


def _check_bias(bias, n):
    if bias is None:
        return
    if bias.numel() != n:
        raise ValueError(f"Bias must be size {n} but got {bias.numel()}")
    if bias.dtype not in (_C.float32, _C.bfloat16, _C.float16):
        raise ValueError(f"Bias must be Float32 or BFloat16 or Half, but got {bias.dtype}")


def scaled_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None, swizzle_b=None,
              bias=None, output_dtype=_C.bfloat16, contraction_dim=(), use_fast_accum=False):
    """Scaled matrix product (torch.nn.functional.scaled_mm): ``(mat_a @ mat_b) * scales + bias``
    for float8 (e4m3fn or e5m2) mat_a [M, K] and mat_b [K, N], accumulated in float32.

    Recipes on CPU, as in PyTorch: TensorWise for both (float32 singleton scales) or RowWise for
    both (float32 scale_a [M, 1], scale_b [1, N]); the BlockWise recipes and swizzles raise
    ValueError. bias ([N], float32/bfloat16/float16) is added in float32 before the one cast to
    output_dtype (None: mat_a's dtype). use_fast_accum has no effect on CPU."""
    del use_fast_accum  # a tensor-core accumulation mode; CPU always accumulates in float32
    scales_a, scales_b = _as_list(scale_a), _as_list(scale_b)
    recipes_a, recipes_b = _recipes(scale_recipe_a, ScalingType), _recipes(scale_recipe_b, ScalingType)
    if mat_a.dim() != 2:
        raise ValueError("mat_a must be a matrix")
    if mat_b.dim() != 2:
        raise ValueError("mat_b must be a matrix")
    _check_contraction(mat_a, mat_b, contraction_dim)
    m, n = mat_a.shape[0], mat_b.shape[1]
    _check_bias(bias, n)
    _check_swizzles(swizzle_a, swizzle_b)

    recipe = None
    if mat_a.dtype in _FLOAT8 and mat_b.dtype in _FLOAT8:
        for accepted in (ScalingType.TensorWise, ScalingType.RowWise):
            ra, rb = _one_recipe(scales_a, recipes_a, (accepted,)), _one_recipe(scales_b, recipes_b, (accepted,))
            if ra is not None and rb is not None:
                recipe = accepted
    if recipe is None:
        raise _invalid_config(mat_a, mat_b, scales_a[0] if scales_a else None, scales_b[0] if scales_b else None)
    sa, sb = scales_a[0], scales_b[0]
    if recipe == ScalingType.TensorWise:
        for name, s in (("scale_a", sa), ("scale_b", sb)):
            if s.numel() != 1:
                raise ValueError(f"{name} must have 1 Float element")
        sa, sb = sa.reshape(()), sb.reshape(())
    else:
        if tuple(sa.shape) != (m, 1):
            raise ValueError(f"scale_a must have shape [{m}, 1], got {list(sa.shape)}")
        if sb.numel() != n:
            raise ValueError(f"scale_b must have {n} Float elements, got {sb.numel()}")
        if tuple(sb.shape) != (1, n):
            raise ValueError(f"scale_b must have shape [1, {n}], got {list(sb.shape)}")

    out = _C.matmul(mat_a.to(_C.float32), mat_b.to(_C.float32)) * sa * sb
    if bias is not None:
        out = out + bias.reshape(n).to(_C.float32)
    return out.to(mat_a.dtype if output_dtype is None else output_dtype)


def _check_rowwise_scale(mat, scale, dim, arg_idx, multiplier):
    """The shape a grouped RowWise scale must have: one per row of mat_a (dim 0) or column of mat_b
    (dim 1), per group; for 2d x 2d, the groups' scales one after another."""
    if mat.dim() == 2:
        if scale.dim() != 1:
            raise RuntimeError(f"scale must be a 1D tensor, but got {scale.dim()}D, arg {arg_idx}")
        if scale.shape[0] != mat.shape[dim] * multiplier:
            raise RuntimeError(f"scale must have the same length as mat for arg {arg_idx}")
    else:
        if scale.dim() != 2:
            raise RuntimeError(f"scale must be a 2D tensor, but got {scale.dim()}D for arg {arg_idx}")
        if scale.shape[0] != mat.shape[0]:
            raise RuntimeError(f"scale must have the same batch dimension as mat for arg {arg_idx}")
        if scale.shape[1] != mat.shape[1 + dim]:
            raise RuntimeError(f"scale must have the same first dimension as mat for arg {arg_idx}")


def scaled_grouped_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None,
                      swizzle_b=None, bias=None, offs=None, output_dtype=_C.bfloat16, contraction_dim=(),
                      use_fast_accum=False):
    """Scaled grouped product (torch.nn.functional.scaled_grouped_mm): grouped_mm's layouts and
    offs on float8 operands, each group's product scaled per row of mat_a and per column of mat_b.

    The recipe is RowWise for both, with float32 scales: a 2-D mat_a [M, K] takes scale_a [M], a
    3-D one [G, M, K] takes [G, M]; a 2-D mat_b [K, N] takes scale_b [N], a 3-D one [G, K, N] takes
    [G, N]; for 2d x 2d (groups along K) each group has its own row and column scales, so scale_a is
    [G * M] and scale_b [G * N]. The BlockWise (MX/NV) recipes raise NotImplementedError on CPU.
    The output is bfloat16, as in PyTorch; bias is not supported yet."""
    del use_fast_accum
    if mat_a.dtype not in _FLOAT8 or mat_b.dtype not in _FLOAT8:
        raise ValueError(f"Expected mat_a and mat_b to be float8 (float8_e4m3fn or float8_e5m2), got {mat_a.dtype} "
                         f"and {mat_b.dtype}")
    ends = _validate_grouped(mat_a, mat_b, offs)
    if bias is not None:
        raise ValueError("Bias not supported yet")
    if output_dtype is not None and output_dtype != _C.bfloat16:
        raise ValueError("Only bf16 high precision output types are supported for grouped gemm")
    if contraction_dim and [d % 2 for d in contraction_dim] != [1, 0]:
        raise NotImplementedError(f"[scaled_grouped_mm] contraction_dim {tuple(contraction_dim)} is not implemented "
                                  "for cpu")
    _check_swizzles(swizzle_a, swizzle_b)
    scales_a, scales_b = _as_list(scale_a), _as_list(scale_b)
    recipes_a, recipes_b = _recipes(scale_recipe_a, ScalingType), _recipes(scale_recipe_b, ScalingType)
    if any(r in _BLOCKWISE for r in recipes_a + recipes_b):
        raise NotImplementedError("[scaled_grouped_mm] the BlockWise (MX/NV) recipes are not implemented for cpu")
    rowwise = (ScalingType.RowWise,)
    if _one_recipe(scales_a, recipes_a, rowwise) is None or _one_recipe(scales_b, recipes_b, rowwise) is None:
        raise ValueError("Invalid scaling configuration for scaled_grouped_mm: both operands need the RowWise "
                         "recipe with one float32 scale tensor each")
    sa, sb = scales_a[0], scales_b[0]
    multiplier = len(ends) if mat_a.dim() == 2 and mat_b.dim() == 2 else 1
    _check_rowwise_scale(mat_a, sa, 0, 0, multiplier)
    _check_rowwise_scale(mat_b, sb, 1, 1, multiplier)

    m, n = mat_a.shape[-2], mat_b.shape[-1]

    def scale(g, s, e, product):
        if g is None:  # 3d x 3d
            return product * sa.unsqueeze(2) * sb.unsqueeze(1)
        if mat_a.dim() == 2 and mat_b.dim() == 2:
            return product * sa[g * m:(g + 1) * m].unsqueeze(1) * sb[g * n:(g + 1) * n]
        if mat_a.dim() == 2:
            return product * sa[s:e].unsqueeze(1) * sb[g]
        return product * sa[g].unsqueeze(1) * sb[s:e]

    out = _grouped_product(mat_a.to(_C.float32), mat_b.to(_C.float32), ends, scale)
    return out.to(_C.bfloat16)
