# SPDX-License-Identifier: Apache-2.0
"""Vec3ScalePolicy (issue 20): parameters, purity, per-vec3 grading, hysteresis, fallback.

Small deterministic checks only; the rates and delays are measured by bench/honesty_bench.py.
Schema-2 histories come from verification/schema2_history.py, the one place that builds them.
"""

import math

from project_ghost_feedback.core import BeliefSelfAssessment, SelfAssessmentLevel
from project_ghost_feedback.core.feedback import (
    assess_with_feedback,
    CalibrationAdjustmentPolicy,
    CalibrationHistory,
    HysteresisPolicy,
    make_policy,
    OverconfidenceScalePolicy,
    policy_names,
    policy_parameter_ranges,
    policy_parameters,
    REASON_CALIBRATION_WITHIN_TOLERANCE,
    REASON_GROSSLY_OVERCONFIDENT_ORIENTATION,
    REASON_GROSSLY_OVERCONFIDENT_POSITION,
    REASON_INFINITE_MAHALANOBIS,
    REASON_NO_OUTCOMES_YET,
    REASON_OVERCONFIDENT_POSITION,
    REASON_UNDERCONFIDENT_CALIBRATION,
    Vec3ScalePolicy,
)
from project_ghost_feedback.core.feedback.chi_square import (
    chi_square_cdf,
    chi_square_quantile,
    chi_square_survival,
)
from project_ghost_feedback.core.feedback.vec3_scale_policy import capped_mean
from project_ghost_feedback.verification.schema2_history import schema2_history
import pytest


KNOWN = SelfAssessmentLevel.KNOWN
UNCERTAIN = SelfAssessmentLevel.UNCERTAIN
UNKNOWN = SelfAssessmentLevel.UNKNOWN
RAW = BeliefSelfAssessment(belief_stamp_sim_ns=0, overall_level=KNOWN)
POLICY = Vec3ScalePolicy()
# Squared distances near the chi-square(3) mean: a calibrated-looking window.
CALM = (3.0,) * 32


def _level(history, previous=None, policy=POLICY):
    return policy.adjust_following(RAW, history, previous).adjusted_overall_level


def test_registered_and_protocols():
    assert 'vec3_scale' in policy_names()
    assert isinstance(POLICY, CalibrationAdjustmentPolicy)
    assert isinstance(POLICY, HysteresisPolicy)
    assert make_policy('vec3_scale') == POLICY
    assert set(policy_parameter_ranges('vec3_scale')) == set(policy_parameters('vec3_scale'))


@pytest.mark.parametrize('field, value, error', [
    ('design_overconfidence', 1.0, ValueError),
    ('design_overconfidence', 'x', TypeError),
    ('significant_threshold', 0.0, ValueError),
    ('significant_exit_threshold', 8.0, ValueError),
    ('calibrated_overconfidence', 0.9, ValueError),
    ('gross_overconfidence', True, TypeError),
    ('gross_exit_overconfidence', 2.5, ValueError),
    ('gross_confidence', 0.4, ValueError),
    ('gross_reference_overconfidence', 0.5, ValueError),
    ('gross_design_overconfidence', 2.0, ValueError),
    ('gross_cusum_threshold', -1.0, ValueError),
    ('gross_distance', 2.0, ValueError),
    ('winsorize_distance', 0.5, ValueError),
    ('underconfidence_probability', 0.6, ValueError),
    ('degrees_of_freedom', 4, ValueError),
    ('degrees_of_freedom', 3.0, TypeError),
    ('max_window', 0, ValueError),
])
def test_invalid_parameters_raise_naming_the_field(field, value, error):
    with pytest.raises(error, match=field):
        Vec3ScalePolicy(**{field: value})


def test_zero_switches_off_the_gross_distance_and_the_cap():
    policy = Vec3ScalePolicy(gross_distance=0, winsorize_distance=0)
    assert policy.gross_distance == 0.0 and policy.winsorize_distance == 0.0


