# SPDX-License-Identifier: Apache-2.0
"""Exact mean run length (ARL) to the first downgrade, and a vectorised first-passage Monte Carlo.

Bench helper (numpy, never imported by the pure core). Outcomes are i.i.d. with the four bucket
probabilities of :func:`bucket_probabilities` at a true/claimed scale ``overconfidence``
(1: calibrated, so the run length is the one to the first *false* downgrade); the window holds
the last ``window`` outcomes and starts empty.

Exact chain (:func:`exceedance_arl`), for a policy whose one-step rule is ``B3 + B5 >= k_s(n)``
or ``B5 >= k_o(n)`` with ``k_o(n) = 1`` for every ``min_outcomes <= n <= window``
(``calibrated_exceedance`` and ``overconfidence_scale``, defaults, window <= 32): any outcome
beyond 5 std fires as soon as ``n >= min_outcomes`` (one seen earlier is still in the window
then), so a surviving state is the set of ages of the outcomes beyond 3 std still in the window, a
``window``-bit mask with fewer than ``k_s`` bits set (``sum_{j < k} C(32, j)`` = 1 149 017 states
for ``k = 7``). The warm-up (``n < window``) is propagated forward exactly; on the full window the
expected remaining run ``h`` solves ``(I - Q) h = 1``. ``Q`` is a shift register with absorption:
``h = sum_{u < U} Q^u 1 + Q^U h``, and ``Q^U h = Q^U 1 / (1 - lambda)`` once ``Q^U 1`` is
proportional to the dominant eigenvector (``lambda`` its eigenvalue, the ratio of successive
iterates, which must agree over every state to ``ratio_tolerance``); the returned solution is then
*checked* against the linear system: ``max |1 + Q h - h| / max h`` is reported as ``residual``.
For small windows :func:`dense_exceedance_arl` solves the same system with ``numpy.linalg.solve``.

Monte Carlo (:func:`first_passage_monte_carlo`): any registered policy, decided by its own
``adjust()`` on every bucket-count vector of every window size (a lookup table built once), many
independent streams advanced together in numpy; returns mean and standard error of the first
downgrade time.
"""

from collections.abc import Callable, Iterator, Sequence
import math
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray


from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    CalibratedSelfAssessment,
    CalibrationAdjustmentPolicy,
    CalibrationHistory,
)
from project_ghost_feedback.core.feedback.calibration_math import (
    bucket_probabilities,
)

EXCEEDANCE_FORM = ('calibrated_exceedance', 'overconfidence_scale')
"""Policies whose one-step rule is ``B3 + B5 >= thresholds(n)[0]`` or ``B5 >= thresholds(n)[1]``."""

RAW = BeliefSelfAssessment(belief_stamp_sim_ns=0, overall_level=SelfAssessmentLevel.KNOWN)

_FloatArray = NDArray[np.float64]
_IntArray = NDArray[np.int64]
_Probabilities = tuple[float, float, float]


class ExceedancePolicy(Protocol):
    """What the exact chain reads of a policy of :data:`EXCEEDANCE_FORM`."""

    @property
    def degrees_of_freedom(self) -> int:
        """Return the degrees of freedom of one vec3's squared distance."""
        ...

    @property
    def vectors_per_outcome(self) -> int:
        """Return the vec3 distances per outcome."""
        ...

    @property
    def min_outcomes(self) -> int:
        """Return the number of outcomes below which no count test applies."""
        ...

    def thresholds(self, n: int) -> tuple[int, int]:
        """Return ``(k_s, k_o)`` of a window of ``n`` outcomes."""
        ...


def _outcome_probabilities(policy: ExceedancePolicy, overconfidence: float) -> _Probabilities:
    """Return (p not beyond 3, p in (3, 5], p beyond 5) for ``policy``'s distance model."""
    b = bucket_probabilities(policy.degrees_of_freedom, policy.vectors_per_outcome,
                             overconfidence)
    return b[0] + b[1], b[2], b[3]


def _exceedance_rule(policy: ExceedancePolicy, window: int) -> list[int]:
    """Return ``k_s[n]`` (n = 0..window) after checking that ``k_o(n) = 1`` where it applies."""
    if window < policy.min_outcomes:
        raise ValueError('the chain needs window >= min_outcomes')
    k_s = [policy.thresholds(n)[0] for n in range(window + 1)]
    for n in range(policy.min_outcomes, window + 1):
        if policy.thresholds(n)[1] != 1:
            raise NotImplementedError(f'k_o({n}) = {policy.thresholds(n)[1]}: the chain assumes 1')
    return k_s


