"""Compose, RandomApply, RandomChoice, RandomOrder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ember
from ember import nn

from ._transform import Transform


def _check_transforms(transforms: Any) -> list:
    if not isinstance(transforms, Sequence) or isinstance(transforms, str):
        raise TypeError("Argument transforms should be a sequence of callables")
    if not transforms:
        raise ValueError("Pass at least one transform")
    return list(transforms)


def _run(transforms: Sequence[Callable], inputs: tuple) -> Any:
    needs_unpacking = len(inputs) > 1
    outputs = inputs if needs_unpacking else inputs[0]
    for transform in transforms:
        outputs = transform(*inputs)
        inputs = outputs if needs_unpacking else (outputs,)
    return outputs


class Compose(Transform):
    """Applies ``transforms`` in order."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        super().__init__()
        self.transforms = _check_transforms(transforms)

    def forward(self, *inputs: Any) -> Any:
        return _run(self.transforms, inputs)

    def extra_repr(self) -> str:
        return "\n".join(str(t) for t in self.transforms)


class RandomApply(Transform):
    """Applies all ``transforms`` with probability ``p``, or none."""

    def __init__(self, transforms: Sequence[Callable] | nn.ModuleList, p: float = 0.5) -> None:
        super().__init__()
        if not isinstance(transforms, (Sequence, nn.ModuleList)):
            raise TypeError("Argument transforms should be a sequence of callables or a `nn.ModuleList`")
        self.transforms = transforms
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = p

    def forward(self, *inputs: Any) -> Any:
        needs_unpacking = len(inputs) > 1
        if ember.rand(1).item() >= self.p:
            return inputs if needs_unpacking else inputs[0]
        return _run(list(self.transforms), inputs)


class RandomChoice(Transform):
    """Applies one of ``transforms``, picked with probabilities ``p`` (default: uniform)."""

    def __init__(self, transforms: Sequence[Callable], p: list[float] | None = None) -> None:
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        if p is None:
            p = [1] * len(transforms)
        elif len(p) != len(transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != {len(transforms)}")
        super().__init__()
        self.transforms = transforms
        total = sum(p)
        self.p = [prob / total for prob in p]

    def forward(self, *inputs: Any) -> Any:
        idx = int(ember.multinomial(ember.tensor(self.p, dtype=ember.float64), 1).item())
        return self.transforms[idx](*inputs)


class RandomOrder(Transform):
    """Applies ``transforms`` in a random order."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        super().__init__()
        self.transforms = transforms

    def forward(self, *inputs: Any) -> Any:
        order = ember.randperm(len(self.transforms)).tolist()
        return _run([self.transforms[i] for i in order], inputs)
