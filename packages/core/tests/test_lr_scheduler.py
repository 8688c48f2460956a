"""ember.optim.lr_scheduler: each schedule's learning rates against the closed-form formulas of
PyTorch's documentation, computed independently here; state dicts; argument errors."""

import math
import warnings

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
        sched.optimizer.step()
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
    sched.optimizer.step()
    with pytest.warns(UserWarning, match=r"epoch parameter in `scheduler.step\(\)` was not necessary"):
        sched.step(5)
    assert sched.get_last_lr() == [0.25]


def test_polynomial():
    base, n, power = 0.5, 5, 2.0
    _close(_lrs(S.PolynomialLR(_opt(base), total_iters=n, power=power), 8),
           [base * (1 - min(t, n) / n) ** power for t in range(9)])
    # The example of PyTorch's documentation.
    _close(_lrs(S.PolynomialLR(_opt(0.001), total_iters=4, power=1.0), 5), [0.001, 0.00075, 0.0005, 0.00025, 0, 0])


@pytest.mark.parametrize("make, closed_form", [
    (lambda o: S.StepLR(o, step_size=3, gamma=0.5), lambda e: 0.5 ** (e // 3)),
    (lambda o: S.MultiStepLR(o, milestones=[4, 2, 4], gamma=0.5), lambda e: 0.5 ** ((e >= 2) + 2 * (e >= 4))),
    (lambda o: S.ExponentialLR(o, gamma=0.8), lambda e: 0.8 ** e),
    (lambda o: S.ConstantLR(o, factor=0.2, total_iters=4), lambda e: 0.2 if e < 4 else 1.0),
    (lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=4), lambda e: 0.25 + 0.5 * min(e, 4) / 4),
    (lambda o: S.PolynomialLR(o, total_iters=6, power=3), lambda e: (1 - min(e, 6) / 6) ** 3),
    (lambda o: S.CosineAnnealingLR(o, T_max=6, eta_min=0.1), lambda e: 0.1 + 0.9 * (1 + math.cos(math.pi * e / 6)) / 2),
], ids=["StepLR", "MultiStepLR", "ExponentialLR", "ConstantLR", "LinearLR", "PolynomialLR", "CosineAnnealingLR"])
def test_step_with_epoch_jumps_to_the_closed_form(make, closed_form):
    sched = make(_opt(1.0))
    sched.optimizer.step()
    for epoch in (7, 3, 0, 11, 5):
        with pytest.warns(UserWarning, match=r"The epoch parameter in `scheduler.step\(\)` was not necessary"):
            sched.step(epoch)
        assert sched.last_epoch == epoch
        _close(sched.get_last_lr(), [closed_form(epoch)])
        _close(sched.optimizer.param_groups[0]["lr"], closed_form(epoch))


def test_recursive_forms_compose_in_a_chain():
    # Chained multiplicative schedules multiply: cosine (eta_min 0) times exponential decay.
    opt = _opt(1.0)
    chain = S.ChainedScheduler([S.CosineAnnealingLR(opt, T_max=10), S.ExponentialLR(opt, gamma=0.9)])
    _close(_lrs(chain, 8), [(1 + math.cos(math.pi * t / 10)) / 2 * 0.9 ** t for t in range(9)])


def test_cosine_annealing_follows_an_outside_change():
    # The recursive form scales from the current lr, so halving lr mid-way halves the rest of the
    # curve above eta_min (PyTorch's documented behaviour).
    opt = _opt(1.0)
    sched = S.CosineAnnealingLR(opt, T_max=8)
    for _ in range(3):
        opt.step()
        sched.step()
    opt.param_groups[0]["lr"] *= 0.5
    got = [opt.param_groups[0]["lr"]]
    for _ in range(4):
        opt.step()
        sched.step()
        got.append(opt.param_groups[0]["lr"])
    _close(got, [0.5 * (1 + math.cos(math.pi * t / 8)) / 2 for t in range(3, 8)])


def test_warm_restarts_with_epochs_and_fractions():
    base, lo = 1.0, 0.1

    def at(t_cur, t_i):
        return lo + (base - lo) * (1 + math.cos(math.pi * t_cur / t_i)) / 2

    _close(_lrs(S.CosineAnnealingWarmRestarts(_opt(base), T_0=4, eta_min=lo), 9), [at(t % 4, 4) for t in range(10)])
    sched = S.CosineAnnealingWarmRestarts(_opt(base), T_0=2, T_mult=2, eta_min=lo)
    sched.optimizer.step()
    # Periods of 2, 4, 8 epochs start at 0, 2, 6: epoch 7.5 is 1.5 into the 8-epoch period.
    for epoch, (t_cur, t_i) in [(7.5, (1.5, 8)), (0.5, (0.5, 2)), (3.0, (1.0, 4)), (2, (0, 4))]:
        sched.step(epoch)
        assert (sched.T_cur, sched.T_i, sched.last_epoch) == (pytest.approx(t_cur), t_i, math.floor(epoch))
        _close(sched.get_last_lr(), [at(t_cur, t_i)])
    with pytest.raises(ValueError, match=r"^Expected non-negative epoch, but got -1$"):
        sched.step(-1)
    with pytest.raises(ValueError, match=r"^Expected float or int eta_min, but got x of type <class 'str'>$"):
        S.CosineAnnealingWarmRestarts(_opt(), T_0=2, eta_min="x")


def test_warnings_follow_pytorch(capsys):
    opt = _opt(1.0)
    sched = S.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        sched.step()
    opt = _opt(1.0)
    sched = S.ExponentialLR(opt, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
        sched.step()
    with pytest.warns(UserWarning, match=r"To get the last learning rate computed by the scheduler, please use "
                                         r"`get_last_lr\(\)`."):
        sched.get_lr()
    with pytest.warns(UserWarning, match=r"The verbose parameter is deprecated. Please use get_last_lr\(\) to access "
                                         r"the learning rate."):
        verbose = S.StepLR(_opt(0.1), step_size=1, verbose=True)
    assert capsys.readouterr().out == "Adjusting learning rate of group 0 to 1.0000e-01.\n"
    verbose.optimizer.step()
    verbose.step()
    assert capsys.readouterr().out == "Adjusting learning rate of group 0 to 1.0000e-02.\n"


def test_resume_with_last_epoch_and_initial_lr():
    opt = _opt(2.0)
    S.LambdaLR(opt, lambda e: 1.0)
    assert opt.param_groups[0]["initial_lr"] == 2.0
    opt.param_groups[0]["lr"] = 123.0
    resumed = S.LambdaLR(opt, lambda e: 0.5 ** e, last_epoch=4)
    assert resumed.last_epoch == 5 and resumed.base_lrs == [2.0]
    _close(resumed.get_last_lr(), [2.0 * 0.5 ** 5])


def test_custom_scheduler_through_the_old_base_name():
    class Halving(S._LRScheduler):
        def get_lr(self):
            return [base / 2 ** self.last_epoch for base in self.base_lrs]

    assert S._LRScheduler is S.LRScheduler
    _close(_lrs(Halving(_opt(1.0)), 3), [1.0, 0.5, 0.25, 0.125])


def test_cyclic_momentum_groups_custom_scale_and_state():
    opt = _opt(momentum=0.9)
    sched = S.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2, base_momentum=0.8, max_momentum=0.95)
    group = opt.param_groups[0]
    assert group["base_momentum"] == 0.8 and group["max_momentum"] == 0.95 and group["initial_lr"] == 0.1
    momenta = [group["momentum"]]
    for _ in range(6):
        opt.step()
        sched.step()
        momenta.append(group["momentum"])
    # The momentum moves opposite to the lr: max - (max - base) * (lr - base_lr) / (max_lr - base_lr).
    rise = [0, 0.5, 1, 0.5, 0, 0.5, 1]
    _close(momenta, [0.95 - 0.15 * r for r in rise])

    adam = _opt(cls=optim.Adam, betas=(0.5, 0.77))
    S.CyclicLR(adam, 0.1, 1.0, step_size_up=2)
    assert adam.param_groups[0]["betas"] == (0.9, 0.77)

    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, x):
            return self.rate ** x

    fn = Decay()
    custom = S.CyclicLR(_opt(momentum=0.9), 0.0, 1.0, step_size_up=1, scale_fn=fn, scale_mode="iterations")
    _close(_lrs(custom, 4), [0.0, 0.5 ** 1, 0.0, 0.5 ** 3, 0.0])
    state = custom.state_dict()
    assert state["_scale_fn_custom"] == {"rate": 0.5} and "_scale_fn_ref" not in state
    fn.rate = 0.9
    custom.load_state_dict(state)
    assert fn.rate == 0.5
    plain = S.CyclicLR(_opt(momentum=0.9), 0.1, 1.0, mode="triangular2")
    assert plain.state_dict()["_scale_fn_custom"] is None
    with pytest.raises(ValueError, match=r"^mode is invalid and scale_fn is None$"):
        S.CyclicLR(_opt(momentum=0.9), 0.1, 1.0, mode="sawtooth")
    with pytest.raises(ValueError, match=r"^base_lr must have the same length as optimizer.param_groups. base_lr has "
                                         r"2 values, param_groups has 1.$"):
        S.CyclicLR(_opt(momentum=0.9), [0.1, 0.2], 1.0)
    with pytest.raises(ValueError, match=r"^optimizer must support momentum or beta1 with `cycle_momentum` option "
                                         r"enabled$"):
        S.CyclicLR(_opt(cls=optim.Adagrad), 0.1, 1.0)


