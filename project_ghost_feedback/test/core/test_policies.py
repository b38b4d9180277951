# SPDX-License-Identifier: Apache-2.0
"""Tests of the adjustment policies: protocol, purity, registry, and honest false-alarm rates.

The stated false-alarm rates are checked three ways: against an independent exact computation
(every bucket-count vector of a window is enumerated, the policy is asked for its decision, and
the multinomial probabilities of the downgrading ones are summed, with bucket probabilities from
an independent incomplete-gamma series), against the policy's own exact figure, and against a
seeded Monte Carlo run of the simulator within Monte Carlo error.
"""

import math
import random
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    bucket_of_distance,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    assess_with_feedback,
    BucketLikelihoodRatioPolicy,
    CalibratedExceedancePolicy,
    CalibratedSelfAssessment,
    CalibrationAdjustmentPolicy,
    CalibrationHistory,
    MahalanobisDowngradePolicy,
    make_policy,
    POLICIES,
    policy_parameters,
    REASON_CALIBRATION_WITHIN_TOLERANCE,
    REASON_GROSS_MISCALIBRATION,
    REASON_INFINITE_MAHALANOBIS,
    REASON_NO_OUTCOMES_YET,
    REASON_SIGNIFICANT_MISCALIBRATION,
)
from project_ghost_feedback.core.feedback.calibration_math import (
    binomial_thresholds,
    bucket_probabilities,
)
from project_ghost_feedback.core.feedback.chi_square import chi_survival
from project_ghost_feedback.sim import OutcomeModel

KNOWN = SelfAssessmentLevel.KNOWN
UNCERTAIN = SelfAssessmentLevel.UNCERTAIN
UNKNOWN = SelfAssessmentLevel.UNKNOWN
RAW = BeliefSelfAssessment(belief_stamp_sim_ns=1, overall_level=KNOWN)
NEW_POLICIES = (CalibratedExceedancePolicy, BucketLikelihoodRatioPolicy)
ALL_POLICIES = (MahalanobisDowngradePolicy,) + NEW_POLICIES


# --- independent reference computations -----------------------------------------------------------

def _chi_square_cdf(x, dof):
    """Regularized lower incomplete gamma P(dof/2, x/2) by its power series (independent check)."""
    if x <= 0.0:
        return 0.0
    s = dof / 2.0
    z = x / 2.0
    term = math.exp(s * math.log(z) - z - math.lgamma(s + 1.0))
    total = term
    k = 1
    while term > 1e-18 * total:
        term *= z / (s + k)
        total += term
        k += 1
    return total


def _bucket_probabilities(vectors, dof=3):
    """Per-outcome bucket probabilities for the max of `vectors` independent chi(dof) distances."""
    cdf = [_chi_square_cdf(t * t, dof) ** vectors for t in (1.0, 3.0, 5.0)]
    return (cdf[0], cdf[1] - cdf[0], cdf[2] - cdf[1], 1.0 - cdf[2])


def _history(counts, stamp=0):
    """Return a CalibrationHistory with these bucket counts and worsts consistent with them."""
    c0, c1, c2, c3 = counts
    worst = 6.0 if c3 else 4.0 if c2 else 2.0 if c1 else 0.5
    n = c0 + c1 + c2 + c3
    if n == 0:
        return CalibrationHistory.empty()
    return CalibrationHistory(n, c0, c1, c2, c3, worst, worst, stamp)


def _exact_downgrade_probability(policy, n, probabilities):
    """Sum the multinomial probability of every count vector that ``policy`` downgrades."""
    logs = [math.log(p) for p in probabilities]
    log_n_fact = math.lgamma(n + 1)
    total = 0.0
    for c3 in range(n + 1):
        for c2 in range(n + 1 - c3):
            for c0 in range(n + 1 - c3 - c2):
                c1 = n - c0 - c2 - c3
                counts = (c0, c1, c2, c3)
                if policy.adjust(RAW, _history(counts)).was_downgraded:
                    log_p = log_n_fact + sum(
                        c * lp - math.lgamma(c + 1) for c, lp in zip(counts, logs))
                    total += math.exp(log_p)
    return total


# --- the statistical building blocks --------------------------------------------------------------

