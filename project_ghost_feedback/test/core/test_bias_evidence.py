# SPDX-License-Identifier: Apache-2.0
"""The bias channel: BiasEvidence's bound and behaviour, the policy's threshold, the loop's rule.

The rates and delays are measured by bench/whitening_bench.py; these are the rules and the one
property a wrong formula breaks (Ville's bound on honest streams).
"""

import math
import random

import pytest

from project_ghost_feedback.core import BeliefSelfAssessment, PredictionOutcome, SelfAssessmentLevel
from project_ghost_feedback.bridge.innovation_engine import InnovationEngine, InnovationOutputs
from project_ghost_feedback.core.bias_evidence import (
    BiasEvidence, MAX_SUFFIX, suffixes, WARMUP_OUTCOMES)
from project_ghost_feedback.core.feedback import (
    PARAMETERS_ADDED, REASON_BIASED_ORIENTATION, REASON_BIASED_POSITION,
    REASON_OVERCONFIDENT_POSITION, Vec3ScalePolicy)
from project_ghost_feedback.core.feedback.vec3_scale_policy import (
    budget_threshold, DEFAULT_BIAS_THRESHOLD_MARGIN)
from project_ghost_feedback.core.innovation import (
    InnovationOutcome, InnovationPairing, KIND_POSITION)
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig, UNVERIFIED_NO_RECENT_OUTCOMES

MS = 1_000_000


def _unit(rng, m=3, mean=0.0):
    return [rng.gauss(mean, 1.0) for _ in range(m)]


def test_suffix_grid_is_geometric_and_ends_at_the_bound():
    grid = suffixes(MAX_SUFFIX)
    assert grid[:6] == (1, 2, 3, 5, 8, 11)
    assert grid[-1] == MAX_SUFFIX and list(grid) == sorted(set(grid))
    assert len(grid) < 25   # the per-outcome cost stays small
    assert suffixes(1) == (1,)


@pytest.mark.long
def test_honest_streams_take_at_least_a_outcomes_on_average_to_reach_ln_a():
    """Lorden: the mean run of an honest stream to evidence ln(A) is at least A outcomes.

    Streams are cut at ``cap`` (a cut run counts as ``cap``: the mean can only read low). Without
    the mixture's penalty term ``(m / 2) ln(1 + j tau2)`` the mean run here is ~350 (measured).
    """
    rng = random.Random(5)
    a, cap, streams = 400.0, 1500, 120
    runs = []
    for _ in range(streams):
        evidence = BiasEvidence(warmup=0, lrv_block=1)
        run = cap
        for t in range(1, cap + 1):
            if evidence.add(_unit(rng), _unit(rng))[0] >= math.log(a):
                run = t
                break
        runs.append(run)
    assert sum(runs) / streams >= a, sorted(runs)[:20]
    assert min(runs) < cap   # not vacuous: honest streams do reach it


def test_a_bias_accumulates_and_the_share_names_its_vec3():
    rng = random.Random(7)
    evidence = BiasEvidence(warmup=0, lrv_block=1)
    for _ in range(400):
        value, share = evidence.add(_unit(rng, mean=0.4), _unit(rng))
    assert value > 20.0 and share > 0.8
    evidence.reset()
    assert evidence.last == (0.0, 0.0) and evidence.samples == 0
    for _ in range(400):
        value, share = evidence.add(_unit(rng), _unit(rng, mean=-0.4))
    assert value > 20.0 and share < 0.2


def test_missing_and_non_finite_samples_leave_the_evidence_as_it_was():
    rng = random.Random(3)
    evidence = BiasEvidence(warmup=0, lrv_block=1)
    for _ in range(50):
        evidence.add(_unit(rng, mean=1.0), _unit(rng, mean=1.0))
    before = evidence.last
    assert evidence.add(None, _unit(rng)) == before
    assert evidence.add([math.inf, 0.0, 0.0], _unit(rng)) == before
    assert evidence.add([math.nan, 0.0, 0.0], _unit(rng)) == before
    assert evidence.samples == 50


