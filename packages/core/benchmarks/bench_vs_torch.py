"""Ember beside PyTorch's CPU build on the kernels users live on, in one process.

    python bench_vs_torch.py [--threads 1,2] [--only SUBSTR] [--json out.json] [--compare old.json]

For each case and thread count both libraries run the same inputs (shared through NumPy where the
case allows), interleaved: each repetition times a batch of Ember calls then a batch of PyTorch
calls, and the printed ratio is the median of the per-repetition ratios (Ember / PyTorch; below 1
is faster). Each row also says how close the faster side comes to the machine: FLOP/s against an
FMA-peak probe, or GB/s against a copy-bandwidth probe, both measured here first. The embedding
rows run on NumPy tables and on tables each library allocates; the NumPy one adds fbgemm_gpu's
table-batched embedding when it is importable. Without PyTorch the script
prints why and exits 0, so `nox -s bench` still runs the NumPy-peer scripts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import ember

try:
    import torch
except ImportError:  # the bench session installs it; elsewhere this script has no peer
    torch = None


@dataclass
class Case:
    """One row: `setup(lib)` returns the zero-argument callable to time for lib in (ember, torch);
    `flops` or `bytes` per call give the hardware-limit column."""

    name: str
    setup: Callable
    flops: float = 0.0
    bytes: float = 0.0
    peers: tuple = ("torch",)
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Timing


def _calls_for(fn, seconds: float) -> int:
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(seconds / once))


def _time(fn, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


SETTLE_SECONDS = 0.03


def interleaved(ours, theirs, reps: int = 7, seconds: float = 0.04) -> tuple[float, float, float]:
    """(median ours, median theirs, median of per-repetition ratios), both warmed up first."""
    ours(), theirs()
    n_ours, n_theirs = _calls_for(ours, seconds), _calls_for(theirs, seconds)
    a, b, ratios = [], [], []
    for _ in range(reps):
        # Each library's idle workers spin for a while after its batch (OpenMP's for milliseconds):
        # settle first, so neither batch runs beside the other library's spinning threads.
        time.sleep(SETTLE_SECONDS)
        ta = _time(ours, n_ours)
        time.sleep(SETTLE_SECONDS)
        tb = _time(theirs, n_theirs)
        a.append(ta), b.append(tb), ratios.append(ta / tb)
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


# ---------------------------------------------------------------------------------------------
# Machine probes


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def fma_peak(threads: int) -> float:
    """FLOP/s of independent fused multiply-adds at the widest vectors this CPU runs (ember's probe)."""
    return ember._C._fma_peak_probe(threads, 0.2)


def copy_bandwidth() -> float:
    """Bytes/s of a large array copy (read + write counted), NumPy on one thread."""
    src = np.ones(64 * 1024 * 1024 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    best = min(_time(lambda: np.copyto(dst, src), 3) for _ in range(3))
    return 2 * src.nbytes / best


# ---------------------------------------------------------------------------------------------
# Cases. Each setup(lib) builds its inputs from NumPy arrays with a fixed seed, so both libraries
# compute the same thing.

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _t(lib, a):
    return lib.from_numpy(a)


def _bind(fn, *args):
    """fn with its arguments fixed: the zero-argument call a case times."""
    return lambda: fn(*args)


def matmul_case(n: int) -> Case:
    a, b = _arr(n, n), _arr(n, n)
    return Case(f"matmul f32 {n}", lambda lib: _bind(lib.matmul, _t(lib, a), _t(lib, b)), flops=2 * n**3)


def bmm_case() -> Case:
    a, b = _arr(64, 128, 128), _arr(64, 128, 128)
    return Case("bmm 64x128^3", lambda lib: _bind(lib.bmm, _t(lib, a), _t(lib, b)), flops=2 * 64 * 128**3)


def linear_case() -> Case:
    x, w, bias = _arr(4096, 1024), _arr(1024, 1024) * 0.03, _arr(1024)

    def setup(lib):
        layer = lib.nn.Linear(1024, 1024)
        with lib.no_grad():
            layer.weight.copy_(_t(lib, w))
            layer.bias.copy_(_t(lib, bias))
        inp = _t(lib, x).requires_grad_()

        def step():
            layer(inp).sum().backward()
        return step
    return Case("Linear 4096x1024->1024 fwd+bwd", setup, flops=3 * 2 * 4096 * 1024 * 1024)


def linear_batch1_case() -> Case:
    """One sample through MobileNetV3-Large's classifier layer: a matrix-vector product."""
    x, w, bias = _arr(1, 960), _arr(1280, 960) * 0.03, _arr(1280)

    def setup(lib):
        return _bind(lib.nn.functional.linear, _t(lib, x), _t(lib, w), _t(lib, bias))
    return Case("Linear 1x960->1280 (batch 1)", setup, flops=2 * 960 * 1280)


def unary_case(name: str, fn_name: str, **kwargs) -> Case:
    a = _arr(16 * 1024 * 1024)

    def setup(lib):
        f = getattr(lib.nn.functional, fn_name, None) or getattr(lib, fn_name)
        x = _t(lib, a)
        return lambda: f(x, **kwargs)
    return Case(f"{name} 16M", setup, bytes=2 * a.nbytes)


def rowwise_case(name: str, call) -> Case:
    a = _arr(4096, 1024)
    return Case(f"{name} (4096, 1024)", lambda lib: _bind(call, lib, _t(lib, a)), bytes=2 * a.nbytes)


def conv_case(name, batch, cin, cout, size, kernel, stride, padding) -> Case:
    x, w = _arr(batch, cin, size, size), _arr(cout, cin, kernel, kernel) * 0.1
    out = (size + 2 * padding - kernel) // stride + 1
    flops = 2 * batch * cout * out * out * cin * kernel * kernel
    return Case(name, lambda lib: _bind(lambda a, b: lib.nn.functional.conv2d(a, b, stride=stride, padding=padding),
                                        _t(lib, x), _t(lib, w)), flops=flops)


def _resnet50(nn):
    """ResNet-50 (torchvision's layout: bottleneck blocks 3-4-6-3, stride on the 3x3) for either library."""

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
            self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.down is None else self.down(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            return self.relu(self.bn3(self.conv3(y)) + idt)

    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                   nn.MaxPool2d(3, 2, 1)], 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


def _copy_state(src, dst, lib_dst) -> None:
    """Copies a PyTorch model's parameters and buffers into the same-shaped Ember model."""
    with lib_dst.no_grad():
        for (_, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items(), strict=True):
            b.copy_(lib_dst.from_numpy(a.detach().numpy().copy()))


def resnet_case(batch: int) -> Case:
    x = _arr(batch, 3, 224, 224)

    def setup(lib):
        lib.manual_seed(0)
        model = _resnet50(lib.nn).eval()
        inp = _t(lib, x)

        def run():
            with lib.no_grad():
                return model(inp)
        return run
    return Case(f"ResNet-50 forward b{batch}", setup, flops=2 * 4.1e9 * batch, extra={"memory": batch})


def mlp_case() -> Case:
    x, y = _arr(64, 784), RNG.integers(0, 10, 64)

    def setup(lib):
        lib.manual_seed(0)
        nn = lib.nn
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
        inp, target = _t(lib, x), lib.from_numpy(y)

        def step():
            opt.zero_grad()
            nn.functional.cross_entropy(model(inp), target).backward()
            opt.step()
        return step
    return Case("MLP 784-512-512-10 b64 SGD step", setup, flops=3 * 2 * 64 * (784 * 512 + 512 * 512 + 5120))


def transformer_case(train: bool) -> Case:
    x = _arr(32, 128, 256)

    def setup(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True)
        inp = _t(lib, x)
        if train:
            layer.train()
            return lambda: layer(inp).sum().backward()
        layer.eval()

        def run():
            with lib.no_grad():
                return layer(inp)
        return run
    name = "TransformerEncoderLayer d256 h8 S128 B32 " + ("train step" if train else "eval")
    per = 2 * 32 * 128 * (4 * 256 * 256 + 2 * 256 * 1024) + 4 * 32 * 128 * 128 * 256
    return Case(name, setup, flops=per * (3 if train else 1))


EMB_TABLES, EMB_ROWS, EMB_DIM, EMB_BATCH, EMB_POOL = 8, 1_000_000, 128, 2048, 20


def embedding_case(own_weights: bool) -> Case:
    """EmbeddingBag over 8 tables of 1M rows. With own_weights each library allocates its tables as
    nn.EmbeddingBag(rows, dim) does (Ember's allocator asks for transparent huge pages; PyTorch's
    does not unless THP_MEM_ALLOC_ENABLE=1); otherwise each reads NumPy arrays (equal ones), whose
    rows sit 16 bytes off a cache line, so each row spans one line more. The tables (4 GB) are made
    in setup, not here, so only the running case holds them."""
    indices = [RNG.integers(0, EMB_ROWS, EMB_BATCH * EMB_POOL) for _ in range(EMB_TABLES)]
    offsets = np.arange(0, EMB_BATCH * EMB_POOL, EMB_POOL)

    def table(lib, t):
        w = np.random.default_rng(1000 + t).random((EMB_ROWS, EMB_DIM), dtype=np.float32)
        if not own_weights:
            return lib.nn.EmbeddingBag.from_pretrained(lib.from_numpy(w), mode="sum", freeze=True)
        bag = lib.nn.EmbeddingBag(EMB_ROWS, EMB_DIM, mode="sum")
        with lib.no_grad():
            bag.weight.copy_(lib.from_numpy(w))
        bag.weight.requires_grad_(False)
        return bag

    def setup(lib):
        bags = [table(lib, t) for t in range(EMB_TABLES)]
        idx, off = [lib.from_numpy(i) for i in indices], lib.from_numpy(offsets)
        return lambda: [bag(i, off) for bag, i in zip(bags, idx, strict=True)]
    moved = EMB_TABLES * EMB_BATCH * EMB_POOL * EMB_DIM * 4
    where = "own" if own_weights else "NumPy"
    return Case(f"EmbeddingBag sum {EMB_TABLES}x1Mx{EMB_DIM} B{EMB_BATCH} L{EMB_POOL} {where}", setup, bytes=moved)


def stft_case() -> Case:
    signal = _arr(60 * 16000)

    def setup(lib):
        x, window = _t(lib, signal), lib.hann_window(400)
        return lambda: lib.stft(x, 400, hop_length=160, window=window, return_complex=True)
    return Case("stft n_fft 400 hop 160, 60 s @ 16 kHz", setup, bytes=2 * signal.nbytes)


def rfft_case() -> Case:
    signal = _arr(1 << 20)
    return Case("rfft 2^20 f32", lambda lib: _bind(lib.fft.rfft, _t(lib, signal)),
                flops=2.5 * (1 << 20) * 20)


def complex_cases() -> list[Case]:
    """Complex elementwise ops, contiguous and on the frequency-major layout stft returns
    ((freq, frames) with strides (1, freq)): both libraries lay the result out like the input."""
    flat = (_arr(4 * 1024 * 1024) + 1j * _arr(4 * 1024 * 1024)).astype(np.complex64)
    frames = (_arr(6001, 201) + 1j * _arr(6001, 201)).astype(np.complex64)

    def view(lib):
        return _t(lib, frames).transpose(0, 1)  # (201, 6001), strides (1, 201)
    return [
        Case("abs complex64 4M", lambda lib: _bind(lambda x: x.abs(), _t(lib, flat)), bytes=1.5 * flat.nbytes),
        Case("abs complex64 stft-layout (201, 6001)", lambda lib: _bind(lambda x: x.abs(), view(lib)),
             bytes=1.5 * frames.nbytes),
        Case("real**2 + imag**2 complex64 stft-layout", lambda lib: _bind(lambda x: x.real**2 + x.imag**2, view(lib)),
             bytes=1.5 * frames.nbytes),
        Case("exp complex64 stft-layout", lambda lib: _bind(lambda x: x.exp(), view(lib)), bytes=2 * frames.nbytes),
    ]


def cross_entropy_case(backward: bool) -> Case:
    logits, target = _arr(4096, 1000), RNG.integers(0, 1000, 4096)

    def setup(lib):
        x, y = _t(lib, logits).requires_grad_(backward), lib.from_numpy(target)
        if backward:
            return lambda: lib.nn.functional.cross_entropy(x, y).backward()
        return _bind(lib.nn.functional.cross_entropy, x, y)
    return Case("cross_entropy (4096, 1000) " + ("fwd+bwd" if backward else "fwd"), setup,
                bytes=(2 if backward else 1) * logits.nbytes)


def small_cases() -> list[Case]:
    a, b = _arr(1 << 20), _arr(1 << 20)
    s1, s2 = _arr(8), _arr(8)

    def backward_setup(lib):
        leaf = _t(lib, s1).requires_grad_()
        return lambda: (leaf * 2).sum().backward()
    return [
        Case("add 1M f32", lambda lib: _bind(lambda x, y: x + y, _t(lib, a), _t(lib, b)), bytes=3 * a.nbytes),
        Case("sum 1M f32", lambda lib: _bind(lambda x: x.sum(), _t(lib, a)), bytes=a.nbytes),
        Case("tiny add (8 elements): per-op overhead", lambda lib: _bind(lambda x, y: x + y, _t(lib, s1), _t(lib, s2))),
        Case("backward of mul+sum (8 elements)", backward_setup),
    ]


def quantized_cases() -> list[Case]:
    """The quantized modules of ember.ao.nn.quantized against PyTorch's (FBGEMM): a dynamically
    quantized Linear (BERT-sized) and a static quantized 3x3 convolution, with equal weights."""
    x, w, b = _arr(128, 768), _arr(768, 768) * 0.05, _arr(768)
    xc, wc = _arr(8, 64, 56, 56), _arr(64, 64, 3, 3) * 0.05

    def dynamic_linear(lib):
        layer = lib.ao.nn.quantized.dynamic.Linear(768, 768)
        layer.set_weight_bias(lib.quantize_per_tensor(_t(lib, w), 0.002, 0, lib.qint8), _t(lib, b))
        return _bind(layer, _t(lib, x))

    def conv(lib):
        layer = lib.ao.nn.quantized.Conv2d(64, 64, 3, padding=1)
        layer.set_weight_bias(lib.quantize_per_tensor(_t(lib, wc), 0.002, 0, lib.qint8), None)
        layer.scale, layer.zero_point = 0.2, 64
        q = lib.quantize_per_tensor(_t(lib, xc), 0.05, 128, lib.quint8)
        return _bind(layer, q)

    return [Case("quantized dynamic Linear 128x768x768", dynamic_linear, flops=2 * 128 * 768 * 768),
            Case("quantized conv 3x3 64->64 56^2 b8", conv, flops=2 * 8 * 64 * 64 * 9 * 56 * 56)]


def all_cases() -> list[Case]:
    gelu_tanh = {"approximate": "tanh"}
    return [
        matmul_case(256), matmul_case(1024), matmul_case(2048), bmm_case(), linear_case(), linear_batch1_case(),
        unary_case("exp", "exp"), unary_case("gelu(erf)", "gelu"), unary_case("gelu(tanh)", "gelu", **gelu_tanh),
        unary_case("sigmoid", "sigmoid"), unary_case("tanh", "tanh"),
        rowwise_case("softmax", lambda lib, x: lib.softmax(x, -1)),
        rowwise_case("layer_norm", lambda lib, x: lib.nn.functional.layer_norm(x, (1024,))),
        rowwise_case("dropout p=0.1", lambda lib, x: lib.nn.functional.dropout(x, 0.1, True)),
        conv_case("conv 3x3 64->64 56^2 b8", 8, 64, 64, 56, 3, 1, 1),
        conv_case("conv 1x1 64->256 56^2 b32", 32, 64, 256, 56, 1, 1, 0),
        conv_case("conv 7x7 s2 3->64 224^2 b8", 8, 3, 64, 224, 7, 2, 3),
        resnet_case(1), resnet_case(8), mlp_case(), transformer_case(False), transformer_case(True),
        embedding_case(False), embedding_case(True), stft_case(), rfft_case(), *complex_cases(), cross_entropy_case(False),
        cross_entropy_case(True), *quantized_cases(), *small_cases(),
    ]


# ---------------------------------------------------------------------------------------------
# Peak memory of a ResNet forward, each library in its own process (RSS high-water mark).


def peak_memory(lib_name: str, batch: int) -> float:
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_vs_torch as b; "
            f"print(b._child_peak({lib_name!r}, {batch}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _high_water_bytes() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a
    child of the (large) benchmark process would start at its parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0


def _child_peak(lib_name: str, batch: int) -> float:
    lib = ember if lib_name == "ember" else torch
    # From before the model is built: the weights count, as they do for the user.
    base = _high_water_bytes()
    run = resnet_case(batch).setup(lib)
    run()
    return _high_water_bytes() - base


# ---------------------------------------------------------------------------------------------


def _limit(case: Case, seconds: float, peak: float, bandwidth: float) -> str:
    if case.flops:
        rate = case.flops / seconds
        return f"{rate / 1e9:7.1f} GFLOP/s = {100 * rate / peak:3.0f}% peak"
    if case.bytes:
        rate = case.bytes / seconds
        return f"{rate / 1e9:7.1f} GB/s = {100 * rate / bandwidth:3.0f}% copy"
    return ""


def _fbgemm_tbe():
    """fbgemm_gpu's CPU TBE over the embedding case's tables, or None when fbgemm_gpu is absent."""
    try:
        from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation, PoolingMode
        from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
            ComputeDevice,
            SplitTableBatchedEmbeddingBagsCodegen,
        )
    except Exception:  # noqa: BLE001 - any import failure means no peer
        return None
    specs = [(EMB_ROWS, EMB_DIM, EmbeddingLocation.HOST, ComputeDevice.CPU)] * EMB_TABLES
    tbe = SplitTableBatchedEmbeddingBagsCodegen(specs, pooling_mode=PoolingMode.SUM)
    idx = torch.from_numpy(RNG.integers(0, EMB_ROWS, EMB_TABLES * EMB_BATCH * EMB_POOL))
    off = torch.arange(0, EMB_TABLES * EMB_BATCH * EMB_POOL + 1, EMB_POOL)
    return lambda: tbe(idx, off)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--compare", help="a previous --json file: print the change of each ratio")
    parser.add_argument("--no-memory", action="store_true", help="skip the ResNet peak-memory subprocesses")
    args = parser.parse_args(argv)
    if torch is None:
        print("bench_vs_torch: PyTorch is not installed here (nox -s bench installs it); skipped")
        return 0
    threads = [int(t) for t in args.threads.split(",")]
    print(f"CPU: {cpu_model()}; ember {ember.__version__} ({ember._C._cpu_capability()}, "
          f"{ember._C._blas_config()}); torch {torch.__version__}")
    if "OPENBLAS_CORETYPE" in os.environ:  # some machines set it to pin OpenBLAS to older kernels
        print(f"note: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} is set, so OpenBLAS runs that core's "
              "kernels rather than the ones it detects; unset it (and OPENBLAS_L2_SIZE) to measure what users get")
    bandwidth = copy_bandwidth()
    peaks = {t: fma_peak(t) for t in threads}
    print(f"copy bandwidth {bandwidth / 1e9:.1f} GB/s; FMA peak " +
          ", ".join(f"{peaks[t] / 1e9:.0f} GFLOP/s at {t} thread(s)" for t in threads))
    previous = {}
    if args.compare:
        previous = {(r["case"], r["threads"]): r["ratio"] for r in json.loads(Path(args.compare).read_text())["rows"]}
    results = []
    header = f"{'case':44s} {'thr':>3s} {'ember':>10s} {'torch':>10s} {'ratio':>6s}  limit (faster side)"
    print(header + ("   was" if previous else ""))
    for case in all_cases():
        if args.only and args.only not in case.name:
            continue
        ours, theirs = case.setup(ember), case.setup(torch)
        for t in threads:
            ember.set_num_threads(t)
            torch.set_num_threads(t)
            a, b, ratio = interleaved(ours, theirs)
            row = {"case": case.name, "threads": t, "ember_s": a, "torch_s": b, "ratio": ratio}
            line = (f"{case.name:44s} {t:3d} {a * 1e3:8.2f}ms {b * 1e3:8.2f}ms {ratio:6.2f}  "
                    f"{_limit(case, min(a, b), peaks[t], bandwidth)}")
            if (case.name, t) in previous:
                line += f"   {previous[case.name, t]:.2f}"
            print(line, flush=True)
            results.append(row)
        del ours, theirs
        if case.name.startswith("EmbeddingBag") and case.name.endswith("NumPy"):
            tbe = _fbgemm_tbe()
            if tbe is None:
                print(f"{'  vs fbgemm_gpu TBE':44s}   -  fbgemm_gpu not importable here")
            else:
                ours = case.setup(ember)
                for t in threads:
                    ember.set_num_threads(t)
                    torch.set_num_threads(t)
                    a, b, ratio = interleaved(ours, tbe)
                    results.append({"case": case.name + " vs FBGEMM TBE", "threads": t, "ember_s": a,
                                    "torch_s": b, "ratio": ratio})
                    print(f"{'  vs fbgemm_gpu TBE':44s} {t:3d} {a * 1e3:8.2f}ms {b * 1e3:8.2f}ms {ratio:6.2f}")
                del ours, tbe
        if case.extra.get("memory") and not args.no_memory:
            mine, theirs_mem = peak_memory("ember", case.extra["memory"]), peak_memory("torch", case.extra["memory"])
            ratio = mine / theirs_mem if theirs_mem > 0 else math.nan
            results.append({"case": case.name + " peak memory", "threads": 0, "ember_bytes": mine,
                            "torch_bytes": theirs_mem, "ratio": ratio})
            print(f"{'  peak memory (RSS growth)':44s}   - {mine / 2**20:8.0f}MB {theirs_mem / 2**20:8.0f}MB {ratio:6.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": cpu_model(), "torch": torch.__version__,
                                               "ember": ember.__version__, "rows": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
