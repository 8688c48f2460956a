"""CPU-honest device namespaces: ember.cuda, ember.accelerator, ember.backends, ember.amp.GradScaler,
ember.compile and the determinism switches."""

import io
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import nn

CPU_ONLY = not ember.cuda._is_compiled()
cpu_only = pytest.mark.skipif(not CPU_ONLY, reason="checks what a build without CUDA reports")
NOT_COMPILED = r"^Ember not compiled with CUDA enabled"


# ember.cuda

@cpu_only
def test_cuda_queries_answer_truthfully():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    assert ember.cuda.is_initialized() is False
    assert ember.cuda.is_bf16_supported() is False
    assert ember.cuda.get_arch_list() == []
    assert ember.cuda.memory_allocated() == 0 and ember.cuda.max_memory_allocated() == 0
    assert ember.cuda.memory_reserved() == 0 and ember.cuda.max_memory_reserved(0) == 0
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    assert "CPU backend only" in ember.cuda.memory_summary()
    assert ember.backends.cuda.is_built() is False


@cpu_only
@pytest.mark.parametrize("name", ["current_device", "get_device_name", "get_device_capability",
                                  "get_device_properties", "synchronize", "set_device", "get_rng_state",
                                  "set_rng_state", "initial_seed", "seed", "seed_all", "current_stream",
                                  "default_stream", "mem_get_info", "init"])
def test_cuda_calls_that_need_a_gpu_raise(name):
    fn = getattr(ember.cuda, name)
    args = {"set_device": (0,), "set_rng_state": (ember.zeros(16, dtype=ember.uint8),)}.get(name, ())
    with pytest.raises(AssertionError, match=NOT_COMPILED + r": this build of ember has the CPU backend only"):
        fn(*args)
    assert fn.__name__ == name


@cpu_only
def test_cuda_seeding_is_queued_and_leaves_cpu_streams_alone():
    ember.manual_seed(5)
    expected = ember.rand(3)
    ember.manual_seed(5)
    ember.cuda.manual_seed(123)
    assert ember.cuda._queued_seed == ("manual_seed", 123)
    ember.cuda.manual_seed_all(7)
    assert ember.cuda._queued_seed == ("manual_seed_all", 7)
    assert ember.rand(3).tolist() == expected.tolist()


@cpu_only
def test_cuda_contexts_streams_and_events():
    with ember.cuda.device(None):
        pass
    with ember.cuda.device(-1):
        pass
    with ember.cuda.device_of(ember.ones(1)):  # a CPU tensor selects nothing
        pass
    with ember.cuda.stream(None):
        pass
    with pytest.raises(AssertionError, match=NOT_COMPILED):
        with ember.cuda.device(0):
            pass
    with pytest.raises(AssertionError, match=NOT_COMPILED):
        with ember.cuda.device("cuda:1"):
            pass
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        ember.cuda.device("cpu")
    with pytest.raises(AssertionError, match=NOT_COMPILED):
        ember.cuda.Stream()
    with pytest.raises(AssertionError, match=NOT_COMPILED):
        ember.cuda.Event(enable_timing=True)


@cpu_only
def test_tensor_device_methods():
    x = ember.arange(4.0)
    assert x.cpu() is x
    assert x.is_cuda is False and x.is_cpu is True
    for call in (lambda: x.cuda(), lambda: x.cuda(0), lambda: x.cuda("cuda:0", non_blocking=True)):
        with pytest.raises(AssertionError, match=NOT_COMPILED):
            call()
    model = nn.Linear(2, 2)
    with pytest.raises(AssertionError, match=NOT_COMPILED):
        model.weight.cuda()
    # the idiom scripts use picks the CPU
    device = "cuda" if ember.cuda.is_available() else "cpu"
    assert ember.zeros(2, device=device).device.type == "cpu"


# ember.accelerator