def test_chi_square_helpers_agree_with_closed_forms():
    # chi-square(2): P(X <= x) = 1 - exp(-x / 2).
    for x in (0.1, 1.0, 5.0, 30.0):
        assert chi_square_cdf(x, 2) == pytest.approx(1.0 - math.exp(-x / 2.0), rel=1e-12)
        assert chi_square_survival(x, 2) == pytest.approx(math.exp(-x / 2.0), rel=1e-10)
    assert chi_square_quantile(0.5, 2) == pytest.approx(2.0 * math.log(2.0), rel=1e-9)
    for dof in (3, 96, 192):
        q = chi_square_quantile(0.999, dof)
        assert chi_square_survival(q, dof) == pytest.approx(0.001, rel=1e-7)
    # No cap reached: the capped mean is the mean.
    assert capped_mean(2.0, 3, 1e9) == pytest.approx(12.0, rel=1e-9)


def test_pure_and_deterministic():
    history = schema2_history([3.0] * 20 + [40.0] * 5, [2.0] * 25)
    first = POLICY.adjust(RAW, history)
    assert POLICY.adjust(RAW, history) == first
    assert Vec3ScalePolicy().adjust(RAW, history) == first
    assert history == schema2_history([3.0] * 20 + [40.0] * 5, [2.0] * 25)


@pytest.mark.parametrize('xp, xo', [
    (CALM, CALM), ([3.0] * 28 + [30.0] * 4, CALM), ([20.0] * 32, CALM), ([], []),
    ([200.0], [1.0]),
])
def test_adjust_equals_adjust_following_none(xp, xo):
    history = schema2_history(xp, xo)
    assert POLICY.adjust(RAW, history) == POLICY.adjust_following(RAW, history, None)
    assert assess_with_feedback(RAW, [], POLICY).adjustment_reason == REASON_NO_OUTCOMES_YET


def test_calibrated_window_passes_through():
    result = POLICY.adjust(RAW, schema2_history(CALM, CALM))
    assert result.adjusted_overall_level is KNOWN
    assert result.adjustment_reason == REASON_CALIBRATION_WITHIN_TOLERANCE


def test_position_only_fault_downgrades_naming_the_position_block():
    # Position errors 3x the claim (x = 9 * 3) with a calibrated orientation: UNKNOWN, position.
    result = POLICY.adjust(RAW, schema2_history([27.0] * 32, CALM))
    assert result.adjusted_overall_level is UNKNOWN
    assert result.adjustment_reason == REASON_GROSSLY_OVERCONFIDENT_POSITION
    swapped = POLICY.adjust(RAW, schema2_history(CALM, [27.0] * 32))
    assert swapped.adjustment_reason == REASON_GROSSLY_OVERCONFIDENT_ORIENTATION
    # A joint sum with the same total spread over both vec3 is only one step: not diluted.
    spread = POLICY.adjust(RAW, schema2_history([15.0] * 32, [15.0] * 32))
    assert spread.adjusted_overall_level is UNCERTAIN


def test_mild_position_fault_is_one_step_on_the_position():
    # The one-step threshold of half a 1-per-day budget at 10 outcomes/s (ln 1728000 = 14.4 nats).
    result = POLICY.at_rate(10.0).adjust(RAW, schema2_history([3.0] * 22 + [12.0] * 10, CALM))
    assert result.adjusted_overall_level is UNCERTAIN
    assert result.adjustment_reason == REASON_OVERCONFIDENT_POSITION


def test_gross_single_outcome_is_unknown_immediately():
    assert _level(schema2_history([3.0] * 31 + [101.0], CALM)) is UNKNOWN
    assert _level(schema2_history([101.0], [1.0])) is UNKNOWN
    assert _level(schema2_history(CALM, [3.0] * 31 + [99.0])) is not UNKNOWN
    off = Vec3ScalePolicy(gross_distance=0)
    assert _level(schema2_history([3.0] * 31 + [101.0], CALM), policy=off) is not UNKNOWN


def test_infinite_distance_is_unknown():
    result = POLICY.adjust(RAW, schema2_history([3.0, math.inf], [1.0, 1.0]))
    assert result.adjusted_overall_level is UNKNOWN
    assert result.adjustment_reason == REASON_INFINITE_MAHALANOBIS


