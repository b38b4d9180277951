# SPDX-License-Identifier: Apache-2.0
"""The ``bucket_likelihood_ratio`` policy: a Neyman-Pearson test of the four bucket counts.

One of the two policies whose thresholds come from a false-alarm probability (the module
documentation of :mod:`.calibrated_policies` states their shared hypothesis, rules and
evidence); this one scores each outcome's bucket by its log likelihood ratio under a design
overconfidence and thresholds the window's score sum with the exact distribution of that sum
(:class:`_LikelihoodRatioTable`, built one window size at a time, up to
:data:`LIKELIHOOD_RATIO_MAX_HISTORY`).
"""

from dataclasses import dataclass
import functools
import math
import threading

from ..validation import (
    require_int,
    type_error,
    value_error,
)
from ..contracts import BeliefSelfAssessment
from .calibration_math import (
    bucket_probabilities,
    upper_tail_threshold,
)
from .types import CalibratedSelfAssessment, CalibrationHistory

from .calibrated_policies import (
    _check_inputs,
    _decide,
    _require_common,
)


SCORE_UNITS_PER_NAT = 2
"""Resolution of the integer bucket scores of BucketLikelihoodRatioPolicy (units per nat)."""


def bucket_log_likelihood_scores(
        dof: int, vectors: int, design_overconfidence: float) -> tuple[int, ...]:
    """Return the integer per-bucket scores of the bucket likelihood-ratio test.

    Score of bucket ``b``: ``round(SCORE_UNITS_PER_NAT * (log(P_b(k1) / P_b(1)) - log(P_1(k1) /
    P_1(1))))`` with ``P_b(k)`` the bucket probability when true errors are ``k`` times the
    claimed ones and ``k1 = design_overconfidence``. Subtracting the beyond_1 bucket's
    log-ratio (a constant per outcome, hence per window of fixed ``n``) makes its score 0.
    """
    calibrated: tuple[float, ...] = bucket_probabilities(dof, vectors)
    alternative: tuple[float, ...] = bucket_probabilities(dof, vectors, design_overconfidence)
    reference = math.log(alternative[1] / calibrated[1])
    return tuple(
        int(round(SCORE_UNITS_PER_NAT * (math.log(a / c) - reference)))
        for a, c in zip(alternative, calibrated))


LIKELIHOOD_RATIO_MAX_HISTORY = 512
"""The largest window ``bucket_likelihood_ratio`` judges (its ``MAX_HISTORY``).

Its thresholds come from an exact convolution whose cost grows with the square of the window:
the whole table to 512 builds in about 0.3-0.8 s here (to 2048 it took 6.3 s and stalled the
node), and one more row near 512 costs about 2 ms. ``LoopConfig`` refuses a larger
``max_history`` with this policy (``bench/policy_bounds_bench.py``).
"""

_NEGLIGIBLE_MASS = 1e-300
"""Probability masses below this are dropped from the convolution (far below any alpha >= 1e-9)."""


class _LikelihoodRatioTable:
    """Per-``n`` ``(s_significant, s_gross, P(S >= s_significant))``, extended one ``n`` at a time.

    The exact distribution of ``S`` for ``n`` outcomes is the convolution of the one for ``n - 1``
    with one outcome's scores; the table keeps the last distribution, so reaching ``n`` costs the
    rows not built yet, never a rebuild. Shared by equal policies (:func:`_likelihood_ratio_table`)
    and extended under a lock (the audit may judge from several threads).
    """

    def __init__(self, scores: tuple[int, ...], probabilities: tuple[float, ...], alpha: float,
                 alpha_gross: float) -> None:
        self._low = min(scores)
        self._width = max(scores) - self._low
        self._moves = [(value - self._low, prob)
                       for value, prob in zip(scores, probabilities) if prob > 0.0]
        self._alpha = alpha
        self._alpha_gross = alpha_gross
        self._pmf = [1.0]
        self._start = 0  # self._pmf[j] = P(S == n * low + start + j)
        self._rows: list[tuple[int, int, float]] = []
        self._lock = threading.Lock()
        self._append_row(0)

    def _append_row(self, n: int) -> None:
        offset = n * self._low + self._start
        s_significant, tail = upper_tail_threshold(offset, self._pmf, self._alpha)
        s_gross, _ = upper_tail_threshold(offset, self._pmf, self._alpha_gross)
        self._rows.append((s_significant, s_gross, tail))

    def row(self, n: int) -> tuple[int, int, float]:
        """Return the row of ``n`` (built, with the rows before it, if not yet)."""
        rows = self._rows
        if n < len(rows):
            return rows[n]
        with self._lock:
            while len(rows) <= n:
                pmf = self._pmf
                size = len(pmf)
                nxt = [0.0] * (size + self._width)
                for shift, prob in self._moves:
                    nxt[shift:shift + size] = [
                        mass + old * prob for mass, old in zip(nxt[shift:shift + size], pmf)]
                first, end = 0, len(nxt)
                while nxt[first] < _NEGLIGIBLE_MASS:
                    first += 1
                while nxt[end - 1] < _NEGLIGIBLE_MASS:
                    end -= 1
                self._pmf = nxt[first:end]
                self._start += first
                self._append_row(len(rows))
        return rows[n]


