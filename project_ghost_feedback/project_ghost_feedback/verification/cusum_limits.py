# SPDX-License-Identifier: Apache-2.0
"""CUSUM limits: how fast a sequential test detects ``k``-fold overconfidence at a given ARL.

Bench helper (numpy). Page's CUSUM ``W_t = max(0, W_{t-1} + l_t)``, alarm at ``W_t >= h``, on the
per-outcome log-likelihood ratio ``l`` of "true errors ``k`` x the claim" against "calibrated":

- full information: both squared distances of an outcome, ``x = d_p**2 + d_o**2`` (chi-square
  with ``2 * dof`` = 6 under calibration, ``k**2`` times that after the change), so
  ``l = -2 dof ln k + x (1 - 1 / k**2) / 2``;
- bucket information: only the outcome's bucket (within_1, beyond_1, beyond_3, beyond_5 of the
  worse distance), ``l_b = ln(P_b(k) / P_b(1))``: the most a CalibrationHistory-style summary of
  one outcome can carry.

A CUSUM is optimal (Lorden; Moustakides 1986) among all detectors with the same in-control ARL,
so these are the limits for any policy that sees the same information. Run lengths are computed
by a Markov chain on a lattice (Brook & Evans 1972): the increment is rounded to multiples of
``delta = h / states`` and the chain on ``0 .. states - 1`` is solved exactly
(``numpy.linalg.solve`` for the ARL, forward propagation for the run-length distribution). The
discretisation error is reported by re-solving at twice the resolution, and a numpy Monte Carlo of
the continuous CUSUM checks the in-control ARL (:func:`monte_carlo_arl`).
"""

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


from project_ghost_feedback.core.feedback.calibration_math import (
    bucket_probabilities,
)

_FloatArray = NDArray[np.float64]

DOF = 3
VECTORS = 2