def test_hysteresis_holds_the_level_inside_the_band():
    # A per-vec3 sum between the exit and the entry bounds: UNKNOWN only if it was UNKNOWN.
    gross_in, gross_out, _, _ = POLICY.thresholds(32)
    middle = (gross_in + gross_out) / 2.0 / 32
    band = schema2_history([middle] * 32, CALM)
    fresh = POLICY.adjust(RAW, band)
    assert fresh.adjusted_overall_level is UNCERTAIN
    entered = POLICY.adjust(RAW, schema2_history([gross_in / 32 * 1.01] * 32, CALM))
    assert entered.adjusted_overall_level is UNKNOWN
    held = POLICY.adjust_following(RAW, band, entered)
    assert held.adjusted_overall_level is UNKNOWN
    left = POLICY.adjust_following(RAW, schema2_history([gross_out / 32 * 0.99] * 32, CALM),
                                   entered)
    assert left.adjusted_overall_level is UNCERTAIN
    # One step: a window mildly above calibration stays UNCERTAIN after UNCERTAIN only.
    _, _, joint_out, _ = POLICY.thresholds(32)
    mild = schema2_history([joint_out / 64 * 1.01] * 32, [joint_out / 64 * 1.01] * 32)
    assert POLICY.adjust(RAW, mild).adjusted_overall_level is KNOWN
    assert POLICY.adjust_following(RAW, mild, fresh).adjusted_overall_level is UNCERTAIN
    calm = schema2_history(CALM, CALM)
    assert POLICY.adjust_following(RAW, calm, fresh).adjusted_overall_level is KNOWN


def test_previous_from_another_policy_is_ignored():
    gross_in, gross_out, _, _ = POLICY.thresholds(32)
    band = schema2_history([(gross_in + gross_out) / 64] * 32, CALM)
    other = OverconfidenceScalePolicy().adjust(RAW, band)
    foreign = type(other)(RAW, band, UNKNOWN, 'overconfidence_scale', 'gross_overconfidence')
    assert _level(band, foreign) is _level(band)


def test_assess_with_feedback_passes_previous():
    entered = POLICY.adjust(RAW, schema2_history([30.0] * 32, CALM))
    assert entered.adjusted_overall_level is UNKNOWN
    # assess_with_feedback builds a schema-1 history from outcomes: the fallback ignores previous.
    result = assess_with_feedback(RAW, [], POLICY, previous=entered)
    assert result.adjustment_reason == REASON_NO_OUTCOMES_YET


@pytest.mark.parametrize('counts', [
    (0, 32, 0, 0), (0, 25, 7, 0), (0, 31, 0, 1), (10, 22, 0, 0), (0, 4, 20, 8), (1, 2, 1, 0),
    (0, 0, 0, 32),
])
def test_schema1_history_falls_back_to_overconfidence_scale(counts):
    n = sum(counts)
    history = CalibrationHistory(n, *counts, 6.0, 2.0, 1)
    expected = OverconfidenceScalePolicy().adjust(RAW, history)
    got = POLICY.adjust_following(RAW, history, POLICY.adjust(RAW, history))
    assert got.adjusted_overall_level is expected.adjusted_overall_level
    assert got.adjustment_reason == expected.adjustment_reason
    assert got.adjustment_policy_id == 'vec3_scale'


def test_inconsistent_squared_distances_cannot_reach_the_policy():
    """One squared distance per outcome is the history's own invariant (ADR-0026a)."""
    base = schema2_history(CALM, CALM)
    with pytest.raises(ValueError, match='position_squared_distances'):
        CalibrationHistory(
            32, base.count_within_1_std, base.count_beyond_1_std, base.count_beyond_3_std,
            base.count_beyond_5_std, base.worst_position_mahalanobis,
            base.worst_orientation_mahalanobis, 0, schema_version=2,
            position_squared_distances=CALM[:5], orientation_squared_distances=CALM)