def test_one_cycle_momentum_and_arguments():
    opt = _opt(momentum=0.9)
    total, pct = 8, 0.25
    sched = S.OneCycleLR(opt, max_lr=2.0, total_steps=total, pct_start=pct, base_momentum=0.8, max_momentum=0.9)
    up_end, down_end = pct * total - 1, total - 1

    def cos(start, end, frac):
        return end + (start - end) / 2 * (math.cos(math.pi * frac) + 1)

    momenta = [opt.param_groups[0]["momentum"]]
    for _ in range(total - 1):
        opt.step()
        sched.step()
        momenta.append(opt.param_groups[0]["momentum"])
    _close(momenta, [cos(0.9, 0.8, t / up_end) if t <= up_end else cos(0.8, 0.9, (t - up_end) / (down_end - up_end))
                     for t in range(total)])
    group = opt.param_groups[0]
    assert (group["initial_lr"], group["max_lr"], group["min_lr"]) == (2.0 / 25, 2.0, 2.0 / 25 / 1e4)
    for kwargs, message in [
        (dict(total_steps=0), r"^Expected positive integer total_steps, but got 0$"),
        (dict(epochs=2, steps_per_epoch=-1), r"^Expected positive integer steps_per_epoch, but got -1$"),
        (dict(total_steps=5, pct_start=1.5), r"^Expected float between 0 and 1 pct_start, but got 1.5$"),
        (dict(total_steps=5, anneal_strategy="exp"), r"^anneal_strategy must be one of 'cos' or 'linear', instead "
                                                     r"got exp$"),
    ]:
        with pytest.raises(ValueError, match=message):
            S.OneCycleLR(_opt(momentum=0.9), max_lr=1.0, **kwargs)