@functools.lru_cache(maxsize=64)
def _likelihood_ratio_table(
        scores: tuple[int, ...], probabilities: tuple[float, ...], alpha: float,
        alpha_gross: float) -> _LikelihoodRatioTable:
    """Return the (growing) table of these parameters, shared by equal policies."""
    return _LikelihoodRatioTable(scores, probabilities, alpha, alpha_gross)


class _LikelihoodRatioTables:
    """Instance attributes BucketLikelihoodRatioPolicy derives in ``__post_init__`` (not fields)."""

    _scores: tuple[int, ...]
    _probabilities: tuple[float, ...]
    _table: _LikelihoodRatioTable


@dataclass(frozen=True)
class BucketLikelihoodRatioPolicy(_LikelihoodRatioTables):
    """Downgrade on a Neyman-Pearson likelihood-ratio test of the four bucket counts.

    The most powerful test that a history can support for "errors are ``design_overconfidence``
    times the claimed ones" against "calibrated": the log-likelihood ratio of the bucket counts,
    ``S = sum_b score_b * count_b`` with integer scores from
    :func:`bucket_log_likelihood_scores` (resolution ``SCORE_UNITS_PER_NAT`` = 2 per nat; for the
    defaults the scores of within_1, beyond_1, beyond_3, beyond_5 are -3, 0, 5, 14). Unlike a
    count of exceedances it uses every bucket: outcomes within 1 std count against
    overconfidence and one beyond 5 weighs almost three beyond 3.

    The exact distribution of ``S`` under calibration is convolved for every window size ``n``;
    significant (one step, ``significant_miscalibration``) is ``S >= s(n)``, the smallest
    integer with ``P(S >= s(n)) <= false_alarm_probability``, and gross (two steps to UNKNOWN,
    ``gross_miscalibration``) the same with ``gross_false_alarm_probability``. An infinite worst
    distance is gross evidence (module docstring).

    Parameters: ``design_overconfidence`` (1.5, in ``(1, 10]``: the alternative the test is most
    powerful against), ``false_alarm_probability`` (0.002), ``gross_false_alarm_probability``
    (0.0001), ``min_outcomes`` (4), ``degrees_of_freedom`` (3), ``vectors_per_outcome`` (2),
    ``max_window`` (64: tables up to it at construction, extended one window size at a time
    beyond, shared by equal policies). Windows up to ``MAX_HISTORY`` (512) outcomes.

    False-alarm rate per window (exact convolution, calibrated estimator, defaults): for a full
    window of 32 a calibrated estimator is downgraded on 0.1602% of windows (the gross region is
    inside the significant one); at every ``n`` it is at most 0.2%.

    The bench shows it is not faster than :class:`CalibratedExceedancePolicy` (the buckets beyond
    3 and 5 carry nearly all the information a history has; ``docs/policies.md``). What it buys is
    tolerance to an isolated outlier: a single outcome beyond 5 std in a calibrated window scores
    14 against a threshold of 31 and changes nothing, where the exceedance policy goes to UNKNOWN.
    """

    design_overconfidence: float = 1.5
    false_alarm_probability: float = 0.002
    gross_false_alarm_probability: float = 0.0001
    min_outcomes: int = 4
    degrees_of_freedom: int = 3
    vectors_per_outcome: int = 2
    max_window: int = 64

    STATED_FULL_WINDOW_FALSE_ALARM_RATE = 0.001602
    """Exact downgrade probability of a calibrated estimator on a full window, defaults."""

    MAX_HISTORY = LIKELIHOOD_RATIO_MAX_HISTORY
    """The largest ``max_history`` it accepts (``LoopConfig.make`` refuses more)."""

    def __post_init__(self) -> None:
        owner = 'BucketLikelihoodRatioPolicy'
        design = self.design_overconfidence
        if isinstance(design, bool) or not isinstance(design, (int, float)):
            raise type_error(owner, 'design_overconfidence', 'a float in (1, 10]', design)
        design = float(design)
        if not 1.0 < design <= 10.0:
            raise value_error(owner, 'design_overconfidence', 'out_of_range',
                              f'must be in (1, 10], got {design!r}')
        object.__setattr__(self, 'design_overconfidence', design)
        _require_common(owner, self)
        scores = bucket_log_likelihood_scores(
            self.degrees_of_freedom, self.vectors_per_outcome, design)
        probabilities: tuple[float, ...] = bucket_probabilities(
            self.degrees_of_freedom, self.vectors_per_outcome)
        object.__setattr__(self, '_scores', scores)
        object.__setattr__(self, '_probabilities', probabilities)
        table = _likelihood_ratio_table(scores, probabilities, self.false_alarm_probability,
                                        self.gross_false_alarm_probability)
        table.row(self.max_window)
        object.__setattr__(self, '_table', table)

    def _row(self, n: int) -> tuple[int, int, float]:
        if n > self.MAX_HISTORY:
            raise ValueError(
                f'BucketLikelihoodRatioPolicy: a window of {n} outcomes is beyond the '
                f'{self.MAX_HISTORY} it tabulates (MAX_HISTORY)')
        return self._table.row(n)

    @property
    def policy_id(self) -> str:
        """Return ``bucket_likelihood_ratio``."""
        return 'bucket_likelihood_ratio'

    @property
    def scores(self) -> tuple[int, ...]:
        """Return the integer scores of the within_1, beyond_1, beyond_3 and beyond_5 buckets."""
        return self._scores

    def statistic(self, history: CalibrationHistory) -> int:
        """Return the integer log-likelihood-ratio statistic ``S`` of ``history``."""
        w0, w1, w3, w5 = self._scores
        return (w0 * history.count_within_1_std + w1 * history.count_beyond_1_std
                + w3 * history.count_beyond_3_std + w5 * history.count_beyond_5_std)

    def thresholds(self, n: int) -> tuple[int, int]:
        """Return ``(s_significant, s_gross)`` for a window of ``n`` outcomes."""
        n = require_int('BucketLikelihoodRatioPolicy', 'thresholds.n', n)
        return self._row(n)[:2]

    def calibrated_downgrade_probability(self, n: int) -> float:
        """Return the exact probability that a calibrated estimator is downgraded at ``n``."""
        n = require_int('BucketLikelihoodRatioPolicy', 'calibrated_downgrade_probability.n', n)
        return self._row(n)[2] if n >= self.min_outcomes else 0.0

    def _gross(self, n: int, history: CalibrationHistory) -> bool:
        return self.statistic(history) >= self._row(n)[1]

    def _significant(self, n: int, history: CalibrationHistory) -> bool:
        return self.statistic(history) >= self._row(n)[0]

    def adjust(
        self, raw: BeliefSelfAssessment, history: CalibrationHistory,
    ) -> CalibratedSelfAssessment:
        """Return ``raw`` adjusted by the likelihood-ratio test on ``history`` (class doc)."""
        _check_inputs('BucketLikelihoodRatioPolicy.adjust', raw, history)
        return _decide(self, raw, history, self._gross, self._significant)