def test_underconfidence_is_reported_without_changing_the_level():
    result = POLICY.adjust(RAW, schema2_history([0.5] * 32, [0.5] * 32))
    assert result.adjusted_overall_level is KNOWN
    assert result.adjustment_reason == REASON_UNDERCONFIDENT_CALIBRATION


def test_winsorized_policy_ignores_one_heavy_tail_outcome():
    robust = Vec3ScalePolicy(winsorize_distance=4.0, gross_distance=0)
    history = schema2_history([3.0] * 31 + [90.0], CALM)
    assert _level(history, policy=robust) is KNOWN
    assert _level(history) is not KNOWN
    assert _level(schema2_history([27.0] * 32, CALM), policy=robust) is UNKNOWN


def test_bench_mirror_matches_adjust_following():
    """The numpy mirror the bench measures gives the policy's own levels (seeded, 3 x 300)."""
    np = pytest.importorskip('numpy')
    from project_ghost_feedback.verification import vec3_sim
    rng = np.random.default_rng(20)
    scale = np.concatenate([np.ones(80), np.linspace(1.0, 3.0, 160), np.full(30, 12.0),
                            np.ones(30)])
    for policy in (POLICY, Vec3ScalePolicy(winsorize_distance=4.0)):
        for model in ({'scale': scale}, {'position_scale': scale, 'scale': 1.0},
                      {'scale': 1.0, 'axis_scale': 5.0}):
            xp, xo = vec3_sim.squared_distances(rng, 1, len(scale), **model)
            mirror = vec3_sim.levels(policy, xp, xo, 32)[0]
            previous = None
            for t in range(len(scale)):
                low = max(0, t - 31)
                history = schema2_history(xp[0, low:t + 1], xo[0, low:t + 1], t)
                previous = policy.adjust_following(RAW, history, previous)
                assert previous.adjusted_overall_level.value == mirror[t]


def test_one_or_two_outcomes_after_a_reset_cannot_decide_unknown_on_the_median_bound():
    """Issue 35: the window-sum UNKNOWN test has a small-sample floor (binds at n <= 2).

    Without it one outcome at distance 4 (x = 16, above 2.4**2 * median(chi-square 3) = 13.6)
    went to UNKNOWN; a calibrated vec3 does that with probability 0.35%.
    """
    assert _level(schema2_history([16.0], [1.0])) is KNOWN
    assert _level(schema2_history([30.0], [1.0])) is not UNKNOWN
    floor = chi_square_quantile(1.0 - 1e-6, 3)
    assert POLICY.thresholds(1)[0] == pytest.approx(floor, rel=1e-9)
    result = POLICY.adjust(RAW, schema2_history([floor * 1.01], [1.0]))
    assert result.adjusted_overall_level is UNKNOWN
    assert result.adjustment_reason == REASON_GROSSLY_OVERCONFIDENT_POSITION
    # The floor is the parameter: at 1% it is below the median bound, which decides alone again.
    loose = Vec3ScalePolicy(gross_false_alarm_probability=0.01)
    assert _level(schema2_history([16.0], [1.0]), policy=loose) is UNKNOWN
    # From three outcomes on the median-unbiased bound is the larger threshold (floor unchanged).
    for n in range(3, 33):
        assert POLICY.thresholds(n)[0] == pytest.approx(
            2.4 ** 2 * chi_square_quantile(0.5, 3 * n), rel=1e-9)


