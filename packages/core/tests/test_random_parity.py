"""Random streams against PyTorch's CPU build, bit for bit: the same code, seeded the same way, runs
once with `T = torch` (in its own interpreter, named by EMBER_TORCH_PYTHON — `nox -s parity-random`
makes one with torch 2.13) and once with `T = ember`, and every result must have the same bytes.
Without EMBER_TORCH_PYTHON these tests are skipped; tests/test_random_mt19937.py carries the
independent reference values.
"""

import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

import ember

TORCH_PYTHON = os.environ.get("EMBER_TORCH_PYTHON")
pytestmark = pytest.mark.skipif(not TORCH_PYTHON, reason="EMBER_TORCH_PYTHON names no Python with torch")


def _intel() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return "GenuineIntel" in f.read(4096)
    except OSError:
        return False


# PyTorch's MKL builds on Intel CPUs draw bernoulli_(p: float) — and dropout, which calls it — from
# MKL's VSL stream, which Ember does not reproduce (docs/compatibility: random streams).
MKL_BERNOULLI = pytest.mark.xfail(_intel(), reason="PyTorch draws bernoulli_(float) from MKL on Intel CPUs",
                                  strict=False)

F = "T.float32"
D = "T.float64"

# name -> code; the code leaves its result(s) in `out` (a tensor or a list of tensors).
CASES = {}
for dt in (F, D):
    tag = dt[2:]
    for n in (1, 7, 15, 16, 33, 1000, 100003):
        CASES[f"randn-{tag}-{n}"] = f"T.manual_seed(4); out = T.randn({n}, dtype={dt})"
        CASES[f"rand-{tag}-{n}"] = f"T.manual_seed(4); out = T.rand({n}, dtype={dt})"
    CASES[f"randn-{tag}-2d"] = f"T.manual_seed(5); out = T.randn(3, 5, 7, dtype={dt})"
    CASES[f"normal-{tag}"] = f"T.manual_seed(6); out = T.normal(0.5, 2.0, (257,), dtype={dt})"
    CASES[f"normal_-{tag}-small"] = f"T.manual_seed(6); out = T.empty(9, dtype={dt}).normal_(-1.0, 0.3)"
    CASES[f"normal_-{tag}-transposed"] = (
        f"T.manual_seed(6); b = T.zeros(9, 11, dtype={dt}); b.t().normal_(1.0, 3.0); out = b")
    CASES[f"normal_-{tag}-gaps"] = (
        f"T.manual_seed(6); b = T.zeros(6, 10, dtype={dt}); b[:, ::2].normal_(); out = b")
    CASES[f"uniform_-{tag}"] = f"T.manual_seed(7); out = T.empty(1001, dtype={dt}).uniform_(-0.37, 0.81)"
    CASES[f"uniform_-{tag}-transposed"] = (
        f"T.manual_seed(7); b = T.zeros(8, 5, dtype={dt}); b.t().uniform_(-2.0, 3.0); out = b")
    CASES[f"uniform_-{tag}-gaps"] = (
        f"T.manual_seed(7); b = T.zeros(4, 9, dtype={dt}); b[1:, ::3].uniform_(); out = b")
    CASES[f"bernoulli-p-{tag}"] = (
        f"g = T.Generator().manual_seed(1); p = T.rand(500, generator=g, dtype={dt}); "
        f"T.manual_seed(8); out = T.bernoulli(p)")
    CASES[f"bernoulli_-{tag}"] = f"T.manual_seed(8); out = T.empty(777, dtype={dt}).bernoulli_(0.3)"
    CASES[f"dropout-{tag}"] = (
        f"x = T.arange(1, 601, dtype={dt}).reshape(20, 30) / 7; T.manual_seed(9); "
        f"out = [T.nn.functional.dropout(x, p=0.1), T.nn.functional.dropout(x, p=0.5)]")
    CASES[f"dropout2d-{tag}"] = (
        f"x = T.arange(1, 241, dtype={dt}).reshape(2, 3, 5, 8); T.manual_seed(9); "
        f"out = T.nn.functional.dropout2d(x, p=0.4)")
    CASES[f"multinomial-replacement-{tag}"] = (
        f"w = T.tensor([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 3.0, 0.5]], dtype={dt}); T.manual_seed(10); "
        f"out = T.multinomial(w, 50, replacement=True)")
    CASES[f"multinomial-{tag}"] = (
        f"g = T.Generator().manual_seed(2); w = T.rand(3, 40, generator=g, dtype={dt}); T.manual_seed(10); "
        f"out = [T.multinomial(w, 7), T.multinomial(w, 1), T.multinomial(w[0], 1, replacement=True)]")
for lo, hi in ((0, 10), (-50, 50), (0, 2**28 - 1), (0, 2**28), (-(2**40), 2**40)):
    CASES[f"randint-{lo}-{hi}"] = f"T.manual_seed(11); out = T.randint({lo}, {hi}, (999,))"
CASES["randint-float32"] = f"T.manual_seed(11); out = T.randint(0, 1000, (99,), dtype={F})"
for n in (0, 1, 2, 10, 1000, 100000):
    CASES[f"randperm-{n}"] = f"T.manual_seed(12); out = T.randperm({n})"
