# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge over real rclpy pub/sub (loopback DDS, a private rclpy.Context per test).

A client node publishes estimates and references (nav_msgs / geometry_msgs messages) into the
bridge's namespace and collects what the bridge publishes on ``prediction_outcome``,
``self_assessment/raw`` and /diagnostics. Waits are bounded polls, never timed assertions. The
expected distances are computed by hand from the poses and covariances sent.

The pairing rules themselves (waiting for a newer reference, estimates that stop waiting, the
fixed transform, pacing, ...) are asserted on the engine in test/bridge/test_pairing_rules.py;
here stays what the node shows: the end-to-end pairing, /diagnostics, the message types it
subscribes, runtime parameters, its clock, the executor's backlog, signals and exit codes.
"""

import math
import subprocess
import sys
import time
import uuid

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from project_ghost_feedback_msgs.msg import (
    PredictionOutcome as PredictionOutcomeMsg,
    SelfAssessmentLevel as SelfAssessmentLevelMsg,
)
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from support.bridge_node import (
    COVARIANCE,
    DEADLINE_S,
    harnesses,
    SECOND_NS,
    set_pose,
    UNPACED,
)


@pytest.fixture
def harness():
    """Return a factory of Harness objects in a private context; all closed afterwards."""
    with harnesses() as make:
        yield make


def test_estimate_between_references_gives_interpolated_outcome_and_claim(harness):
    """References x=0.2 at 1 s and x=0.4 at 3 s, estimate x=0 at 2 s, std 0.1: d = 3."""
    h = harness(**UNPACED)
    h.reference(1 * SECOND_NS, x=0.2)
    h.reference(3 * SECOND_NS, x=0.4, yaw=0.4)
    h.estimate(2 * SECOND_NS, x=0.0, yaw=0.1)
    h.wait_assessments(1)
    h.spin_until(lambda: h.outcomes, 'an outcome')
    (outcome,) = h.outcomes
    assert outcome.header.frame_id == 'odom'
    assert (outcome.header.stamp.sec, outcome.prediction_stamp.sec) == (2, 2)
    assert list(outcome.position_error_m) == pytest.approx([0.3, 0.0, 0.0])
    assert list(outcome.orientation_error_rad) == pytest.approx([0.0, 0.0, 0.1])
    assert outcome.position_mahalanobis == pytest.approx(3.0)
    assert outcome.orientation_mahalanobis == pytest.approx(1.0)
    assert outcome.schema_version == PredictionOutcomeMsg.SCHEMA_VERSION
    (claim,) = h.assessments
    assert claim.header.frame_id == 'odom' and claim.header.stamp.sec == 2
    # std 0.1 m <= 0.2 m: KNOWN; std 0.1 rad in (0.05, 0.2]: UNCERTAIN; overall the worst.
    blocks = {n.name: n.level.value for n in claim.block_levels}
    assert blocks == {'position': SelfAssessmentLevelMsg.KNOWN,
                      'orientation': SelfAssessmentLevelMsg.UNCERTAIN}
    assert claim.overall_level.value == SelfAssessmentLevelMsg.UNCERTAIN
    assert [n.name for n in claim.axis_levels] == ['x', 'y', 'z', 'roll', 'pitch', 'yaw']
    assert h.node.engine.paired == 1


def test_backlog_of_both_inputs_pairs_every_estimate(harness):
    """Both inputs queued before the bridge spins: every estimate is paired, none dropped.

    10 s of references at 50 Hz and estimates at 10 Hz sit in the bridge's input queues. The
    executor takes one message per ready subscription per turn, so estimates run ahead of their
    references in stamp time (4 s per 10 estimates); their wait must not count as "no reference
    came" while references are still arriving.
    """
    h = harness(**UNPACED)
    deep = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                      reliability=ReliabilityPolicy.RELIABLE)
    estimates = h.client.create_publisher(Odometry, 'estimate', deep)
    references = h.client.create_publisher(Odometry, 'reference', deep)
    h.spin_until(lambda: (estimates.get_subscription_count() >= 1
                          and references.get_subscription_count() >= 1), 'deep publishers')
    h.wait_inputs_matched(estimate=2, reference=2)
    for index in range(501):   # references at 0, 20, ..., 10000 ms
        stamp_ns = index * SECOND_NS // 50
        references.publish(set_pose(Odometry(), stamp_ns, 'odom', x=0.0))
        if index % 5 == 2 and index < 500:   # estimates at 40, 140, ..., 9940 ms
            estimates.publish(set_pose(Odometry(), stamp_ns, 'odom', x=0.1,
                                       covariance=COVARIANCE))
    time.sleep(1.0)   # let DDS fill the bridge's queues before it takes anything
    h.spin_until(lambda: (h.node.counts.assessments_published >= 100
                          and h.node.counts.received['reference'] >= 501), 'every input handled')
    assert h.node.counts.received == {'reference': 501, 'estimate': 100}
    assert dict(h.node.engine.dropped) == {}
    assert h.node.engine.paired == 100 and h.node.counts.outcomes_published == 100


def test_frame_mismatch_is_refused_and_counted(harness):
    """Reference in map, estimate in odom, no transform: no outcome, counted, ERROR status.

    Without tf (use_tf false): with it, test_bridge_tf.py covers a missing transform.
    """
    h = harness(**UNPACED, use_tf=False)
    h.reference(0, frame_id='map')
    h.reference(2 * SECOND_NS, frame_id='map')
    h.estimate(SECOND_NS, frame_id='odom')
    h.estimate(SECOND_NS + 1, frame_id='odom')
    h.wait_assessments(2)
    assert h.node.engine.dropped['frame_mismatch'] == 2
    assert not h.outcomes
    h.spin_until(lambda: any(s.level == DiagnosticStatus.ERROR for s in h.diagnostics),
                 'an ERROR status on /diagnostics')
    status = next(s for s in h.diagnostics if s.level == DiagnosticStatus.ERROR)
    assert status.name == f'{h.node.get_fully_qualified_name()}: outcome_bridge'
    values = {kv.key: kv.value for kv in status.values}
    assert values['dropped[frame_mismatch]'] == '2'
    assert values['paired'] == '0'


def test_gap_and_before_buffer_are_dropped_and_counted(harness):
    """Across a reference gap longer than max_reference_gap_s, or before the buffer: dropped."""
    h = harness(**{**UNPACED, 'max_reference_gap_s': 0.5})
    h.reference(SECOND_NS)
    h.reference(3 * SECOND_NS)
    h.estimate(SECOND_NS // 2)
    h.estimate(2 * SECOND_NS)
    h.wait_assessments(2)
    assert dict(h.node.engine.dropped) == {'before_reference_buffer': 1, 'reference_gap': 1}
    assert not h.outcomes
    h.spin_until(lambda: any(s.level == DiagnosticStatus.WARN for s in h.diagnostics),
                 'a WARN status on /diagnostics')


def test_pose_reference_and_pose_with_covariance_estimate(harness):
    """PoseStamped reference, PoseWithCovarianceStamped estimate; zero x variance -> +inf."""
    h = harness(estimate_type=PoseWithCovarianceStamped, reference_type=PoseStamped, **UNPACED)
    h.reference(0, x=0.1)
    h.reference(SECOND_NS, x=0.1)
    singular = list(COVARIANCE)
    singular[0] = 0.0
    h.estimate(SECOND_NS // 2, covariance=singular)
    h.spin_until(lambda: h.outcomes, 'an outcome')
    assert h.outcomes[0].position_mahalanobis == math.inf
    assert h.outcomes[0].orientation_mahalanobis == 0.0
    h.wait_assessments(1)


def test_parameters_validated_on_set(harness):
    """Inconsistent thresholds and read-only parameters are refused; a valid change applies."""
    h = harness()
    node = h.node
    refused = node.set_parameters([Parameter('position_known_max_std_m', value=5.0)])
    assert not refused[0].successful and 'thresholds' in refused[0].reason
    read_only = node.set_parameters([Parameter('estimate_type', value='pose_with_covariance')])
    assert not read_only[0].successful
    bad_axis = node.set_parameters([Parameter('ignored_axes', value=['w'])])
    assert not bad_axis[0].successful
    ok = node.set_parameters([Parameter('max_reference_gap_s', value=2.0)])
    assert ok[0].successful
    assert node.engine.buffer.max_gap_ns == 2 * SECOND_NS


def test_warm_up_holds_the_first_outcomes_and_is_validated(harness):
    """decorrelation.warmup_samples: none of the first N paired estimates gives an outcome.

    Their claims are published; /diagnostics says the bridge is warming up. Out of [2, 1e6]
    (or a non-integer) is refused with a reason; a valid change restarts the pacer's warm-up.
    """
    h = harness(**{'decorrelation.method': 'pace', 'decorrelation.warmup_samples': 5,
                   'max_reference_gap_s': 5.0})
    node = h.node
    h.reference(0)
    h.reference(3 * SECOND_NS)
    # The first sets the mean, the next five update the estimate, each decided before its update.
    for tenth in range(6):
        h.estimate(tenth * SECOND_NS // 10, x=0.05 * tenth)
    h.wait_assessments(6)
    assert node.counts.outcomes_published == 0 and node.engine.warming_up == 6
    status = node.diagnostic_status()
    values = {kv.key: kv.value for kv in status.values}
    assert values['decorrelation_warm'] == 'True' and values['decorrelation_method'] == 'pace'
    assert values['outcomes_withheld_warming_up'] == '6'
    h.estimate(6 * SECOND_NS // 10, x=0.3)
    h.wait_assessments(7)
    h.spin_until(lambda: h.outcomes, 'the first outcome after the warm-up')
    assert h.outcomes[0].header.stamp.nanosec == 600_000_000
    for bad in (1, 0, 1_000_001):
        refused = node.set_parameters([Parameter('decorrelation.warmup_samples', value=bad)])
        assert not refused[0].successful, bad
    assert node.engine.pacer.warmup_samples == 5
    assert node.set_parameters([Parameter('decorrelation.warmup_samples', value=7)])[0].successful
    assert node.engine.pacer.warmup_samples == 7 and not node.engine.pacer.warm


def test_backward_clock_jump_resets_time_ordered_state(harness):
    """Sim time jumps back (simulator reset): estimates with the old stamps pair again."""
    h = harness(use_sim_time=True, **UNPACED)
    set_clock = h.set_clock
    set_clock(100)
    h.reference(10 * SECOND_NS)
    h.reference(12 * SECOND_NS)
    h.estimate(11 * SECOND_NS)
    h.spin_until(lambda: h.outcomes, 'an outcome before the jump')
    set_clock(1)
    h.spin_until(lambda: h.node.engine.resets['clock_jump'] >= 1, 'the jump to be seen')
    h.reference(1 * SECOND_NS)
    h.reference(3 * SECOND_NS)
    h.estimate(2 * SECOND_NS, x=0.1)
    h.spin_until(lambda: len(h.outcomes) >= 2, 'an outcome after the jump')
    assert h.node.engine.dropped['estimate_not_newer'] == 0
    assert h.outcomes[1].position_mahalanobis == pytest.approx(1.0)


def _bridge_command(*ros_args):
    return [sys.executable, '-m', 'project_ghost_feedback.ros.outcome_bridge_node',
            '--ros-args', *ros_args]


@pytest.mark.parametrize('signum', ['SIGTERM', 'SIGINT'])
def test_signal_stops_the_bridge_process_cleanly(signum):
    """SIGTERM / SIGINT: exit 0, no traceback."""
    import signal
    process = subprocess.Popen(
        _bridge_command('-r', f'__ns:=/bridge_signal_{uuid.uuid4().hex[:8]}'),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + DEADLINE_S * 2
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            lines.append(line)
            if 'outcome bridge ready' in line or not line:
                break
        assert 'outcome bridge ready' in lines[-1], ''.join(lines)
        process.send_signal(getattr(signal, signum))
        returncode = process.wait(timeout=10.0)
        stderr = ''.join(lines) + process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert returncode == 0, stderr
    assert 'Traceback' not in stderr


@pytest.mark.parametrize(('argument', 'reason'), [
    ('estimate_type:=imu', 'estimate_type'),
    ('position_known_max_std_m:=9.0', 'thresholds'),
    ('decorrelation.warmup_samples:=1', 'decorrelation.warmup_samples'),
])
def test_invalid_start_up_parameter_exits_2_with_a_logged_reason(argument, reason):
    """An invalid parameter: exit 2, the reason on the ROS logger, no traceback."""
    completed = subprocess.run(_bridge_command('-p', argument), capture_output=True, text=True,
                               timeout=DEADLINE_S * 2)
    assert completed.returncode == 2, completed.stderr
    assert 'Traceback' not in completed.stderr
    assert reason in completed.stderr and '[outcome_bridge]' in completed.stderr
