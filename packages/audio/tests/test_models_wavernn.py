"""Tests for emberaudio.models.WaveRNN and its components: float64 NumPy references (Stretch2d,
MelResNet, UpsampleNetwork, the whole teacher-forced WaveRNN), gradcheck, inference (length,
class grid, agreement with teacher forcing), training, state-dict names, parameter counts and
errors."""

import numpy as np
import pytest

import ember
from ember import nn
from emberaudio.models import MelResNet, ResBlock, Stretch2d, UpsampleNetwork, WaveRNN

SMALL = dict(upsample_scales=[2, 3], n_classes=16, hop_length=6, n_res_block=2, n_rnn=8, n_fc=7,
             kernel_size=3, n_freq=5, n_hidden=6, n_output=8)


def _np(t):
    return t.detach().to(ember.float64).numpy()


def _randomise_norms(model):
    for module in model.modules():
        if isinstance(module, nn.BatchNorm1d):
            module.running_mean.copy_(ember.randn(module.num_features, dtype=ember.float64) * 0.1)
            module.running_var.copy_(ember.rand(module.num_features, dtype=ember.float64) + 0.5)
    return model


def _model(**kw):
    ember.manual_seed(0)
    args = dict(SMALL)
    args.update(kw)
    return _randomise_norms(WaveRNN(**args).double()).eval()


# ----------------------------------------------------------------------------- NumPy pieces

def _conv_valid(x, w, b=None):
    """x (C_in, T), w (C_out, C_in, K): unpadded convolution."""
    K = w.shape[2]
    out = np.stack([np.einsum("oik,ik->o", w, x[:, t:t + K]) for t in range(x.shape[1] - K + 1)], 1)
    return out if b is None else out + b[:, None]


def _bn(x, p, name):
    return ((x - p[name + ".running_mean"][:, None]) / np.sqrt(p[name + ".running_var"][:, None] + 1e-5)
            * p[name + ".weight"][:, None] + p[name + ".bias"][:, None])


def _melresnet_ref(p, pre, x, n_res_block):
    m = pre + "melresnet_model."
    x = np.maximum(_bn(_conv_valid(x, p[m + "0.weight"]), p, m + "1"), 0)
    for i in range(n_res_block):
        r = f"{m}{3 + i}.resblock_model."
        h = np.maximum(_bn(p[r + "0.weight"][:, :, 0] @ x, p, r + "1"), 0)
        x = x + _bn(p[r + "3.weight"][:, :, 0] @ h, p, r + "4")
    return _conv_valid(x, p[f"{m}{3 + n_res_block}.weight"], p[f"{m}{3 + n_res_block}.bias"])


def _upsample_ref(p, pre, x, scales, n_res_block, kernel_size):
    """x (n_freq, n_time) -> (upsampled spectrogram, stretched MelResNet features)."""
    total = int(np.prod(scales))
    aux = np.repeat(_melresnet_ref(p, pre + "resnet.", x, n_res_block), total, axis=1)
    up = x
    for i, s in enumerate(scales):
        up = np.repeat(up, s, axis=1)
        w = p[f"{pre}upsample_layers.{2 * i + 1}.weight"][0, 0, 0]  # (2s + 1,)
        padded = np.pad(up, ((0, 0), (s, s)))
        up = np.stack([padded[:, t:t + 2 * s + 1] @ w for t in range(up.shape[1])], 1)
    indent = (kernel_size - 1) // 2 * total
    return up[:, indent:up.shape[1] - indent], aux


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gru(xs, p, name):
    """torch.nn.GRU's equations (gates r, z, n), zero initial state; xs (T, I)."""
    w_ih, w_hh = p[name + ".weight_ih_l0"], p[name + ".weight_hh_l0"]
    b_ih, b_hh = p[name + ".bias_ih_l0"], p[name + ".bias_hh_l0"]
    h = np.zeros(w_hh.shape[1])
    out = []
    for x in xs:
        gi, gh = w_ih @ x + b_ih, w_hh @ h + b_hh
        H = h.shape[0]
        r = _sigmoid(gi[:H] + gh[:H])
        z = _sigmoid(gi[H:2 * H] + gh[H:2 * H])
        n = np.tanh(gi[2 * H:] + r * gh[2 * H:])
        h = (1 - z) * n + z * h
        out.append(h)
    return np.array(out)