def _masks(bits: int, below: int) -> _IntArray:
    """Return the sorted int64 masks of ``bits`` bits with fewer than ``below`` bits set."""
    levels = [np.zeros(1, dtype=np.int64)]
    highest = [np.full(1, -1, dtype=np.int64)]
    for _ in range(1, below):
        masks: list[_IntArray] = []
        tops: list[_IntArray] = []
        for b in range(bits):
            keep = highest[-1] < b
            masks.append(levels[-1][keep] | (1 << b))
            tops.append(np.full(int(keep.sum()), b, dtype=np.int64))
        levels.append(np.concatenate(masks))
        highest.append(np.concatenate(tops))
    return np.sort(np.concatenate(levels))


def _successors(masks: _IntArray, bits: int, k: int) -> list[_IntArray]:
    """Return index arrays of the successors on a non-B3 and on a (3, 5] outcome (-1: absorbed)."""
    full = (1 << bits) - 1
    out = []
    for bit in (0, 1):
        nxt = ((masks << 1) & full) | bit
        idx = np.searchsorted(masks, nxt)
        idx = np.minimum(idx, len(masks) - 1)
        ok = (masks[idx] == nxt) & (np.bitwise_count(nxt) < k)
        out.append(np.where(ok, idx, -1))
    return out


def _warm_up(policy: ExceedancePolicy, window: int, k_s: Sequence[int],
             probabilities: _Probabilities, masks: _IntArray) -> tuple[float, _FloatArray]:
    """Propagate the empty window ``window`` steps; return (sum_{t<window} S(t), distribution)."""
    p_low, p_mid, _ = probabilities
    minimum = policy.min_outcomes
    dist = np.zeros(len(masks))
    dist[0] = 1.0
    total = 1.0  # S(0)
    counts = np.bitwise_count(masks)
    for t in range(1, window + 1):
        shifted = masks << 1
        new = np.zeros(len(masks))
        for bit, prob in ((0, p_low), (1, p_mid)):
            nxt = shifted | bit
            idx = np.minimum(np.searchsorted(masks, nxt), len(masks) - 1)
            live = (masks[idx] == nxt) & (dist > 0.0)
            new += np.bincount(idx[live], prob * dist[live], minlength=len(masks))
        if t >= minimum:
            new[counts >= k_s[t]] = 0.0
        # Paths with an outcome beyond 5 std are dropped: they fire at t >= min_outcomes, and
        # before that S(t) = 1 counts them as alive (the correction below).
        dist = new
        if t < window:
            total += 1.0 if t < minimum else float(dist.sum())
    return total, dist


def _full_window_start(policy: ExceedancePolicy, window: int, overconfidence: float
                       ) -> tuple[_Probabilities, int, _IntArray, float, _FloatArray]:
    """Return (probabilities, k_full, full-window masks, sum_{t<window} S(t), their mass)."""
    k_s = _exceedance_rule(policy, window)
    k_full = k_s[window]
    k_max = max(max(k_s[policy.min_outcomes:window + 1]), min(policy.min_outcomes, window))
    probabilities = _outcome_probabilities(policy, overconfidence)
    masks = _masks(window, k_max)
    head, dist = _warm_up(policy, window, k_s, probabilities, masks)
    keep = np.bitwise_count(masks) < k_full
    return probabilities, k_full, masks[keep], head, dist[keep]


def exceedance_arl(policy: ExceedancePolicy, window: int = 32, overconfidence: float = 1.0,
                   max_iterations: int = 20000, ratio_tolerance: float = 1e-13
                   ) -> dict[str, Any]:
    """Return a dict with the exact ARL from an empty window (see the module docstring).

    Keys: ``arl``, ``states``, ``iterations``, ``eigenvalue`` (of the full-window chain),
    ``residual`` (relative max residual of ``(I - Q) h = 1``), ``full_window_arl`` (from the
    quasi-stationary full window, ``1 / (1 - eigenvalue)``).
    """
    probabilities, k_full, full, head, dist = _full_window_start(policy, window, overconfidence)
    p_low, p_mid, _ = probabilities
    s0, s1 = _successors(full, window, k_full)

    def apply_q(x: _FloatArray) -> _FloatArray:
        padded = np.append(x, 0.0)
        return p_low * padded[s0] + p_mid * padded[s1]

    term = np.ones(len(full))
    h = np.zeros(len(full))
    eigenvalue = None
    for iteration in range(1, max_iterations + 1):
        h += term
        nxt = apply_q(term)
        positive = term > 1e-300
        ratio = nxt[positive] / term[positive]
        term = nxt
        if iteration >= window and ratio.max() - ratio.min() <= ratio_tolerance:
            eigenvalue = float(np.median(ratio))
            break
    if eigenvalue is None:
        raise RuntimeError('the dominant mode did not separate; raise max_iterations')
    h += term / (1.0 - eigenvalue)
    residual = float(np.max(np.abs(1.0 + apply_q(h) - h)) / np.max(h))
    return {
        'arl': head + float(dist @ h), 'states': len(full), 'iterations': iteration,
        'eigenvalue': eigenvalue, 'residual': residual,
        'full_window_arl': 1.0 / (1.0 - eigenvalue),
    }