@pytest.mark.parametrize('dof', [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize('t', [0.3, 1.0, 2.5, 3.0, 5.0, 7.0])
def test_chi_survival_matches_incomplete_gamma(dof, t):
    """The chi survival equals 1 - P(dof/2, t^2/2) from an independent series."""
    expected = 1.0 - _chi_square_cdf(t * t, dof)
    # 1 - P loses absolute precision ~1e-15 in the far tail; scipy checks it in relative terms.
    assert chi_survival(t, dof) == pytest.approx(expected, rel=1e-8, abs=1e-13)


def test_chi_survival_three_dof_closed_form():
    """For 3 dof: erfc(t/sqrt2) + sqrt(2/pi) t exp(-t^2/2); P(d>3) = 0.0293, P(d>5) = 1.54e-5."""
    for t in (0.5, 1.0, 3.0, 5.0):
        closed = math.erfc(t / math.sqrt(2)) + math.sqrt(2 / math.pi) * t * math.exp(-t * t / 2)
        assert chi_survival(t, 3) == pytest.approx(closed, rel=1e-14)
    assert chi_survival(3.0, 3) == pytest.approx(0.029291, abs=1e-6)
    assert chi_survival(5.0, 3) == pytest.approx(1.5440e-5, rel=1e-4)
    assert chi_survival(math.inf, 3) == 0.0
    assert chi_survival(0.0, 3) == 1.0


def test_chi_survival_against_scipy():
    """Cross-check with scipy where it is installed (skipped otherwise)."""
    stats = pytest.importorskip('scipy.stats')
    for dof in (1, 3, 6, 9):
        for t in (0.5, 2.0, 5.0, 9.0):
            assert chi_survival(t, dof) == pytest.approx(stats.chi2.sf(t * t, dof), rel=1e-10)


@pytest.mark.parametrize('vectors', [1, 2])
def test_bucket_probabilities_independent(vectors):
    """Calibrated bucket probabilities match the independent series (max of 1 or 2 vec3)."""
    ours = bucket_probabilities(3, vectors)
    theirs = _bucket_probabilities(vectors)
    assert sum(ours) == pytest.approx(1.0, abs=1e-14)
    for a, b in zip(ours, theirs):
        assert a == pytest.approx(b, rel=1e-7)
    p_vec3 = chi_survival(3.0, 3)
    assert ours[2] + ours[3] == pytest.approx(1 - (1 - p_vec3) ** vectors, rel=1e-12)


def test_binomial_thresholds_are_the_smallest_rare_counts():
    """t[n] is the smallest k with P(X >= k) <= alpha, checked with exact rational arithmetic."""
    p = 0.0577
    alpha = 0.002
    thresholds = binomial_thresholds(40, p, alpha)
    for n, k in enumerate(thresholds):
        def tail(j, n=n):
            return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(j, n + 1))
        assert tail(k) <= alpha
        if k > 0:
            assert tail(k - 1) > alpha


# --- the reference policy's own numbers (documented, not changed) ---------------------------------

def test_reference_policy_false_alarm_rate_one_vec3():
    """">= 2 of 32 beyond 3 std" fires on 24.08% of full windows with one calibrated vec3."""
    rate = _exact_downgrade_probability(MahalanobisDowngradePolicy(), 32, _bucket_probabilities(1))
    p = chi_survival(3.0, 3)
    assert rate == pytest.approx(1 - (1 - p) ** 32 - 32 * p * (1 - p) ** 31, rel=1e-9)
    assert rate == pytest.approx(0.24082, abs=5e-6)


def test_reference_policy_false_alarm_rate_two_vec3():
    """With the worse of two vec3 deciding the bucket it fires on 55.84% of full windows."""
    rate = _exact_downgrade_probability(MahalanobisDowngradePolicy(), 32, _bucket_probabilities(2))
    assert rate == pytest.approx(0.55839, abs=5e-6)


# --- protocol, purity, registry -------------------------------------------------------------------

@pytest.mark.parametrize('cls', ALL_POLICIES)
def test_protocol_conformance_and_registry_name(cls):
    """Every policy implements the protocol and is registered under its own policy_id."""
    policy = cls()
    assert isinstance(policy, CalibrationAdjustmentPolicy)
    assert POLICIES[policy.policy_id] is cls
    result = policy.adjust(RAW, _history((1, 30, 1, 0), stamp=5))
    assert isinstance(result, CalibratedSelfAssessment)
    assert result.adjustment_policy_id == policy.policy_id
    assert result.raw_assessment is RAW


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_registry_parameters_and_make_policy(cls):
    """policy_parameters lists exactly the init fields; make_policy applies and validates them."""
    name = cls().policy_id
    parameters = policy_parameters(name)
    assert set(parameters) == {
        'false_alarm_probability', 'gross_false_alarm_probability', 'min_outcomes',
        'degrees_of_freedom', 'vectors_per_outcome', 'max_window',
    } | ({'design_overconfidence'} if cls is BucketLikelihoodRatioPolicy else set())
    assert make_policy(name) == cls()
    custom = make_policy(name, {'false_alarm_probability': 0.01, 'min_outcomes': 8})
    assert custom.false_alarm_probability == 0.01 and custom.min_outcomes == 8
    assert make_policy(name, {'false_alarm_probability': 1 / 64}) == cls(
        false_alarm_probability=0.015625)
    with pytest.raises(ValueError, match='no_such_field'):
        make_policy(name, {'no_such_field': 1})


@pytest.mark.parametrize('cls', NEW_POLICIES)
@pytest.mark.parametrize('parameters, error', [
    ({'false_alarm_probability': 0.0}, ValueError),
    ({'false_alarm_probability': 0.6}, ValueError),
    ({'false_alarm_probability': math.nan}, ValueError),
    ({'false_alarm_probability': '0.01'}, TypeError),
    ({'false_alarm_probability': True}, TypeError),
    ({'gross_false_alarm_probability': 0.01}, ValueError),  # above false_alarm_probability
    ({'gross_false_alarm_probability': -1e-3}, ValueError),
    ({'min_outcomes': 0}, ValueError),
    ({'min_outcomes': 2.0}, TypeError),
    ({'degrees_of_freedom': 0}, ValueError),
    ({'degrees_of_freedom': 100}, ValueError),
    ({'vectors_per_outcome': 0}, ValueError),
    ({'max_window': 0}, ValueError),
    ({'max_window': True}, TypeError),
])
def test_invalid_parameters_are_rejected(cls, parameters, error):
    """Every parameter is validated, with the offending field in the message."""
    with pytest.raises(error, match=next(iter(parameters))):
        make_policy(cls().policy_id, parameters)


@pytest.mark.parametrize('value, error', [(1.0, ValueError), (12.0, ValueError),
                                          (None, TypeError), (False, TypeError)])
def test_design_overconfidence_is_validated(value, error):
    """The likelihood-ratio alternative must be a factor in (1, 10]."""
    with pytest.raises(error, match='design_overconfidence'):
        BucketLikelihoodRatioPolicy(design_overconfidence=value)


_counts = st.lists(st.integers(min_value=0, max_value=40), min_size=4, max_size=4).filter(
    lambda counts: sum(counts) <= 64)


@settings(max_examples=150, deadline=None)
@given(counts=_counts, level=st.sampled_from(list(SelfAssessmentLevel)),
       index=st.integers(min_value=0, max_value=len(NEW_POLICIES) - 1))
def test_policies_are_pure_and_never_upgrade(counts, level, index):
    """Same input gives an equal output; the level never rises; the reason is a known one."""
    policy = NEW_POLICIES[index]()
    raw = BeliefSelfAssessment(belief_stamp_sim_ns=3, overall_level=level)
    history = _history(tuple(counts), stamp=7)
    first = policy.adjust(raw, history)
    second = NEW_POLICIES[index]().adjust(raw, history)
    assert first == second
    assert first.adjusted_overall_level <= level
    steps = level.confidence_rank - first.adjusted_overall_level.confidence_rank
    reason = first.adjustment_reason
    assert reason in {REASON_NO_OUTCOMES_YET, REASON_CALIBRATION_WITHIN_TOLERANCE,
                      REASON_SIGNIFICANT_MISCALIBRATION, REASON_GROSS_MISCALIBRATION}
    if reason == REASON_SIGNIFICANT_MISCALIBRATION:
        assert steps == min(1, level.confidence_rank)
    elif reason == REASON_GROSS_MISCALIBRATION:
        assert first.adjusted_overall_level is UNKNOWN
    else:
        assert steps == 0


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_passthrough_reasons(cls):
    """No outcomes -> no_outcomes_yet; too few or unremarkable -> calibration_within_tolerance."""
    policy = cls()
    empty = policy.adjust(RAW, CalibrationHistory.empty())
    assert (empty.adjusted_overall_level, empty.adjustment_reason) == (
        KNOWN, REASON_NO_OUTCOMES_YET)
    few = policy.adjust(RAW, _history((0, 0, 0, 3)))  # below min_outcomes
    assert (few.adjusted_overall_level, few.adjustment_reason) == (
        KNOWN, REASON_CALIBRATION_WITHIN_TOLERANCE)
    fine = policy.adjust(RAW, _history((2, 28, 2, 0)))
    assert (fine.adjusted_overall_level, fine.adjustment_reason) == (
        KNOWN, REASON_CALIBRATION_WITHIN_TOLERANCE)


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_one_step_then_two_steps(cls):
    """Significant evidence costs one level, gross evidence goes to UNKNOWN; UNKNOWN stays."""
    policy = cls()
    significant = policy.adjust(RAW, _history((0, 25, 7, 0)))
    assert (significant.adjusted_overall_level, significant.adjustment_reason) == (
        UNCERTAIN, REASON_SIGNIFICANT_MISCALIBRATION)
    gross = policy.adjust(RAW, _history((0, 10, 10, 12)))
    assert (gross.adjusted_overall_level, gross.adjustment_reason) == (
        UNKNOWN, REASON_GROSS_MISCALIBRATION)
    uncertain = BeliefSelfAssessment(belief_stamp_sim_ns=1, overall_level=UNCERTAIN)
    assert policy.adjust(uncertain, _history((0, 25, 7, 0))).adjusted_overall_level is UNKNOWN
    unknown = BeliefSelfAssessment(belief_stamp_sim_ns=1, overall_level=UNKNOWN)
    assert policy.adjust(unknown, _history((0, 10, 10, 12))).adjusted_overall_level is UNKNOWN


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_infinite_worst_distance_is_gross(cls):
    """A worst distance of +inf sends the level to UNKNOWN even with a single outcome."""
    policy = cls()
    history = CalibrationHistory(1, 0, 0, 0, 1, 0.3, math.inf, 10)
    result = policy.adjust(RAW, history)
    assert (result.adjusted_overall_level, result.adjustment_reason) == (
        UNKNOWN, REASON_INFINITE_MAHALANOBIS)


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_rejects_bad_inputs(cls):
    """Reject a raw or history of the wrong type, like the reference policy."""
    policy = cls()
    with pytest.raises(TypeError):
        policy.adjust(None, CalibrationHistory.empty())
    with pytest.raises(TypeError):
        policy.adjust(RAW, (0, 0, 0, 0))


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_windows_beyond_max_window_use_on_demand_thresholds(cls):
    """For n > max_window the thresholds equal those of a policy tabulated further."""
    small, large = cls(max_window=16), cls(max_window=80)
    for n in (17, 32, 64, 80):
        assert small.thresholds(n) == large.thresholds(n)
        assert small.calibrated_downgrade_probability(n) == pytest.approx(
            large.calibrated_downgrade_probability(n), rel=1e-12)
    history = _history((1, 60, 9, 0))
    assert small.adjust(RAW, history) == large.adjust(RAW, history)


def test_exceedance_thresholds_defaults():
    """Defaults: a full window downgrades at 7 beyond-3 outcomes, or 1 beyond 5."""
    policy = CalibratedExceedancePolicy()
    assert policy.thresholds(32) == (7, 1)
    assert policy.p_beyond_3 == pytest.approx(0.057724, abs=1e-6)
    assert policy.p_beyond_5 == pytest.approx(3.088e-5, rel=1e-3)


def test_likelihood_ratio_scores_defaults():
    """Design 1.5x: bucket scores -3, 0, 5, 14 (2 units per nat)."""
    policy = BucketLikelihoodRatioPolicy()
    assert policy.scores == (-3, 0, 5, 14)
    assert policy.statistic(_history((1, 28, 2, 1))) == -3 + 10 + 14


def test_works_through_assess_with_feedback():
    """The new policies plug into the ADR orchestration unchanged."""
    model = OutcomeModel()
    outcomes = model.outcomes(40, seed=1, overconfidence=50.0)
    for cls in NEW_POLICIES:
        calibrated = assess_with_feedback(RAW, outcomes, cls())
        assert calibrated.adjusted_overall_level is UNKNOWN


# --- stated false-alarm rates: exact --------------------------------------------------------------

@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_stated_false_alarm_rate_is_exact(cls):
    """The docstring's full-window rate equals an independent exact enumeration."""
    policy = cls()
    exact = _exact_downgrade_probability(policy, 32, _bucket_probabilities(2))
    assert exact == pytest.approx(policy.calibrated_downgrade_probability(32), rel=1e-6)
    assert exact == pytest.approx(cls.STATED_FULL_WINDOW_FALSE_ALARM_RATE, abs=5e-7)
    assert f'{100 * cls.STATED_FULL_WINDOW_FALSE_ALARM_RATE:.4f}%' in cls.__doc__
    assert exact <= policy.false_alarm_probability + policy.gross_false_alarm_probability


@pytest.mark.parametrize('cls', NEW_POLICIES)
@pytest.mark.parametrize('n', [4, 9, 20])
def test_false_alarm_rate_bounded_while_window_fills(cls, n):
    """At every window size the exact false-downgrade probability is within the budget."""
    policy = cls()
    exact = _exact_downgrade_probability(policy, n, _bucket_probabilities(2))
    assert exact == pytest.approx(policy.calibrated_downgrade_probability(n), rel=1e-6, abs=1e-15)
    assert exact <= policy.false_alarm_probability + policy.gross_false_alarm_probability


# --- stated false-alarm rates: Monte Carlo --------------------------------------------------------

def _simulated_windows(count, seed, n=32, overconfidence=1.0):
    """Draw ``count`` independent windows of ``n`` outcomes from the simulator, as histories."""
    model = OutcomeModel()
    rng = random.Random(seed)
    histories = []
    for _ in range(count):
        buckets = [0, 0, 0, 0]
        worst_p = worst_o = 0.0
        for _ in range(n):
            d_p, d_o = model.draw_distances(rng, overconfidence)
            buckets[bucket_of_distance(max(d_p, d_o))] += 1
            worst_p = max(worst_p, d_p)
            worst_o = max(worst_o, d_o)
        histories.append(CalibrationHistory(n, *buckets, worst_p, worst_o, 0))
    return histories


@pytest.fixture(scope='module')
def calibrated_windows():
    """Six thousand independent full windows of a calibrated estimator (seeded)."""
    return _simulated_windows(6000, seed=2026)


@pytest.mark.parametrize('policy', [
    MahalanobisDowngradePolicy(),
    CalibratedExceedancePolicy(),
    BucketLikelihoodRatioPolicy(),
    CalibratedExceedancePolicy(false_alarm_probability=0.05, gross_false_alarm_probability=0.01),
    BucketLikelihoodRatioPolicy(false_alarm_probability=0.05, gross_false_alarm_probability=0.01,
                                design_overconfidence=2.0),
], ids=lambda policy: repr(policy))
def test_monte_carlo_false_alarm_rate(policy, calibrated_windows):
    """Empirical false-downgrade rate per full window is within 4 MC standard errors of exact."""
    if isinstance(policy, MahalanobisDowngradePolicy):
        exact = _exact_downgrade_probability(policy, 32, _bucket_probabilities(2))
    else:
        exact = policy.calibrated_downgrade_probability(32)
    alarms = sum(policy.adjust(RAW, h).was_downgraded for h in calibrated_windows)
    n = len(calibrated_windows)
    standard_error = math.sqrt(exact * (1 - exact) / n)
    assert abs(alarms / n - exact) <= 4 * standard_error + 1.0 / n


# --- detection ------------------------------------------------------------------------------------

def _detection_delays(policy, overconfidence, runs, seed):
    """Outcomes until the first downgrade after a calibrated, non-alarming full window."""
    model = OutcomeModel()
    rng = random.Random(seed)
    delays = []
    for _ in range(runs):
        while True:
            window = [model.draw_distances(rng) for _ in range(32)]
            if not policy.adjust(RAW, _window_history(window)).was_downgraded:
                break
        for step in range(1, 65):
            window = window[1:] + [model.draw_distances(rng, overconfidence)]
            if policy.adjust(RAW, _window_history(window)).was_downgraded:
                delays.append(step)
                break
        else:
            delays.append(math.inf)
    return delays


def _window_history(window):
    buckets = [0, 0, 0, 0]
    for d_p, d_o in window:
        buckets[bucket_of_distance(max(d_p, d_o))] += 1
    return CalibrationHistory(len(window), *buckets, max(d for d, _ in window),
                              max(d for _, d in window), 0)


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_detects_gross_overconfidence_at_once(cls):
    """At 50x a downgrade follows within three overconfident outcomes (target: median <= 5)."""
    delays = _detection_delays(cls(), 50.0, runs=30, seed=4)
    assert max(delays) <= 3
    assert statistics.median(delays) <= 3


@pytest.mark.parametrize('cls', NEW_POLICIES)
def test_detects_twofold_overconfidence_quickly(cls):
    """At 2x the median detection delay is well within the 16-outcome target."""
    delays = _detection_delays(cls(), 2.0, runs=60, seed=5)
    assert statistics.median(delays) <= 8
    assert max(delays) <= 32
