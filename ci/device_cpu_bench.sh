#!/usr/bin/env bash
# Runs the CPU benchmarks of issues 16/17 on a lent device machine's host CPU (an Intel Xeon where
# CI machines are AMD), with that image's PyTorch as the peer. Ember's wheel for the image's Python
# (and scipy-openblas32's) are built here beforehand and carried in .whl/ (ignored by git):
#   python3.12 -m pip wheel --no-deps -w .whl packages/core; pip download scipy-openblas32 -d .whl
# Usage (device run, carry .whl): bash ci/device_cpu_bench.sh [OUT_DIR]
set -uo pipefail
out="${1:-${OUT:-/tmp/device_cpu_bench}}"
mkdir -p "$out"
repo="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
lscpu | grep -E "Model name|^CPU\(s\)|L2|L3" | tee "$out/cpu.txt"
grep -o 'avx512[a-z_0-9]*\|amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ' | tee -a "$out/cpu.txt"; echo
"$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$repo"/.whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
cd /tmp || exit 1
"$py" -c "import torch, ember; print('torch', torch.__version__, torch.backends.cpu.get_cpu_capability(), \
'mkldnn', torch.backends.mkldnn.is_available()); print('ember', ember._C._cpu_capability(), ember._C._blas_config())"
b="$repo/packages/core/benchmarks"
timeout "${BENCH_SECONDS:-330}" "$py" "$b/bench_vs_torch.py" --threads 1 --no-memory --json "$out/vs_torch_1.json" \
  2>&1 | tee "$out/vs_torch_1.txt"
timeout "${TBE_SECONDS:-120}" "$py" "$b/bench_tbe.py" --threads 1 2>&1 | tee "$out/tbe_1.txt"
