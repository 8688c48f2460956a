"""ember.func.rearrange (torch.func.rearrange): einops' rearrange pattern language over reshape
and permute.

A pattern "left -> right" names the input's dims on the left and the output's on the right. A
parenthesized group is one dim made of several axes (composed on the right, split on the left:
the input's size must divide as given, with at most one axis of a group left to infer), "..."
stands for the dims not named (on the right also inside a group, merged), and "1" or "()" is a dim of size 1 (dropped on the left, added on
the right). Every named axis appears once on each side. The input is reshaped to its elementary
axes, permuted to the right side's order and reshaped to the right side's groups, so the result is
a view whenever reshape can give one. A list or tuple of tensors is stacked along a new first dim
first, as einops does."""

from __future__ import annotations

import math
import re

import ember

_ELLIPSIS = "..."
_TOKEN = re.compile(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+|\S")


def _parse_side(text: str, side: str) -> list:
    """The side's dims: the string "..." for a bare ellipsis, else a list of axis names ("1" and,
    on the right, "..." included as such); a bare name is a group of one."""
    dims: list = []
    group: list | None = None
    for token in _TOKEN.findall(text):
        if token == "(":
            if group is not None:
                raise ValueError(f"rearrange: nested parentheses in the {side} side of the pattern")
            group = []
        elif token == ")":
            if group is None:
                raise ValueError(f"rearrange: unbalanced ')' in the {side} side of the pattern")
            dims.append(group)
            group = None
        elif token == _ELLIPSIS or token.isidentifier() or token.isdigit():
            if token.isdigit() and token != "1":
                raise ValueError(f"rearrange only supports unnamed axes of size 1, got {token}")
            if token == _ELLIPSIS and group is not None and side == "left":
                raise ValueError("rearrange: '...' cannot be inside parentheses on the left side")
            if group is None:
                dims.append(token if token == _ELLIPSIS else [token])
            elif token != "1":  # a 1 inside a group changes nothing
                group.append(token)
        else:
            raise ValueError(f"rearrange: unexpected character {token!r} in the {side} side of the pattern")
    if group is not None:
        raise ValueError(f"rearrange: unbalanced '(' in the {side} side of the pattern")
    names = [a for d in dims for a in ([d] if d == _ELLIPSIS else d) if a != "1"]
    duplicates = sorted({a for a in names if names.count(a) > 1})
    if duplicates:
        raise ValueError(f"rearrange: the {side} side names {duplicates[0]!r} more than once")
    return dims


def rearrange(tensor, pattern: str, **axes_lengths: int) -> ember.Tensor:
    """Reorders, splits, merges, adds and drops dims by an einops pattern, e.g.
    rearrange(images, "b (h h1) (w w1) c -> b h w (c h1 w1)", h1=2, w1=2)."""
    if isinstance(tensor, (list, tuple)):
        tensor = ember.stack(list(tensor))
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"rearrange: expected a Tensor or a sequence of Tensors, got {type(tensor).__name__}")
    if not isinstance(pattern, str) or pattern.count("->") != 1:
        raise ValueError("rearrange: the pattern must contain a single '->' separator")
    left_text, right_text = pattern.split("->")
    left, right = _parse_side(left_text, "left"), _parse_side(right_text, "right")
    if (_ELLIPSIS in left) != any(group == _ELLIPSIS or _ELLIPSIS in group for group in right):
        raise ValueError("rearrange: '...' must be on both sides of the pattern or on neither")
    named = lambda dims: {a for d in dims if d != _ELLIPSIS for a in d if a not in ("1", _ELLIPSIS)}  # noqa: E731
    one_sided = named(left) ^ named(right)
    if one_sided:
        raise ValueError("rearrange: identifiers only on one side of the pattern (should be on both): "
                         f"{sorted(one_sided)}")
    unused = set(axes_lengths) - named(left)
    if unused:
        raise ValueError(f"rearrange: axis lengths given for names not in the pattern: {sorted(unused)}")
    for name, length in axes_lengths.items():
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise ValueError(f"rearrange: the length of {name!r} must be a positive int, got {length!r}")

    # Bind the left side's dims to the input's, the ellipsis to the dims nobody names.
    has_ellipsis = _ELLIPSIS in left
    if len(left) - has_ellipsis > tensor.dim() or (not has_ellipsis and len(left) != tensor.dim()):
        raise ValueError(f"rearrange: the left side of the pattern has {len(left)} dims, but the tensor has "
                         f"{tensor.dim()}")
    ellipsis_dims = tensor.dim() - (len(left) - 1) if has_ellipsis else 0
    lengths = dict(axes_lengths)
    elementary: list[str] = []  # the input's axes, in order, once split
    position = 0
    for group in left:
        if group == _ELLIPSIS:
            dots = [f"...{i}" for i in range(ellipsis_dims)]
            for name in dots:
                lengths[name] = tensor.shape[position]
                position += 1
            elementary += dots
            continue
        size = tensor.shape[position]
        position += 1
        if group == ["1"]:
            if size != 1:
                raise ValueError(f"rearrange: the left side has an axis of size 1 where the tensor's dim "
                                 f"{position - 1} is {size}")
            continue
        unknown = [a for a in group if a not in lengths]
        known = math.prod(lengths[a] for a in group if a in lengths)
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot infer the sizes of {unknown} at once; give all but one of them "
                             "as keyword arguments")
        if unknown:
            if size % known:
                raise ValueError(f"rearrange: dim {position - 1} of size {size} does not divide into {group} "
                                 f"with the lengths given ({known} does not divide {size})")
            lengths[unknown[0]] = size // known
        elif known != size:
            raise ValueError(f"rearrange: dim {position - 1} has size {size}, but {group} give {known}")
        elementary += group

    # Permute the elementary axes to the right side's order, then merge its groups.
    right_axes = []
    out_shape = []
    dots = [f"...{i}" for i in range(ellipsis_dims)]
    for group in right:
        if group == _ELLIPSIS:  # the dims "..." stands for, each its own dim
            right_axes += dots
            out_shape += [lengths[a] for a in dots]
        else:  # one dim; a "..." inside merges those dims into it
            members = [m for a in group if a != "1" for m in (dots if a == _ELLIPSIS else [a])]
            right_axes += members
            out_shape.append(math.prod(lengths[a] for a in members))
    split = tensor.reshape([lengths[a] for a in elementary])
    return split.permute([elementary.index(a) for a in right_axes]).reshape(out_shape)