CASES["sequence"] = (
    "T.manual_seed(13); out = [T.randn(3), T.rand(2, dtype=T.float64), T.randn(5, dtype=T.float64), "
    "T.randint(0, 7, (4,)), T.randperm(9), T.randn(40), T.randn(1), T.rand(700)]")
CASES["generator-argument"] = (
    "g = T.Generator().manual_seed(14); T.manual_seed(0); "
    "out = [T.randn(20, generator=g), T.rand(3, generator=g), T.randperm(5, generator=g), T.rand(2)]")
CASES["nn-linear-init"] = (
    "T.manual_seed(15); m = T.nn.Linear(13, 7); c = T.nn.Conv2d(3, 4, 3); e = T.nn.Embedding(10, 6); "
    "out = [m.weight.detach(), m.bias.detach(), c.weight.detach(), c.bias.detach(), e.weight.detach()]")

# Sobol' points (ember.quasirandom): the direction numbers, the Gray-code order, and the scrambling
# drawn from a seeded generator or the default one.
CASES["sobol"] = (
    "e = T.quasirandom.SobolEngine(300); "
    "out = [e.draw(1), e.draw(37), e.fast_forward(9).draw(20, dtype=T.float64), e.reset().draw_base2(4)]")
CASES["sobol-scrambled-seed"] = (
    "e = T.quasirandom.SobolEngine(21201, scramble=True, seed=3); "
    "out = [e.draw(5), e.draw(6, dtype=T.float64), e.sobolstate, e.shift]")
CASES["sobol-scrambled-default-generator"] = (
    "T.manual_seed(9); e = T.quasirandom.SobolEngine(7, scramble=True); f = T.quasirandom.SobolEngine(7, True); "
    "out = [e.draw(16, dtype=T.float64), f.draw(3)]")

BERNOULLI_SCALAR = {k for k in CASES if k.startswith(("bernoulli_-", "dropout"))}

_TORCH_SIDE = """
import json, sys, torch
T = torch
cases = json.loads(sys.stdin.read())
res = {}
for name, code in cases.items():
    env = {"T": T}
    exec(code, env)
    out = env["out"] if isinstance(env["out"], list) else [env["out"]]
    res[name] = [[str(t.dtype).split(".")[-1], list(t.shape), t.contiguous().numpy().tobytes().hex()] for t in out]
print(json.dumps(res))
"""


@pytest.fixture(scope="module")
def torch_results():
    done = subprocess.run([TORCH_PYTHON, "-c", textwrap.dedent(_TORCH_SIDE)], input=json.dumps(CASES),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ember(code: str):
    env = {"T": ember}
    exec(code, env)
    out = env["out"] if isinstance(env["out"], list) else [env["out"]]
    return [[str(t.dtype).split(".")[-1], list(t.shape), np.ascontiguousarray(np.asarray(t)).tobytes().hex()]
            for t in out]


@pytest.mark.parametrize("name", [pytest.param(k, marks=MKL_BERNOULLI) if k in BERNOULLI_SCALAR else k
                                  for k in CASES])
def test_same_bits_as_torch(name, torch_results):
    want = torch_results[name]
    got = _ember(CASES[name])
    assert [g[:2] for g in got] == [w[:2] for w in want]
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g[2] != w[2]:
            dtype = np.dtype(g[0])
            a, b = np.frombuffer(bytes.fromhex(g[2]), dtype), np.frombuffer(bytes.fromhex(w[2]), dtype)
            bad = np.flatnonzero(a != b)
            pytest.fail(f"{name} result {i}: {bad.size} of {a.size} differ, first at {bad[0]}: "
                        f"ember {a[bad[0]]!r} torch {b[bad[0]]!r}")


def test_rng_state_crosses_both_ways(tmp_path):
    script = """
    import sys, torch
    torch.manual_seed(16); torch.randn(3, dtype=torch.float64)
    open(sys.argv[1], "wb").write(torch.get_rng_state().numpy().tobytes())
    torch.set_rng_state(torch.frombuffer(bytearray(open(sys.argv[2], "rb").read()), dtype=torch.uint8))
    open(sys.argv[3], "wb").write(torch.randn(5, dtype=torch.float64).numpy().tobytes())
    """
    ember.manual_seed(17)
    ember.randn(1, dtype=ember.float64)  # a cached normal travels too
    (tmp_path / "ember.state").write_bytes(bytes(ember.get_rng_state().tolist()))
    expected_next = np.asarray(ember.randn(5, dtype=ember.float64)).tobytes()
    done = subprocess.run([TORCH_PYTHON, "-c", textwrap.dedent(script), str(tmp_path / "torch.state"),
                           str(tmp_path / "ember.state"), str(tmp_path / "torch.next")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "torch.next").read_bytes() == expected_next
    torch_state = (tmp_path / "torch.state").read_bytes()
    ember.manual_seed(16)
    ember.randn(3, dtype=ember.float64)
    assert bytes(ember.get_rng_state().tolist()) == torch_state
    ember.set_rng_state(ember.tensor(list(torch_state), dtype=ember.uint8))
    assert bytes(ember.get_rng_state().tolist()) == torch_state
