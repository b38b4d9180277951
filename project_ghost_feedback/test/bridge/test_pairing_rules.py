# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's pairing rules, on its engine (bridge/pairing.py) without ROS.

The node (ros/outcome_bridge_node.py) and ``ghost-feedback evaluate`` drive one engine; here the
engine is driven directly, as the node drives it (support/bridge_engine.py): the same inputs the
DDS tests of test/ros publish, in the same order, with the clock the node would pass. Nothing
waits: the engine is driven by stamps. What only the node shows (QoS, /diagnostics, runtime
parameters through rclpy, its clock, signals, callback errors) stays in test/ros.
"""

import math

import pytest

from project_ghost_feedback.core import SelfAssessmentLevel
from project_ghost_feedback.parameter_spec import ParameterError
from support.bridge_engine import EngineBridge
from support.pose_inputs import (
    COVARIANCE,
    POSE,
    POSE_WITH_COVARIANCE,
    pose_input,
    SECOND_NS,
    UNPACED,
)

TENTH = SECOND_NS // 10


@pytest.mark.parametrize('use_tf', [True, False])
def test_an_estimate_between_references_is_paired_with_their_interpolation(use_tf):
    """References x=0.2 at 1 s and x=0.4 (yaw 0.4) at 3 s, estimate x=0 yaw 0.1 at 2 s, std 0.1.

    The reference interpolated to 2 s is x=0.3, yaw 0.2: d = 3 (position), 1 (orientation). The
    claim: std 0.1 m <= 0.2 m KNOWN, 0.1 rad in (0.05, 0.2] UNCERTAIN, overall the worst. The
    outcome is handed over before the assessment of the same stamp.
    """
    b = EngineBridge(use_tf=use_tf, **UNPACED)
    b.reference(1 * SECOND_NS, x=0.2)
    b.reference(3 * SECOND_NS, x=0.4, yaw=0.4)
    b.estimate(2 * SECOND_NS, x=0.0, yaw=0.1)
    (outcome,) = b.outcomes
    assert outcome.frame_id == 'odom'
    assert outcome.prediction_stamp_sim_ns == outcome.observed_stamp_sim_ns == 2 * SECOND_NS
    assert list(outcome.position_error_m) == pytest.approx([0.3, 0.0, 0.0], abs=1e-12)
    assert list(outcome.orientation_error_rad) == pytest.approx([0.0, 0.0, 0.1], abs=1e-12)
    assert outcome.position_mahalanobis == pytest.approx(3.0, rel=1e-12)
    assert outcome.orientation_mahalanobis == pytest.approx(1.0, rel=1e-12)
    (claim,) = b.assessments
    assert claim.frame_id == 'odom' and claim.belief_stamp_sim_ns == 2 * SECOND_NS
    assert {n.name: n.level for n in claim.block_levels} == {
        'position': SelfAssessmentLevel.KNOWN, 'orientation': SelfAssessmentLevel.UNCERTAIN}
    assert claim.overall_level == SelfAssessmentLevel.UNCERTAIN
    assert [n.name for n in claim.axis_levels] == ['x', 'y', 'z', 'roll', 'pitch', 'yaw']
    assert b.handed.events == [('outcome', 2 * SECOND_NS), ('assessment', 2 * SECOND_NS)]
    assert b.engine.paired == 1 and b.engine.references_used == 2
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}


def test_an_estimate_newer_than_every_reference_waits_for_a_newer_one():
    """Reference at 0, estimate x=-0.1 at 0.5 s: it waits (never paired with a stale one)."""
    b = EngineBridge(**UNPACED)
    b.reference(0)
    b.estimate(SECOND_NS // 2, x=-0.1)
    assert b.engine.paired == 0 and not b.assessments and len(b.engine.pending) == 1
    b.reference(SECOND_NS)
    (outcome,) = b.outcomes
    assert len(b.assessments) == 1 and not b.engine.pending
    assert list(outcome.position_error_m) == pytest.approx([0.1, 0.0, 0.0], abs=1e-12)
    assert outcome.position_mahalanobis == pytest.approx(1.0, rel=1e-12)
    assert b.engine.dropped == {}


@pytest.mark.parametrize('first', ['reference', 'estimate'])
def test_a_backlog_of_both_inputs_pairs_every_estimate(first):
    """10 s of references at 50 Hz and estimates at 10 Hz, taken one of each per turn.

    That is how an executor drains two full queues: estimates run ahead of their references in
    stamp time (up to 7.9 s, beyond max_estimate_wait_s), and their wait must not count as "no
    reference came" while references are still arriving. Every estimate is paired.
    """
    b = EngineBridge(**UNPACED)
    references = [index * SECOND_NS // 50 for index in range(501)]   # 0, 20, ..., 10000 ms
    estimates = [stamp for index, stamp in enumerate(references)
                 if index % 5 == 2 and index < 500]                   # 40, 140, ..., 9940 ms
    assert len(estimates) == 100
    for turn, reference in enumerate(references):
        order = [('reference', reference)]
        if turn < len(estimates):
            order.append(('estimate', estimates[turn]))
        if first == 'estimate':
            order.reverse()
        for kind, stamp in order:
            if kind == 'reference':
                b.reference(stamp, x=0.0)
            else:
                b.estimate(stamp, x=0.1)
        if turn == len(estimates) - 1:
            # References up to 1.98 s taken, estimates up to 9.94 s: those after 1.98 s wait.
            assert len(b.engine.pending) == 80 and b.engine.dropped == {}
    assert b.engine.dropped == {} and not b.engine.pending
    assert b.engine.paired == 100 and len(b.outcomes) == 100 and len(b.assessments) == 100
    assert all(o.position_mahalanobis == pytest.approx(1.0, rel=1e-12) for o in b.outcomes)
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}


def test_estimates_stop_waiting_once_references_stop():
    """References stop at 1 s: an estimate is dropped once max_estimate_wait_s of estimates came.

    The wait counts estimate time from the first estimate after the newest reference, so with
    max_estimate_wait_s = 5 the estimates stamped 1.05 .. 2.05 s are dropped by the one at 7.05 s.
    """
    b = EngineBridge(**UNPACED)
    for index in range(11):
        b.reference(index * TENTH)
    first = SECOND_NS + SECOND_NS // 20
    for index in range(61):   # 1.05 .. 7.05 s
        b.estimate(first + index * TENTH)
    assert b.engine.dropped == {'no_reference_after': 11}
    assert b.engine.paired == 0 and not b.outcomes and len(b.assessments) == 11
    assert [a.belief_stamp_sim_ns for a in b.assessments] == [
        first + index * TENTH for index in range(11)]
    assert len(b.engine.pending) == 50
    b.engine.flush()   # end of input: what still waits is dropped the same way
    assert b.engine.dropped == {'no_reference_after': 61} and len(b.assessments) == 61
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}


def test_a_frame_mismatch_is_refused_and_counted():
    """Reference in map, estimate in odom, no transform (use_tf false): no outcome, counted."""
    b = EngineBridge(use_tf=False, **UNPACED)
    b.reference(0, frame_id='map')
    b.reference(2 * SECOND_NS, frame_id='map')
    b.estimate(SECOND_NS, frame_id='odom')
    b.estimate(SECOND_NS + 1, frame_id='odom')
    assert b.engine.dropped == {'frame_mismatch': 2}
    assert not b.outcomes and len(b.assessments) == 2 and b.engine.paired == 0
    reason, detail = b.handed.dropped[0]
    assert reason == 'frame_mismatch' and "'odom'" in detail and "'map'" in detail
    assert 'transform.*' in detail


def test_a_fixed_transform_relates_the_frames():
    """A reference in map, map -> odom shifted by (1, 0, 0): the estimate at x=1 matches it."""
    b = EngineBridge(**UNPACED, **{
        'transform.enabled': True, 'transform.from_frame_id': 'map',
        'transform.to_frame_id': 'odom', 'transform.translation_m': [1.0, 0.0, 0.0]})
    b.reference(0, frame_id='map')
    b.reference(2 * SECOND_NS, frame_id='map')
    b.estimate(SECOND_NS, frame_id='odom', x=1.0)
    b.estimate(SECOND_NS + TENTH, frame_id='odom', x=0.0)   # where map's origin is: 1 m off
    first, second = b.outcomes
    assert first.position_mahalanobis == pytest.approx(0.0, abs=1e-9)
    assert second.position_mahalanobis == pytest.approx(10.0, rel=1e-12)
    assert b.engine.dropped == {} and b.engine.reference_frame_id == 'odom'


def test_a_gap_and_before_the_buffer_are_dropped_and_counted():
    """Across a reference gap longer than max_reference_gap_s, or before the buffer: dropped."""
    b = EngineBridge(**{**UNPACED, 'max_reference_gap_s': 0.5})
    b.reference(SECOND_NS)
    b.reference(3 * SECOND_NS)
    b.estimate(SECOND_NS // 2)
    b.estimate(2 * SECOND_NS)
    assert b.engine.dropped == {'before_reference_buffer': 1, 'reference_gap': 1}
    assert [reason for reason, _ in b.handed.dropped] == ['before_reference_buffer',
                                                          'reference_gap']
    assert not b.outcomes and len(b.assessments) == 2
    # Within the gap: paired.
    b.set_values(max_reference_gap_s=2.0)
    b.estimate(2 * SECOND_NS + TENTH)
    assert len(b.outcomes) == 1


def test_a_pose_reference_and_a_pose_with_covariance_estimate():
    """PoseStamped reference, PoseWithCovarianceStamped estimate; zero x variance -> +inf."""
    b = EngineBridge(estimate_kind=POSE_WITH_COVARIANCE, reference_kind=POSE, **UNPACED)
    b.reference(0, x=0.1)
    b.reference(SECOND_NS, x=0.1)
    singular = list(COVARIANCE)
    singular[0] = 0.0
    b.estimate(SECOND_NS // 2, covariance=singular)
    (outcome,) = b.outcomes
    assert outcome.position_mahalanobis == math.inf
    assert outcome.orientation_mahalanobis == 0.0
    assert len(b.assessments) == 1
    # A pose without covariance carries no claim: it cannot be an estimate.
    with pytest.raises(TypeError, match='needs a pose covariance'):
        b.engine.take_estimate(pose_input(SECOND_NS, kind=POSE))


def test_the_minimum_interval_paces_outcomes_but_not_assessments():
    """min_interval 0.25 s over estimates 0.1 s apart: outcomes at 0, 0.3, 0.6, 0.9 s."""
    b = EngineBridge(**{**UNPACED, 'decorrelation.method': 'pace',
                        'decorrelation.min_interval_s': 0.25})
    b.reference(0)
    b.reference(2 * SECOND_NS)
    for tenth in range(10):
        b.estimate(tenth * TENTH)
    assert len(b.assessments) == 10
    assert [o.prediction_stamp_sim_ns for o in b.outcomes] == [
        0, 300_000_000, 600_000_000, 900_000_000]
    assert b.engine.paced_out == 6 and len(b.handed.withheld) == 6
    assert b.engine.warming_up == 0 and b.engine.paired == 10


def test_the_warm_up_holds_the_first_outcomes_and_is_validated():
    """decorrelation.warmup_samples: none of the first N paired estimates gives an outcome.

    Their claims are handed over. Out of [2, 1e6] is refused; a valid change restarts the
    pacer's warm-up.
    """
    b = EngineBridge(**{'decorrelation.method': 'pace', 'decorrelation.warmup_samples': 5,
                        'max_reference_gap_s': 5.0})
    b.reference(0)
    b.reference(3 * SECOND_NS)
    # The first sets the mean, the next five update the estimate, each decided before its update.
    for tenth in range(6):
        b.estimate(tenth * TENTH, x=0.05 * tenth)
    assert not b.outcomes and len(b.assessments) == 6
    assert b.engine.warming_up == 6 and b.engine.paced_out == 6 and b.engine.pacer.warm
    b.estimate(6 * TENTH, x=0.3)
    assert [o.prediction_stamp_sim_ns for o in b.outcomes] == [600_000_000]
    assert len(b.assessments) == 7 and b.engine.warming_up == 6
    for bad in (1, 0, 1_000_001):
        with pytest.raises(ParameterError, match='decorrelation.warmup_samples'):
            b.set_values(**{'decorrelation.warmup_samples': bad})
    assert b.engine.pacer.warmup_samples == 5 and b.engine.pacer.warm
    b.set_values(**{'decorrelation.warmup_samples': 7})
    assert b.engine.pacer.warmup_samples == 7 and not b.engine.pacer.warm


def test_a_backward_clock_jump_resets_the_time_ordered_state():
    """The clock jumps back (simulator reset): estimates with the old stamps pair again."""
    b = EngineBridge(**UNPACED)
    b.now_ns = 100 * SECOND_NS
    b.reference(10 * SECOND_NS)
    b.reference(12 * SECOND_NS)
    b.estimate(11 * SECOND_NS)
    assert len(b.outcomes) == 1
    b.engine.clock_jumped(SECOND_NS, 101 * SECOND_NS)   # forward: nothing
    b.engine.clock_jumped(-90 * SECOND_NS, 11 * SECOND_NS)   # back, but nothing ahead of it
    assert b.engine.resets == {}
    b.now_ns = SECOND_NS
    b.engine.clock_jumped(-99 * SECOND_NS, b.now_ns)
    assert b.engine.resets == {'clock_jump': 1} and len(b.engine.buffer) == 0
    assert b.engine.last_estimate_ns is None
    b.reference(1 * SECOND_NS)
    b.reference(3 * SECOND_NS)
    b.estimate(2 * SECOND_NS, x=0.1)
    assert len(b.outcomes) == 2 and b.engine.dropped == {}
    assert b.outcomes[1].position_mahalanobis == pytest.approx(1.0, rel=1e-12)


def test_estimates_and_references_of_different_bodies_are_not_paired():
    """robot1/base_link against robot2/base_link: child_frame_mismatch, unless the map relates them.

    A child_frame_map entry relates two names of one body; one without a colon is refused.
    """
    b = EngineBridge(**UNPACED)

    def send(stamp_s, estimate_child='robot1/base_link', reference_child='robot2/base_link'):
        b.reference(stamp_s * SECOND_NS, child_frame_id=reference_child)
        b.estimate(stamp_s * SECOND_NS, x=0.1, child_frame_id=estimate_child)

    for second in range(1, 7):
        send(second)
    assert b.engine.dropped == {'child_frame_mismatch': 6}
    assert b.engine.paired == 0 and not b.outcomes and len(b.assessments) == 6
    reason, detail = b.handed.dropped[0]
    assert "'robot1/base_link'" in detail and "'robot2/base_link'" in detail
    b.set_values(child_frame_map=['robot1/base_link:robot2/base_link'])
    for second in range(20, 24):
        send(second)
    assert b.engine.paired == 4 and b.engine.dropped == {'child_frame_mismatch': 6}
    with pytest.raises(ParameterError, match='child_frame_map'):
        b.set_values(child_frame_map=['no_colon'])
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}


def test_an_estimate_that_names_no_body_pairs_with_any():
    """Only Odometry names its body: a PoseWithCovarianceStamped estimate is not compared."""
    b = EngineBridge(estimate_kind=POSE_WITH_COVARIANCE, **UNPACED)
    b.reference(0, child_frame_id='robot2/base_link')
    b.estimate(0)
    assert b.engine.paired == 1 and b.engine.dropped == {}