@cpu_only
def test_accelerator():
    assert ember.accelerator.is_available() is False
    assert ember.accelerator.current_accelerator() is None
    assert ember.accelerator.current_accelerator(check_available=True) is None
    assert ember.accelerator.device_count() == 0
    for call in (ember.accelerator.current_device_index, ember.accelerator.synchronize,
                 lambda: ember.accelerator.set_device_index(0), ember.accelerator.current_device_idx):
        with pytest.raises(RuntimeError, match="ember.accelerator: no accelerator is available"):
            call()


# ember.backends

def test_cpu_capability_names_the_runtime_choice():
    capability = ember.backends.cpu.get_cpu_capability()
    assert capability in ("DEFAULT", "AVX2", "AVX512")
    assert capability == ember._C._cpu_capability().upper()
    forced = subprocess.run([sys.executable, "-c", "import ember; print(ember.backends.cpu.get_cpu_capability())"],
                            env={**os.environ, "EMBER_CPU_CAPABILITY": "default"}, capture_output=True, text=True,
                            check=True)
    assert forced.stdout.strip() == "DEFAULT"


def test_cuda_matmul_allow_tf32_is_the_float32_matmul_precision():
    before = ember.get_float32_matmul_precision()
    try:
        ember.set_float32_matmul_precision("highest")
        assert ember.backends.cuda.matmul.allow_tf32 is False  # PyTorch's default
        ember.backends.cuda.matmul.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
        ember.set_float32_matmul_precision("medium")
        assert ember.backends.cuda.matmul.allow_tf32 is True
        ember.backends.cuda.matmul.allow_tf32 = False
        assert ember.get_float32_matmul_precision() == "highest"
    finally:
        ember.set_float32_matmul_precision(before)
    assert ember.backends.cuda.matmul.allow_fp16_reduced_precision_reduction is True
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf31"):
        ember.backends.cuda.matmul.allow_tf31 = True
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf31"):
        ember.backends.cuda.matmul.allow_tf31  # noqa: B018


def test_cuda_sdp_switches_and_linalg_preference():
    cuda = ember.backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled() and cuda.math_sdp_enabled()
    with cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
        assert not cuda.flash_sdp_enabled() and not cuda.mem_efficient_sdp_enabled() and cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    cuda.enable_flash_sdp(False)
    assert not cuda.flash_sdp_enabled()
    cuda.enable_flash_sdp(True)
    assert cuda.preferred_linalg_library() == "default"
    assert cuda.preferred_linalg_library("magma") == "magma"
    cuda.preferred_linalg_library("default")
    with pytest.raises(RuntimeError, match="Unknown input value"):
        cuda.preferred_linalg_library("mkl")


def test_cudnn_and_mps_flags():
    cudnn = ember.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)
    assert cudnn.is_available() is False and cudnn.version() is None
    assert cudnn.is_acceptable(ember.ones(1)) is False
    cudnn.benchmark = True  # scripts set these directly
    try:
        import ember.backends.cudnn as same
        assert same.benchmark is True
        with cudnn.flags(enabled=False, deterministic=True):
            assert cudnn.enabled is False and cudnn.deterministic is True and cudnn.benchmark is False
        assert cudnn.enabled is True and cudnn.deterministic is False and cudnn.benchmark is True
    finally:
        cudnn.benchmark = False
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False
    assert ember.backends.mps.is_macos13_or_newer() is False


# ember.amp.GradScaler

def _model_and_data(seed=0):
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x, y = ember.randn(16, 4), ember.randn(16, 1)
    return model, x, y


def _params(model):
    return [p.detach().clone() for p in model.parameters()]


def test_grad_scaler_disabled_is_a_pass_through():
    model, x, y = _model_and_data()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    loss = nn.functional.mse_loss(model(x), y)
    assert scaler.scale(loss) is loss
    scaler.scale(loss).backward()
    before = _params(model)
    assert scaler.step(opt) is None
    scaler.update()
    assert any(not np.allclose(a.numpy(), b.detach().numpy()) for a, b in zip(before, model.parameters(),
                                                                              strict=True))
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()
    scaler.load_state_dict({})  # nothing to load into a disabled scaler
    scaler.unscale_(opt)


