# SPDX-License-Identifier: Apache-2.0
"""OverconfidenceScalePolicy (issue 12): exact rates, Monte Carlo, grading, guards, replay."""

import dataclasses
import json
import math
import random
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    ContractViolation,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    CalibrationAdjustmentPolicy,
    CalibrationHistory,
    make_policy,
    OverconfidenceScalePolicy,
    policy_names,
    policy_parameter_ranges,
    policy_parameters,
    REASON_GROSS_OVERCONFIDENCE,
    REASON_INFINITE_MAHALANOBIS,
    REASON_NO_OUTCOMES_YET,
    REASON_SIGNIFICANT_OVERCONFIDENCE,
    REASON_UNDERCONFIDENT_CALIBRATION,
)
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.core.feedback.calibration_math import bucket_probabilities
from project_ghost_feedback.telemetry import TelemetryRecorder
from project_ghost_feedback.telemetry.replay import replay_bag
import pytest

KNOWN = SelfAssessmentLevel.KNOWN
UNCERTAIN = SelfAssessmentLevel.UNCERTAIN
UNKNOWN = SelfAssessmentLevel.UNKNOWN
RAW = BeliefSelfAssessment(belief_stamp_sim_ns=0, overall_level=KNOWN)
NAME = 'overconfidence_scale'


def _history(c0, c1, c2, c3, worst=4.0):
    n = c0 + c1 + c2 + c3
    if n == 0:
        return CalibrationHistory.empty()
    return CalibrationHistory(n, c0, c1, c2, c3, worst, worst, 0)


def _level_distribution(policy, k, n=32):
    """Return {level: probability} of one window of ``n`` i.i.d. outcomes, exact enumeration."""
    probabilities = bucket_probabilities(3, 2, k)
    logs = [math.log(p) if p > 0.0 else -math.inf for p in probabilities]
    result = {KNOWN: 0.0, UNCERTAIN: 0.0, UNKNOWN: 0.0}
    for c3 in range(n + 1):
        for c2 in range(n + 1 - c3):
            for c1 in range(n + 1 - c3 - c2):
                counts = (n - c1 - c2 - c3, c1, c2, c3)
                log_p = math.lgamma(n + 1)
                for count, log_q in zip(counts, logs):
                    if count:
                        log_p += count * log_q - math.lgamma(count + 1)
                if log_p == -math.inf:
                    continue
                level = policy.adjust(RAW, _history(*counts)).adjusted_overall_level
                result[level] += math.exp(log_p)
    return result


def _monte_carlo_levels(policy, k, windows, seed):
    """Return {level: fraction} over ``windows`` independent seeded windows of 32 outcomes."""
    rng = random.Random(seed)
    tally = {KNOWN: 0, UNCERTAIN: 0, UNKNOWN: 0}
    for _ in range(windows):
        counts = [0, 0, 0, 0]
        for _ in range(32):
            worse = max(
                k * math.sqrt(sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(3))) for _ in range(2))
            counts[0 if worse <= 1.0 else 1 if worse <= 3.0 else 2 if worse <= 5.0 else 3] += 1
        tally[policy.adjust(RAW, _history(*counts)).adjusted_overall_level] += 1
    return {level: count / windows for level, count in tally.items()}


def test_registered_selectable_and_a_protocol_policy():
    """Registered by name, built by make_policy, frozen, with its id in every envelope."""
    assert NAME in policy_names()
    policy = make_policy(NAME)
    assert isinstance(policy, OverconfidenceScalePolicy)
    assert isinstance(policy, CalibrationAdjustmentPolicy)
    assert policy.policy_id == NAME
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.gross_overconfidence = 3.0
    ranges = policy_parameter_ranges(NAME)
    assert set(ranges) == set(policy_parameters(NAME))
    assert all(description for _, description in ranges.values())
    assert make_policy(NAME, {'gross_overconfidence': 3.0}).gross_overconfidence == 3.0


def test_full_window_false_downgrade_rate_is_the_stated_exact_value():
    """Calibrated, window 32: the enumerated rate equals the stated one and exceedance's."""
    policy = make_policy(NAME)
    levels = _level_distribution(policy, 1.0)
    assert levels[UNKNOWN] < 1e-12
    assert levels[UNCERTAIN] == pytest.approx(policy.STATED_FULL_WINDOW_FALSE_ALARM_RATE, rel=1e-3)
    exceedance = make_policy('calibrated_exceedance')
    assert levels[UNCERTAIN] == pytest.approx(
        exceedance.calibrated_downgrade_probability(32), rel=1e-9)
    assert levels[UNCERTAIN] <= 0.005


def test_grading_targets_exact():
    """1.5x: UNCERTAIN >= 60%, UNKNOWN <= 20%; 3x and 10x: UNKNOWN >= 95% (exact, window 32)."""
    policy = make_policy(NAME)
    at_1_5 = _level_distribution(policy, 1.5)
    assert at_1_5[UNCERTAIN] >= 0.60 and at_1_5[UNKNOWN] <= 0.20
    for k in (3.0, 10.0):
        assert _level_distribution(policy, k)[UNKNOWN] >= 0.95


