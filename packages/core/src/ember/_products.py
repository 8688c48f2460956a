"""Products built from the registered matrix ops: einsum, tensordot, kron, inner, chain_matmul
and linalg.multi_dot. They are compositions (as PyTorch's are CompositeImplicitAutograd), so
their derivatives, forward mode and vmap come from the ops they call.

einsum contracts two operands at a time as one batched matrix product (bmm), choosing at each
step the pair whose result is smallest; a label found in only one operand and not in the output
is summed first, and a label repeated within one operand takes the diagonal.
"""

from __future__ import annotations

import math
import string

from . import _C
from ._args import write_out

_LETTERS = set(string.ascii_letters)


def _as_operands(operands) -> list:
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    for op in operands:
        if not isinstance(op, _C.Tensor):
            raise TypeError(f"einsum(): operands must be Tensors, but got {type(op).__name__}")
    return list(operands)


def _parse(equation: str, operands: list) -> tuple[list[list[str]], list[str]]:
    """Per operand its labels (ellipsis dims become labels '.0', '.1', ... aligned from the right),
    and the output's labels."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    ellipsis_dims = 0
    parsed = []
    for term, op in zip(terms, operands, strict=True):
        letters = term.replace("...", "")
        bad = [c for c in letters if c not in _LETTERS]
        if bad or term.count("...") > 1:
            raise RuntimeError(f"einsum(): invalid subscript given at index {equation.index(bad[0]) if bad else 0} "
                               f"in the equation string, subscripts must be in [a-zA-Z]")
        if "..." in term:
            n = op.dim() - len(letters)
            if n < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(letters)}) is more "
                                   f"than the number of dimensions ({op.dim()}) for operand")
            ellipsis_dims = max(ellipsis_dims, n)
            head, _, tail = term.partition("...")
            labels = list(head) + [f".{ellipsis_dims - n + i}" for i in range(n)] + list(tail)
        else:
            if len(letters) != op.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(letters)}) does not "
                                   f"match the number of dimensions ({op.dim()}) for operand and no ellipsis was "
                                   f"given")
            labels = list(letters)
        parsed.append(labels)
    dots = [f".{i}" for i in range(ellipsis_dims)]
    if arrow:
        if any(c not in _LETTERS for c in rhs.replace("...", "")):
            raise RuntimeError("einsum(): invalid subscript given in the output, subscripts must be in [a-zA-Z]")
        head, has_dots, tail = rhs.partition("...")
        out = list(head) + (dots if has_dots else []) + list(tail)
        seen = set()
        for label in out:
            if label in seen:
                raise RuntimeError(f"einsum(): output subscript {label} appears more than once in the output")
            if not any(label in labels for labels in parsed):
                raise RuntimeError(f"einsum(): output subscript {label} does not appear in the equation for any "
                                   f"input operand")
            seen.add(label)
    else:  # implicit output: the ellipsis dims, then letters used once, alphabetically
        counts: dict[str, int] = {}
        for labels in parsed:
            for label in labels:
                if not label.startswith("."):
                    counts[label] = counts.get(label, 0) + 1
        out = dots + sorted((c for c, n in counts.items() if n == 1), key=lambda c: (c.islower(), c))
    return parsed, out


def _take_diagonals(op, labels: list[str]):
    """A label repeated within one operand keeps only the diagonal (moved to the last dim)."""
    while True:
        repeated = next((label for label in labels if labels.count(label) > 1), None)
        if repeated is None:
            return op, labels
        i = labels.index(repeated)
        j = labels.index(repeated, i + 1)
        op = _C.diagonal(op, 0, i, j)
        labels = [label for k, label in enumerate(labels) if k not in (i, j)] + [repeated]


def _sum_out(op, labels: list[str], keep: set[str]):
    drop = [i for i, label in enumerate(labels) if label not in keep]
    if drop:
        op = _C.sum(op, drop)
        labels = [label for i, label in enumerate(labels) if i not in drop]
    return op, labels


def _sizes(pairs) -> dict[str, int]:
    """label -> size, broadcasting size-1 dims; RuntimeError for sizes that disagree."""
    sizes: dict[str, int] = {}
    for op, labels in pairs:
        for label, n in zip(labels, op.shape, strict=True):
            old = sizes.get(label)
            if old is None or old == 1:
                sizes[label] = n
            elif n != 1 and n != old:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {label} has size {n} for an operand which does not broadcast with "
                                   f"previously seen size {old}")
    return sizes


def _contract(a, la, b, lb, keep: set[str]):
    """The pair as one bmm: batch labels (in both, kept), contracted (in both, not kept), and the
    labels of one side only."""
    sizes = _sizes([(a, la), (b, lb)])
    batch = [x for x in la if x in lb and x in keep]
    summed = [x for x in la if x in lb and x not in keep]
    left = [x for x in la if x not in lb]
    right = [x for x in lb if x not in la]

    def arrange(op, labels, order):
        op = _C.permute(op, [labels.index(x) for x in order])
        return _C.expand(op, [sizes[x] for x in order])

    n_batch = math.prod(sizes[x] for x in batch)
    n_left, n_sum, n_right = (math.prod(sizes[x] for x in group) for group in (left, summed, right))
    a3 = _C.reshape(arrange(a, la, batch + left + summed), [n_batch, n_left, n_sum])
    b3 = _C.reshape(arrange(b, lb, batch + summed + right), [n_batch, n_sum, n_right])
    out = _C.reshape(_C.bmm(a3, b3), [sizes[x] for x in batch + left + right])
    return out, batch + left + right


def einsum(equation: str, *operands):
    """torch.einsum: Einstein summation over the operands (see the module docstring)."""
    operands = _as_operands(operands)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    parsed, out = _parse(equation, operands)
    pending = [_take_diagonals(op, labels) for op, labels in zip(operands, parsed, strict=True)]
    _sizes(pending)  # check that the sizes agree up front

    def needed_elsewhere(skip: list[int]) -> set[str]:
        keep = set(out)
        for k, (_, labels) in enumerate(pending):
            if k not in skip:
                keep.update(labels)
        return keep

    pending = [_sum_out(op, labels, needed_elsewhere([k])) for k, (op, labels) in enumerate(pending)]
    while len(pending) > 1:
        best = None
        for i in range(len(pending)):
            for j in range(i + 1, len(pending)):
                keep = needed_elsewhere([i, j])
                labels = set(pending[i][1]) | set(pending[j][1])
                sizes = _sizes([pending[i], pending[j]])
                cost = math.prod(sizes[x] for x in labels if x in keep)
                if best is None or cost < best[0]:
                    best = (cost, i, j, keep)
        _, i, j, keep = best
        merged = _contract(*pending[i], *pending[j], keep)
        pending = [p for k, p in enumerate(pending) if k not in (i, j)] + [merged]
    op, labels = _sum_out(*pending[0], set(out))
    return _C.permute(op, [labels.index(x) for x in out]) if labels != out else op


def tensordot(a, b, dims=2, out=None):
    """Sums the products over the last `dims` dims of a and the first of b (or the listed dims)."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        dims_a, dims_b = (list(d) if isinstance(d, (list, tuple)) else [d] for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    dims_a = [d % a.dim() for d in dims_a] if a.dim() else dims_a
    dims_b = [d % b.dim() for d in dims_b] if b.dim() else dims_b
    for da, db in zip(dims_a, dims_b, strict=True):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    n = math.prod(a.shape[d] for d in dims_a)
    left = _C.reshape(_C.permute(a, free_a + dims_a), [math.prod(a.shape[d] for d in free_a), n])
    right = _C.reshape(_C.permute(b, dims_b + free_b), [n, math.prod(b.shape[d] for d in free_b)])
    result = _C.reshape(_C.mm(left, right), [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])
    return write_out(result, out)


