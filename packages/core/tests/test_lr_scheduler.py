"""ember.optim.lr_scheduler: each schedule's learning rates against the closed-form formulas of
PyTorch's documentation, computed independently here; state dicts; argument errors."""

import math

import pytest

import ember
from ember import nn, optim
from ember.optim import lr_scheduler as S


def _opt(lr=1.0, cls=optim.SGD, **kwargs):
    return cls([nn.Parameter(ember.zeros(2))], lr=lr, **kwargs)


def _lrs(scheduler, steps):
    out = [scheduler.get_last_lr()[0]]
    for _ in range(steps):
        scheduler.optimizer.step()
        scheduler.step()
        out.append(scheduler.get_last_lr()[0])
    return out


def _close(actual, expected):
    assert actual == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_step_multistep_exponential_constant_linear():
    _close(_lrs(S.StepLR(_opt(), step_size=3, gamma=0.5), 9), [0.5 ** (t // 3) for t in range(10)])
    _close(_lrs(S.MultiStepLR(_opt(), milestones=[2, 5, 5], gamma=0.1), 7),
           [0.1 ** ((t >= 2) + 2 * (t >= 5)) for t in range(8)])
    _close(_lrs(S.ExponentialLR(_opt(2.0), gamma=0.9), 6), [2.0 * 0.9 ** t for t in range(7)])
    _close(_lrs(S.ConstantLR(_opt(), factor=0.25, total_iters=3), 5), [0.25, 0.25, 0.25, 1, 1, 1])
    start, end, n = 0.2, 0.8, 4
    _close(_lrs(S.LinearLR(_opt(), start_factor=start, end_factor=end, total_iters=n), 6),
           [start + (end - start) * min(t, n) / n for t in range(7)])


def test_cosine_annealing_follows_the_closed_form_over_several_periods():
    base, lo, T = 0.1, 0.001, 5  # noqa: N806
    expected = [lo + (base - lo) * (1 + math.cos(math.pi * t / T)) / 2 for t in range(21)]
    _close(_lrs(S.CosineAnnealingLR(_opt(base), T_max=T, eta_min=lo), 20), expected)


def test_warm_restarts():
    base, T0 = 1.0, 3  # noqa: N806
    got = _lrs(S.CosineAnnealingWarmRestarts(_opt(base), T_0=T0, T_mult=2, eta_min=0.0), 12)
    expected, t_cur, t_i = [], 0, T0
    for _ in range(13):
        expected.append((1 + math.cos(math.pi * t_cur / t_i)) / 2)
        t_cur += 1
        if t_cur >= t_i:
            t_cur, t_i = t_cur - t_i, t_i * 2
    _close(got, expected)
    with pytest.raises(ValueError, match=r"Expected positive integer T_0, but got 0"):
        S.CosineAnnealingWarmRestarts(_opt(), T_0=0)
    with pytest.raises(ValueError, match=r"Expected integer T_mult >= 1, but got 0"):
        S.CosineAnnealingWarmRestarts(_opt(), T_0=2, T_mult=0)


def test_lambda_and_multiplicative():
    opt = optim.SGD([{"params": [nn.Parameter(ember.zeros(1))]}, {"params": [nn.Parameter(ember.zeros(1))],
                                                                   "lr": 2.0}], lr=1.0)
    sched = S.LambdaLR(opt, [lambda e: 0.5 ** e, lambda e: 1.0 / (e + 1)])
    for _ in range(3):
        opt.step()
        sched.step()
    _close(sched.get_last_lr(), [0.125, 2.0 / 4])
    with pytest.raises(ValueError, match=r"Expected 2 lr_lambdas, but got 3"):
        S.LambdaLR(opt, [abs, abs, abs])
    _close(_lrs(S.MultiplicativeLR(_opt(), lambda e: 0.9), 4), [0.9 ** t for t in range(5)])


def test_one_cycle_two_and_three_phase():
    opt = _opt(cls=optim.SGD, momentum=0.9)
    total, max_lr, pct = 10, 1.0, 0.3
    got = _lrs(S.OneCycleLR(opt, max_lr=max_lr, total_steps=total, pct_start=pct), total - 1)
    initial, minimum = max_lr / 25, max_lr / 25 / 1e4
    up_end, down_end = pct * total - 1, total - 1

    def cos(start, end, frac):
        return end + (start - end) / 2 * (math.cos(math.pi * frac) + 1)

    expected = [cos(initial, max_lr, t / up_end) if t <= up_end else
                cos(max_lr, minimum, (t - up_end) / (down_end - up_end)) for t in range(total)]
    _close(got, expected)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.95)  # momentum cycles back to max
    sched = S.OneCycleLR(_opt(momentum=0.9), max_lr=1.0, total_steps=10)
    for _ in range(10):
        sched.step()
    with pytest.raises(ValueError, match=r"Tried to step 11 times. The specified number of total steps is 10"):
        sched.step()

    adam = _opt(cls=optim.Adam)
    three = S.OneCycleLR(adam, max_lr=0.5, epochs=2, steps_per_epoch=5, anneal_strategy="linear", three_phase=True)
    got = _lrs(three, 9)
    ends = [3 - 1, 6 - 2, 9]
    points = [(0, 0.02), (ends[0], 0.5), (ends[1], 0.02), (ends[2], 0.02 / 1e4)]
    expected = []
    for t in range(10):
        for (s0, v0), (s1, v1) in zip(points, points[1:], strict=False):
            if t <= s1:
                expected.append(v0 + (v1 - v0) * (t - s0) / (s1 - s0))
                break
    _close(got, expected)
    assert adam.param_groups[0]["betas"][0] == pytest.approx(0.95)
    with pytest.raises(ValueError, match=r"You must define either total_steps OR \(epochs AND steps_per_epoch\)"):
        S.OneCycleLR(_opt(momentum=0.9), max_lr=1.0)
    with pytest.raises(ValueError, match=r"optimizer must support momentum or beta1"):
        S.OneCycleLR(_opt(cls=optim.Adagrad), max_lr=1.0, total_steps=5)


def test_cyclic_modes():
    def tri(t, size_up, lo, hi, scale=lambda c, t: 1.0):
        cycle = math.floor(1 + t / (2 * size_up))
        x = abs(t / size_up - 2 * cycle + 1)
        return lo + (hi - lo) * max(0.0, 1 - x) * scale(cycle, t)

    got = _lrs(S.CyclicLR(_opt(momentum=0.9), base_lr=0.1, max_lr=1.0, step_size_up=3), 14)
    _close(got, [tri(t, 3, 0.1, 1.0) for t in range(15)])
    got = _lrs(S.CyclicLR(_opt(momentum=0.9), 0.1, 1.0, step_size_up=2, mode="triangular2"), 12)
    _close(got, [tri(t, 2, 0.1, 1.0, lambda c, t: 1 / 2 ** (c - 1)) for t in range(13)])
    got = _lrs(S.CyclicLR(_opt(cls=optim.Adam), 0.1, 1.0, step_size_up=2, mode="exp_range", gamma=0.9), 8)
    _close(got, [tri(t, 2, 0.1, 1.0, lambda c, t: 0.9 ** t) for t in range(9)])
    # Asymmetric cycle: 1 step up, 3 down.
    got = _lrs(S.CyclicLR(_opt(momentum=0.9), 0.0, 1.0, step_size_up=1, step_size_down=3, cycle_momentum=False), 5)
    _close(got, [0.0, 1.0, 2 / 3, 1 / 3, 0.0, 1.0])


def test_reduce_on_plateau():
    opt = _opt(1.0)
    sched = S.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, cooldown=1, min_lr=0.2)
    lrs = []
    for metric in [5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]:
        sched.step(metric)
        lrs.append(sched.get_last_lr()[0])
    # bad epochs: 1,2,3 -> reduce at the 3rd (patience 2); cooldown 1 epoch; then again 3 bad epochs.
    assert lrs == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    sched.step(4)
    sched.step(4)
    sched.step(4)
    assert sched.get_last_lr() == [0.2]  # floored at min_lr
    up = S.ReduceLROnPlateau(_opt(), mode="max", threshold=0.1, threshold_mode="abs", patience=0)
    up.step(1.0)
    up.step(1.05)  # not better by the 0.1 threshold
    assert up.get_last_lr() == [0.1]
    with pytest.raises(ValueError, match=r"Factor should be < 1.0."):
        S.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match=r"mode sideways is unknown!"):
        S.ReduceLROnPlateau(_opt(), mode="sideways")