def _chi2_cdf_even(x: ArrayLike, dof: int) -> _FloatArray:
    """Return the chi-square CDF with an even ``dof`` at ``x`` (array), closed form."""
    values = np.maximum(np.asarray(x, dtype=float), 0.0)
    half = values / 2.0
    term = np.ones_like(half)
    total = np.ones_like(half)
    for i in range(1, dof // 2):
        term = term * half / i
        total = total + term
    return 1.0 - np.exp(-half) * total


def _full_increment_pmf(k: float, truth: float, delta: float, top: int
                        ) -> tuple[int, _FloatArray]:
    """Return (offset, pmf) of round(l / delta) for the full-information LLR, ``k > 1``."""
    dof = DOF * VECTORS
    a = -dof * math.log(k)
    c = (1.0 - 1.0 / k ** 2) / 2.0
    low = int(math.floor(a / delta)) - 1
    js = np.arange(low, top + 1)
    edges = np.append(js - 0.5, js[-1] + 0.5) * delta
    x = (edges - a) / c / truth ** 2
    cdf = _chi2_cdf_even(x, dof)
    pmf = np.diff(cdf)
    pmf[-1] += 1.0 - cdf[-1]  # everything beyond the top: an alarm from any state
    return low, pmf


def _bucket_increment_pmf(k: float, truth: float, delta: float, top: int
                          ) -> tuple[int, _FloatArray]:
    """Return (offset, pmf) of round(l_b / delta) for the bucket-information LLR."""
    alternative = bucket_probabilities(DOF, VECTORS, k)
    calibrated = bucket_probabilities(DOF, VECTORS)
    actual = bucket_probabilities(DOF, VECTORS, truth)
    steps = [int(round(math.log(a / c) / delta)) for a, c in zip(alternative, calibrated)]
    low = min(min(steps), 0)
    pmf = np.zeros(max(max(steps), top) - low + 1)
    for step, prob in zip(steps, actual):
        pmf[min(step, top) - low] += prob
    return low, pmf


def bucket_llr(k: float) -> tuple[float, ...]:
    """Return the per-bucket log-likelihood ratios ``ln(P_b(k) / P_b(1))`` (nats)."""
    return tuple(math.log(a / c) for a, c in zip(
        bucket_probabilities(DOF, VECTORS, k), bucket_probabilities(DOF, VECTORS)))


def _transition(kind: str, k: float, truth: float, h: float, states: int) -> _FloatArray:
    delta = h / states
    low, pmf = (_full_increment_pmf if kind == 'full' else _bucket_increment_pmf)(
        k, truth, delta, states)
    cdf = np.cumsum(pmf)
    i = np.arange(states)[:, None]
    j = np.arange(states)[None, :]
    step = j - i - low
    q = np.where((step >= 0) & (step < len(pmf)), pmf[np.clip(step, 0, len(pmf) - 1)], 0.0)
    # Into state 0: every increment <= -i (the CUSUM resets at 0).
    reset = -np.arange(states) - low
    q[:, 0] = np.where(reset >= 0, cdf[np.clip(reset, 0, len(cdf) - 1)], 0.0)
    return q


def arl(kind: str, k: float, truth: float, h: float, states: int = 1500) -> float:
    """Return the ARL from ``W = 0`` of the CUSUM (``kind`` 'full' or 'bucket') at threshold h."""
    q = _transition(kind, k, truth, h, states)
    return float(np.linalg.solve(np.eye(states) - q, np.ones(states))[0])


def run_length_quantile(kind: str, k: float, truth: float, h: float, quantile: float = 0.5,
                        states: int = 1500, max_steps: int = 100000) -> int:
    """Return the smallest ``t`` with ``P(T <= t) >= quantile`` from ``W = 0``."""
    q = _transition(kind, k, truth, h, states)
    p = np.zeros(states)
    p[0] = 1.0
    for t in range(1, max_steps + 1):
        p = p @ q
        if p.sum() <= 1.0 - quantile:
            return t
    raise RuntimeError('run length beyond max_steps')


def threshold_for_arl(kind: str, k: float, target: float, states: int = 1500) -> float:
    """Return the smallest ``h`` whose in-control ARL from 0 is ``>= target`` (bisection).

    The bucket CUSUM's ARL is a step function of ``h`` (four increments), so it may land above
    the target; at large ``k`` even ``h -> 0`` may exceed it (then ``h = 1e-3`` is returned and
    the detection delay is one outcome anyway).
    """
    low, high = 1e-3, 1.0
    if arl(kind, k, 1.0, low, states) >= target:
        return low
    while arl(kind, k, 1.0, high, states) < target:
        low, high = high, 2.0 * high
    for _ in range(40):
        mid = 0.5 * (low + high)
        if arl(kind, k, 1.0, mid, states) < target:
            low = mid
        else:
            high = mid
        if high - low < 1e-4:
            break
    return high


def monte_carlo_arl(kind: str, k: float, truth: float, h: float, runs: int, seed: int = 1,
                    max_steps: int = 2_000_000) -> tuple[float, float]:
    """Return (mean, standard error) of the continuous CUSUM's run length from 0 (numpy)."""
    rng = np.random.default_rng(seed)
    scores = np.array(bucket_llr(k))
    cumulative = np.cumsum(bucket_probabilities(DOF, VECTORS, truth))[:3]
    a = -DOF * VECTORS * math.log(k)
    c = (1.0 - 1.0 / k ** 2) / 2.0
    w = np.zeros(runs)
    ids = np.arange(runs)
    times = np.zeros(runs, dtype=np.int64)
    for t in range(1, max_steps + 1):
        if kind == 'full':
            x = truth ** 2 * rng.chisquare(DOF * VECTORS, len(ids))
            w = np.maximum(0.0, w + a + c * x)
        else:
            w = np.maximum(0.0, w + scores[np.searchsorted(cumulative, rng.random(len(ids)))])
        fired = w >= h
        if fired.any():
            times[ids[fired]] = t
            ids, w = ids[~fired], w[~fired]
            if not len(ids):
                break
    else:
        raise ValueError('some runs never alarmed')
    return float(times.mean()), float(times.std(ddof=1) / math.sqrt(runs))


def limits(k: float, target_arl: float, states: int = 1500) -> dict[str, dict[str, Any]]:
    """Return per kind: threshold, in-control ARL (and at 2x states), ARL1 and median delay."""
    result: dict[str, dict[str, Any]] = {}
    for kind in ('full', 'bucket'):
        h = threshold_for_arl(kind, k, target_arl, states)
        result[kind] = {
            'h': h,
            'arl0': arl(kind, k, 1.0, h, states),
            'arl0_fine': arl(kind, k, 1.0, h, 2 * states),
            'arl1': arl(kind, k, k, h, states),
            'arl1_fine': arl(kind, k, k, h, 2 * states),
            'median': run_length_quantile(kind, k, k, h, 0.5, states),
        }
    return result