@cpu_only
def test_grad_scaler_for_cuda_disables_itself_without_cuda():
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available.  Disabling."):
        scaler = ember.amp.GradScaler()
    assert not scaler.is_enabled()


def test_grad_scaler_enabled_matches_unscaled_training():
    model, x, y = _model_and_data()
    reference, _, _ = _model_and_data()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    for step in range(4):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        scaled = scaler.scale(loss)
        assert scaled.item() == pytest.approx(loss.item() * scaler.get_scale())
        scaled.backward()
        scaler.step(opt)
        scaler.update()
        ref_opt.zero_grad()
        nn.functional.mse_loss(reference(x), y).backward()
        ref_opt.step()
        for p, q in zip(model.parameters(), reference.parameters(), strict=True):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)
        # three clean steps grow the scale once
        assert scaler.get_scale() == (2048.0 if step >= 2 else 1024.0)
    assert scaler._get_growth_tracker() == 1


def test_grad_scaler_skips_the_step_on_inf_and_backs_off():
    model, x, y = _model_and_data()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=256.0, growth_interval=1)
    for bad in (float("inf"), float("nan")):
        opt.zero_grad()
        scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
        model[0].weight.grad[0, 0] = bad  # forced overflow in one gradient
        before = _params(model)
        scale = scaler.get_scale()
        assert scaler.step(opt) is None
        scaler.update()
        for a, b in zip(before, model.parameters(), strict=True):
            assert np.array_equal(a.numpy(), b.detach().numpy())  # skipped
        assert scaler.get_scale() == scale * 0.5 and scaler._get_growth_tracker() == 0
    # a clean step then goes through, and with growth_interval=1 grows the scale
    opt.zero_grad()
    scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
    before = _params(model)
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(before[0].numpy(), model[0].weight.detach().numpy())
    assert scaler.get_scale() == 128.0


def test_grad_scaler_rescues_float16_gradients_from_underflow():
    """Parameters in float32, arithmetic in float16: a gradient of 1e-9 flushes to zero in float16
    unless the loss is scaled."""
    x = ember.tensor([1.0, 2.0, 3.0, 4.0])

    def loss_of(w):
        return (w.half() * x.half()).sum().float() * 1e-9

    w = ember.ones(4, requires_grad=True)
    loss_of(w).backward()
    assert w.grad.abs().sum().item() == 0.0  # underflowed
    w.grad = None
    opt = ember.optim.SGD([w], lr=1.0)
    scaler = ember.amp.GradScaler("cpu")
    scaler.scale(loss_of(w)).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(w.grad.numpy(), 1e-9 * x.numpy(), rtol=2e-3)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.detach().numpy(), 1 - 1e-9 * x.numpy(), rtol=1e-7)


def test_grad_scaler_bfloat16_gradients_and_float16_refusal():
    w = ember.ones(3, dtype=ember.bfloat16, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.5)
    scaler = ember.amp.GradScaler("cpu", init_scale=64.0)
    scaler.scale((w * w).sum()).backward()
    assert w.grad.dtype == ember.bfloat16 and w.grad.float().tolist() == [128.0, 128.0, 128.0]
    scaler.step(opt)
    scaler.update()
    assert w.detach().float().tolist() == [0.0, 0.0, 0.0]  # w - 0.5 * 2w
    h = ember.ones(3, dtype=ember.float16, requires_grad=True)
    opt16 = ember.optim.SGD([h], lr=0.5)
    scaler.scale((h * h).sum().float()).backward()
    with pytest.raises(ValueError, match=r"^Attempting to unscale FP16 gradients\.$"):
        scaler.step(opt16)