def kron(input, other):
    """The Kronecker product: block (i, j, ...) of the result is input[i, j, ...] * other."""
    rank = max(input.dim(), other.dim())
    a = _C.reshape(input, [1] * (rank - input.dim()) + list(input.shape))
    b = _C.reshape(other, [1] * (rank - other.dim()) + list(other.shape))
    a = _C.reshape(a, [x for n in a.shape for x in (n, 1)])
    b = _C.reshape(b, [x for n in b.shape for x in (1, n)])
    return _C.reshape(a * b, [p * q for p, q in zip(
        [1] * (rank - input.dim()) + list(input.shape), [1] * (rank - other.dim()) + list(other.shape), strict=True)])


def inner(input, other):
    """Sums the products over the last dims (a scalar operand multiplies)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def multi_dot(tensors, *, out=None):
    """linalg.multi_dot: the chain of matrix products in the cheapest order (the classic dynamic
    program); the first tensor may be 1-D (a row) and the last 1-D (a column)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vec, last_vec = tensors[0].dim() == 1, tensors[-1].dim() == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = _C.unsqueeze(mats[0], 0)
    if last_vec:
        mats[-1] = _C.unsqueeze(mats[-1], 1)
    for i, m in enumerate(mats):
        if m.dim() != 2:
            which = "first" if i == 0 else "last" if i == len(mats) - 1 else None
            if which:
                raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {tensors[i].dim()}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].dim()}D")
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    n = len(mats)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i: int, j: int):
        if i == j:
            return mats[i]
        k = split[i][j]
        return _C.mm(product(i, k), product(k + 1, j))

    result = product(0, n - 1)
    if first_vec:
        result = _C.squeeze(result, [0])
    if last_vec:
        result = _C.squeeze(result, [-1])
    return write_out(result, out)


def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices in the cheapest order (deprecated in PyTorch for multi_dot)."""
    if len(matrices) == 1:
        return write_out(matrices[0], out)
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    return multi_dot(matrices, out=out)