def test_reduce_on_plateau_thresholds_eps_and_state():
    opt = optim.SGD([{"params": [nn.Parameter(ember.zeros(1))]}, {"params": [nn.Parameter(ember.zeros(1))],
                                                                   "lr": 0.5}], lr=1.0)
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=0, threshold=0.1, min_lr=[0.3, 0.0])
    sched.step(10.0)
    assert sched.best == 10.0
    sched.step(9.5)  # 9.5 is not below 10 * (1 - 0.1): a bad epoch, patience 0 -> reduce
    assert sched.get_last_lr() == [0.5, 0.25] and sched.best == 10.0
    sched.step(8.9)  # an improvement by more than 10%
    assert sched.get_last_lr() == [0.5, 0.25] and sched.best == 8.9
    sched.step(9.0)
    assert sched.get_last_lr() == [0.3, 0.125]  # floored at min_lr of group 0
    saved = sched.state_dict()
    assert "optimizer" not in saved and saved["best"] == 8.9 and saved["mode_worse"] == math.inf
    other = S.ReduceLROnPlateau(opt, mode="max")
    other.load_state_dict(saved)
    assert other.mode == "min" and other.best == 8.9 and other.min_lrs == [0.3, 0.0]
    # A reduction smaller than eps is skipped.
    tiny = _opt(1e-9)
    small = S.ReduceLROnPlateau(tiny, factor=0.5, patience=0, eps=1e-8)
    small.step(1.0)
    small.step(1.0)
    assert small.get_last_lr() == [1e-9]
    with pytest.warns(UserWarning, match=r"The epoch parameter in `scheduler.step\(\)` was not necessary"):
        small.step(1.0, epoch=7)
    assert small.last_epoch == 7
    with pytest.raises(ValueError, match=r"^expected 1 min_lrs, got 2$"):
        S.ReduceLROnPlateau(_opt(), min_lr=[0.1, 0.2])
    with pytest.raises(ValueError, match=r"^threshold mode percent is unknown!$"):
        S.ReduceLROnPlateau(_opt(), threshold_mode="percent")


def test_sequential_state_dict_resumes_and_members_checked():
    def build():
        opt = _opt(1.0)
        return S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, gamma=0.5),
                                    S.StepLR(opt, step_size=2, gamma=0.1)], milestones=[2, 4])

    whole = build()
    expected = _lrs(whole, 7)
    _close(expected, [0.5, 0.5, 1.0, 0.5, 1.0, 1.0, 0.1, 0.1])
    first = build()
    _lrs(first, 3)
    saved = first.state_dict()
    # Epoch 1 of the constant one; the exponential one restarted at 2 and stepped once; the last unstarted.
    assert [s["last_epoch"] for s in saved["_schedulers"]] == [1, 1, -1]
    resumed = build()
    resumed.load_state_dict(saved)
    resumed.optimizer.param_groups[0]["lr"] = first.optimizer.param_groups[0]["lr"]
    _close(_lrs(resumed, 4), expected[3:])
    opt, other = _opt(), _opt()
    with pytest.raises(ValueError, match=r"SequentialLR expects all schedulers to belong to the same optimizer"):
        S.SequentialLR(opt, [S.StepLR(other, 2)], milestones=[])
    with pytest.raises(ValueError, match=r"^SequentialLR expects at least one scheduler, but got no scheduler.$"):
        S.SequentialLR(opt, [], milestones=[])
    with pytest.raises(ValueError, match=r"^ChainedScheduler expects at least one scheduler to be chained, but got "
                                         r"no scheduler.$"):
        S.ChainedScheduler([])
