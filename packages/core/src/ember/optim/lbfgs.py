"""L-BFGS (torch.optim.LBFGS): limited-memory BFGS after minFunc, over all parameters flattened
into one vector, with an optional strong-Wolfe line search. step(closure) runs up to max_iter
iterations, re-evaluating the loss through the closure; the curvature history persists across
calls in the state of the first parameter."""

from __future__ import annotations

import math

from .. import _C
from ..autograd.grad_mode import enable_grad, no_grad
from .optimizer import Optimizer, _check

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """Minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped to
    ``bounds`` (default: the interval between the points); the interval's midpoint when the
    cubic has no real minimiser."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    # Written from the right-hand point (d1 and d2 are symmetric in the two points).
    (xa, ga), (xb, gb) = ((x1, g1), (x2, g2)) if x1 <= x2 else ((x2, g2), (x1, g1))
    t = xb - (xb - xa) * ((gb + d2 - d1) / (gb - ga + 2 * d2))
    return min(max(t, lo), hi)


def _strong_wolfe(evaluate, t: float, d, f: float, g, gtd: float, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9, max_ls: int = 25):
    """Line search along ``d`` from the current point (loss ``f``, flat gradient ``g``,
    directional derivative ``gtd``) for a step satisfying the strong Wolfe conditions: a
    bracketing phase that grows the step by cubic extrapolation, then a zoom phase that shrinks
    the bracket by cubic interpolation. ``evaluate(t)`` returns (loss, flat gradient) at step t.
    Returns (loss, gradient, step, evaluations)."""
    d_norm = float(d.abs().max().item())
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g.clone(), gtd
    done = False
    ls_iter = 0
    bracket = None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.clone(), gtd_new]]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = [[t, f_new, g_new, gtd_new]]
            done = True
            break
        if gtd_new >= 0:
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.clone(), gtd_new]]
            break
        # Extrapolate: a cubic step between 1.01 t - 0.01 t_prev and 10 t.
        t_next = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = [[0.0, f, g, gtd], [t, f_new, g_new, gtd_new]]

    # Zoom: keep a bracket [low, high] whose low end has the smaller loss.
    def ends():
        return (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)

    low, high = ends()
    insufficient = False
    while not done and ls_iter < max_ls:
        if abs(bracket[1][0] - bracket[0][0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0][0], bracket[0][1], bracket[0][3], bracket[1][0], bracket[1][1], bracket[1][3])
        # Keep the trial away from the ends: within 10% of the bracket counts as no progress, and
        # a second such trial (or one outside) is moved 10% inside.
        b_lo, b_hi = min(bracket[0][0], bracket[1][0]), max(bracket[0][0], bracket[1][0])
        margin = 0.1 * (b_hi - b_lo)
        if min(b_hi - t, t - b_lo) < margin:
            if insufficient or t >= b_hi or t <= b_lo:
                t = b_hi - margin if abs(t - b_hi) < abs(t - b_lo) else b_lo + margin
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket[low][1]:
            bracket[high] = [t, f_new, g_new.clone(), gtd_new]
            low, high = ends()
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = [t, f_new, g_new.clone(), gtd_new]
    t, f_new, g_new, _ = bracket[low]
    return f_new, g_new, t, evals


def _dot(a, b) -> float:
    return float(a.dot(b).item())


class LBFGS(Optimizer):
    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._params = self.param_groups[0]["params"]

    # ---- the parameters as one flat vector ----------------------------------------------------

    def _flat_grad(self):
        pieces = []
        for p in self._params:
            real = _C.view_as_real(p) if p.is_complex() else p
            if p.grad is None:
                pieces.append(_C.zeros([real.numel()], dtype=real.dtype))
            else:
                grad = _C.view_as_real(p.grad) if p.grad.is_complex() else p.grad
                pieces.append(grad.reshape(-1))
        return _C.cat(pieces, 0)

    def _add_to_params(self, step: float, direction) -> None:
        offset = 0
        for p in self._params:
            real = _C.view_as_real(p) if p.is_complex() else p
            n = real.numel()
            real.add_(direction[offset:offset + n].view_as(real), alpha=step)
            offset += n

    def _evaluate_at(self, closure, start, t: float, d):
        """Loss and flat gradient at start + t d; the parameters are put back to ``start``."""
        self._add_to_params(t, d)
        loss = float(closure())
        flat_grad = self._flat_grad()
        for p, saved in zip(self._params, start, strict=True):
            p.copy_(saved)
        return loss, flat_grad

    # ---- the algorithm ------------------------------------------------------------------------

    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations. ``closure`` must zero the gradients,
        compute the loss, call backward() and return the loss; returns the first loss."""
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        with no_grad():
            return self._run(closure)

    def _run(self, closure):
        def evaluate():
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(flat_grad.abs().max().item()) <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # Direction: steepest descent at the very first iteration, then the two-loop
            # recursion over the stored (y, s) pairs with initial Hessian y's / y'y.
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / _dot(y, y)
                q = -flat_grad
                alphas = [0.0] * len(old_dirs)
                for i in reversed(range(len(old_dirs))):
                    alphas[i] = _dot(old_stps[i], q) * ro[i]
                    q.add_(old_dirs[i], alpha=-alphas[i])
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    beta = _dot(old_dirs[i], r) * ro[i]
                    r.add_(old_stps[i], alpha=alphas[i] - beta)

            prev_flat_grad = flat_grad.clone()
            prev_loss = loss

            # Step length: scaled down at the very first iteration so the first step is at most lr.
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(flat_grad.abs().sum().item())) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = [p.clone() for p in self._params]

                def along(step, start=start, d=d):
                    return self._evaluate_at(evaluate, start, step, d)

                loss, flat_grad, t, ls_evals = _strong_wolfe(along, t, d, loss, flat_grad, gtd)
                self._add_to_params(t, d)
                opt_cond = float(flat_grad.abs().max().item()) <= tolerance_grad
            else:
                self._add_to_params(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # The last iteration's loss is evaluated by the next call instead.
                    loss = float(evaluate())
                    flat_grad = self._flat_grad()
                    opt_cond = float(flat_grad.abs().max().item()) <= tolerance_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if float((d * t).abs().max().item()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