def test_grad_scaler_protocol_errors_and_clipping():
    model, x, y = _model_and_data()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match=r"Attempted step but _scale is None"):
        scaler.step(opt)
    scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
    scaler.unscale_(opt)
    # gradients are true-sized after unscale_, so clipping sees their real norm
    total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)
    assert total.item() < 100
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this optimizer since the "
                                           r"last update\(\)\.$"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"^step\(\) has already been called since the last update\(\)\.$"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) is being called after step\(\)\.$"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: 0.0)
    with pytest.raises(AssertionError, match="A GradScaler instance may only be pickled at the beginning"):
        pickle.dumps(scaler)
    scaler.update()
    scaler.update(new_scale=8.0)
    assert scaler.get_scale() == 8.0
    scaler.update(new_scale=ember.tensor(4.0))
    assert scaler.get_scale() == 4.0
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(new_scale=ember.ones(2))
    with pytest.raises(AssertionError, match=r"^The growth factor must be > 1\.0\.$"):
        ember.amp.GradScaler("cpu", growth_factor=0.9)
    with pytest.raises(AssertionError, match=r"^The backoff factor must be < 1\.0\.$"):
        ember.amp.GradScaler("cpu", backoff_factor=1.5)


def test_grad_scaler_state_dict_and_pickle():
    model, x, y = _model_and_data()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=32.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=5)
    for _ in range(2):
        scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
        scaler.step(opt)
        scaler.update()
    state = scaler.state_dict()
    assert state == {"scale": 32.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 5,
                     "_growth_tracker": 2}
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state
    restored = pickle.loads(pickle.dumps(scaler))
    assert restored.state_dict() == state
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.1)
    scaler.set_growth_interval(9)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.1, 9)
    with pytest.raises(RuntimeError, match="The source state dict is empty, possibly because it was saved from a "
                                           "disabled instance of GradScaler."):
        other.load_state_dict({})
    # a checkpoint holds the state dict, loadable with weights_only
    buffer = io.BytesIO()
    ember.save({"scaler": state}, buffer)
    buffer.seek(0)
    assert ember.load(buffer)["scaler"] == state


# ember.compile

def test_compile_is_eager_and_returns_the_callable():
    model = nn.Linear(3, 2)
    x = ember.randn(4, 3)
    compiled = ember.compile(model)
    assert compiled is model
    assert list(compiled.state_dict()) == ["weight", "bias"]  # no "_orig_mod." prefix
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())

    def fn(a):
        return a * 2

    assert ember.compile(fn, backend="eager", mode="reduce-overhead", fullgraph=True, dynamic=False) is fn

    @ember.compile
    def decorated(a):
        return a + 1

    @ember.compile(mode="max-autotune")
    def decorated_with_args(a):
        return a - 1

    assert decorated(ember.ones(1)).item() == 2.0 and decorated_with_args(ember.ones(1)).item() == 0.0
    assert ember.compile(fn, backend=lambda gm, example_inputs: gm, disable=True) is fn
    assert ember.compile(fn, options={"trace.enabled": False}) is fn
    assert "inductor" in ember.compile.list_backends()