def test_a_change_of_components_starts_again():
    rng = random.Random(4)
    evidence = BiasEvidence(warmup=0, lrv_block=1)
    for _ in range(100):
        evidence.add(_unit(rng, mean=1.0), _unit(rng, mean=1.0))
    assert evidence.last[0] > 10.0
    value, _ = evidence.add(_unit(rng, 2), _unit(rng, 1))   # a planar layout now
    assert evidence.samples == 1 and value < 5.0
    only_position, share = evidence.add(_unit(rng, 2, mean=3.0), ())
    assert evidence.samples == 1 and share == pytest.approx(1.0) or only_position >= 0.0


def test_settings_are_validated():
    for bad in (0, -1, 100_001, True, 2.5):
        with pytest.raises(ValueError):
            BiasEvidence(max_suffix=bad)
    for bad in (0.0, -1.0, 1000.0):
        with pytest.raises(ValueError):
            BiasEvidence(mixture_variance=bad)
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError):
            BiasEvidence(rewhiten_alpha=bad)


def test_the_budget_is_split_between_the_two_channels():
    policy = Vec3ScalePolicy().at_rate(10.0)
    rate = policy.outcome_rate_hz
    margin = DEFAULT_BIAS_THRESHOLD_MARGIN
    assert margin == policy.bias_threshold_margin > 0.0
    assert policy.threshold_in_use == pytest.approx(budget_threshold(0.5, rate))
    assert policy.bias_threshold == pytest.approx(budget_threshold(0.5, rate) - margin)
    lopsided = Vec3ScalePolicy(bias_budget_share=0.1).at_rate(10.0)
    assert lopsided.threshold_in_use == pytest.approx(budget_threshold(0.9, rate))
    assert lopsided.bias_threshold == pytest.approx(budget_threshold(0.1, rate) - margin)
    bound = Vec3ScalePolicy(bias_threshold_margin=0.0).at_rate(10.0)
    assert bound.bias_threshold == pytest.approx(budget_threshold(0.5, rate))
    assert bound.threshold_in_use == policy.threshold_in_use   # the margin is the channel's own
    off = Vec3ScalePolicy(bias_budget_share=0.0).at_rate(10.0)
    assert off.threshold_in_use == pytest.approx(budget_threshold(1.0, rate))
    assert off.bias_threshold == math.inf and off.bias_step(1e9, 1.0, None) is None
    unbudgeted = Vec3ScalePolicy(false_alarm_budget_per_day=0.0)
    assert unbudgeted.bias_threshold == math.inf
    # A configuration recorded before the channel replays without it, one recorded before the
    # margin at Lorden's bound.
    assert PARAMETERS_ADDED['vec3_scale']['bias_budget_share'] == 0.0
    assert PARAMETERS_ADDED['vec3_scale']['bias_threshold_margin'] == 0.0
    for bad in (0.005, 0.95, -0.1, True):
        with pytest.raises((TypeError, ValueError)):
            Vec3ScalePolicy(bias_budget_share=bad)
    for bad in (-0.5, 10.5, math.nan, math.inf, True, '2'):
        with pytest.raises((TypeError, ValueError)):
            Vec3ScalePolicy(bias_threshold_margin=bad)


def test_bias_step_enters_at_the_threshold_and_leaves_below_half_of_it():
    policy = Vec3ScalePolicy().at_rate(10.0)
    h = policy.bias_threshold
    assert policy.bias_step(h * 0.99, 1.0, None) is None
    assert policy.bias_step(h, 0.6, None) == REASON_BIASED_POSITION
    assert policy.bias_step(h, 0.4, None) == REASON_BIASED_ORIENTATION
    raw = BeliefSelfAssessment(MS, SelfAssessmentLevel.KNOWN)
    loop = FeedbackLoop(LoopConfig.make())
    _outcomes(loop, [0.0] * 20, first=1)
    held = dataclasses_replace_reason(loop.assessment(raw).calibrated, REASON_BIASED_POSITION)
    assert policy.bias_step(h * 0.6, 1.0, held) == REASON_BIASED_POSITION
    assert policy.bias_step(h * 0.4, 1.0, held) is None