def test_gross_step_bound_holds_at_the_gross_factor():
    """At k = gross_overconfidence, UNKNOWN has probability <= 1 - gross_confidence (exact)."""
    for confidence in (0.5, 0.9):
        policy = make_policy(NAME, {'gross_confidence': confidence})
        assert _level_distribution(policy, policy.gross_overconfidence)[UNKNOWN] <= (
            1.0 - confidence + 1e-12)


def test_grading_is_monotone_in_k():
    """The expected number of steps down increases with the overconfidence factor."""
    policy = make_policy(NAME)
    steps = []
    for k in (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 10.0):
        levels = _level_distribution(policy, k)
        steps.append(levels[UNCERTAIN] + 2 * levels[UNKNOWN])
    assert steps == sorted(steps) and steps[0] < 0.01 and steps[-1] > 1.99


@given(st.lists(st.integers(0, 3), min_size=4, max_size=40), st.integers(0, 39))
def test_a_worse_outcome_never_raises_the_level(buckets, index):
    """Moving one outcome to a higher bucket never makes the adjusted level more confident."""
    policy = make_policy(NAME)
    index %= len(buckets)
    worse = list(buckets)
    worse[index] = min(3, worse[index] + 1)
    before = policy.adjust(RAW, _history(*(buckets.count(b) for b in range(4))))
    after = policy.adjust(RAW, _history(*(worse.count(b) for b in range(4))))
    assert after.adjusted_overall_level <= before.adjusted_overall_level


def test_monte_carlo_agrees_with_exact():
    """Seeded Monte Carlo (2000 windows per k) within 5 binomial std of the exact levels."""
    policy = make_policy(NAME)
    for seed, k in enumerate((1.0, 1.5, 3.0)):
        exact = _level_distribution(policy, k)
        simulated = _monte_carlo_levels(policy, k, 2000, seed)
        for level in (KNOWN, UNCERTAIN, UNKNOWN):
            std = math.sqrt(max(exact[level] * (1 - exact[level]), 1e-4) / 2000)
            assert abs(simulated[level] - exact[level]) <= 5 * std, (k, level)


def test_reasons_and_rule_order():
    """No outcomes, infinity, gross, significant, underconfident, within tolerance."""
    policy = make_policy(NAME)
    empty = policy.adjust(RAW, CalibrationHistory.empty())
    assert (empty.adjusted_overall_level, empty.adjustment_reason) == (
        KNOWN, REASON_NO_OUTCOMES_YET)
    infinite = policy.adjust(RAW, CalibrationHistory(1, 0, 0, 0, 1, math.inf, 0.0, 0))
    assert (infinite.adjusted_overall_level, infinite.adjustment_reason) == (
        UNKNOWN, REASON_INFINITE_MAHALANOBIS)
    gross = policy.adjust(RAW, _history(4, 6, 4, 18))
    assert (gross.adjusted_overall_level, gross.adjustment_reason) == (
        UNKNOWN, REASON_GROSS_OVERCONFIDENCE)
    one_outlier = policy.adjust(RAW, _history(5, 26, 0, 1))
    assert (one_outlier.adjusted_overall_level, one_outlier.adjustment_reason) == (
        UNCERTAIN, REASON_SIGNIFICANT_OVERCONFIDENCE)
    many_beyond_3 = policy.adjust(RAW, _history(2, 23, 7, 0))
    assert many_beyond_3.adjustment_reason == REASON_SIGNIFICANT_OVERCONFIDENCE
    calm = policy.adjust(RAW, _history(1, 30, 1, 0))
    assert (calm.adjusted_overall_level, calm.was_downgraded) == (KNOWN, False)
    assert calm.adjustment_reason == 'calibration_within_tolerance'


def test_underconfidence_is_reported_without_raising_the_level():
    """Far too many outcomes within 1 std: own reason, level unchanged (never raised)."""
    policy = make_policy(NAME)
    for raw_level in (KNOWN, UNCERTAIN, UNKNOWN):
        raw = BeliefSelfAssessment(belief_stamp_sim_ns=0, overall_level=raw_level)
        result = policy.adjust(raw, _history(20, 12, 0, 0))
        assert result.adjustment_reason == REASON_UNDERCONFIDENT_CALIBRATION
        assert result.adjusted_overall_level == raw_level
    # Under calibration the reason is rare: at most underconfidence_probability per full window.
    k_under = policy.thresholds(32)[3]
    p_within_1 = bucket_probabilities(3, 2)[0]
    tail = sum(math.comb(32, j) * p_within_1 ** j * (1 - p_within_1) ** (32 - j)
               for j in range(k_under, 33))
    assert tail <= policy.underconfidence_probability


def test_pure_same_input_same_output():
    """Equal policies give equal envelopes for equal inputs; the history is not changed."""
    history = _history(3, 20, 6, 3)
    first = make_policy(NAME).adjust(RAW, history)
    assert first == make_policy(NAME).adjust(RAW, history) == make_policy(NAME).adjust(
        RAW, _history(3, 20, 6, 3))
    assert history == _history(3, 20, 6, 3)