def dense_exceedance_arl(policy: ExceedancePolicy, window: int,
                         overconfidence: float = 1.0) -> float:
    """Return the same ARL by a dense ``numpy.linalg.solve`` (small windows only)."""
    probabilities, k_full, full, head, dist = _full_window_start(policy, window, overconfidence)
    if len(full) > 5000:
        raise ValueError('dense solve is for small windows')
    q = np.zeros((len(full), len(full)))
    for succ, prob in zip(_successors(full, window, k_full), probabilities[:2]):
        rows = np.nonzero(succ >= 0)[0]
        q[rows, succ[rows]] += prob
    h = np.linalg.solve(np.eye(len(full)) - q, np.ones(len(full)))
    return head + float(dist @ h)


def window_histories(n: int) -> Iterator[tuple[tuple[int, int, int], CalibrationHistory]]:
    """Yield ``((c1, c2, c3), history)`` for every bucket-count vector of a window of ``n``.

    The worst distances are representative of the highest non-empty bucket (policies use them
    only for the ``+inf`` rule).
    """
    for c3 in range(n + 1):
        for c2 in range(n + 1 - c3):
            for c1 in range(n + 1 - c3 - c2):
                worst = 6.0 if c3 else 4.0 if c2 else 2.0 if c1 else 0.5
                yield (c1, c2, c3), CalibrationHistory(
                    n, n - c1 - c2 - c3, c1, c2, c3, worst, worst, 1)


def decision_table(policy: CalibrationAdjustmentPolicy, window: int,
                   judge: Callable[[CalibratedSelfAssessment], bool] | None = None
                   ) -> NDArray[np.bool_]:
    """Return ``table[n, c1, c2, c3]``: ``judge(policy.adjust(...))`` of that window (bool).

    ``judge`` defaults to "was downgraded".
    """
    judge = judge or (lambda calibrated: calibrated.was_downgraded)
    size = window + 1
    table = np.zeros((size, size, size, size), dtype=bool)
    for n in range(1, size):
        for counts, history in window_histories(n):
            table[(n,) + counts] = judge(policy.adjust(RAW, history))
    return table


def first_passage_monte_carlo(policies: Sequence[CalibrationAdjustmentPolicy], runs: int,
                              window: int = 32, overconfidence: float = 1.0, seed: int = 1,
                              max_steps: int = 10_000_000
                              ) -> dict[str, tuple[float, float, int]]:
    """Return ``{policy_id: (mean, standard_error, runs)}`` of the first-downgrade time.

    All policies see the same ``runs`` independent streams (common random numbers), each from an
    empty window, until every policy has downgraded (or ``max_steps``: then a ValueError).
    """
    rng = np.random.default_rng(seed)
    models = {(getattr(p, 'degrees_of_freedom', 3), getattr(p, 'vectors_per_outcome', 2))
              for p in policies}
    if len(models) != 1:
        raise ValueError('all policies must share the distance model')
    (dof, vectors), = models
    cumulative = np.cumsum(bucket_probabilities(dof, vectors, overconfidence))[:3]
    tables = [decision_table(p, window).ravel() for p in policies]
    size = window + 1
    ring = np.zeros((runs, window), dtype=np.int8)
    counts = np.zeros((runs, 4), dtype=np.int16)
    run_ids = np.arange(runs)
    first = np.zeros((len(policies), runs), dtype=np.int64)
    alive = np.ones((len(policies), runs), dtype=bool)
    for t in range(1, max_steps + 1):
        if not len(run_ids):
            break
        bucket = np.searchsorted(cumulative, rng.random(len(run_ids))).astype(np.int8)
        slot = (t - 1) % window
        rows = np.arange(len(run_ids))
        if t > window:
            counts[rows, ring[:, slot]] -= 1
        ring[:, slot] = bucket
        counts[rows, bucket] += 1
        n = min(t, window)
        wide = counts.astype(np.int64)
        flat = ((n * size + wide[:, 1]) * size + wide[:, 2]) * size + wide[:, 3]
        for i, table in enumerate(tables):
            fired = table[flat] & alive[i, run_ids]
            first[i, run_ids[fired]] = t
            alive[i, run_ids[fired]] = False
        if t % 16 == 0 or len(run_ids) < 64:
            keep = alive[:, run_ids].any(axis=0)
            if not keep.all():
                run_ids, ring, counts = run_ids[keep], ring[keep], counts[keep]
    else:
        raise ValueError('some runs never downgraded within max_steps')
    result: dict[str, tuple[float, float, int]] = {}
    for policy, times in zip(policies, first):
        result[policy.policy_id] = (float(times.mean()),
                                    float(times.std(ddof=1) / math.sqrt(runs)), runs)
    return result