def test_the_vectorised_episode_count_follows_bias_step():
    """verification.vec3_sim.bias_episodes (the benches' count) is bias_step's rule, exactly."""
    import numpy as np
    from project_ghost_feedback.verification import vec3_sim

    policy = Vec3ScalePolicy().at_rate(10.0)
    h = policy.bias_threshold
    raw = BeliefSelfAssessment(MS, SelfAssessmentLevel.KNOWN)
    loop = FeedbackLoop(LoopConfig.make())
    _outcomes(loop, [0.0] * 20, first=1)
    held = dataclasses_replace_reason(loop.assessment(raw).calibrated, REASON_BIASED_POSITION)
    rng = np.random.default_rng(5)
    # Evidence around both edges (h and half of it), and exactly on them.
    evidence = rng.choice([0.0, 0.3, 0.5, 0.5001, 0.7, 0.99, 1.0, 1.2], size=(40, 60)) * h
    entries = 0
    for stream in evidence:
        previous = None
        for value in stream:
            reason = policy.bias_step(float(value), 1.0, previous)
            entries += reason is not None and previous is None
            previous = held if reason is not None else None
    assert entries > 40
    assert vec3_sim.bias_episodes(evidence, h) == entries


def dataclasses_replace_reason(calibrated, reason):
    import dataclasses
    return dataclasses.replace(calibrated, adjustment_reason=reason)


def _outcomes(loop, evidence, first=1, distance=1.0, share=1.0):
    for i, value in enumerate(evidence, start=first):
        stamp = i * 100 * MS
        loop.outcome(PredictionOutcome(stamp, stamp, (0.0,) * 3, (0.0,) * 3, distance, distance,
                                       bias_evidence_nats=value, bias_position_share=share))
    return (first + len(evidence) - 1) * 100 * MS


def test_the_loop_downgrades_one_step_on_the_newest_outcomes_evidence():
    loop = FeedbackLoop(LoopConfig.make())
    stamp = _outcomes(loop, [0.0] * 31 + [30.0])
    calibrated = loop.assessment(BeliefSelfAssessment(stamp, SelfAssessmentLevel.KNOWN)).calibrated
    assert calibrated.adjustment_reason == REASON_BIASED_POSITION
    assert calibrated.adjusted_overall_level is SelfAssessmentLevel.UNCERTAIN
    # Held while the evidence stays above half the threshold, then released.
    stamp = _outcomes(loop, [10.0], first=33)
    held = loop.assessment(BeliefSelfAssessment(stamp, SelfAssessmentLevel.KNOWN)).calibrated
    assert held.adjustment_reason == REASON_BIASED_POSITION
    stamp = _outcomes(loop, [5.0], first=34)
    left = loop.assessment(BeliefSelfAssessment(stamp, SelfAssessmentLevel.KNOWN)).calibrated
    assert left.adjusted_overall_level is SelfAssessmentLevel.KNOWN
    # An assessment judged before the biased outcome arrived is not downgraded by it.
    late = FeedbackLoop(LoopConfig.make())
    stamp = _outcomes(late, [0.0] * 31 + [30.0])
    early = late.assessment(BeliefSelfAssessment(stamp - 1, SelfAssessmentLevel.KNOWN))
    assert early.calibrated.adjusted_overall_level is SelfAssessmentLevel.KNOWN


def test_a_scale_downgrade_keeps_its_own_reason_and_old_configurations_have_no_channel():
    loop = FeedbackLoop(LoopConfig.make())
    stamp = _outcomes(loop, [30.0] * 32, distance=3.0)
    calibrated = loop.assessment(BeliefSelfAssessment(stamp, SelfAssessmentLevel.KNOWN)).calibrated
    assert calibrated.adjustment_reason not in (REASON_BIASED_POSITION, REASON_BIASED_ORIENTATION)
    assert calibrated.adjusted_overall_level is not SelfAssessmentLevel.KNOWN
    old = FeedbackLoop(LoopConfig.make(parameters=dict(PARAMETERS_ADDED['vec3_scale'])))
    stamp = _outcomes(old, [1e6] * 32)
    kept = old.assessment(BeliefSelfAssessment(stamp, SelfAssessmentLevel.KNOWN)).calibrated
    assert kept.adjusted_overall_level is SelfAssessmentLevel.KNOWN
    assert old.budget() == {}