def test_false_unknown_after_a_reset_is_within_issue_35():
    """The window-sum test's false UNKNOWN over a warm-up of 32 is <= 0.01% (scipy checks it)."""
    stats = pytest.importorskip('scipy.stats')
    total = 0.0
    for n in range(1, 33):
        one = float(stats.chi2.sf(POLICY.thresholds(n)[0], 3 * n))
        exact = 1.0 - (1.0 - one) ** 2
        assert POLICY.calibrated_unknown_probability(n) == pytest.approx(exact, rel=1e-6,
                                                                         abs=1e-15)
        assert exact <= 2.0 * POLICY.gross_false_alarm_probability * (1.0 + 1e-9)
        total += exact
    assert total <= 1e-4
    # Single-distance test: P(d > 10) per Gaussian vec3 (A&S 26.4.5 closed form, dof 3).
    t = 10.0
    one = math.erfc(t / math.sqrt(2.0)) + math.sqrt(2.0 / math.pi) * t * math.exp(-t * t / 2.0)
    assert POLICY.calibrated_gross_distance_probability() == pytest.approx(
        one * (2.0 - one), rel=1e-9)
    assert 32 * POLICY.calibrated_gross_distance_probability() < 1e-18
    with pytest.raises(ValueError, match='n must be'):
        POLICY.calibrated_unknown_probability(0)


def test_bench_mirror_matches_the_feedback_loop_across_a_reset():
    """The mirror gives what core/loop.py publishes, outcome by outcome, a reset included."""
    np = pytest.importorskip('numpy')
    from project_ghost_feedback.verification import vec3_sim
    from project_ghost_feedback.core import PredictionOutcome
    from project_ghost_feedback.core.loop import CAUSE_SERVICE, FeedbackLoop, LoopConfig
    rng = np.random.default_rng(35)
    scale = np.concatenate([np.ones(40), np.full(20, 3.0), np.ones(20), np.full(10, 12.0)])
    xp, xo = vec3_sim.squared_distances(rng, 1, len(scale), scale=scale)
    cut = 62
    mirror = np.concatenate([vec3_sim.levels(POLICY, xp[:, :cut], xo[:, :cut], rate_hz=10.0),
                             vec3_sim.levels(POLICY, xp[:, cut:], xo[:, cut:], rate_hz=10.0)],
                            1)[0]
    loop = FeedbackLoop(LoopConfig.make('vec3_scale'))
    levels = []
    for t in range(len(scale)):
        stamp = (t + 1) * 100_000_000
        if t == cut:
            loop.reset(CAUSE_SERVICE, 'test', stamp)
        loop.outcome(PredictionOutcome(stamp - 1, stamp, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                                       math.sqrt(xp[0, t]), math.sqrt(xo[0, t])))
        step = loop.assessment(BeliefSelfAssessment(belief_stamp_sim_ns=stamp,
                                                    overall_level=KNOWN))
        levels.append(step.calibrated.adjusted_overall_level.value)
    assert levels == mirror.tolist()
    # 3x downgraded it; the reset forgot that (KNOWN on the next outcome); 12x is UNKNOWN.
    assert min(levels[40:cut]) < 2 and levels[cut] == 2 and levels[-1] == 0


def test_a_configuration_recorded_before_the_floor_replays_without_it():
    """A bag's recorded vec3_scale parameters without gross_false_alarm_probability: off (0).

    Such a node decided without the issue-35 floor, so replay must too (exact replay); a new
    recording names the parameter and keeps its value.
    """
    import json
    from types import SimpleNamespace
    from project_ghost_feedback.core.loop import LoopConfig
    from project_ghost_feedback.telemetry.config import custom_data_for_config, recorded_config
    old = dict(policy_parameters('vec3_scale'))
    del old['gross_false_alarm_probability']
    info = SimpleNamespace(path='bag', custom_data={
        'ghost_feedback.policy': 'vec3_scale',
        'ghost_feedback.policy_parameters': json.dumps(old)})
    config, source, _ = recorded_config(info)
    assert source == 'recorded'
    assert dict(config.parameters)['gross_false_alarm_probability'] == 0.0
    one = schema2_history([16.0], [1.0])
    assert _level(one, policy=config.make_policy()) is UNKNOWN  # as decided then
    assert _level(one) is KNOWN  # today's default
    new = custom_data_for_config(LoopConfig.make('vec3_scale'))
    config, _, _ = recorded_config(SimpleNamespace(path='bag', custom_data=new))
    assert dict(config.parameters)['gross_false_alarm_probability'] == 1e-6
    with pytest.raises(ValueError, match='gross_false_alarm_probability'):
        Vec3ScalePolicy(gross_false_alarm_probability=0.5)
