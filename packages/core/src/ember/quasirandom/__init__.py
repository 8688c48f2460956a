"""ember.quasirandom: Sobol' low-discrepancy sequences, as torch.quasirandom.

`SobolEngine(dimension, scramble=False, seed=None)` draws the points PyTorch's engine draws, bit
for bit: the same direction numbers (Joe and Kuo's `new-joe-kuo-6.21201`, up to 21,201
dimensions; see `NOTICE` beside this file), the same Gray-code order starting from the point 0,
and, with `scramble=True`, the same random linear matrix scrambling and digital shift drawn from
the same generator stream (`ember.randint` matches PyTorch's CPU generator).

The engine's state is small (a dimension x 30 table of direction numbers and the current point),
so it is kept in NumPy: a draw of n points XORs one column of the table per point
(`np.bitwise_xor.accumulate`) and returns an Ember tensor.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

import ember

__all__ = ["SobolEngine"]

_TABLE = Path(__file__).with_name("joe_kuo_6_21201.npz")


@functools.cache
def _direction_numbers() -> tuple[np.ndarray, np.ndarray]:
    """Joe and Kuo's primitive polynomials (`poly`, one per dimension) and initial direction
    numbers (`vinit`, 18 per dimension), as stored by NumPy without pickles."""
    with np.load(_TABLE, allow_pickle=False) as table:
        return table["poly"].astype(np.int64), table["vinit"].astype(np.int64)


def _initial_state(dimension: int, maxbit: int) -> np.ndarray:
    """The (dimension, maxbit) direction numbers, column j scaled by 2^(maxbit - 1 - j).

    Dimension 0 is the van der Corput sequence (every number 1); dimension d >= 1 takes its first
    m numbers (m = the degree of its polynomial p) from the table and the rest from Bratley and
    Fox's recurrence, v_j = v_(j-m) ^ XOR over the set bits k of p of 2^(k+1) v_(j-k-1). Rows
    of one degree run the recurrence together."""
    poly, vinit = _direction_numbers()
    v = np.zeros((dimension, maxbit), np.int64)
    v[0] = 1
    degree = np.array([int(p).bit_length() - 1 for p in poly[:dimension]], np.int64)
    for m in range(1, int(degree.max(initial=0)) + 1):
        rows = np.nonzero(degree == m)[0]
        rows = rows[rows >= 1]
        if rows.size == 0:
            continue
        p = poly[rows]
        v[rows, :m] = vinit[rows, :m]
        for j in range(m, maxbit):
            new = v[rows, j - m].copy()
            for k in range(m):
                taps = (p >> (m - 1 - k)) & 1
                new ^= taps * (v[rows, j - k - 1] << (k + 1))
            v[rows, j] = new
    return v << np.arange(maxbit - 1, -1, -1, dtype=np.int64)


def _parity(x: np.ndarray) -> np.ndarray:
    """1 where x (non-negative, below 2^32) has an odd number of set bits."""
    for shift in (16, 8, 4, 2, 1):
        x = x ^ (x >> shift)
    return x & 1


def _scrambled(state: np.ndarray, ltm: np.ndarray, maxbit: int) -> np.ndarray:
    """Owen's linear matrix scrambling: each direction number's bits are multiplied over GF(2) by
    the dimension's lower-triangular random matrix (its diagonal set to 1). Row p of the matrix,
    read as a number (column k is bit maxbit - 1 - k), gives bit maxbit - 1 - p of the result."""
    ltm = ltm.copy()
    idx = np.arange(maxbit)
    ltm[:, idx, idx] = 1
    rows = (ltm << np.arange(maxbit - 1, -1, -1, dtype=np.int64)).sum(-1)  # (dimension, maxbit)
    weights = np.int64(1) << np.arange(maxbit - 1, -1, -1, dtype=np.int64)
    out = np.empty_like(state)
    for d0 in range(0, state.shape[0], 512):  # bounded temporaries: 512 x maxbit x maxbit
        d1 = min(state.shape[0], d0 + 512)
        bits = _parity(state[d0:d1, :, None] & rows[d0:d1, None, :])  # (d, j, p)
        out[d0:d1] = (bits * weights).sum(-1)
    return out


def _rightmost_zero(n: np.ndarray) -> np.ndarray:
    """The index of the lowest zero bit of each (non-negative) n."""
    lowest_zero = ~n & (n + 1)
    return np.log2(lowest_zero.astype(np.float64)).astype(np.int64)


class SobolEngine:
    r"""An engine for (scrambled) Sobol' sequences, as `torch.quasirandom.SobolEngine`.

    Args:
        dimension (int): the dimensionality of the points, in [1, 21201].
        scramble (bool): scramble the sequence (random linear matrix scrambling and a digital
            shift), drawn from `ember.randint`. Default: False.
        seed (int, optional): seed of a fresh `ember.Generator` for the scrambling; without it the
            scrambling draws from the default generator.

    Example::

        >>> engine = ember.quasirandom.SobolEngine(dimension=3)
        >>> engine.draw(3)
        tensor([[0.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.5000],
                [0.7500, 0.2500, 0.2500]])
    """

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None):
        if isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer)):
            raise TypeError(f"SobolEngine: dimension must be an int, but got {type(dimension).__name__}")
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = int(dimension)
        state = _initial_state(self.dimension, self.MAXBIT)
        if scramble:
            generator = None
            if seed is not None:
                generator = ember.Generator()
                generator.manual_seed(seed)
            shift_bits = ember.randint(2, (self.dimension, self.MAXBIT), generator=generator).numpy()
            shift = shift_bits @ (np.int64(1) << np.arange(self.MAXBIT, dtype=np.int64))
            ltm = np.tril(ember.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=generator).numpy())
            state = _scrambled(state, ltm, self.MAXBIT)
        else:
            shift = np.zeros(self.dimension, np.int64)
        self._state = state
        self.sobolstate = ember.from_numpy(state)
        self.shift = ember.from_numpy(np.ascontiguousarray(shift, dtype=np.int64))
        self._quasi = shift.astype(np.int64)
        # As PyTorch's engine: the first point is the shift over 2^30, computed in the default
        # dtype at construction (float32 unless changed), whatever dtype it is drawn in.
        first = self._quasi.astype(_numpy_dtype(ember.get_default_dtype())) / np.float32(2**self.MAXBIT)
        self._first_point = first.reshape(1, -1)
        self.num_generated = 0

    @property
    def quasi(self) -> ember.Tensor:
        """The current point's integer coordinates (times 2^30)."""
        return ember.from_numpy(self._quasi.copy())

    def _advance(self, n: int, start: int) -> np.ndarray:
        """The next n integer points of the Gray-code order after index `start` - 1."""
        lows = _rightmost_zero(np.arange(start, start + n, dtype=np.int64))
        points = np.bitwise_xor.accumulate(self._state[:, lows].T, axis=0) ^ self._quasi
        if n > 0:
            self._quasi = points[-1].copy()
        return points

    def draw(self, n: int = 1, out: ember.Tensor | None = None, dtype: ember.dtype | None = None) -> ember.Tensor:
        """The next n points, an (n, dimension) tensor in [0, 1) of `dtype` (the default dtype
        when None). The points depend on the ones drawn before."""
        n = int(n)
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}, {self.dimension}]")
        dtype = ember.get_default_dtype() if dtype is None else dtype
        if dtype not in (ember.float32, ember.float64):  # PyTorch's draw kernel has these two
            raise NotImplementedError(f"SobolEngine.draw: dtype must be float32 or float64, but got {dtype}")
        compute = np.float64 if dtype == ember.float64 else np.float32
        if self.num_generated == 0 and n > 0:
            rest = self._advance(n - 1, 0)
            values = np.concatenate([self._first_point.astype(compute),
                                     rest.astype(compute) * compute(2.0**-self.MAXBIT)])
        else:
            values = self._advance(n, self.num_generated - 1).astype(compute) * compute(2.0**-self.MAXBIT)
        self.num_generated += n
        result = ember.from_numpy(np.ascontiguousarray(values))
        if out is not None:
            out.resize_(result.shape).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: ember.Tensor | None = None, dtype: ember.dtype | None = None) -> ember.Tensor:
        """The next 2^m points; the total drawn must stay a power of 2, which keeps the balance
        properties of Sobol' points."""
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, please use "
                "'SobolEngine.draw()' instead."
            )
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Back to the first point."""
        self._quasi = self.shift.numpy().astype(np.int64)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skips n points, as drawing them would."""
        n = int(n)
        if n < 0:
            raise ValueError(f"SobolEngine.fast_forward: n must be non-negative, but got {n}")
        if self.num_generated == 0:
            self._advance(max(n - 1, 0), 0)
        else:
            self._advance(n, self.num_generated - 1)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        fmt = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt += ["scramble=True"]
        if self.seed is not None:
            fmt += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt) + ")"


def _numpy_dtype(dtype: ember.dtype):
    return np.float64 if dtype == ember.float64 else np.float32