def test_the_unverified_rule_still_names_a_silent_source():
    loop = FeedbackLoop(LoopConfig.make())
    stamp = _outcomes(loop, [0.0] * 31 + [30.0])
    later = stamp + 60 * 1000 * MS
    calibrated = loop.assessment(BeliefSelfAssessment(later, SelfAssessmentLevel.KNOWN)).calibrated
    assert calibrated.adjustment_reason == UNVERIFIED_NO_RECENT_OUTCOMES
    assert REASON_OVERCONFIDENT_POSITION != calibrated.adjustment_reason


def _gnss_like(pairing, rng, source, count, offset=0.0, first_ns=0, step_ns=200 * MS):
    """Push ``count`` 2-D position innovations (covariance 4 I m^2) with mean ``offset`` m on x."""
    row = None
    for i in range(count):
        innovation = [rng.gauss(offset, 2.0), rng.gauss(0.0, 2.0)]
        result = pairing.push(source, first_ns + i * step_ns, innovation, [4.0, 0.0, 0.0, 4.0],
                              [KIND_POSITION] * 2)
        row = result if isinstance(result, InnovationOutcome) else row
    return row


def test_an_innovation_source_carries_its_bias_evidence_and_several_share_the_budget():
    """A GNSS-like one-block source, honest, stays below the threshold after its warm-up.

    A bias of 1.5 standard deviations (3 m on 2 m) crosses it, named position; two sources
    report the larger evidence less ln 2.
    """
    threshold = Vec3ScalePolicy().at_rate(2.5).bias_threshold
    rng = random.Random(3)
    honest = InnovationPairing()
    row = _gnss_like(honest, rng, 'gnss', 2 * (WARMUP_OUTCOMES + 2000))
    assert 0.0 <= row.bias_evidence_nats < threshold and row.bias_position_share == 1.0
    biased = InnovationPairing()
    _gnss_like(biased, rng, 'gnss', 2 * WARMUP_OUTCOMES)
    row = _gnss_like(biased, rng, 'gnss', 200, offset=3.0, first_ns=10**15)
    assert row.bias_evidence_nats > threshold and row.bias_position_share == 1.0
    alone = biased.bias_evidence('gnss')[0]
    _gnss_like(biased, rng, 'wheel', 2)   # a second source, still in its warm-up
    evidence, share = biased.bias_evidence('wheel')
    assert evidence == pytest.approx(alone - math.log(2)) and share == 1.0


def test_the_innovation_engine_puts_the_evidence_on_the_outcome_and_the_loop_names_it():
    """A bias of 0.5 standard deviations, which the scale test hardly sees, is named."""
    rng = random.Random(4)
    engine = InnovationEngine('gnss', SelfAssessmentLevel.KNOWN)
    loop = FeedbackLoop(LoopConfig.make())
    reasons = []
    for i in range(2 * WARMUP_OUTCOMES + 1200):
        offset = 1.0 if i >= 2 * WARMUP_OUTCOMES else 0.0
        out = engine.take('gnss', i * 200 * MS, [rng.gauss(offset, 2.0), rng.gauss(0.0, 2.0)],
                          [4.0, 0.0, 0.0, 4.0], [KIND_POSITION] * 2)
        if isinstance(out, InnovationOutputs):
            loop.outcome(out.outcome)
            reasons.append(loop.assessment(out.claim).calibrated.adjustment_reason)
    assert REASON_BIASED_POSITION not in reasons[:WARMUP_OUTCOMES]
    assert REASON_BIASED_POSITION in reasons[WARMUP_OUTCOMES:]