def test_windows_beyond_the_table_use_the_same_thresholds():
    """A window above max_window gets thresholds on demand, equal to tabulated ones."""
    small = make_policy(NAME, {'max_window': 8})
    large = make_policy(NAME, {'max_window': 100})
    for n in (9, 32, 100, 300):
        assert small.thresholds(n) == large.thresholds(n)


def test_invalid_parameters_are_refused_by_name():
    """Out-of-range and wrong-type values raise the contract's errors naming the field."""
    for field, value in (('gross_overconfidence', 1.0), ('gross_confidence', 0.4),
                         ('underconfidence_probability', 0.0), ('max_window', 257),
                         ('gross_false_alarm_probability', 0.01)):
        with pytest.raises(ContractViolation, match=field):
            make_policy(NAME, {field: value})
    with pytest.raises(TypeError, match='gross_overconfidence'):
        make_policy(NAME, {'gross_overconfidence': '2.5'})


def _advertised(field):
    (low, high), _ = OverconfidenceScalePolicy.PARAMETER_RANGES[field]
    if isinstance(policy_parameters(NAME)[field], int):
        return st.integers(low, high)
    return st.floats(low, high, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({field: _advertised(field) for field in policy_parameters(NAME)}))
def test_every_advertised_combination_constructs_or_is_refused(parameters):
    """Any values in the advertised ranges: a working policy, or ContractViolation only.

    How long construction takes is measured in bench/policy_bounds_bench.py, never here.
    """
    try:
        policy = make_policy(NAME, parameters)
    except ContractViolation:
        return
    for history in (_history(32, 0, 0, 0), _history(0, 0, 0, 32), _history(8, 8, 8, 8)):
        assert policy.adjust(RAW, history).adjusted_overall_level <= KNOWN


def test_replay_selects_the_policy(tmp_path):
    """A bag recorded with the policy replays identically; --policy selects it on another bag."""
    config = LoopConfig.make(NAME, None, 32, 1024)
    loop = FeedbackLoop(config)
    bag = tmp_path / 'bag'
    recorder = TelemetryRecorder(bag, config)
    ms = 1_000_000
    for i in range(40):
        stamp = (i + 1) * 100 * ms
        distance = 0.8 + (i % 3) * 0.5 if i < 20 else 6.0 + i
        outcome = PredictionOutcome(
            stamp - 11 * ms, stamp - ms, (0.1, 0.0, 0.0), (0.0, 0.0, 0.01), distance, distance)
        loop.outcome(outcome)
        recorder.record_outcome(outcome)
        raw = BeliefSelfAssessment(belief_stamp_sim_ns=stamp, overall_level=KNOWN)
        recorder.record_assessment(raw, loop.assessment(raw).calibrated)
    recorder.close()
    report = replay_bag(bag)
    assert report.identical and report.assessments == 40
    compared = replay_bag(bag, policy='calibrated_exceedance')
    assert not compared.identical
    result = subprocess.run(
        [sys.executable, '-m', 'project_ghost_feedback.cli', 'replay', str(bag), '--policy',
         'mahalanobis_downgrade'], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr  # compare mode: what would have changed
    assert "recorded 'overconfidence_scale', recomputed 'mahalanobis_downgrade'" in result.stdout
    result = subprocess.run(
        [sys.executable, '-m', 'project_ghost_feedback.cli', 'replay', str(bag), '--policy', NAME,
         '--set', 'gross_overconfidence=50.0', '--json'], capture_output=True, text=True,
        timeout=120)
    data = json.loads(result.stdout)
    assert data['replay_config']['policy'] == NAME
    assert data['replay_config']['parameters']['gross_overconfidence'] == 50.0
    assert data['recorded']['levels']['UNKNOWN'] > data['recomputed']['levels'].get('UNKNOWN', 0)


def test_node_selects_the_policy_and_advertises_its_ranges(rclpy_context):
    """policy:=overconfidence_scale at start-up; descriptors carry the advertised ranges."""
    from rclpy.parameter import Parameter
    from project_ghost_feedback.ros.feedback_node import FeedbackNode
    node = FeedbackNode(context=rclpy_context, parameter_overrides=[
        Parameter('policy', value=NAME),
        Parameter(f'{NAME}.gross_overconfidence', value=3.0)])
    try:
        descriptor, = node.describe_parameters([f'{NAME}.gross_overconfidence'])
        assert 'UNKNOWN' in descriptor.description
        (low, high), = [(r.from_value, r.to_value) for r in descriptor.floating_point_range]
        assert (low, high) == (1.0, 100.0)
        descriptor, = node.describe_parameters([f'{NAME}.max_window'])
        assert descriptor.integer_range[0].to_value == 128
        result, = node.set_parameters([Parameter(f'{NAME}.gross_overconfidence', value=1.0)])
        assert not result.successful and 'gross_overconfidence' in result.reason
    finally:
        node.destroy_node()
