# SPDX-License-Identifier: Apache-2.0
"""A policy graded by *how* overconfident the estimator is.

:class:`OverconfidenceScalePolicy` models the true errors as ``k`` times the claimed ones (``k``:
the overconfidence factor; ``k = 1`` calibrated) and answers two questions about ``k`` from the
bucket counts of a :class:`CalibrationHistory`, each with an exact test:

- is ``k`` significantly above 1? (one step down, ``significant_overconfidence``): the exceedance
  test of :class:`CalibratedExceedancePolicy` on the same counts, with the same exact false-alarm
  rate (``B3 = count_beyond_3_std + count_beyond_5_std >= k_s(n)`` or ``count_beyond_5_std >=
  k_o(n)``, both binomial quantiles under calibration);
- is ``k`` confidently above ``gross_overconfidence``? (two steps, ``gross_overconfidence``): the
  exact one-sided lower confidence bound of ``k`` at level ``gross_confidence`` from the
  ``count_beyond_5_std`` count exceeds ``gross_overconfidence``. Since ``p5(k) = P(worse distance
  > 5 | k)`` increases with ``k``, the bound is ``p5^-1`` of the Clopper-Pearson lower bound of
  ``p5``, i.e. the rule is ``P(Binomial(n, p5(gross_overconfidence)) >= count_beyond_5_std) <=
  1 - gross_confidence``; its probability is at most ``1 - gross_confidence`` whenever the true
  ``k <= gross_overconfidence`` (exact, any ``n``).

So UNCERTAIN means "somewhat overconfident" and UNKNOWN "errors at least about
``gross_overconfidence`` times the claim", not a second significance test. Underconfidence (far
too many outcomes within 1 std: the claimed covariance is larger than the errors, e.g. an
over-tuned process noise) is reported as ``underconfident_calibration`` without raising the level:
``count_within_1_std >= u(n)``, the binomial quantile at ``underconfidence_probability``.

Rules, in order: zero outcomes -> ``no_outcomes_yet``; an infinite worst distance -> two steps,
``infinite_mahalanobis``; fewer than ``min_outcomes`` -> ``calibration_within_tolerance``; gross
-> two steps; significant -> one step; underconfident -> passthrough
``underconfident_calibration``; else ``calibration_within_tolerance``. The worst distances are
used only for the infinite rule (their information is not in the tests).

Assumptions behind every stated rate: independent outcomes, Gaussian errors, ``d**2`` chi-square
with ``degrees_of_freedom`` (3 per vec3) and ``vectors_per_outcome`` independent distances per
outcome. Under calibration with the defaults, on a full window of 32: a downgrade on 0.2976% of
windows (exact trinomial sum, the same test as calibrated_exceedance) and, from an empty sliding
window, the first false downgrade after 3398 outcomes on average (exact Markov chain,
``verification/arl_chain.py``); the grading table, the delays and the CUSUM limits are printed by
``bench/honesty_bench.py``, the effect of broken assumptions by ``bench/assumptions_bench.py``
(``docs/policies.md``).
"""

from dataclasses import dataclass
import functools

from ..validation import type_error, value_error
from ..contracts import BeliefSelfAssessment
from .calibrated_policies import (
    _check_inputs,
    _require_common,
    _require_probability,
    decide_graded,
    MAX_DOF,
    MAX_VECTORS,
    MAX_WINDOW,
    MIN_PROBABILITY,
)
from .calibration_math import (
    binomial_threshold,
    bucket_probabilities,
)
from .reference_policy import REASON_CALIBRATION_WITHIN_TOLERANCE
from .types import CalibratedSelfAssessment, CalibrationHistory

REASON_SIGNIFICANT_OVERCONFIDENCE = 'significant_overconfidence'
REASON_GROSS_OVERCONFIDENCE = 'gross_overconfidence'
REASON_UNDERCONFIDENT_CALIBRATION = 'underconfident_calibration'

_MAX_GROSS_OVERCONFIDENCE = 100.0


