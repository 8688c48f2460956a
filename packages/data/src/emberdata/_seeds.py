"""Counter-based seed derivation: every seed a pipeline uses is a pure function of a root seed
and a path of integers (epoch, rank, worker, draw number), so a run is reproduced from its root
seed alone, whatever the number of workers or the order in which processes start.

Note [counter-based seeds]
~~~~~~~~~~~~~~~~~~~~~~~~~~
``derive(key, *path)`` is a keyed hash (BLAKE2b, 64-bit output) of the path under the key: a
counter-based generator in the sense of Philox (Salmon et al., 2011), where the n-th output is
computed directly from (key, n) instead of by stepping a state n times. Two consequences the
loaders rely on: a worker can compute its seeds without any other process having drawn first,
and distinct paths give independent-looking seeds (there is no shared stream to overlap).
"""

from __future__ import annotations

import hashlib

_MASK64 = (1 << 64) - 1


def _encode(value: int) -> bytes:
    # Arbitrary-size and negative integers encode unambiguously (sign byte, length, magnitude).
    magnitude = abs(value)
    body = magnitude.to_bytes((magnitude.bit_length() + 7) // 8 or 1, "little")
    return bytes([value < 0]) + len(body).to_bytes(4, "little") + body


def derive(key: int, *path: int) -> int:
    """A 64-bit seed that depends only on ``key`` and ``path`` (Note [counter-based seeds])."""
    digest = hashlib.blake2b(digest_size=8, person=b"emberdata-seed")
    digest.update(_encode(key))
    for part in path:
        digest.update(_encode(part))
    return int.from_bytes(digest.digest(), "little")


def _random_root() -> int:
    # From ember's default generator, so ember.manual_seed(...) makes an unseeded loader
    # reproducible (pytorch#77741).
    import ember

    return int(ember.randint(0, 2**62, (), generator=ember.default_generator))


def _check_seed(name: str, seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"{name} expected an int seed, but got {type(seed).__name__} ({seed!r})")
    return seed


class SeedGenerator:
    """The source of every seed in a DataLoader2 epoch (``torchdata.dataloader2.random``).

    It holds two counter-based streams: a *shared* one, identical on every rank and worker (for
    random pipes upstream of the sharding point, which must agree), and a *worker* one that
    ``spawn(i)`` makes distinct per rank or worker (for random pipes downstream of it).

    >>> a, b = SeedGenerator(7), SeedGenerator(7)
    >>> a.generate_shared_seed() == b.generate_shared_seed()
    True
    >>> a.spawn(0).generate_seed() != a.spawn(1).generate_seed()
    True
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed(seed)

    def seed(self, seed: int | None = None) -> None:
        """Restart both streams from ``seed`` (a fresh random seed when None)."""
        root = _random_root() if seed is None else _check_seed("SeedGenerator.seed", seed)
        self._shared_key = derive(root, 0)
        self._worker_key = derive(root, 1)
        self._shared_count = 0
        self._worker_count = 0

    def spawn(self, worker_id: int, inplace: bool = False) -> SeedGenerator:
        """A generator with the same shared stream and a worker stream keyed by ``worker_id``."""
        worker_id = _check_seed("SeedGenerator.spawn", worker_id)
        target = self if inplace else self._copy()
        target._worker_key = derive(self._worker_key, self._worker_count, worker_id)
        target._worker_count = 0
        return target

    def generate_shared_seed(self) -> int:
        self._shared_count += 1
        return derive(self._shared_key, self._shared_count)

    def generate_seed(self) -> int:
        self._worker_count += 1
        return derive(self._worker_key, self._worker_count)

    def _copy(self) -> SeedGenerator:
        other = SeedGenerator.__new__(SeedGenerator)
        other.__dict__.update(self.__dict__)
        return other

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SeedGenerator) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        return (
            f"SeedGenerator(shared={self._shared_key:#x}+{self._shared_count}, "
            f"worker={self._worker_key:#x}+{self._worker_count})"
        )