def _wavernn_ref(model, waveform, specgram):
    """One item: waveform (L,), specgram (n_freq, n_time) -> logits (L, n_classes)."""
    p = {k: _np(v) for k, v in model.state_dict().items()}
    spec, aux = _upsample_ref(p, "upsample.", specgram, SMALL["upsample_scales"],
                              SMALL["n_res_block"], SMALL["kernel_size"])
    spec, aux = spec.T, aux.T
    a = model.n_aux
    a1, a2, a3, a4 = (aux[:, i * a:(i + 1) * a] for i in range(4))

    def lin(x, name):
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    x = lin(np.concatenate([waveform[:, None], spec, a1], 1), "fc")
    x = _gru(x, p, "rnn1") + x
    x = _gru(np.concatenate([x, a2], 1), p, "rnn2") + x
    x = np.maximum(lin(np.concatenate([x, a3], 1), "fc1"), 0)
    x = np.maximum(lin(np.concatenate([x, a4], 1), "fc2"), 0)
    return lin(x, "fc3")


# ----------------------------------------------------------------------------- components

@pytest.mark.parametrize("shape,transpose", [((2, 3, 4), False), ((3, 2, 4, 3), True),
                                             ((0, 3, 2), False), ((3, 0), False), ((1, 1), False)])
def test_stretch2d_matches_numpy(shape, transpose):
    x = ember.randn(*shape, dtype=ember.float64)
    if transpose:
        x = x.transpose(-1, -2)  # non-contiguous
    out = Stretch2d(time_scale=3, freq_scale=2)(x)
    want = np.repeat(np.repeat(_np(x), 2, axis=-2), 3, axis=-1)
    assert tuple(out.shape) == want.shape
    np.testing.assert_array_equal(_np(out), want)


def test_zero_batch_and_zero_dim_inputs():
    model = _model()
    out = model(ember.randn(0, 1, 24, dtype=ember.float64), ember.randn(0, 1, 5, 6, dtype=ember.float64))
    assert out.shape == (0, 1, 24, 16)
    with pytest.raises(ValueError, match=r"specgram must have at least 2 dimensions, got \(\)"):
        Stretch2d(2, 2)(ember.tensor(1.0))