def test_sequential_and_chained():
    opt = _opt(1.0)
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=2)
    decay = S.ExponentialLR(opt, gamma=0.5)
    seq = S.SequentialLR(opt, [warm, decay], milestones=[3])
    _close(_lrs(seq, 6), [0.1, 0.55, 1.0, 1.0, 0.5, 0.25, 0.125])
    with pytest.raises(ValueError, match=r"expects number of schedulers provided to be one more than"):
        S.SequentialLR(opt, [S.StepLR(opt, 2)], milestones=[1])

    opt = _opt(1.0)
    chain = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, gamma=0.9)])
    _close(_lrs(chain, 4), [0.5, 0.45, 0.81, 0.729, 0.6561])
    with pytest.raises(ValueError, match=r"does not support `ReduceLROnPlateau`"):
        S.ChainedScheduler([S.ReduceLROnPlateau(opt)])


def test_state_dict_resume_and_errors():
    opt = _opt(1.0)
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    _lrs(sched, 3)
    saved = sched.state_dict()
    assert "optimizer" not in saved and saved["last_epoch"] == 3
    opt2 = _opt(1.0)
    sched2 = S.StepLR(opt2, step_size=7, gamma=0.9)
    sched2.load_state_dict(saved)
    assert sched2.step_size == 2 and sched2.base_lrs == [1.0]
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\]"):
        S.StepLR(_opt(), step_size=2, last_epoch=4)
    with pytest.raises(TypeError, match=r"list is not an Optimizer"):
        S.StepLR([], step_size=2)
    with pytest.raises(ValueError, match=r"Starting multiplicative factor expected to be greater than 0"):
        S.LinearLR(_opt(), start_factor=0)
    with pytest.raises(ValueError, match=r"Constant multiplicative factor expected to be between 0 and 1."):
        S.ConstantLR(_opt(), factor=2)

    class Halver:
        def __init__(self):
            self.k = 0.5

        def __call__(self, epoch):
            return self.k ** epoch

    fn = Halver()
    lam = S.LambdaLR(_opt(), fn)
    state = lam.state_dict()
    assert state["lr_lambdas"] == [{"k": 0.5}]
    fn.k = 0.1
    lam.load_state_dict(state)
    assert fn.k == 0.5
    assert S.LambdaLR(_opt(), lambda e: 1.0).state_dict()["lr_lambdas"] == [None]


def test_step_with_epoch_uses_the_closed_form():
    sched = S.StepLR(_opt(1.0), step_size=2, gamma=0.5)
    with pytest.warns(UserWarning, match=r"epoch parameter in `scheduler.step\(\)` was not necessary"):
        sched.step(5)
    assert sched.get_last_lr() == [0.25]
