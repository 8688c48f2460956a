"""FFT and linear-algebra decompositions: Ember beside NumPy (pocketfft, LAPACK) in one
process, printing time ratios.

ratio = Ember time / NumPy time (lower is better; 1.00 is parity).
"""

from __future__ import annotations

import numpy as np
from timing import print_ratios

import ember


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for shape, label in (((1000, 1024), "1000 x 1024 (radix 4/2)"), ((1000, 1000), "1000 x 1000 (mixed radix)"),
                         ((200, 1009), "200 x 1009 (prime: Bluestein)")):
        z = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex128)
        x = rng.standard_normal(shape)
        zt, xt = ember.from_numpy(z), ember.from_numpy(x)
        rows.append((f"fft complex128 {label}", lambda t=zt: ember.fft.fft(t), lambda a=z: np.fft.fft(a)))
        rows.append((f"rfft float64 {label}", lambda t=xt: ember.fft.rfft(t), lambda a=x: np.fft.rfft(a)))
    image = rng.standard_normal((256, 256))
    it = ember.from_numpy(image)
    rows.append(("fft2 float64 256 x 256", lambda: ember.fft.fft2(it), lambda: np.fft.fft2(image)))
    for n in (8, 64):
        batch = rng.standard_normal((256, n, n))
        sym = batch + batch.transpose(0, 2, 1)
        bt, st = ember.from_numpy(batch), ember.from_numpy(sym)
        rows.append((f"linalg.svd 256 x {n}x{n} float64", lambda t=bt: ember.linalg.svd(t),
                     lambda a=batch: np.linalg.svd(a)))
        rows.append((f"linalg.eigh 256 x {n}x{n} float64", lambda t=st: ember.linalg.eigh(t),
                     lambda a=sym: np.linalg.eigh(a)))
        rows.append((f"linalg.qr 256 x {n}x{n} float64", lambda t=bt: ember.linalg.qr(t),
                     lambda a=batch: np.linalg.qr(a)))
        rows.append((f"linalg.eigvals 256 x {n}x{n} float64", lambda t=bt: ember.linalg.eigvals(t),
                     lambda a=batch: np.linalg.eigvals(a)))
    print_ratios(rows)


if __name__ == "__main__":
    main()
