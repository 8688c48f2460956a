"""More of PyTorch's public surface (issue 18, item 1): Sequential.pop / ModuleList.pop and
ModuleList deletion, dtype.abbr / to_complex / to_real, and the optimizer step's profiler event."""

from __future__ import annotations

import pytest

import ember
from ember import nn


def test_sequential_pop_renumbers():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    tanh = seq[1]
    assert seq.pop(1) is tanh
    assert list(seq._modules) == ["0", "1"] and isinstance(seq[1], nn.Sigmoid)
    assert isinstance(seq.pop(-1), nn.Sigmoid) and len(seq) == 1
    popped = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid()).pop(slice(0, 2))
    assert isinstance(popped, nn.Sequential) and len(popped) == 2
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq.pop(5)


def test_module_list_pop_and_delete():
    layers = nn.ModuleList([nn.Linear(1, 1), nn.ReLU(), nn.Tanh(), nn.Sigmoid()])
    relu = layers[1]
    assert layers.pop(1) is relu
    assert list(layers._modules) == ["0", "1", "2"] and isinstance(layers[1], nn.Tanh)
    del layers[0]
    assert [type(m).__name__ for m in layers] == ["Tanh", "Sigmoid"]
    del layers[0:2]
    assert len(layers) == 0
    with pytest.raises(IndexError, match="index 0 is out of range"):
        layers.pop(0)
    with pytest.raises(TypeError):
        layers.pop("0")


def test_dtype_abbr_to_complex_to_real():
    abbr = {ember.bool: "b8", ember.uint8: "u8", ember.int8: "i8", ember.int16: "i16", ember.int32: "i32",
            ember.int64: "i64", ember.float16: "f16", ember.bfloat16: "bf16", ember.float32: "f32",
            ember.float64: "f64", ember.complex64: "c64", ember.complex128: "c128",
            ember.float8_e4m3fn: "f8e4m3fn", ember.float8_e5m2: "f8e5m2", ember.complex32: "c32"}
    assert {d: d.abbr for d in abbr} == abbr
    assert ember.float32.to_complex() is ember.complex64 and ember.bfloat16.to_complex() is ember.complex64
    assert ember.float64.to_complex() is ember.complex128 and ember.complex64.to_complex() is ember.complex64
    assert ember.complex64.to_real() is ember.float32 and ember.complex128.to_real() is ember.float64
    assert ember.int32.to_real() is ember.int32 and ember.float16.to_real() is ember.float16
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for int32"):
        ember.int32.to_complex()
    assert ember.float16.to_complex() is ember.complex32 and ember.complex32.to_real() is ember.float16


def test_optimizer_step_is_a_profiler_event():
    from ember.profiler import profile

    model = nn.Linear(2, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    model(ember.ones(1, 2)).sum().backward()
    with profile() as prof:
        opt.step()
    names = [e.name for e in prof.events()]
    assert names[0] == "Optimizer.step#SGD.step" and len(names) > 1  # the step's own ops inside it


def test_return_types_is_a_module_of_the_named_tuples():
    import pickle

    import ember.return_types as rt

    assert ember.return_types is rt
    assert type(ember.max(ember.ones(2, 2), 0)) is rt.max and rt.max._fields == ("values", "indices")
    assert type(ember.aminmax(ember.ones(2))) is rt.aminmax and rt.aminmax._fields == ("min", "max")
    assert type(ember.linalg.slogdet(ember.eye(2))) is rt.linalg_slogdet
    assert type(ember.linalg.inv_ex(ember.eye(2))) is rt.linalg_inv_ex
    assert type(ember.histogram(ember.ones(3))) is rt.histogram  # made on first use, then registered
    assert rt.sort.__module__ == "ember.return_types"
    back = pickle.loads(pickle.dumps(ember.sort(ember.tensor([3.0, 1.0]))))
    assert type(back) is rt.sort and back.values.tolist() == [1.0, 3.0]


def test_backends_ember_does_not_use():
    from ember.backends import mkl, mkldnn, openmp, opt_einsum

    assert not any(m.is_available() for m in (mkl, mkldnn, openmp, opt_einsum))
    assert mkldnn.enabled is True and opt_einsum.enabled is False and opt_einsum.strategy is None
    assert opt_einsum.get_opt_einsum() is None
    with mkldnn.flags(enabled=False, deterministic=True):
        assert mkldnn.enabled is False and mkldnn.deterministic is True
    assert mkldnn.enabled is True and mkldnn.deterministic is False
    with mkldnn.verbose(mkldnn.VERBOSE_OFF), mkl.verbose(mkl.VERBOSE_OFF):
        pass
    with pytest.raises(RuntimeError, match="does not link oneDNN"):
        with mkldnn.verbose(mkldnn.VERBOSE_ON):
            pass
    with pytest.raises(RuntimeError, match="does not link MKL"):
        with mkl.verbose(mkl.VERBOSE_ON):
            pass


def test_model_zoo_load_url_is_the_hub_download():
    from ember.hub import load_state_dict_from_url
    from ember.utils import model_zoo

    assert model_zoo.load_url is load_state_dict_from_url


def test_cpu_streams_for_device_agnostic_code():
    import ember.cpu as cpu

    default = cpu.current_stream()
    assert isinstance(default, cpu.Stream) and default.query() and cpu.is_initialized()
    other = cpu.Stream(priority=0)
    with cpu.stream(other):
        assert cpu.current_stream() is other
        with cpu.stream(None):  # None leaves the stream as it is
            assert cpu.current_stream() is other
    assert cpu.current_stream() is default
    other.wait_stream(default)
    other.synchronize()
    assert cpu.set_device("cpu") is None
    device_module = getattr(ember, ember.device("cpu").type)  # the device-agnostic idiom
    assert device_module.current_stream(ember.device("cpu")) is default


def test_profiler_activities_and_cuda_attention_queries():
    import ember.backends.cuda as cuda
    from ember.profiler import ProfilerActivity, kineto_available, supported_activities

    assert supported_activities() == {ProfilerActivity.CPU} and kineto_available() is False
    assert not cuda.is_flash_attention_available()
    assert not any(f() for f in (cuda.can_use_flash_attention, cuda.can_use_efficient_attention,
                                 cuda.can_use_cudnn_attention))
    with pytest.warns(UserWarning, match="no CUDA kernels"):
        cuda.can_use_flash_attention(None, debug=True)
    assert cuda.cudnn_sdp_enabled()
    cuda.enable_cudnn_sdp(False)
    try:
        assert not cuda.cudnn_sdp_enabled()
    finally:
        cuda.enable_cudnn_sdp(True)


@pytest.mark.parametrize("name", ["memory_allocated", "max_memory_allocated", "memory_reserved",
                                  "max_memory_reserved", "empty_cache", "reset_peak_memory_stats",
                                  "get_memory_info", "current_stream", "get_device_capability"])
def test_accelerator_memory_calls_need_an_accelerator(name):
    assert not ember.accelerator.is_available()
    with pytest.raises(RuntimeError, match="no accelerator is available"):
        getattr(ember.accelerator, name)()
    with pytest.raises(RuntimeError, match="no accelerator is available"):
        ember.accelerator.device_index(0)
