# SPDX-License-Identifier: Apache-2.0
"""Graded policy v3: each vec3 graded on its squared distances, with hysteresis.

:class:`Vec3ScalePolicy` reads the window's squared (unsquared-Mahalanobis) distances per vec3
that a CalibrationHistory of schema 2 carries (``position_squared_distances``,
``orientation_squared_distances``, oldest first, ``+inf`` legal). Model: the true errors of a vec3
are ``k`` times the claimed ones, so ``x = d**2`` is ``k**2`` times a chi-square with
``degrees_of_freedom``. With ``x_p``, ``x_o`` the squared distances of an outcome:

- **one step** (UNCERTAIN; reason ``overconfident_position`` or ``overconfident_orientation``,
  the vec3 with the larger window sum): a window-limited CUSUM of the log-likelihood ratio of
  ``design_overconfidence`` (``k1``) against calibration, ``C = max(0, max over the window's
  suffixes of sum(a * (x_p + x_o) - b))``, ``a = (1 - 1 / k1**2) / 2``, ``b = 2 dof ln k1``,
  reaches ``significant_threshold``. It is stateless (a function of the window) and, within the
  window, equals Page's CUSUM restarted at the window's start, the detector that is fastest at
  a given mean run to a false alarm (``docs/policies.md``);
- **two steps** (UNKNOWN; ``grossly_overconfident_position`` / ``..._orientation``): the window
  sum ``S`` of one vec3 exceeds ``gross_overconfidence**2 * q(dof n, gross_confidence)`` (the exact
  lower confidence bound of that vec3's ``k`` from the chi-square law with ``dof * n`` degrees of
  freedom exceeds ``gross_overconfidence``: each vec3 on its own, so a position-only fault is not
  diluted by a calibrated orientation) and the calibrated vec3's chance of that sum,
  ``P(chi-square(dof n) > threshold)``, is at most ``gross_false_alarm_probability`` (the
  small-sample floor: the threshold is at least the ``1 - gross_false_alarm_probability``
  quantile, which binds at ``n`` <= 2 and keeps one or two outcomes after a reset from deciding
  UNKNOWN on a median-unbiased bound), or one outcome in the window has a distance beyond
  ``gross_distance`` (10: a calibrated Gaussian estimator gives one in about 1e21 outcomes);
- **hysteresis** (only through ``previous``, the assessment the feedback loop published last,
  :class:`~.protocols.HysteresisPolicy`): after UNKNOWN the level stays UNKNOWN while the larger
  vec3 sum exceeds ``gross_exit_overconfidence**2 * q(dof n, gross_confidence)``; after UNCERTAIN
  or UNKNOWN it stays at least UNCERTAIN while ``C > significant_exit_threshold`` or the joint
  window sum exceeds ``calibrated_overconfidence**2 * q(2 dof n, gross_confidence)``. The level
  of ``previous`` is read from its reason (so a raw level that changes does not matter) and only
  when ``previous`` came from this policy.

Rules, in order: zero outcomes -> ``no_outcomes_yet``; an infinite distance -> UNKNOWN,
``infinite_mahalanobis``; a schema-1 history (no squared distances) -> the answer of
:class:`~.graded_policy.OverconfidenceScalePolicy` with its defaults and this policy's
``degrees_of_freedom`` (level and reason, stateless; the fallback until every history is schema
2); two steps; one step; the joint window sum at or below its ``underconfidence_probability``
chi-square quantile -> passthrough ``underconfident_calibration``; else
``calibration_within_tolerance``.

``winsorize_distance`` (0: off) is the robust option for heavy-tailed errors: every distance is
capped at it before squaring, and the two-step and exit sums are compared with ``n`` times the
*capped* mean of a Gaussian vec3 at the factor concerned (point estimate, no confidence bound).
Capping can only lower the CUSUM, so the Gaussian false-alarm rate can only fall; it costs
detection speed and, at a low cap, the two-step grade (``docs/policies.md``).

The default thresholds were set numerically against graded policy v3's design targets with the
bench's vectorised mirror of this policy (``verification/vec3_sim.py``, how:
``docs/policies.md``); the figures ``bench/honesty_bench.py`` measures for them are in
``docs/policies.md``. Assumptions: independent outcomes, Gaussian errors,
``degrees_of_freedom`` per vec3, two vec3 per outcome.
"""

