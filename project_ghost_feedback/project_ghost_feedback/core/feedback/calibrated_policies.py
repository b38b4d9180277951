# SPDX-License-Identifier: Apache-2.0
"""Adjustment policies whose thresholds are derived from a false-alarm probability.

This module holds ``calibrated_exceedance`` and what both share; ``bucket_likelihood_ratio`` is
:mod:`.likelihood_ratio_policy`.

Both policies implement :class:`CalibrationAdjustmentPolicy` beside the ADR-0026 reference policy
and see only what a :class:`CalibrationHistory` carries: the four bucket counts, the two worst
distances and ``outcomes_considered``. Their null hypothesis is a *calibrated* Gaussian estimator:
each vec3 error has the covariance the estimator claims, so ``d**2`` is chi-square with
``degrees_of_freedom`` and an outcome is bucketed by the worse of ``vectors_per_outcome``
independent distances (:mod:`.calibration_math`). Thresholds are the exact quantiles of the count
distributions under that hypothesis, for every window size ``n``, so *each test* fires on a
calibrated window of ``n`` outcomes with at most its configured probability. The downgrade
probability is the union of the tests: for CalibratedExceedancePolicy it exceeds
``false_alarm_probability`` (0.2976% against 0.2% for a full window of 32, exact trinomial sum)
and is bounded by the sum of its two probabilities; for BucketLikelihoodRatioPolicy the gross
region lies inside the significant one, so it is at most ``false_alarm_probability``. The exact
full-window rate is stated in each class docstring. Assumptions: independent outcomes, Gaussian
errors, 3 degrees of freedom per vec3 (``docs/policies.md`` for what breaking them does).

Both treat a worst distance of ``+inf`` as gross evidence (two steps down, to UNKNOWN) whatever the
counts and as soon as one outcome is considered: ``d = +inf`` means a nonzero error along a
direction in which the estimator claimed zero variance (or a singular covariance). A calibrated
estimator never produces it, so this rule adds nothing to the false-alarm rate.

Rules, in order: zero outcomes -> passthrough ``no_outcomes_yet``; an infinite worst distance ->
two steps, ``infinite_mahalanobis``; fewer than ``min_outcomes`` -> passthrough
``calibration_within_tolerance``; gross evidence -> two steps, ``gross_miscalibration``;
significant evidence -> one step, ``significant_miscalibration``; else passthrough
``calibration_within_tolerance``. Levels never go below UNKNOWN and are never raised.

Both are frozen dataclasses whose fields (all with defaults) are their parameters; derived tables
are computed once in ``__post_init__`` (a bounded memo keyed by the parameters makes equal
policies share them) so that :meth:`adjust` is a table look-up.
"""

from collections.abc import Callable
from dataclasses import dataclass
import functools
import math
from typing import Protocol

from ..validation import (
    require_instance,
    require_int,
    type_error,
    value_error,
)
from ..contracts import BeliefSelfAssessment
from .calibration_math import (
    binomial_threshold,
    bucket_probabilities,
    exceedance_alarm_probability,
)
from .reference_policy import REASON_CALIBRATION_WITHIN_TOLERANCE, REASON_NO_OUTCOMES_YET
from .types import CalibratedSelfAssessment, CalibrationHistory

REASON_SIGNIFICANT_MISCALIBRATION = 'significant_miscalibration'
REASON_GROSS_MISCALIBRATION = 'gross_miscalibration'
REASON_INFINITE_MAHALANOBIS = 'infinite_mahalanobis'

FULL_WINDOW = 32
"""The window size for which the docstrings state exact false-alarm rates (ADR max_history)."""

# Parameter bounds. A vec3 error has at most 3 degrees of freedom, and a PredictionOutcome carries
# two vec3s; beyond these the chi tails underflow (64 dof raised ZeroDivisionError). Tables are
# built at construction: max_window 256 builds in well under a second here (4096 took 74 s and
# blocked the node's data path); within these bounds the slowest build measured here is ~0.3 s.
MAX_DOF = 3
MAX_VECTORS = 2
MAX_WINDOW = 128
MIN_PROBABILITY = 1e-9

