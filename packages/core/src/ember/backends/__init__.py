"""ember.backends: the switches PyTorch scripts flip per backend (torch.backends).

`cuda` and `cudnn` hold their flags with PyTorch's defaults even on a CPU-only build, so scripts that
set them run unchanged; flags with a CPU meaning act on the CPU (`cuda.matmul.allow_tf32` is
`ember.set_float32_matmul_precision`, as in PyTorch). `mps` reports that Metal is unavailable;
`cpu.get_cpu_capability()` names the vector instructions the CPU kernels dispatched to. `mkldnn`,
`mkl`, `openmp` and `opt_einsum` report what Ember does not use (oneDNN, MKL, OpenMP, opt_einsum).
"""

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
