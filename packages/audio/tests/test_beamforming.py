"""Beamforming (emberaudio.functional and the PSD/SoudenMVDR/RTFMVDR modules) against NumPy."""

import numpy as np
import pytest

import ember
import emberaudio.functional as AF
import emberaudio.transforms as T

RNG = np.random.default_rng(2)


def t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def crandn(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def herm_pd(*lead, c=3):
    """Random Hermitian positive-definite (..., c, c)."""
    a = crandn(*lead, c, c + 2)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + 0.1 * np.eye(c)


def psd_ref(spec, mask=None, normalize=True, eps=1e-10):
    y = np.swapaxes(spec, -3, -2)                              # (..., F, C, T)
    outer = np.einsum("...ct,...et->...tce", y, np.conj(y))
    if mask is not None:
        if normalize:
            mask = mask / (mask.sum(-1, keepdims=True) + eps)
        outer = outer * mask[..., None, None]
    return outer.sum(-3)


def tik_ref(m, reg=1e-7, eps=1e-8):
    tr = np.real(np.trace(m, axis1=-2, axis2=-1))
    return m + (tr * reg + eps)[..., None, None] * np.eye(m.shape[-1])


def cgrad(fn, *arrays):
    """gradcheck a complex function through real and imaginary leaves, real-viewed output."""
    leaves = []
    for a in arrays:
        leaves += [t(a.real.copy()).requires_grad_(True), t(a.imag.copy()).requires_grad_(True)]

    def wrapped(*parts):
        zs = [ember.complex(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
        return ember.view_as_real(fn(*zs))

    return ember.autograd.gradcheck(wrapped, tuple(leaves))


def test_psd():
    spec = crandn(2, 3, 4, 6)                                  # (batch, C, F, T)
    mask = RNG.uniform(size=(2, 4, 6))
    np.testing.assert_allclose(AF.psd(t(spec)).numpy(), psd_ref(spec), rtol=1e-12)
    np.testing.assert_allclose(AF.psd(t(spec), t(mask)).numpy(), psd_ref(spec, mask), rtol=1e-12)
    np.testing.assert_allclose(AF.psd(t(spec), t(mask), normalize=False).numpy(), psd_ref(spec, mask, False),
                               rtol=1e-12)
    nc = np.moveaxis(spec, 1, -1)                              # non-contiguous view via permute
    np.testing.assert_allclose(AF.psd(t(nc).permute(0, 3, 1, 2)).numpy(), psd_ref(spec), rtol=1e-12)
    assert AF.psd(ember.zeros(0, 3, 4, 6, dtype=ember.complex128)).shape == (0, 4, 3, 3)
    assert cgrad(lambda s: AF.psd(s, t(mask[0, :2, :3])), spec[0, :2, :2, :3])
    with pytest.raises(TypeError, match="must be ember.cfloat or ember.cdouble"):
        AF.psd(t(spec.real))
    with pytest.raises(ValueError, match="expected mask of shape"):
        AF.psd(t(spec), t(mask[..., :5]))


def test_psd_module():
    spec = crandn(3, 4, 5)
    masks = RNG.uniform(size=(3, 4, 5))
    got = T.PSD(multi_mask=True)(t(spec), t(masks)).numpy()
    np.testing.assert_allclose(got, psd_ref(spec, masks.mean(0), eps=1e-15), rtol=1e-12)
    np.testing.assert_allclose(T.PSD()(t(spec)).numpy(), psd_ref(spec), rtol=1e-12)


@pytest.mark.parametrize("loading", [True, False])
def test_mvdr_weights_souden(loading):
    ps, pn = herm_pd(2, 5), herm_pd(2, 5)
    pn_l = tik_ref(pn) if loading else pn
    num = np.linalg.solve(pn_l, ps)
    ws = num / (np.trace(num, axis1=-2, axis2=-1)[..., None, None] + 1e-8)
    got = AF.mvdr_weights_souden(t(ps), t(pn), 1, diagonal_loading=loading).numpy()
    np.testing.assert_allclose(got, ws[..., :, 1], rtol=1e-9)
    onehot = np.zeros((2, 3))
    onehot[:, 2] = 1
    got = AF.mvdr_weights_souden(t(ps), t(pn), t(onehot), diagonal_loading=loading).numpy()
    np.testing.assert_allclose(got, ws[..., :, 2], rtol=1e-9)
    assert cgrad(lambda a, b: AF.mvdr_weights_souden(a, b, 0), ps[0, :2], pn[0, :2])


def test_mvdr_weights_rtf():
    rtf, pn = crandn(2, 4, 3), herm_pd(2, 4)
    pn_l = tik_ref(pn)
    num = np.linalg.solve(pn_l, rtf[..., None])[..., 0]
    den = np.real(np.sum(np.conj(rtf) * num, -1))
    w = num / (den[..., None] + 1e-8)
    np.testing.assert_allclose(AF.mvdr_weights_rtf(t(rtf), t(pn)).numpy(), w, rtol=1e-9)
    np.testing.assert_allclose(AF.mvdr_weights_rtf(t(rtf), t(pn), 2).numpy(), w * np.conj(rtf[..., 2:3]), rtol=1e-9)
    onehot = np.zeros((2, 3))
    onehot[:, 1] = 1
    np.testing.assert_allclose(AF.mvdr_weights_rtf(t(rtf), t(pn), t(onehot)).numpy(),
                               w * np.conj(rtf[..., 1:2]), rtol=1e-9)
    assert cgrad(lambda a, b: AF.mvdr_weights_rtf(a, b, 0), rtf[0, :2], pn[0, :2])


def test_rtf_evd():
    ps = herm_pd(2, 4)
    v = AF.rtf_evd(t(ps)).numpy()
    vals, vecs = np.linalg.eigh(ps)
    top = vecs[..., -1]
    # an eigenvector up to a unit phase: |<v, top>| = 1 and Φ v = λmax v
    np.testing.assert_allclose(np.abs(np.sum(np.conj(top) * v, -1)), 1.0, rtol=1e-9)
    np.testing.assert_allclose((ps @ v[..., None])[..., 0], vals[..., -1:] * v, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("n_iter", [1, 2, 4])
def test_rtf_power(n_iter):
    ps, pn = herm_pd(2, 3), herm_pd(2, 3)
    pn_l = tik_ref(pn)
    phi = np.linalg.solve(pn_l, ps)
    r = phi[..., :, 1:2]
    if n_iter >= 2:
        for _ in range(n_iter - 2):
            r = phi @ r
        r = ps @ r
    else:
        r = pn_l @ r
    np.testing.assert_allclose(AF.rtf_power(t(ps), t(pn), 1, n_iter=n_iter).numpy(), r[..., 0], rtol=1e-9)
    onehot = np.zeros((2, 3))
    onehot[:, 1] = 1
    np.testing.assert_allclose(AF.rtf_power(t(ps), t(pn), t(onehot), n_iter=n_iter).numpy(), r[..., 0], rtol=1e-9)
    assert cgrad(lambda a, b: AF.rtf_power(a, b, 0, n_iter=n_iter), ps[0, :1], pn[0, :1])


def test_apply_beamforming_and_modules():
    w, spec = crandn(2, 4, 3), crandn(2, 3, 4, 5)
    ref = np.einsum("...fc,...cft->...ft", np.conj(w), spec)
    np.testing.assert_allclose(AF.apply_beamforming(t(w), t(spec)).numpy(), ref, rtol=1e-12)
    assert cgrad(AF.apply_beamforming, w[0, :2, :2], spec[0, :2, :2, :2])
    ps, pn = herm_pd(2, 4), herm_pd(2, 4)
    got = T.SoudenMVDR()(t(spec), t(ps), t(pn), 0).numpy()
    wsd = AF.mvdr_weights_souden(t(ps), t(pn), 0).numpy()
    np.testing.assert_allclose(got, np.einsum("...fc,...cft->...ft", np.conj(wsd), spec), rtol=1e-10)
    rtf = crandn(2, 4, 3)
    got = T.RTFMVDR()(t(spec), t(rtf), t(pn), 1).numpy()
    wr = AF.mvdr_weights_rtf(t(rtf), t(pn), 1).numpy()
    np.testing.assert_allclose(got, np.einsum("...fc,...cft->...ft", np.conj(wr), spec), rtol=1e-10)
    # MVDR keeps the reference channel's target undistorted: wᴴ v = conj(v_ref) ... times v_ref/|v_ref|² scale
    wr = AF.mvdr_weights_rtf(t(rtf), t(pn), None, diagonal_loading=False, eps=0.0).numpy()
    np.testing.assert_allclose(np.sum(np.conj(wr) * rtf, -1), 1.0, rtol=1e-9)


def test_beamforming_errors():
    ps, pn = t(herm_pd(4)), t(herm_pd(4))
    real = t(np.eye(3)[None].repeat(4, 0))
    with pytest.raises(TypeError, match="must be ember.cfloat or ember.cdouble"):
        AF.mvdr_weights_souden(real, real, 0)
    with pytest.raises(TypeError, match="must be ember.cfloat or ember.cdouble"):
        AF.rtf_evd(real)
    with pytest.raises(TypeError, match="must be ember.cfloat or ember.cdouble"):
        AF.rtf_power(real, pn, 0)
    with pytest.raises(TypeError, match="must be ember.cfloat or ember.cdouble"):
        AF.mvdr_weights_rtf(real[..., 0], pn)
    with pytest.raises(TypeError, match="must be ember.cfloat or ember.cdouble"):
        AF.apply_beamforming(real[..., 0], t(crandn(3, 4, 2)))
    with pytest.raises(ValueError, match="The number of iteration must be greater than 0."):
        AF.rtf_power(ps, pn, 0, n_iter=0)
    with pytest.raises(TypeError, match='expected "int" or "Tensor" for reference_channel'):
        AF.mvdr_weights_souden(ps, pn, 1.5)
    with pytest.raises(IndexError, match="reference_channel 3 is out of range for 3 channels"):
        AF.mvdr_weights_souden(ps, pn, 3)
    with pytest.raises(ValueError, match="expected at least 3D Tensor"):
        AF.mvdr_weights_souden(ps[0], pn[0], 0)
    with pytest.raises(ValueError, match="the dimensions of psd_s and psd_n should be the same"):
        AF.mvdr_weights_souden(ps, pn[:2], 0)
    with pytest.raises(ValueError, match="the last two dimensions of psd_s should be the same"):
        AF.rtf_power(ps[..., :2], pn[..., :2], 0)
    with pytest.raises(ValueError, match="the dimensions of rtf and the dimensions except the last of psd_n"):
        AF.mvdr_weights_rtf(t(crandn(4, 2)), pn)
    with pytest.raises(ValueError, match="expected beamform_weights"):
        AF.apply_beamforming(t(crandn(4, 3)), t(crandn(3, 5, 2)))


def rtf_weights_ref(v, pn, ref, eps=1e-8):
    pn_l = tik_ref(pn)
    num = np.linalg.solve(pn_l, v[..., None])[..., 0]
    den = np.real(np.sum(np.conj(v) * num, -1))
    return num / (den[..., None] + eps) * np.conj(v[..., ref:ref + 1])


@pytest.mark.parametrize("solution", ["ref_channel", "stv_evd", "stv_power"])
def test_mvdr_module(solution):
    spec = crandn(2, 3, 4, 6)
    ms = RNG.uniform(size=(2, 4, 6))
    mn = RNG.uniform(size=(2, 4, 6))
    got = T.MVDR(ref_channel=1, solution=solution)(t(spec), t(ms), t(mn)).numpy()
    ps, pn = psd_ref(spec, ms, eps=1e-15), psd_ref(spec, mn, eps=1e-15)
    if solution == "ref_channel":
        num = np.linalg.solve(tik_ref(pn), ps)
        w = (num / (np.trace(num, axis1=-2, axis2=-1)[..., None, None] + 1e-8))[..., :, 1]
    elif solution == "stv_evd":
        w = rtf_weights_ref(np.linalg.eigh(ps)[1][..., -1], pn, 1)
    else:
        phi = np.linalg.solve(tik_ref(pn), ps)
        v = (ps @ (phi @ phi[..., :, 1:2]))[..., 0]              # n_iter = 3: one φ step, then Φs
        w = rtf_weights_ref(v, pn, 1)
    np.testing.assert_allclose(got, np.einsum("...fc,...cft->...ft", np.conj(w), spec), rtol=1e-8, atol=1e-10)


def test_mvdr_module_online_multimask_dtype_and_errors():
    spec1, spec2 = crandn(3, 4, 5), crandn(3, 4, 5)
    m1, m2 = RNG.uniform(size=(3, 4, 5)), RNG.uniform(size=(3, 4, 5))
    mvdr = T.MVDR(multi_mask=True, online=True)
    mvdr(t(spec1), t(m1), t(1 - m1))
    assert sorted(mvdr.state_dict()) == ["mask_sum_n", "mask_sum_s", "psd_n", "psd_s"]
    got = mvdr(t(spec2), t(m2), t(1 - m2)).numpy()
    a1, a2 = m1.mean(0), m2.mean(0)
    # running average: Φ ← Φ_old · M_old / (M_old + m) + Φ_new / (M_old + m), masks summed over time
    ps = [psd_ref(s, a, eps=1e-15) for s, a in ((spec1, a1), (spec2, a2))]
    pn = [psd_ref(s, 1 - a, eps=1e-15) for s, a in ((spec1, a1), (spec2, a2))]
    s1, s2 = a1.sum(-1), a2.sum(-1)
    n1, n2 = (1 - a1).sum(-1), (1 - a2).sum(-1)
    ps_run = ps[0] * (s1 / (s1 + s2))[:, None, None] + ps[1] / (s1 + s2)[:, None, None]
    pn_run = pn[0] * (n1 / (n1 + n2))[:, None, None] + pn[1] / (n1 + n2)[:, None, None]
    np.testing.assert_allclose(mvdr.psd_s.numpy(), ps_run, rtol=1e-10)
    num = np.linalg.solve(tik_ref(pn_run), ps_run)
    w = (num / (np.trace(num, axis1=-2, axis2=-1)[..., None, None] + 1e-8))[..., :, 0]
    np.testing.assert_allclose(got, np.einsum("fc,cft->ft", np.conj(w), spec2), rtol=1e-8, atol=1e-10)

    spec32 = t(spec1.astype(np.complex64))
    with pytest.warns(UserWarning, match="``mask_n`` is not provided, use ``1 - mask_s`` as ``mask_n``."):
        out = T.MVDR()(spec32, t(m1[0].astype(np.float32)))
    assert out.dtype == ember.complex64 and out.shape == (4, 5)
    with pytest.raises(ValueError, match='`solution` must be one of \\["ref_channel", "stv_evd", "stv_power"\\]'):
        T.MVDR(solution="bogus")
    with pytest.raises(ValueError, match="The type of ``specgram`` tensor must be"):
        T.MVDR()(t(spec1.real), t(m1[0]))
    with pytest.raises(ValueError, match="Expected at least 3D tensor"):
        T.MVDR()(t(spec1[0]), t(m1[0]))
    with pytest.raises(IndexError, match="ref_channel 5 is out of range for 3 channels"):
        T.MVDR(ref_channel=5)(t(spec1), t(m1[0]))