def test_compile_argument_errors():
    with pytest.raises(RuntimeError, match=r"^Invalid backend: 'tvmm', see `ember.compile.list_backends\(\)` for "
                                           r"available backends\.$"):
        ember.compile(nn.Linear(1, 1), backend="tvmm")
    with pytest.raises(RuntimeError, match=r"^Unrecognized mode=fast, should be one of: default, reduce-overhead, "
                                           r"max-autotune, max-autotune-no-cudagraphs$"):
        ember.compile(nn.Linear(1, 1), mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified, but both can't be specified"):
        ember.compile(nn.Linear(1, 1), mode="default", options={})
    with pytest.raises(TypeError, match="backend must be a backend name or a callable"):
        ember.compile(nn.Linear(1, 1), backend=3)
    with pytest.raises(RuntimeError, match="model must be a callable"):
        ember.compile(42)


# Determinism switches

def test_use_deterministic_algorithms():
    assert ember.are_deterministic_algorithms_enabled() is False
    try:
        ember.use_deterministic_algorithms(True)
        assert ember.are_deterministic_algorithms_enabled() is True
        assert ember.is_deterministic_algorithms_warn_only_enabled() is False
        assert ember.get_deterministic_debug_mode() == 2
        ember.use_deterministic_algorithms(True, warn_only=True)
        assert ember.is_deterministic_algorithms_warn_only_enabled() is True
        assert ember.get_deterministic_debug_mode() == 1
        ember.set_deterministic_debug_mode("default")
        assert ember.are_deterministic_algorithms_enabled() is False
        ember.set_deterministic_debug_mode(2)
        assert ember.are_deterministic_algorithms_enabled() is True
        with pytest.raises(TypeError, match="argument 'mode' must be bool, not int"):
            ember.use_deterministic_algorithms(1)
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            ember.set_deterministic_debug_mode("loud")
        with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
            ember.set_deterministic_debug_mode(3)
    finally:
        ember.use_deterministic_algorithms(False)


def test_cpu_reductions_are_deterministic_across_thread_counts():
    """What the switch asks for already holds on the CPU: the same bits for any thread count."""
    ember.manual_seed(0)
    big = ember.randn(1 << 20)
    threads = ember.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            results.append((big.sum().item(), big.cumsum(0)[-1].item(), (big @ big).item()))
    finally:
        ember.set_num_threads(threads)
    assert results[0] == results[1] == results[2]


def test_other_device_kinds_answer_as_a_cpu_only_build():
    t = ember.ones(2)
    for kind in ("mps", "xpu", "ipu", "maia", "mtia", "vulkan", "xla", "mkldnn"):
        assert getattr(t, "is_" + kind) is False
    assert t.is_pinned() is False and t.is_distributed() is False
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        t.pin_memory()
    with pytest.raises(AssertionError, match="Ember not compiled with XPU enabled"):
        t.xpu()
    with pytest.raises(AssertionError, match="Ember not compiled with MTIA enabled"):
        t.mtia()
    with pytest.raises(RuntimeError, match="not linked with support for ipu devices"):
        t.ipu()
    with pytest.raises(RuntimeError, match="Ember has no device streams"):
        t.record_stream(None)


def test_generic_streams_and_events_are_cpu_ones():
    s = ember.Stream()
    assert (s.device, s.device_type, s.device_index, s.stream_id) == (ember.device("cpu"), "cpu", -1, 0)
    assert s.query() is True and s.synchronize() is None
    assert s == ember.Stream("cpu") == ember.Stream(ember.device("cpu"), priority=-1)
    assert hash(s) == hash(ember.Stream("cpu:0"))
    assert repr(s) == "ember.Stream device_type=cpu, device_index=-1, stream_id=0"
    with s as entered:
        assert entered is s
    e = ember.Event("cpu")
    assert e.query() is True and e.synchronize() is None and e.wait() is None and s.wait_event(e) is None
    assert repr(ember.Event(enable_timing=True)) == "ember.Event device_type=cpu, device_index=-1, event_flag=1, event_id=0"
    for record in (e.record, s.record_event, lambda: s.wait_stream(s)):
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
            record()
    with pytest.raises(ValueError, match="created with argument 'enable_timing=True'"):
        e.elapsed_time(e)
    timed = ember.Event(enable_timing=True)
    with pytest.raises(ValueError, match="must be recorded before calculating elapsed time"):
        timed.elapsed_time(ember.Event(enable_timing=True))
    for device in (0, "cuda"):
        with pytest.raises(RuntimeError, match="accelerator device when none is available|not supported"):
            ember.Stream(device)
        with pytest.raises(RuntimeError, match="accelerator device when none is available|not supported"):
            ember.Event(device)
    with pytest.raises(TypeError, match="expected a device"):
        ember.Stream(1.5)


def test_get_device_module():
    assert ember.get_device_module() is ember.cpu  # no accelerator
    assert ember.get_device_module("cpu") is ember.cpu and ember.get_device_module(ember.device("cuda")) is ember.cuda
    with pytest.raises(RuntimeError, match="Invalid value of device '3', expect ember.device, str, or None"):
        ember.get_device_module(3)
    with pytest.raises(RuntimeError, match="Device 'mps' does not have a corresponding module registered as 'ember.mps'"):
        ember.get_device_module("mps")
