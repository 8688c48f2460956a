"""The out-of-tree op example (docs/examples/custom_op) built against the installed wheel."""

import importlib.util
import shutil
import subprocess
import textwrap

import numpy as np
import pytest

import ember


@pytest.fixture(scope="module")
def example_library(repo_root, tmp_path_factory):
    path = repo_root / "docs" / "examples" / "custom_op" / "build_and_run.py"
    spec = importlib.util.spec_from_file_location("custom_op_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    library = module.build(tmp_path_factory.mktemp("custom_op_build"))
    ember.ops.load_library(library)
    return library


def reference(x, y, alpha):
    return x.astype(np.float64) + alpha * y.astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape", [(3, 4), (0, 5), (), (2, 3, 4)], ids=["contiguous", "zero-size", "0-dim", "3-d"]
)
def test_matches_float64_reference(example_library, dtype, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    out = ember.ops.example.scale_add(ember.from_numpy(x), ember.from_numpy(y), alpha=-1.25)
    assert out.shape == shape
    assert out.dtype == (ember.float32 if dtype == np.float32 else ember.float64)
    tol = 1e-6 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(out.numpy(), reference(x, y, -1.25), rtol=tol, atol=tol)


def test_non_contiguous_inputs(example_library):
    base = np.arange(24.0).reshape(4, 6)
    x = ember.from_numpy(base.T)  # transposed: strides (1, 6)
    y = ember.from_numpy(base.T)
    assert not x.is_contiguous()
    out = ember.ops.example.scale_add(x, y)
    np.testing.assert_array_equal(out.numpy(), reference(base.T, base.T, 1.0))
    stepped = ember.from_numpy(base[::2, ::3])  # stepped view
    assert not stepped.is_contiguous()
    out = ember.ops.example.scale_add(stepped, stepped, alpha=2.0)
    np.testing.assert_array_equal(out.numpy(), reference(base[::2, ::3], base[::2, ::3], 2.0))


def test_extreme_values(example_library):
    x = np.array([np.inf, -np.inf, np.nan, -0.0, 1e308, 5e-324])
    y = np.array([1.0, 1.0, 1.0, -0.0, 1e308, 5e-324])
    out = ember.ops.example.scale_add(ember.from_numpy(x), ember.from_numpy(y)).numpy()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, x + y)
    assert np.signbit(out[3])


def test_schema_and_registry(example_library):
    op = ember.ops.example.scale_add
    assert op.schema == "example::scale_add(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor"
    assert op.has_kernel("CPU") and not op.has_kernel("CUDA")
    assert "scale_add" in dir(ember.ops.example)
    assert "example" in dir(ember.ops)
    ember.ops.load_library(example_library)  # loading twice is a no-op


def test_bad_arguments_raise_clear_errors(example_library):
    op = ember.ops.example.scale_add
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"\[example::scale_add\] expected at most 2 positional arguments, but got 3"):
        op(x, x, 0.5)
    with pytest.raises(TypeError, match=r"missing required argument 'y'"):
        op(x)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'beta'"):
        op(x, x, beta=1.0)
    with pytest.raises(TypeError, match=r"expected argument 'y' to be Tensor, but got list"):
        op(x, [1.0, 2.0])
    with pytest.raises(TypeError, match=r"expected argument 'alpha' to be float, but got str"):
        op(x, x, alpha="2")
    with pytest.raises(TypeError, match=r"once, but got it both by position and by keyword"):
        op(x, x, x=x)
    with pytest.raises(ValueError, match=r"expected x and y of the same shape"):
        op(x, ember.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match=r"expected x and y of one dtype, but got float32 and float64"):
        op(x, ember.tensor([1.0, 2.0], dtype=ember.float64))
    with pytest.raises(TypeError, match=r"expected float32 or float64, but got int64"):
        op(ember.tensor([1, 2]), ember.tensor([1, 2]))
    with pytest.raises(AttributeError, match=r"has no op 'missing'"):
        _ = ember.ops.example.missing


def _compile_fake_extension(tmp_path, source: str):
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.fail("a C++ compiler is required (the README's setup installs one)")
    src = tmp_path / "fake.cpp"
    src.write_text(textwrap.dedent(source))
    lib = tmp_path / "fake.so"
    subprocess.run([compiler, "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    return lib


def test_extension_for_another_core_minor_is_refused_before_it_runs(tmp_path):
    major, minor, _ = ember.__version__.split(".")
    other = f"{major}.{int(minor) + 1}.0"
    # If the library's code ran, its constructor would kill the process.
    lib = _compile_fake_extension(tmp_path, f"""
        #include <cstdlib>
        __attribute__((used)) static const char marker[] = "EMBER_EXTENSION_BUILT_FOR_CORE={other}";
        __attribute__((constructor)) static void boom() {{ std::abort(); }}
    """)
    assert ember.ops.extension_built_for(lib) == other
    with pytest.raises(ImportError) as info:
        ember.ops.load_library(lib)
    message = str(info.value)
    assert f"built for ember {other}" in message
    assert f"ember {ember.__version__} is installed" in message
    assert "compatibility page" in message


def test_library_without_build_marker_is_refused(tmp_path):
    lib = _compile_fake_extension(tmp_path, "extern \"C\" int nothing() { return 0; }")
    with pytest.raises(ValueError, match=r"has no build marker"):
        ember.ops.load_library(lib)


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(OSError, match=r"could not open"):
        ember.ops.load_library(tmp_path / "nope.so")


def test_declared_derivatives_pass_gradcheck(example_library):
    """The example declares its derivatives as built-in ops do (docs/examples/custom_op): reverse
    mode, forward mode and second order are checked against finite differences."""
    from ember.autograd import gradcheck, gradgradcheck

    gen = ember.Generator()
    gen.manual_seed(3)
    x = ember.randn([3, 4], generator=gen, dtype=ember.float64).requires_grad_()
    y = ember.randn([3, 4], generator=gen, dtype=ember.float64).requires_grad_()
    scale_add, soft_clamp = ember.ops.example.scale_add, ember.ops.example.soft_clamp
    assert scale_add(x, y, alpha=0.5).grad_fn.name() == "ScaleAddBackward0"
    assert gradcheck(lambda a, b: scale_add(a, b, alpha=-1.25), (x, y), check_forward_ad=True)
    assert gradcheck(lambda a: soft_clamp(a, limit=0.75), (x,), check_forward_ad=True)
    assert gradgradcheck(lambda a: soft_clamp(a, limit=0.75), (x,))
    assert gradgradcheck(lambda a, b: soft_clamp(scale_add(a, b, alpha=2.0)), (x, y))
    # against the float64 reference: d/dx limit*tanh(x/limit) = 1 - tanh(x/limit)^2
    out = soft_clamp(x, limit=0.75)
    out.sum().backward()
    expected = 1 - np.tanh(x.detach().numpy() / 0.75) ** 2
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_derivatives_through_non_contiguous_zero_size_and_0_dim(example_library):
    soft_clamp = ember.ops.example.soft_clamp
    base = ember.tensor(np.arange(12.0).reshape(3, 4) / 10, dtype=ember.float64, requires_grad=True)
    soft_clamp(base.t()).sum().backward()  # a transposed input
    np.testing.assert_allclose(base.grad.numpy(), 1 - np.tanh(np.arange(12.0).reshape(3, 4) / 10) ** 2, rtol=1e-12)
    for shape in ([0, 3], []):
        x = ember.zeros(shape, dtype=ember.float64, requires_grad=True)
        soft_clamp(x).sum().backward()
        assert x.grad.shape == tuple(shape)
        assert np.all(x.grad.numpy() == 1.0)

