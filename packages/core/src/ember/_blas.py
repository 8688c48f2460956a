"""Loads OpenBLAS from the scipy-openblas32 wheel before libember needs it (Note [BLAS provider]
in native/CMakeLists.txt): libember's rpath finds it when both wheels share a site-packages;
loading it by path here also covers installs that split them."""

from __future__ import annotations

import ctypes
import os

import scipy_openblas32

# Idle OpenBLAS threads sleep at once instead of spinning for a tenth of a second after each call,
# which would take the cores Ember's own threads are about to use (read when the library loads).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
LIBRARY = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(True)),
                      mode=ctypes.RTLD_GLOBAL)