from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass
import functools
import math
from typing import TYPE_CHECKING

from ..validation import require_instance, type_error, value_error
from ..contracts import BeliefSelfAssessment, SelfAssessmentLevel
from .calibrated_policies import _check_inputs, MAX_DOF, MAX_WINDOW, REASON_INFINITE_MAHALANOBIS
from .chi_square import chi_square_quantile, chi_square_survival, chi_survival
from .graded_policy import OverconfidenceScalePolicy, REASON_UNDERCONFIDENT_CALIBRATION
from .reference_policy import REASON_CALIBRATION_WITHIN_TOLERANCE, REASON_NO_OUTCOMES_YET
from .types import CalibratedSelfAssessment, CalibrationHistory, HISTORY_SCHEMA_SQUARED_DISTANCES

REASON_OVERCONFIDENT_POSITION = 'overconfident_position'
REASON_OVERCONFIDENT_ORIENTATION = 'overconfident_orientation'
REASON_GROSSLY_OVERCONFIDENT_POSITION = 'grossly_overconfident_position'
REASON_GROSSLY_OVERCONFIDENT_ORIENTATION = 'grossly_overconfident_orientation'
REASON_BIASED_POSITION = 'biased_position'
REASON_BIASED_ORIENTATION = 'biased_orientation'
BIAS_REASONS = (REASON_BIASED_POSITION, REASON_BIASED_ORIENTATION)
BIAS_EXIT_FRACTION = 0.5
"""After a bias downgrade the level stays down while the evidence is above this fraction of
the bias threshold."""

_STEPS_OF_REASON = {
    REASON_OVERCONFIDENT_POSITION: 1,
    REASON_OVERCONFIDENT_ORIENTATION: 1,
    REASON_GROSSLY_OVERCONFIDENT_POSITION: 2,
    REASON_GROSSLY_OVERCONFIDENT_ORIENTATION: 2,
    REASON_INFINITE_MAHALANOBIS: 2,
}


def capped_mean(overconfidence: float, dof: int, cap_squared: float) -> float:
    """Return ``E[min(k**2 X, c)]``, ``X`` chi-square(``dof``), ``k = overconfidence``."""
    k2 = overconfidence * overconfidence
    t = cap_squared / k2
    # E[X; X <= t] = dof * P(chi-square(dof + 2) <= t)
    below = k2 * dof * (1.0 - chi_survival(math.sqrt(t), dof + 2))
    return below + cap_squared * chi_survival(math.sqrt(t), dof)


def _require_float(owner: str, field: str, value: object, low: float, high: float,
                   low_open: bool = False, zero_ok: bool = False) -> float:
    """Return ``value`` as a float in ``[low, high]`` (``(low, high]``; or exactly 0 if allowed)."""
    bounds = f'{"(" if low_open else "["}{low}, {high}]' + (' or 0 (off)' if zero_ok else '')
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(owner, field, f'a float in {bounds}', value)
    value = float(value)
    if zero_ok and value == 0.0:
        return value
    if not ((low < value if low_open else low <= value) and value <= high):
        raise value_error(owner, field, 'out_of_range', f'must be in {bounds}, got {value!r}')
    return value


DEFAULT_FALSE_ALARM_BUDGET_PER_DAY = 1.0
"""At most one false downgrade episode per 24 h of honest operation (``docs/policies.md``)."""
SECONDS_PER_DAY = 86_400
DEFAULT_BIAS_BUDGET_SHARE = 0.5
"""Share of the false-alarm budget spent by the bias channel (the one-step test keeps the
rest): ``docs/policies.md``, "A bias"."""
DEFAULT_BIAS_THRESHOLD_MARGIN = 1.0
"""Nats the bias threshold sits below Lorden's bound ``ln(ARL0)`` of its share: measured on the
honest rows of ``bench/whitening_bench.py --bias-tail`` (``docs/policies.md``, "The bias
channel's threshold")."""
MIN_OUTCOME_RATE_HZ = 0.01
MAX_OUTCOME_RATE_HZ = 1000.0


