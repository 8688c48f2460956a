#!/usr/bin/env bash
# Proves the CUDA build on a machine with an NVIDIA GPU (a lent device machine; CI has none):
# configures libember with EMBER_USE_CUDA=ON, runs its C++ tests, builds the core wheel with
# CUDA, runs the core Python suite against it, then exercises the device allocator.
# Usage: bash ci/gpu_check.sh [OUT_DIR]   (wheels for missing build tools may sit in .gpu/)
set -euo pipefail
out="${1:-${OUT:-/tmp/gpu_check}}"
mkdir -p "$out"
repo="$(cd "$(dirname "$0")/.." && pwd)"
arch="${EMBER_CUDA_ARCH:-90}"

nvidia-smi -L
nvcc --version | tail -n 2
# The device image's python3 already has numpy, pytest, scikit-build-core; the ember wheel is
# installed into it (the machine is thrown away afterwards).
py="${PYTHON:-python3}"
# The device image's g++ links libstdc++ statically: Note [private static runtime].
rm -rf /tmp/ember-gpu-build /tmp/ember-gpu-wheel /tmp/ember-gpu-wheel-build
if compgen -G "$repo/.gpu/*.whl" >/dev/null; then
  "$py" -m pip install -q --no-index --no-deps "$repo"/.gpu/*.whl
fi

start=$(date +%s)
cmake -S "$repo/native" -B /tmp/ember-gpu-build -G Ninja -DEMBER_USE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DEMBER_BUILD_TESTS=ON >"$out/configure.log" 2>&1
cmake --build /tmp/ember-gpu-build -j "$(nproc)" >"$out/build.log" 2>&1
echo "libember (CUDA) built in $(($(date +%s) - start)) s"
ctest --test-dir /tmp/ember-gpu-build --output-on-failure | tail -n 3

"$py" -m pip wheel -q --no-build-isolation --no-deps -w /tmp/ember-gpu-wheel "$repo/packages/core" \
  -C cmake.define.EMBER_USE_CUDA=ON -C cmake.define.CMAKE_CUDA_ARCHITECTURES="$arch" \
  -C build-dir=/tmp/ember-gpu-wheel-build >"$out/wheel.log" 2>&1
"$py" -m pip install -q --no-deps --force-reinstall /tmp/ember-gpu-wheel/ember-*.whl

(cd /tmp && "$py" -m pytest -q -p no:cacheprovider --import-mode=importlib \
  "$repo/packages/core/tests" -n 8 >"$out/pytest.log" 2>&1 || true)
tail -n 3 "$out/pytest.log"

(cd /tmp && "$py" - <<'EOF'
import ember

assert ember._C._has_backend("cuda"), "the CUDA build must register the cuda backend"
base = ember._C._cpu_allocated_bytes()
blocks = [ember.empty(1 << 20, dtype=ember.float32, device="cuda") for _ in range(4)]
assert all(str(b.device) == "cuda" for b in blocks)
assert ember._C._cpu_allocated_bytes() == base, "device tensors must not take host memory"
try:
    ember.empty(1 << 40, dtype=ember.uint8, device="cuda")
except RuntimeError as err:
    assert "on cuda" in str(err), err
    print("oversized cuda allocation raises:", str(err)[:100])
else:
    raise AssertionError("a 1 TiB cuda allocation must fail")
del blocks
print("cuda allocator: 4 x 4 MiB allocated and freed on", ember.device("cuda"))
EOF
)