def _count_threshold(n: int, p: float, alpha: float) -> int:
    """Return the smallest ``k`` with ``P(Binomial(n, p) >= k) <= alpha`` (``n + 1``: never).

    Exact, for every ``p`` in ``[0, 1]`` (the degenerate ends included, where
    :func:`binomial_threshold` needs ``0 < p < 1``), in ``O(sqrt(n))`` time.
    """
    if p <= 0.0:
        return 1
    if p >= 1.0:
        return n + 1 if alpha < 1.0 else 0
    return binomial_threshold(n, p, alpha)


@functools.lru_cache(maxsize=4096)
def _graded_row(n: int, p_beyond_3: float, p_beyond_5: float, p_gross_5: float,
                p_within_1: float, alpha: float, alpha_outlier: float, gross_tail: float,
                under_alpha: float) -> tuple[int, int, int, int]:
    """Return ``(k_s, k_o, k_gross, k_under)`` thresholds for a window of ``n`` outcomes."""
    return (_count_threshold(n, p_beyond_3, alpha), _count_threshold(n, p_beyond_5, alpha_outlier),
            _count_threshold(n, p_gross_5, gross_tail),
            _count_threshold(n, p_within_1, under_alpha))


def _require_real(owner: str, field: str, value: object, low: float, high: float,
                  low_open: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(owner, field, f'a float in {"(" if low_open else "["}{low}, {high}]',
                         value)
    value = float(value)
    if not ((low < value if low_open else low <= value) and value <= high):
        raise value_error(owner, field, 'out_of_range',
                          f'must be in {"(" if low_open else "["}{low}, {high}], got {value!r}')
    return value


class _GradedTables:
    """Instance attributes OverconfidenceScalePolicy derives in ``__post_init__`` (not fields)."""

    _key: tuple[float, float, float, float, float, float, float, float]
    _rows: tuple[tuple[int, int, int, int], ...]


@dataclass(frozen=True)
class OverconfidenceScalePolicy(_GradedTables):
    """Grade the downgrade by the estimated overconfidence factor ``k`` (module docstring).

    Parameters (defaults; the node's ``overconfidence_scale.<field>`` parameters):
    ``false_alarm_probability`` (0.002, in (0, 0.5]: level of the beyond-3 count test),
    ``gross_false_alarm_probability`` (0.001, in (0, false_alarm_probability]: level of the
    beyond-5 outlier count test; both one step), ``gross_overconfidence`` (2.5, in (1, 100]: the
    factor above which the estimator is called UNKNOWN), ``gross_confidence`` (0.5, in
    [0.5, 0.999]: confidence of the lower bound of ``k`` that must exceed it),
    ``underconfidence_probability`` (0.001, in (0, 0.5]: level of the within-1 count test),
    ``min_outcomes`` (4), ``degrees_of_freedom`` (3, 1..3), ``vectors_per_outcome`` (2, 1..2),
    ``max_window`` (64, 1..128: tables up to it, computed on demand and memoized beyond).
    """

    false_alarm_probability: float = 0.002
    gross_false_alarm_probability: float = 0.001
    gross_overconfidence: float = 2.5
    gross_confidence: float = 0.5
    underconfidence_probability: float = 0.001
    min_outcomes: int = 4
    degrees_of_freedom: int = 3
    vectors_per_outcome: int = 2
    max_window: int = 64

    STATED_FULL_WINDOW_FALSE_ALARM_RATE = 0.002976
    """Exact downgrade probability of a calibrated estimator on a full window, defaults."""

    PARAMETER_RANGES = {
        'false_alarm_probability': ((MIN_PROBABILITY, 0.5), 'False-alarm probability per window '
                                    'of the beyond-3-std count test (one step down), in '
                                    '[1e-9, 0.5].'),
        'gross_false_alarm_probability': ((MIN_PROBABILITY, 0.5), 'False-alarm probability per '
                                          'window of the beyond-5-std outlier count test (one '
                                          'step down), in [1e-9, false_alarm_probability].'),
        'gross_overconfidence': ((1.0, _MAX_GROSS_OVERCONFIDENCE), 'Overconfidence factor k '
                                 '(true error / claimed) above which the level goes two steps '
                                 'down (UNKNOWN), in (1, 100].'),
        'gross_confidence': ((0.5, 0.999), 'Confidence of the exact lower bound of k that must '
                             'exceed gross_overconfidence, in [0.5, 0.999].'),
        'underconfidence_probability': ((MIN_PROBABILITY, 0.5), 'False-alarm probability of the '
                                        'underconfident_calibration reason (level kept), '
                                        'in (0, 0.5].'),
        'min_outcomes': ((1, 4096), 'No count test below this many outcomes, >= 1.'),
        'degrees_of_freedom': ((1, MAX_DOF), 'Dimension of each error vector (3 per vec3; 2 '
                               'for a planar robot), in 1..3.'),
        'vectors_per_outcome': ((1, MAX_VECTORS), 'Distances per outcome (2: position and '
                                'orientation), in 1..2.'),
        'max_window': ((1, MAX_WINDOW), 'Thresholds are tabulated at construction up to '
                       'this window size (computed on demand beyond), in 1..128.'),
    }
    """Field -> ((low, high), description) for the node's parameter descriptors."""

    def __post_init__(self) -> None:
        owner = 'OverconfidenceScalePolicy'
        _require_common(owner, self)
        setattr_ = object.__setattr__
        setattr_(self, 'gross_overconfidence', _require_real(
            owner, 'gross_overconfidence', self.gross_overconfidence, 1.0,
            _MAX_GROSS_OVERCONFIDENCE, True))
        setattr_(self, 'gross_confidence', _require_real(
            owner, 'gross_confidence', self.gross_confidence, 0.5, 0.999, False))
        setattr_(self, 'underconfidence_probability', _require_probability(
            owner, 'underconfidence_probability', self.underconfidence_probability))
        calibrated: tuple[float, ...] = bucket_probabilities(
            self.degrees_of_freedom, self.vectors_per_outcome)
        gross: tuple[float, ...] = bucket_probabilities(
            self.degrees_of_freedom, self.vectors_per_outcome, self.gross_overconfidence)
        setattr_(self, '_key', (
            calibrated[2] + calibrated[3], calibrated[3], gross[3], calibrated[0],
            self.false_alarm_probability, self.gross_false_alarm_probability,
            1.0 - self.gross_confidence, self.underconfidence_probability))
        setattr_(self, '_rows', tuple(self.thresholds(n) for n in range(self.max_window + 1)))

    @property
    def policy_id(self) -> str:
        """Return ``overconfidence_scale``."""
        return 'overconfidence_scale'

    def thresholds(self, n: int) -> tuple[int, int, int, int]:
        """Return ``(k_s, k_o, k_gross, k_under)`` for ``n`` outcomes (``n + 1``: never)."""
        rows: tuple[tuple[int, int, int, int], ...] | None = self.__dict__.get('_rows')
        if rows is not None and n <= self.max_window:
            return rows[n]
        return _graded_row(n, *self._key)

    def adjust(
        self, raw: BeliefSelfAssessment, history: CalibrationHistory,
    ) -> CalibratedSelfAssessment:
        """Return ``raw`` adjusted by the graded tests on ``history`` (see the class doc)."""
        _check_inputs('OverconfidenceScalePolicy.adjust', raw, history)
        return decide_graded(self, raw, history, self._grade)

    def _grade(self, n: int, history: CalibrationHistory) -> tuple[int, str]:
        k_s, k_o, k_gross, k_under = self.thresholds(n)
        b5 = history.count_beyond_5_std
        if b5 >= k_gross:
            return 2, REASON_GROSS_OVERCONFIDENCE
        if b5 >= k_o or history.count_beyond_3_std + b5 >= k_s:
            return 1, REASON_SIGNIFICANT_OVERCONFIDENCE
        if history.count_within_1_std >= k_under:
            return 0, REASON_UNDERCONFIDENT_CALIBRATION
        return 0, REASON_CALIBRATION_WITHIN_TOLERANCE