def budget_threshold(budget_per_day: float, rate_hz: float, margin: float = 0.0) -> float:
    """Return the threshold ``h = ln(ARL0) - margin`` for ``budget_per_day`` at ``rate_hz``.

    ``ARL0 = 86400 * rate_hz / budget_per_day`` outcomes between false alarms. For Page's CUSUM of
    a log-likelihood ratio the in-control run length is at least ``exp(h)`` (Lorden 1971), so
    ``h = ln(ARL0)`` keeps the false-alarm rate within the budget whatever ``design_overconfidence``
    and ``degrees_of_freedom``; the window limit only lengthens the run. For the defaults the exact
    run length is ``exp(h + 1.96)`` (``verification/cusum_limits.py``): about 7x the budget's,
    margin the hysteresis' restarts and the whitening's estimation error use (measured:
    ``bench/whitening_bench.py``). ``margin`` (nats): the bias channel's
    ``bias_threshold_margin``, where the bound is measured loose; 0 for the one-step test. Never
    below 0.1 nats.
    """
    return max(math.log(SECONDS_PER_DAY * rate_hz / budget_per_day) - margin, 0.1)


def quantized_rate(rate_hz: float | None) -> float:
    """Return ``rate_hz`` clamped to the range and rounded to 1/8 octave (None: the maximum)."""
    if rate_hz is None or not math.isfinite(rate_hz) or rate_hz <= 0.0:
        return MAX_OUTCOME_RATE_HZ
    rate = min(max(rate_hz, MIN_OUTCOME_RATE_HZ), MAX_OUTCOME_RATE_HZ)
    octaves = round(math.log2(rate) * 8.0) / 8.0
    return float(min(max(math.pow(2.0, octaves), MIN_OUTCOME_RATE_HZ), MAX_OUTCOME_RATE_HZ))


_Key = tuple[int, float, float, float, float, float, float, float]
"""(dof, gross, gross_exit, calibrated, confidence, under_p, cap, gross_alpha): what the
thresholds depend on."""

_Row = tuple[float, float, float, float]
"""Window-sum thresholds ``(gross_in, gross_out, joint_out, under)`` at one ``n``."""


@functools.lru_cache(maxsize=64)
def _threshold_table(key: _Key, max_n: int) -> tuple[_Row, ...]:
    """Return per-``n`` ``(gross_in, gross_out, joint_out, under)`` window-sum thresholds."""
    return tuple(_threshold_row(key, n) for n in range(max_n + 1))


@functools.lru_cache(maxsize=4096)
def _threshold_row(key: _Key, n: int) -> _Row:
    """Return the thresholds at one ``n``: a few quantiles, whatever ``n`` (no table to it)."""
    (dof, gross, gross_exit, calibrated, confidence, under_p, cap, gross_alpha) = key
    if n == 0:
        return (math.inf, math.inf, math.inf, -1.0)
    under = chi_square_quantile(under_p, 2 * dof * n)
    # Small-sample floor of the UNKNOWN window-sum test: a calibrated vec3's sum exceeds it
    # with probability gross_alpha (a capped sum, never above the uncapped one, with less).
    floor = chi_square_quantile(1.0 - gross_alpha, dof * n) if gross_alpha > 0.0 else 0.0
    if cap > 0.0:
        c2 = cap * cap
        return (max(n * capped_mean(gross, dof, c2), floor), n * capped_mean(gross_exit, dof, c2),
                2 * n * capped_mean(calibrated, dof, c2), -1.0)
    q = chi_square_quantile(confidence, dof * n)
    q_joint = chi_square_quantile(confidence, 2 * dof * n)
    return (max(gross * gross * q, floor), gross_exit * gross_exit * q,
            calibrated * calibrated * q_joint, under)