def test_stretch2d_gradcheck():
    x = ember.randn(2, 3, 2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(Stretch2d(2, 3), (x,))


def test_resblock_and_melresnet_match_numpy():
    ember.manual_seed(1)
    block = _randomise_norms(ResBlock(4).double()).eval()
    x = ember.randn(2, 6, 4, dtype=ember.float64).transpose(1, 2)
    p = {k: _np(v) for k, v in block.state_dict().items()}
    for b in range(2):
        h = np.maximum(_bn(p["resblock_model.0.weight"][:, :, 0] @ _np(x[b]), p, "resblock_model.1"), 0)
        want = _np(x[b]) + _bn(p["resblock_model.3.weight"][:, :, 0] @ h, p, "resblock_model.4")
        np.testing.assert_allclose(_np(block(x)[b]), want, rtol=1e-12, atol=1e-12)

    net = _randomise_norms(MelResNet(n_res_block=2, n_freq=5, n_hidden=6, n_output=3,
                                     kernel_size=3).double()).eval()
    x = ember.randn(2, 5, 7, dtype=ember.float64)
    out = net(x)
    assert out.shape == (2, 3, 5)
    p = {k: _np(v) for k, v in net.state_dict().items()}
    for b in range(2):
        np.testing.assert_allclose(_np(out[b]), _melresnet_ref(p, "", _np(x[b]), 2), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scales,kernel_size", [([2, 3], 3), ([4], 5), ([1, 2, 2], 1)])
def test_upsample_network_matches_numpy(scales, kernel_size):
    ember.manual_seed(2)
    net = _randomise_norms(UpsampleNetwork(scales, n_res_block=1, n_freq=4, n_hidden=5,
                                           n_output=6, kernel_size=kernel_size).double()).eval()
    for i, s in enumerate(scales):  # a moving average at initialisation (made in float32)
        np.testing.assert_allclose(_np(net.upsample_layers[2 * i + 1].weight),
                                   np.full((1, 1, 1, 2 * s + 1), 1 / (2 * s + 1)), rtol=1e-7)
    with ember.no_grad():  # then arbitrary smoothing kernels
        for i in range(len(scales)):
            net.upsample_layers[2 * i + 1].weight.copy_(
                ember.randn(*net.upsample_layers[2 * i + 1].weight.shape, dtype=ember.float64))
    x = ember.randn(2, 9, 4, dtype=ember.float64).transpose(1, 2)
    up, aux = net(x)
    total = int(np.prod(scales))
    n_out = (9 - kernel_size + 1) * total
    assert up.shape == (2, 4, n_out) and aux.shape == (2, 6, n_out)
    p = {k: _np(v) for k, v in net.state_dict().items()}
    for b in range(2):
        want_up, want_aux = _upsample_ref(p, "", _np(x[b]), scales, 1, kernel_size)
        np.testing.assert_allclose(_np(up[b]), want_up, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(aux[b]), want_aux, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- WaveRNN

def test_forward_matches_numpy():
    model = _model()
    specgram = ember.randn(2, 1, 5, 6, dtype=ember.float64)
    waveform = ember.rand(2, 1, 4 * 6, dtype=ember.float64) * 2 - 1
    out = model(waveform, specgram)
    assert out.shape == (2, 1, 24, 16)
    for b in range(2):
        want = _wavernn_ref(model, _np(waveform[b, 0]), _np(specgram[b, 0]))
        np.testing.assert_allclose(_np(out[b, 0]), want, rtol=1e-9, atol=1e-11)


def test_forward_gradcheck():
    model = _model(n_rnn=3, n_fc=3, n_output=4, n_res_block=1, upsample_scales=[2], hop_length=2)
    specgram = ember.randn(1, 1, 5, 4, dtype=ember.float64, requires_grad=True)
    waveform = ember.randn(1, 1, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(model, (waveform, specgram))


def test_infer_length_grid_and_lengths():
    model = _model()
    ember.manual_seed(3)
    waveform, lengths = model.infer(ember.randn(2, 5, 4, dtype=ember.float64), ember.tensor([4, 2]))
    assert waveform.shape == (2, 1, 4 * 6) and waveform.dtype == ember.float64
    assert lengths.tolist() == [24, 12]
    # Every sample is a class c in [0, 15] mapped to 2 c / 15 - 1.
    classes = (_np(waveform) + 1) * 15 / 2
    np.testing.assert_allclose(classes, np.round(classes), atol=1e-9)
    assert classes.min() >= -1e-9 and classes.max() <= 15 + 1e-9
    out, none = model.infer(ember.randn(1, 5, 3, dtype=ember.float64))
    assert out.shape == (1, 1, 18) and none is None
    out, lens = model.infer(ember.randn(0, 5, 3, dtype=ember.float64), ember.zeros(0, dtype=ember.int64))
    assert out.shape == (0, 1, 18) and lens.shape == (0,)


def test_infer_samples_from_the_teacher_forced_posterior():
    model = _model()
    specgram = ember.randn(2, 5, 3, dtype=ember.float64)
    ember.manual_seed(11)
    samples, _ = model.infer(specgram)
    # Teacher forcing on the previous samples, over the 'same'-padded spectrogram, gives every
    # step's posterior; drawing from them in order with the same seed repeats the samples.
    prev = ember.cat([ember.zeros(2, 1, 1, dtype=ember.float64), samples[:, :, :-1]], dim=2)
    padded = ember.nn.functional.pad(specgram, (1, 1)).unsqueeze(1)
    posterior = ember.softmax(model(prev, padded)[:, 0], dim=-1)
    ember.manual_seed(11)
    again = [ember.multinomial(posterior[:, t], 1) for t in range(posterior.shape[1])]
    again = (2 * ember.stack(again, dim=2).to(ember.float64) / 15 - 1)
    np.testing.assert_allclose(_np(samples), _np(again), rtol=0, atol=1e-12)


def test_infer_follows_a_certain_class():
    model = _model()
    with ember.no_grad():
        model.fc3.weight.zero_()
        model.fc3.bias.copy_(ember.arange(16, dtype=ember.float64) * 0 - 100)
        model.fc3.bias[5] = 100.0
    out, _ = model.infer(ember.randn(1, 5, 2, dtype=ember.float64))
    np.testing.assert_allclose(_np(out), np.full((1, 1, 12), 2 * 5 / 15 - 1), rtol=1e-12)


def test_training_step_reduces_loss():
    model = _model().float().train()
    ember.manual_seed(4)
    specgram = ember.randn(2, 1, 5, 5)
    target = ember.randint(0, 16, (2, 18))
    waveform = ember.cat([ember.zeros(2, 1), 2 * target[:, :-1].float() / 15 - 1], dim=1).unsqueeze(1)
    optimizer = ember.optim.Adam(model.parameters(), lr=1e-2)

    def loss_fn():
        logits = model(waveform, specgram)[:, 0]
        return ember.nn.functional.cross_entropy(logits.reshape(-1, 16), target.reshape(-1))

    first = loss_fn().item()
    for _ in range(20):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimizer.step()
    assert loss_fn().item() < 0.8 * first


def test_state_dict_names_and_parameter_counts():
    # torchaudio's WAVERNN_10k_EPOCHS_8000 bundle configuration.
    model = WaveRNN(upsample_scales=[5, 5, 11], n_classes=256, hop_length=275, n_freq=80)
    assert sum(p.numel() for p in model.parameters()) == 4_349_613
    keys = list(model.state_dict())
    assert len(keys) == 147
    for key in ["upsample.resnet.melresnet_model.0.weight",
                "upsample.resnet.melresnet_model.1.running_mean",
                "upsample.resnet.melresnet_model.3.resblock_model.0.weight",
                "upsample.resnet.melresnet_model.12.resblock_model.4.num_batches_tracked",
                "upsample.resnet.melresnet_model.13.bias", "upsample.upsample_layers.5.weight",
                "fc.weight", "rnn1.weight_hh_l0", "rnn2.bias_ih_l0", "fc1.bias", "fc2.weight",
                "fc3.bias"]:
        assert key in keys
    # Defaults, counted from the layer shapes.
    model = WaveRNN(upsample_scales=[5, 5, 8], n_classes=512, hop_length=200)
    F, Hd, Out, R, C, Nfc, a = 128, 128, 128, 512, 512, 512, 32
    gru = lambda i, h: 3 * h * (i + h) + 6 * h  # noqa: E731
    want = (F * Hd * 5 + 2 * Hd + 10 * (2 * Hd * Hd + 4 * Hd) + Hd * Out + Out + (11 + 11 + 17)
            + (F + a + 1) * R + R + gru(R, R) + gru(R + a, R)
            + (R + a) * Nfc + Nfc + (Nfc + a) * Nfc + Nfc + Nfc * C + C)
    assert sum(p.numel() for p in model.parameters()) == want == 4_536_231


def test_errors():
    with pytest.raises(ValueError, match=r"Expected: total_scale == hop_length, but found 6 != 5"):
        WaveRNN([2, 3], 16, 5)
    with pytest.raises(ValueError, match="kernel_size must be a positive odd number, got 4"):
        WaveRNN([2, 3], 16, 6, kernel_size=4)
    with pytest.raises(ValueError, match="upsample_scales must be a non-empty list"):
        UpsampleNetwork([2, 0])
    with pytest.raises(ValueError, match="time_scale and freq_scale must be at least 1"):
        Stretch2d(0, 1)
    with pytest.raises(ValueError, match="n_classes must be at least 2"):
        WaveRNN([2], 1, 2)
    model = _model()
    spec = ember.randn(1, 1, 5, 4, dtype=ember.float64)
    wave = ember.randn(1, 1, 12, dtype=ember.float64)
    with pytest.raises(ValueError, match="Require the input channel of waveform is 1"):
        model(wave.expand(1, 2, 12), spec)
    with pytest.raises(ValueError, match="Require the input channel of specgram is 1"):
        model(wave, spec.expand(1, 2, 5, 4))
    with pytest.raises(ValueError, match=r"waveform must have shape \(n_batch, 1, n_samples\)"):
        model(wave[0], spec)
    with pytest.raises(ValueError, match=r"waveform must have \(n_time - kernel_size \+ 1\) \* hop_length = 12"):
        model(ember.randn(1, 1, 13, dtype=ember.float64), spec)
    with pytest.raises(ValueError, match="batch sizes differ"):
        model(wave.expand(2, 1, 12), spec)
    with pytest.raises(ValueError, match=r"specgram must have shape \(n_batch, 5, n_time\)"):
        model(wave, ember.randn(1, 1, 4, 4, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"at least kernel_size \(3\) frames"):
        model(ember.randn(1, 1, 0, dtype=ember.float64), ember.randn(1, 1, 5, 2, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"at least kernel_size \(5\) frames"):
        UpsampleNetwork([2], n_freq=3)(ember.randn(1, 3, 4))
    with pytest.raises(ValueError, match=r"specgram must have shape \(n_batch, n_freq, n_time\)"):
        model.infer(spec)
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 4\]"):
        model.infer(spec[:, 0], ember.tensor([5]))
    with pytest.raises(TypeError, match="lengths must be an integer tensor"):
        model.infer(spec[:, 0], ember.tensor([4.0]))