Grade = Callable[[int, CalibrationHistory], tuple[int, str]]
"""``grade(n, history) -> (steps down, reason)`` of :func:`decide_graded`."""

_Test = Callable[[int, CalibrationHistory], bool]


class CountTestPolicy(Protocol):
    """What :func:`decide_graded` reads of a policy: its id and ``min_outcomes``."""

    @property
    def policy_id(self) -> str:
        """Return the policy's taxonomy identifier."""
        ...

    @property
    def min_outcomes(self) -> int:
        """Return the number of outcomes below which no count test applies."""
        ...


class _CommonParameters(Protocol):
    """The parameters :func:`_require_common` validates (fields of a frozen dataclass)."""

    @property
    def false_alarm_probability(self) -> float:
        ...

    @property
    def gross_false_alarm_probability(self) -> float:
        ...

    @property
    def min_outcomes(self) -> int:
        ...

    @property
    def degrees_of_freedom(self) -> int:
        ...

    @property
    def vectors_per_outcome(self) -> int:
        ...

    @property
    def max_window(self) -> int:
        ...


def _require_probability(owner: str, field: str, value: object) -> float:
    """Return ``value`` as a float if it is a real number in ``[1e-9, 0.5]`` (not bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(owner, field, 'a float in [1e-9, 0.5]', value)
    value = float(value)
    if not MIN_PROBABILITY <= value <= 0.5:
        raise value_error(owner, field, 'out_of_range', f'must be in [1e-9, 0.5], got {value!r}')
    return value


def _require_common(owner: str, policy: _CommonParameters) -> None:
    """Validate the parameters both policies share; store the float ones as floats."""
    setattr_ = object.__setattr__
    setattr_(policy, 'false_alarm_probability', _require_probability(
        owner, 'false_alarm_probability', policy.false_alarm_probability))
    setattr_(policy, 'gross_false_alarm_probability', _require_probability(
        owner, 'gross_false_alarm_probability', policy.gross_false_alarm_probability))
    if policy.gross_false_alarm_probability > policy.false_alarm_probability:
        raise value_error(
            owner, 'gross_false_alarm_probability', 'out_of_range',
            f'must be <= false_alarm_probability ({policy.false_alarm_probability!r}), '
            f'got {policy.gross_false_alarm_probability!r}')
    require_int(owner, 'min_outcomes', policy.min_outcomes, minimum=1)
    require_int(owner, 'degrees_of_freedom', policy.degrees_of_freedom, minimum=1,
                maximum=MAX_DOF)
    require_int(owner, 'vectors_per_outcome', policy.vectors_per_outcome, minimum=1,
                maximum=MAX_VECTORS)
    require_int(owner, 'max_window', policy.max_window, minimum=1, maximum=MAX_WINDOW)


def _decide(policy: CountTestPolicy, raw: BeliefSelfAssessment, history: CalibrationHistory,
            gross: _Test, significant: _Test) -> CalibratedSelfAssessment:
    """Apply the shared rule order; ``gross``/``significant`` are callables of the history."""
    def grade(n: int, history: CalibrationHistory) -> tuple[int, str]:
        if gross(n, history):
            return 2, REASON_GROSS_MISCALIBRATION
        if significant(n, history):
            return 1, REASON_SIGNIFICANT_MISCALIBRATION
        return 0, REASON_CALIBRATION_WITHIN_TOLERANCE
    return decide_graded(policy, raw, history, grade)


def decide_graded(policy: CountTestPolicy, raw: BeliefSelfAssessment,
                  history: CalibrationHistory, grade: Grade) -> CalibratedSelfAssessment:
    """Apply the rule order shared by the count-based policies (module docstring).

    ``grade(n, history)`` returns ``(steps down, reason)`` once ``n >= policy.min_outcomes`` and
    every worst distance is finite; before that the empty, infinite and too-few rules apply.
    """
    level = raw.overall_level
    n = history.outcomes_considered
    if n == 0:
        reason = REASON_NO_OUTCOMES_YET
    elif (history.worst_position_mahalanobis == math.inf
          or history.worst_orientation_mahalanobis == math.inf):
        level = level.downgraded(2)
        reason = REASON_INFINITE_MAHALANOBIS
    elif n < policy.min_outcomes:
        reason = REASON_CALIBRATION_WITHIN_TOLERANCE
    else:
        steps, reason = grade(n, history)
        if steps:
            level = level.downgraded(steps)
    return CalibratedSelfAssessment(raw, history, level, policy.policy_id, reason)


def _check_inputs(owner: str, raw: object, history: object) -> None:
    if type(raw) is not BeliefSelfAssessment:
        require_instance(owner, 'raw', raw, BeliefSelfAssessment)
    if type(history) is not CalibrationHistory:
        require_instance(owner, 'history', history, CalibrationHistory)


@functools.lru_cache(maxsize=1024)
def _exceedance_thresholds(n: int, p_beyond_3: float, p_beyond_5: float, alpha: float,
                           alpha_gross: float) -> tuple[int, int]:
    """Return ``(k_significant, k_gross)`` for a window of ``n`` (``O(sqrt(n))`` time)."""
    return (binomial_threshold(n, p_beyond_3, alpha),
            binomial_threshold(n, p_beyond_5, alpha_gross))


@functools.lru_cache(maxsize=1024)
def _exceedance_row(n: int, p_beyond_3: float, p_beyond_5: float, alpha: float,
                    alpha_gross: float, min_outcomes: int) -> tuple[int, int, float]:
    """Return ``(k_significant, k_gross, P(downgrade | calibrated))`` for a window of ``n``.

    The rate is an exact trinomial sum, quadratic in ``k_significant``: for the tables and the
    documentation, never on the data path (:meth:`CalibratedExceedancePolicy.adjust` reads
    :func:`_exceedance_thresholds`).
    """
    k_significant, k_gross = _exceedance_thresholds(n, p_beyond_3, p_beyond_5, alpha,
                                                    alpha_gross)
    rate: float
    if n < min_outcomes:
        rate = 0.0
    else:
        rate = exceedance_alarm_probability(n, p_beyond_3, p_beyond_5, k_significant, k_gross)
    return k_significant, k_gross, rate


class _ExceedanceTables:
    """Instance attributes CalibratedExceedancePolicy derives in ``__post_init__`` (not fields)."""

    _p_beyond_3: float
    _p_beyond_5: float
    _significant_counts: tuple[int, ...]
    _gross_counts: tuple[int, ...]


@dataclass(frozen=True)
class CalibratedExceedancePolicy(_ExceedanceTables):
    """Downgrade on a statistically significant excess of outcomes beyond 3 and 5 std.

    For a window of ``n`` outcomes (``n = outcomes_considered``), with ``p3`` and ``p5`` the
    per-outcome probabilities that a calibrated estimator's worse distance exceeds 3 and 5
    (``p = 1 - (1 - P(chi_dof > t))**vectors_per_outcome``; 0.05769 and 3.088e-5 for the default
    3 dof and 2 vectors):

    - significant (one step, ``significant_miscalibration``): ``count_beyond_3_std +
      count_beyond_5_std >= k_s(n)``, the smallest ``k`` with ``P(Binomial(n, p3) >= k) <=
      false_alarm_probability``;
    - gross (two steps to UNKNOWN, ``gross_miscalibration``): ``count_beyond_5_std >= k_g(n)``,
      the smallest ``k`` with ``P(Binomial(n, p5) >= k) <= gross_false_alarm_probability``;
    - an infinite worst distance: two steps, ``infinite_mahalanobis`` (module docstring).

    Parameters: ``false_alarm_probability`` (0.002), ``gross_false_alarm_probability`` (0.001,
    must not exceed the former), ``min_outcomes`` (4: no count test below it),
    ``degrees_of_freedom`` (3), ``vectors_per_outcome`` (2: position and orientation),
    ``max_window`` (64: thresholds are tabulated up to it and computed on demand beyond).

    False-alarm rate per window (exact trinomial sum, calibrated estimator, defaults): for a full
    window of 32, ``k_s = 7`` and ``k_g = 1``, and a calibrated estimator is downgraded on
    0.2976% of windows (0.1996% from the significant test, 0.0988% from the gross one, less
    their overlap), the largest value for any ``n <= 64``; at every ``n`` it is at most 0.3%
    (the sum of the two probabilities), and above ``false_alarm_probability`` (0.2%) at 6 of the
    sizes ``n`` in 1..64. On a sliding window of 32 a calibrated estimator meets
    its first false downgrade after 3398 outcomes on average from an empty window (exact Markov
    chain on the ages of the beyond-3 outcomes, ``verification/arl_chain.py``; a 1e5-run Monte Carlo
    gives 3379 +- 11). For
    comparison, the reference policy fires on 55.84% of full windows under the same model.
    """

    false_alarm_probability: float = 0.002
    gross_false_alarm_probability: float = 0.001
    min_outcomes: int = 4
    degrees_of_freedom: int = 3
    vectors_per_outcome: int = 2
    max_window: int = 64

    STATED_FULL_WINDOW_FALSE_ALARM_RATE = 0.002976
    """Exact downgrade probability of a calibrated estimator on a full window, defaults."""

    def __post_init__(self) -> None:
        owner = 'CalibratedExceedancePolicy'
        _require_common(owner, self)
        probabilities: tuple[float, ...] = bucket_probabilities(
            self.degrees_of_freedom, self.vectors_per_outcome)
        p_beyond_5 = probabilities[3]
        p_beyond_3 = probabilities[2] + p_beyond_5
        setattr_ = object.__setattr__
        setattr_(self, '_p_beyond_3', p_beyond_3)
        setattr_(self, '_p_beyond_5', p_beyond_5)
        rows = [self._row(n) for n in range(self.max_window + 1)]
        setattr_(self, '_significant_counts', tuple(row[0] for row in rows))
        setattr_(self, '_gross_counts', tuple(row[1] for row in rows))

    def _row(self, n: int) -> tuple[int, int, float]:
        return _exceedance_row(
            n, self._p_beyond_3, self._p_beyond_5, self.false_alarm_probability,
            self.gross_false_alarm_probability, self.min_outcomes)

    @property
    def policy_id(self) -> str:
        """Return ``calibrated_exceedance``."""
        return 'calibrated_exceedance'

    @property
    def p_beyond_3(self) -> float:
        """Return the calibrated per-outcome probability of a worse distance beyond 3."""
        return self._p_beyond_3

    @property
    def p_beyond_5(self) -> float:
        """Return the calibrated per-outcome probability of a worse distance beyond 5."""
        return self._p_beyond_5

    def thresholds(self, n: int) -> tuple[int, int]:
        """Return ``(k_significant, k_gross)`` for a window of ``n`` outcomes (``n + 1``: never)."""
        n = require_int('CalibratedExceedancePolicy', 'thresholds.n', n)
        if n <= self.max_window:
            return self._significant_counts[n], self._gross_counts[n]
        return _exceedance_thresholds(n, self._p_beyond_3, self._p_beyond_5,
                                      self.false_alarm_probability,
                                      self.gross_false_alarm_probability)

    def calibrated_downgrade_probability(self, n: int) -> float:
        """Return the exact probability that a calibrated estimator is downgraded at ``n``."""
        n = require_int('CalibratedExceedancePolicy', 'calibrated_downgrade_probability.n', n)
        return self._row(n)[2]

    def _gross(self, n: int, history: CalibrationHistory) -> bool:
        k_gross = self._gross_counts[n] if n <= self.max_window else self.thresholds(n)[1]
        return history.count_beyond_5_std >= k_gross

    def _significant(self, n: int, history: CalibrationHistory) -> bool:
        k_significant = (self._significant_counts[n] if n <= self.max_window
                         else self.thresholds(n)[0])
        return history.count_beyond_3_std + history.count_beyond_5_std >= k_significant

    def adjust(
        self, raw: BeliefSelfAssessment, history: CalibrationHistory,
    ) -> CalibratedSelfAssessment:
        """Return ``raw`` adjusted by the exceedance tests on ``history`` (see the class doc)."""
        _check_inputs('CalibratedExceedancePolicy.adjust', raw, history)
        return _decide(self, raw, history, self._gross, self._significant)