@dataclass(frozen=True)
class Vec3ScalePolicy:
    """Grade each vec3 by its squared distances, with hysteresis (module docstring).

    Parameters (defaults; the node's ``vec3_scale.<field>`` parameters): see ``PARAMETER_RANGES``.
    """

    HISTORY_SCHEMA = HISTORY_SCHEMA_SQUARED_DISTANCES
    """It reads the squared distances of a schema-2 history (ADR-0026a)."""

    design_overconfidence: float = 1.5
    significant_threshold: float = 7.5
    significant_exit_threshold: float = 1.5
    calibrated_overconfidence: float = 1.08
    gross_overconfidence: float = 2.4
    gross_exit_overconfidence: float = 1.9
    gross_confidence: float = 0.5
    gross_false_alarm_probability: float = 1e-6
    gross_reference_overconfidence: float = 2.1
    gross_design_overconfidence: float = 3.0
    gross_cusum_threshold: float = 6.0
    gross_distance: float = 10.0
    winsorize_distance: float = 0.0
    underconfidence_probability: float = 0.001
    degrees_of_freedom: int = 3
    max_window: int = 64
    false_alarm_budget_per_day: float = DEFAULT_FALSE_ALARM_BUDGET_PER_DAY
    outcome_rate_hz: float = 0.0
    bias_budget_share: float = DEFAULT_BIAS_BUDGET_SHARE
    bias_threshold_margin: float = DEFAULT_BIAS_THRESHOLD_MARGIN

    PARAMETER_RANGES = {
        'design_overconfidence': ((1.0, 10.0), 'Overconfidence factor k1 the one-step CUSUM is '
                                  'tuned to (log-likelihood ratio of k1 against 1), in (1, 10].'),
        'significant_threshold': ((0.0, 100.0), 'One step down when the window CUSUM reaches '
                                  'this many nats, in (0, 100].'),
        'significant_exit_threshold': ((0.0, 100.0), 'After a downgrade the level stays at '
                                       'least UNCERTAIN while the CUSUM is above this, in [0, '
                                       'significant_threshold].'),
        'calibrated_overconfidence': ((1.0, 10.0), '...or while the joint window estimate of k '
                                      'is above this, in [1, 10].'),
        'gross_overconfidence': ((1.0, 100.0), 'UNKNOWN when the lower confidence bound of one '
                                 "vec3's k exceeds this, in (1, 100]."),
        'gross_exit_overconfidence': ((1.0, 100.0), 'After UNKNOWN the level stays UNKNOWN while '
                                      "the larger vec3's bound exceeds this, in [1, "
                                      'gross_overconfidence].'),
        'gross_confidence': ((0.5, 0.999), 'Confidence of those bounds, in [0.5, 0.999].'),
        'gross_false_alarm_probability': ((0.0, 0.01), 'Small-sample floor of that UNKNOWN '
                                          'test: a calibrated vec3 passes its threshold with at '
                                          'most this probability at every window size (binds '
                                          'at 1-2 outcomes), in [1e-12, 0.01], or 0 (off: '
                                          'as configurations recorded before this floor replay).'),
        'gross_reference_overconfidence': ((1.0, 100.0), 'Null of the fast UNKNOWN CUSUM, in '
                                           '[1, 100].'),
        'gross_design_overconfidence': ((1.0, 100.0), 'Alternative of the fast UNKNOWN CUSUM '
                                        '(log-likelihood ratio of it against '
                                        'gross_reference_overconfidence), in (gross_reference_'
                                        'overconfidence, 100].'),
        'gross_cusum_threshold': ((0.0, 1000.0), 'UNKNOWN when that CUSUM reaches this many '
                                  'nats, in (0, 1000].'),
        'gross_distance': ((0.0, 1000.0), 'UNKNOWN while an outcome in the window has a '
                           'distance beyond this, in [3, 1000], or 0 (off).'),
        'winsorize_distance': ((0.0, 1000.0), 'Robust option: cap every distance at this before '
                               'squaring, in [1, 1000], or 0 (off).'),
        'underconfidence_probability': ((1e-9, 0.5), 'Level of the underconfident_calibration '
                                        'reason (level kept), in [1e-9, 0.5].'),
        'degrees_of_freedom': ((1, MAX_DOF), 'Dimension of each error vector (3 per vec3; 2 '
                               'for a planar robot), in 1..3.'),
        'max_window': ((1, MAX_WINDOW), 'Thresholds are tabulated at construction up to this '
                       'window size (computed on demand beyond), in 1..128.'),
        'false_alarm_budget_per_day': ((0.0, 1000.0), 'False downgrade episodes allowed per 24 h '
                                       'of honest operation: the one-step threshold follows from '
                                       'it and the outcome rate (replaces '
                                       'significant_threshold), in [1e-6, 1000], or 0 (off: '
                                       'significant_threshold as set).'),
        'outcome_rate_hz': ((0.0, MAX_OUTCOME_RATE_HZ), 'Outcome rate the budget is spent at: 0 '
                            "(measured by the feedback loop from the window's stamps) or a "
                            'fixed rate in [0.01, 1000] Hz.'),
        'bias_budget_share': ((0.0, 0.9), 'Share of false_alarm_budget_per_day spent by the bias '
                              "channel (the outcomes' bias_evidence_nats against ln(ARL0) of "
                              'that share; the one-step test keeps the rest), in [0.01, 0.9], or '
                              '0 (off: as configurations recorded before it replay). Needs a '
                              'budget.'),
        'bias_threshold_margin': ((0.0, 10.0), 'Nats the bias threshold sits below ln(ARL0) of '
                                  "its share (Lorden's bound, which the channel's measured false "
                                  'rate leaves far behind), in [0, 10]; 0: the bound itself, as '
                                  'configurations recorded before it replay.'),
    }
    """Field -> ((low, high), description) for the node's parameter descriptors."""

    if TYPE_CHECKING:  # set in __post_init__ (not dataclass fields at run time)
        _llr: tuple[float, float] = dataclasses.field(init=False)
        _gross_llr: tuple[float, float] = dataclasses.field(init=False)
        _key: _Key = dataclasses.field(init=False)
        _rows: tuple[_Row, ...] = dataclasses.field(init=False)
        _fallback: OverconfidenceScalePolicy = dataclasses.field(init=False)
        _h: float = dataclasses.field(init=False)
        _bias_h: float = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        owner = 'Vec3ScalePolicy'
        checked = {
            'design_overconfidence': _require_float(
                owner, 'design_overconfidence', self.design_overconfidence, 1.0, 10.0, True),
            'significant_threshold': _require_float(
                owner, 'significant_threshold', self.significant_threshold, 0.0, 100.0, True),
            'calibrated_overconfidence': _require_float(
                owner, 'calibrated_overconfidence', self.calibrated_overconfidence, 1.0, 10.0),
            'gross_overconfidence': _require_float(
                owner, 'gross_overconfidence', self.gross_overconfidence, 1.0, 100.0, True),
            'gross_confidence': _require_float(
                owner, 'gross_confidence', self.gross_confidence, 0.5, 0.999),
            'gross_false_alarm_probability': _require_float(
                owner, 'gross_false_alarm_probability', self.gross_false_alarm_probability,
                1e-12, 0.01, zero_ok=True),
            'gross_cusum_threshold': _require_float(
                owner, 'gross_cusum_threshold', self.gross_cusum_threshold, 0.0, 1000.0, True),
            'gross_distance': _require_float(
                owner, 'gross_distance', self.gross_distance, 3.0, 1000.0, zero_ok=True),
            'winsorize_distance': _require_float(
                owner, 'winsorize_distance', self.winsorize_distance, 1.0, 1000.0, zero_ok=True),
            'underconfidence_probability': _require_float(
                owner, 'underconfidence_probability', self.underconfidence_probability, 1e-9,
                0.5),
            'false_alarm_budget_per_day': _require_float(
                owner, 'false_alarm_budget_per_day', self.false_alarm_budget_per_day, 1e-6,
                1000.0, zero_ok=True),
            'outcome_rate_hz': _require_float(
                owner, 'outcome_rate_hz', self.outcome_rate_hz, MIN_OUTCOME_RATE_HZ,
                MAX_OUTCOME_RATE_HZ, zero_ok=True),
        }
        checked['bias_budget_share'] = _require_float(
            owner, 'bias_budget_share', self.bias_budget_share, 0.01, 0.9, zero_ok=True)
        checked['bias_threshold_margin'] = _require_float(
            owner, 'bias_threshold_margin', self.bias_threshold_margin, 0.0, 10.0)
        checked['significant_exit_threshold'] = _require_float(
            owner, 'significant_exit_threshold', self.significant_exit_threshold, 0.0,
            checked['significant_threshold'])
        checked['gross_exit_overconfidence'] = _require_float(
            owner, 'gross_exit_overconfidence', self.gross_exit_overconfidence, 1.0,
            checked['gross_overconfidence'])
        for field, (low, high) in (('degrees_of_freedom', (1, MAX_DOF)),
                                   ('max_window', (1, MAX_WINDOW))):
            value = getattr(self, field)
            if type(value) is not int:
                raise type_error(owner, field, f'an int in {low}..{high}', value)
            if not low <= value <= high:
                raise value_error(owner, field, 'out_of_range',
                                  f'must be in {low}..{high}, got {value!r}')
        checked['gross_reference_overconfidence'] = _require_float(
            owner, 'gross_reference_overconfidence', self.gross_reference_overconfidence, 1.0,
            100.0)
        checked['gross_design_overconfidence'] = _require_float(
            owner, 'gross_design_overconfidence', self.gross_design_overconfidence,
            checked['gross_reference_overconfidence'], 100.0, True)
        setattr_ = object.__setattr__
        for field, value in checked.items():
            setattr_(self, field, value)
        k1 = self.design_overconfidence
        setattr_(self, '_llr', ((1.0 - 1.0 / (k1 * k1)) / 2.0,
                                2.0 * self.degrees_of_freedom * math.log(k1)))
        ka = self.gross_reference_overconfidence
        kb = self.gross_design_overconfidence
        setattr_(self, '_gross_llr', ((1.0 / (ka * ka) - 1.0 / (kb * kb)) / 2.0,
                                      2.0 * self.degrees_of_freedom * math.log(kb / ka)))
        setattr_(self, '_key', (
            self.degrees_of_freedom, self.gross_overconfidence, self.gross_exit_overconfidence,
            self.calibrated_overconfidence, self.gross_confidence,
            self.underconfidence_probability, self.winsorize_distance,
            self.gross_false_alarm_probability))
        setattr_(self, '_rows', _threshold_table(self._key, self.max_window))
        setattr_(self, '_fallback', OverconfidenceScalePolicy(
            degrees_of_freedom=self.degrees_of_freedom))
        budget = self.false_alarm_budget_per_day
        rate = self.outcome_rate_hz or MAX_OUTCOME_RATE_HZ
        share = self.bias_budget_share if budget > 0.0 else 0.0
        setattr_(self, '_h', self.significant_threshold if budget == 0.0
                 else budget_threshold(budget * (1.0 - share), rate))
        setattr_(self, '_bias_h', budget_threshold(budget * share, rate,
                                                   self.bias_threshold_margin) if share > 0.0
                 else math.inf)

    @property
    def budgeted(self) -> bool:
        """Return True when the one-step threshold follows a false-alarm budget in time."""
        return self.false_alarm_budget_per_day > 0.0

    @property
    def threshold_in_use(self) -> float:
        """Return the one-step CUSUM threshold this policy object applies (nats)."""
        return self._h

    @property
    def bias_threshold(self) -> float:
        """Return the bias channel's threshold in nats (``inf`` when it is off)."""
        return self._bias_h

    def bias_step(self, evidence_nats: float, position_share: float,
                  previous: CalibratedSelfAssessment | None) -> str | None:
        """Return the bias reason when the newest outcome's bias evidence downgrades, or None.

        The evidence reaches :attr:`bias_threshold`, or, after a bias downgrade (``previous``'s
        reason, from this policy), stays above ``BIAS_EXIT_FRACTION`` of it. The reason names the
        vec3 that carries the larger part (``position_share`` >= 0.5: position).
        """
        h = self._bias_h
        if h == math.inf:
            return None
        held = (previous is not None and previous.adjustment_policy_id == self.policy_id
                and previous.adjustment_reason in BIAS_REASONS)
        if evidence_nats >= h or (held and evidence_nats > BIAS_EXIT_FRACTION * h):
            return REASON_BIASED_POSITION if position_share >= 0.5 else REASON_BIASED_ORIENTATION
        return None

    def at_rate(self, rate_hz: float | None) -> 'Vec3ScalePolicy':
        """Return this policy with its budget spent at the measured ``rate_hz`` (module doc).

        Self when no budget is set or a fixed ``outcome_rate_hz`` is; ``None`` (rate not measured
        yet) gives the most conservative rate. The rate is rounded to 1/8 octave (the threshold
        moves by at most 0.09 nats), so a steady stream reuses one object.
        """
        if not self.budgeted or self.outcome_rate_hz > 0.0:
            return self
        return _at_rate(self, quantized_rate(rate_hz))

    @property
    def policy_id(self) -> str:
        """Return ``vec3_scale``."""
        return 'vec3_scale'

    @property
    def llr_coefficients(self) -> tuple[float, float]:
        """Return ``(a, b)``: the CUSUM increment of an outcome is ``a * (x_p + x_o) - b``."""
        return self._llr

    @property
    def gross_llr_coefficients(self) -> tuple[float, float]:
        """Return ``(a, b)`` of the UNKNOWN CUSUM (the same form)."""
        return self._gross_llr

    def thresholds(self, n: int) -> _Row:
        """Return the window-sum thresholds ``(gross_in, gross_out, joint_out, under)`` at ``n``."""
        if n <= self.max_window:
            return self._rows[n]
        return _threshold_row(self._key, n)

    def calibrated_unknown_probability(self, n: int) -> float:
        """Return P(the window-sum UNKNOWN test fires on a calibrated window of ``n``).

        Exact for i.i.d. Gaussian errors without ``winsorize_distance`` (either vec3's sum of
        ``n`` chi-square(``dof``) draws above its threshold); with it, an upper bound (a capped
        sum is never above the uncapped one). Summed over ``n`` = 1..W it bounds the false
        UNKNOWN of that test from a reset (``docs/policies.md``).
        """
        if type(n) is not int or n < 1:
            raise ValueError(f'n must be an int >= 1, got {n!r}')
        one = chi_square_survival(self.thresholds(n)[0], self.degrees_of_freedom * n)
        return one * (2.0 - one)

    def calibrated_gross_distance_probability(self) -> float:
        """Return P(one calibrated Gaussian outcome has a distance beyond ``gross_distance``)."""
        if self.gross_distance == 0.0:
            return 0.0
        one = chi_survival(self.gross_distance, self.degrees_of_freedom)
        return one * (2.0 - one)

    def adjust(
            self, raw: BeliefSelfAssessment, history: CalibrationHistory,
    ) -> CalibratedSelfAssessment:
        """Return ``adjust_following(raw, history, None)`` (no hysteresis state)."""
        return self.adjust_following(raw, history, None)

    def adjust_following(
            self, raw: BeliefSelfAssessment, history: CalibrationHistory,
            previous: CalibratedSelfAssessment | None,
    ) -> CalibratedSelfAssessment:
        """Return ``raw`` graded on ``history``, with hysteresis from ``previous`` (module doc)."""
        _check_inputs('Vec3ScalePolicy.adjust_following', raw, history)
        if previous is not None and type(previous) is not CalibratedSelfAssessment:
            _check_previous(previous)
        steps, reason = self._grade(history, self._previous_steps(previous))
        level = raw.overall_level.downgraded(steps) if steps else raw.overall_level
        return CalibratedSelfAssessment(raw, history, level, self.policy_id, reason)

    def _previous_steps(self, previous: CalibratedSelfAssessment | None) -> int:
        if previous is None or previous.adjustment_policy_id != self.policy_id:
            return 0
        return _STEPS_OF_REASON.get(previous.adjustment_reason, 0)

    def _grade(self, history: CalibrationHistory, previous_steps: int) -> tuple[int, str]:
        n = history.outcomes_considered
        if n == 0:
            return 0, REASON_NO_OUTCOMES_YET
        if (history.worst_position_mahalanobis == math.inf
                or history.worst_orientation_mahalanobis == math.inf):
            return 2, REASON_INFINITE_MAHALANOBIS
        if history.schema_version != HISTORY_SCHEMA_SQUARED_DISTANCES:
            fallback = self._fallback.adjust(_RAW_KNOWN, history)
            return 2 - fallback.adjusted_overall_level.value, fallback.adjustment_reason
        # The history's own invariants hold one squared distance per outcome and vec3.
        xp: Sequence[float] = history.position_squared_distances
        xo: Sequence[float] = history.orientation_squared_distances
        if math.inf in xp or math.inf in xo:
            return 2, REASON_INFINITE_MAHALANOBIS
        cap = self.winsorize_distance
        gross_d2 = self.gross_distance * self.gross_distance
        gross = gross_d2 > 0.0 and (max(xp) > gross_d2 or max(xo) > gross_d2)
        if cap > 0.0:
            cap2 = cap * cap
            xp = [x if x < cap2 else cap2 for x in xp]
            xo = [x if x < cap2 else cap2 for x in xo]
        sp = math.fsum(xp)
        so = math.fsum(xo)
        gross_in, gross_out, joint_out, under = self.thresholds(n)
        block = sp if sp >= so else so
        worse = (REASON_GROSSLY_OVERCONFIDENT_POSITION if sp >= so
                 else REASON_GROSSLY_OVERCONFIDENT_ORIENTATION)
        if gross:
            reach = xp if max(xp) >= max(xo) else xo
            worse = (REASON_GROSSLY_OVERCONFIDENT_POSITION if reach is xp
                     else REASON_GROSSLY_OVERCONFIDENT_ORIENTATION)
            return 2, worse
        best, gross_best = _window_cusums(xp, xo, self._llr, self._gross_llr)
        if (block >= gross_in or gross_best >= self.gross_cusum_threshold
                or (previous_steps == 2 and block > gross_out)):
            return 2, worse
        joint = sp + so
        if best >= self._h or (previous_steps and (
                best > self.significant_exit_threshold or joint > joint_out)):
            return 1, (REASON_OVERCONFIDENT_POSITION if sp >= so
                       else REASON_OVERCONFIDENT_ORIENTATION)
        if joint <= under:
            return 0, REASON_UNDERCONFIDENT_CALIBRATION
        return 0, REASON_CALIBRATION_WITHIN_TOLERANCE


@functools.lru_cache(maxsize=256)
def _at_rate(policy: Vec3ScalePolicy, rate_hz: float) -> Vec3ScalePolicy:
    return dataclasses.replace(policy, outcome_rate_hz=rate_hz)


def _window_cusums(xp: Sequence[float], xo: Sequence[float], llr: tuple[float, float],
                   gross_llr: tuple[float, float]) -> tuple[float, float]:
    """Return both window CUSUMs: max(0, max over suffixes of the summed increments)."""
    a, b = llr
    ga, gb = gross_llr
    total = best = gross_total = gross_best = 0.0
    for p, o in zip(reversed(xp), reversed(xo)):
        x = p + o
        total += a * x - b
        gross_total += ga * x - gb
        if total > best:
            best = total
        if gross_total > gross_best:
            gross_best = gross_total
    return best, gross_best


def _check_previous(previous: object) -> None:
    require_instance('Vec3ScalePolicy.adjust_following', 'previous', previous,
                     CalibratedSelfAssessment)


_RAW_KNOWN = BeliefSelfAssessment(belief_stamp_sim_ns=0, overall_level=SelfAssessmentLevel.KNOWN)
