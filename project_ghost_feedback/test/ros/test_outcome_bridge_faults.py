# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge against bad inputs, time resets, losses, several publishers and QoS.

Real rclpy pub/sub in a private context per test (the Harness of test_outcome_bridge_node.py).
Waits are on progress (messages seen), with generous ceilings; nothing asserts on time. The
engine's rules for the same inputs (refusals by reason, future stamps, restarts, resets in either
order) are asserted without DDS in test/bridge/test_pairing_resets.py.
"""

import math
import time

from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import (
    HistoryPolicy,
    qos_profile_sensor_data,
    QoSProfile,
    ReliabilityPolicy,
)
from support.bridge_node import (
    COVARIANCE,
    harnesses,
    odometry,
    SECOND_NS,
    UNPACED,
)
from support.bad_estimates import BAD_ESTIMATES, EXPECTED_REASON

BEST_EFFORT = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                         reliability=ReliabilityPolicy.BEST_EFFORT)


@pytest.fixture
def harness():
    """Return a factory of bridge Harness objects in a private context (closed afterwards)."""
    with harnesses() as make:
        yield make


def _values(status):
    return {kv.key: kv.value for kv in status.values}


def _pairs(h, first_s, count, period_ns=SECOND_NS // 10):
    """Send ``count`` reference + estimate pairs from ``first_s``; wait until each is handled."""
    start = first_s * SECOND_NS
    for index in range(count):
        stamp = start + index * period_ns
        h.reference(stamp)
        h.estimate(stamp, x=0.1)


def test_bad_estimates_are_refused_with_a_reason_and_publish_nothing(harness):
    """Every bad quaternion / covariance class: counted by reason, no outcome, no claim."""
    h = harness(**{**UNPACED, 'max_reference_gap_s': 200.0})
    h.reference(0)
    h.reference(100 * SECOND_NS)
    for index, (name, fields) in enumerate(BAD_ESTIMATES.items()):
        received = h.node.counts.received['estimate']
        h.estimate_publisher.publish(odometry((index + 1) * SECOND_NS, **fields))
        h.spin_until(lambda: h.node.counts.received['estimate'] > received, name)
        assert h.node.engine.dropped[EXPECTED_REASON[name]] >= 1, (
            name, dict(h.node.engine.dropped))
    assert sum(h.node.engine.dropped.values()) == len(BAD_ESTIMATES)
    assert not h.outcomes and not h.assessments and h.node.engine.paired == 0
    # A bad reference is refused too, and a valid estimate still pairs.
    received = h.node.counts.received['reference']
    h.reference_publisher.publish(odometry(50 * SECOND_NS, quaternion=(0.0, 0.0, 0.0, 0.0)))
    h.spin_until(lambda: h.node.counts.received['reference'] > received, 'a bad reference')
    assert dict(h.node.engine.references_dropped) == {'quaternion_zero': 1}
    h.estimate(60 * SECOND_NS)
    h.spin_until(lambda: h.outcomes, 'an outcome after the bad inputs')
    assert h.node.accounting() == {'estimate': 0, 'reference': 0}
    assert h.node.health.callback_errors == {}


def test_future_estimate_stamp_is_refused_and_never_becomes_newest(harness):
    """An estimate stamped 2^31-10 s: future_stamp; the next normal pairs all pair."""
    h = harness(**UNPACED)
    now_s = h.node.get_clock().now().nanoseconds // SECOND_NS
    h.reference((now_s - 10) * SECOND_NS)
    received = h.node.counts.received['estimate']
    h.estimate_publisher.publish(odometry((2**31 - 10) * SECOND_NS))
    h.spin_until(lambda: h.node.counts.received['estimate'] > received, 'the future estimate')
    assert dict(h.node.engine.dropped) == {'future_stamp': 1}
    _pairs(h, now_s - 9, 20)
    h.spin_until(lambda: h.node.engine.paired >= 19, '19 pairs')
    assert dict(h.node.engine.dropped) == {'future_stamp': 1}


@pytest.mark.parametrize('order', ['clock_first', 'inputs_first'])
def test_sim_reset_resumes_pairing_whatever_the_order(harness, order):
    """/clock goes back from 1000 s to 1 s; inputs restart at 1 s; a pre-reset estimate is late.

    Whichever of /clock and the inputs shows the reset first, pairing resumes within one
    reference period after it, and the late estimate (stamped before the reset, delivered after
    it) never blocks the new timeline.
    """
    h = harness(use_sim_time=True, **UNPACED)
    set_clock = h.set_clock
    set_clock(1000)
    _pairs(h, 990, 5)
    before = h.node.engine.paired
    assert before >= 4
    if order == 'clock_first':
        set_clock(1)
    h.reference(1 * SECOND_NS)
    late = h.node.counts.received['estimate']
    h.estimate_publisher.publish(odometry(995 * SECOND_NS))   # stamped before the reset
    h.spin_until(lambda: h.node.counts.received['estimate'] > late, 'the late estimate')
    if order == 'inputs_first':
        set_clock(1)
    h.reference(SECOND_NS + SECOND_NS // 10)
    h.estimate(SECOND_NS + SECOND_NS // 20)
    h.reference(SECOND_NS + 2 * SECOND_NS // 10)   # one reference period later
    h.spin_until(lambda: h.node.engine.paired > before, 'a pair after the reset')
    _pairs(h, 2, 10)
    h.spin_until(lambda: h.node.engine.paired >= before + 10, 'pairing on the new timeline')
    assert sum(h.node.engine.resets.values()) >= 1
    assert h.node.engine.dropped['estimate_not_newer'] == 0
    assert h.node.accounting() == {'estimate': 0, 'reference': 0}


def test_burst_beyond_the_queue_is_accounted_for(harness):
    """500 estimates into a queue of 10 before the bridge spins: received + missed = sent."""
    h = harness(input_qos_depth=10, **UNPACED)
    h.estimate(SECOND_NS)        # the sequence baseline
    sent = 500
    for index in range(sent):
        h.estimate_publisher.publish(odometry(2 * SECOND_NS + index * 1000))
    time.sleep(1.0)              # let DDS deliver (and overwrite) before the bridge takes any
    missed = h.node.health.sequences['estimate']
    h.spin_until(lambda: h.node.counts.received['estimate'] + missed.missed >= sent + 1,
                 'every estimate received or counted missing')
    assert h.node.counts.received['estimate'] < sent
    assert h.node.counts.received['estimate'] + missed.missed == sent + 1
    assert h.node.accounting() == {'estimate': 0, 'reference': 0}
    h.spin_until(lambda: any(_values(s).get('estimate_messages_missed', '0') != '0'
                             and s.level >= DiagnosticStatus.WARN for s in h.diagnostics),
                 'messages_missed on /diagnostics')


def test_two_publishers_warn_and_level_returns_to_ok(harness):
    """A second estimate publisher: WARN with the count; gone again: back to OK."""
    h = harness(**UNPACED, diagnostics_period_s=0.2)
    second = h.client.create_publisher(Odometry, 'estimate', BEST_EFFORT)
    stamp = [SECOND_NS]

    def feed_until(condition, what):
        def step():
            h.reference(stamp[0])
            h.estimate(stamp[0])
            stamp[0] += SECOND_NS // 10
            return condition()
        h.spin_until(step, what)

    def latest():
        return h.diagnostics[-1] if h.diagnostics else None

    feed_until(lambda: latest() is not None and _values(latest())['estimate_publishers'] == '2'
               and '2 publishers' in latest().message, 'estimate_publishers 2')
    assert latest().level == DiagnosticStatus.WARN
    h.client.destroy_publisher(second)
    feed_until(lambda: latest().level == DiagnosticStatus.OK, 'OK after the publisher left')
    assert _values(latest())['estimate_publishers'] == '1'


def test_no_publisher_is_warn_and_silence_is_stale(harness):
    """No input at all: WARN for the missing publishers, STALE once silent for stale_after_s."""
    h = harness(**UNPACED, diagnostics_period_s=0.1, stale_after_s=0.5)
    h.client.destroy_publisher(h.estimate_publisher)
    h.spin_until(lambda: any(s.level == DiagnosticStatus.STALE for s in h.diagnostics),
                 'a STALE status')
    stale = next(s for s in h.diagnostics if s.level == DiagnosticStatus.STALE)
    assert 'no publisher matched' in stale.message or 'received for' in stale.message
    assert not any(s.level == DiagnosticStatus.OK for s in h.diagnostics)


def test_a_reference_of_another_type_is_named_with_its_type(harness):
    """PoseStamped published where Odometry is read: ERROR naming both types, not "no match"."""
    from geometry_msgs.msg import PoseStamped

    import rclpy
    from support.ros_context import new_rclpy_context

    h = harness(**UNPACED, diagnostics_period_s=0.1)
    h.client.destroy_publisher(h.reference_publisher)
    # Another process's publisher (one participant cannot hold two types on a topic).
    context = new_rclpy_context()
    other = rclpy.create_node('wrong_type_reference', context=context)
    try:
        other.create_publisher(PoseStamped, f'{h.namespace}/reference', 10)

        def named():
            return any('published as geometry_msgs/msg/PoseStamped' in s.message
                       for s in h.diagnostics)
        h.spin_until(named, 'a status naming the type offered')
    finally:
        other.destroy_node()
        context.try_shutdown()
    status = next(s for s in h.diagnostics
                  if 'published as geometry_msgs/msg/PoseStamped' in s.message)
    assert status.level == DiagnosticStatus.ERROR
    assert 'the bridge reads nav_msgs/msg/Odometry (reference_type)' in status.message
    assert _values(status)['reference_type_offered'] == 'geometry_msgs/msg/PoseStamped'


@pytest.mark.parametrize('profile', ['best_effort', 'sensor_data'])
def test_best_effort_publishers_are_matched_by_default(harness, profile):
    """A best-effort publisher and the sensor-data profile both reach the bridge and pair."""
    h = harness(**UNPACED)
    qos = BEST_EFFORT if profile == 'best_effort' else qos_profile_sensor_data
    estimates = h.client.create_publisher(Odometry, 'estimate', qos)
    h.spin_until(lambda: estimates.get_subscription_count() >= 1, 'the match')
    h.wait_inputs_matched(estimate=2)
    h.reference(0)
    h.reference(SECOND_NS)
    h.client.destroy_publisher(h.estimate_publisher)
    paired = [0.0]

    def send():
        if time.monotonic() - paired[0] > 0.1:   # best effort: resend until one arrives
            estimates.publish(odometry(SECOND_NS // 2, x=0.1))
            paired[0] = time.monotonic()
        return h.node.engine.paired >= 1

    h.spin_until(send, 'a pair from a best-effort publisher')
    h.spin_until(lambda: h.outcomes, 'the outcome')
    assert h.outcomes[0].position_mahalanobis == pytest.approx(1.0)


def test_qos_override_and_incompatible_publisher_are_reported(harness):
    """qos_overrides make the input reliable; a best-effort publisher is then incompatible."""
    h = harness(**UNPACED)
    topic = f'{h.namespace}_qos/estimate'
    assert h.node.get_parameter(
        f'qos_overrides.{h.namespace}/estimate.subscription.reliability').value == 'best_effort'
    from project_ghost_feedback.ros.outcome_bridge_node import OutcomeBridge
    override = OutcomeBridge(
        context=h.node.context, namespace=f'{h.namespace}_qos',
        parameter_overrides=[Parameter(
            f'qos_overrides.{topic}.subscription.reliability', value='reliable')])
    h.executor.add_node(override)
    try:
        publisher = h.client.create_publisher(Odometry, topic, BEST_EFFORT)
        h.spin_until(lambda: override.counts.incompatible_qos['estimate'] >= 1,
                     'an incompatible QoS event')
        assert publisher.get_subscription_count() == 0
        status = override.diagnostic_status()
        assert _values(status)['estimate_incompatible_qos'] != '0'
        assert status.level != DiagnosticStatus.OK
    finally:
        h.executor.remove_node(override)
        override.destroy_node()


def test_parameter_names_and_reasons_are_checked(harness):
    """Undeclared (also empty) names refused; a 1 MB bad value gives a short reason."""
    node = harness().node
    (empty,) = node.set_parameters([Parameter('', value=1.0)])
    assert not empty.successful and 'not a parameter' in empty.reason
    (huge,) = node.set_parameters([Parameter('ignored_axes', value=['w' * 1_000_000])])
    assert not huge.successful and len(huge.reason) < 1000
    (ok,) = node.set_parameters([Parameter('time_jump_tolerance_s', value=2.0)])
    assert ok.successful
    assert node.config['time_jump_tolerance_ns'] == 2 * SECOND_NS


def test_an_exception_in_a_callback_is_counted_and_the_estimate_accounted(harness):
    """A fault inside the data path: counted under callback_errors, ERROR, the bridge runs on."""
    h = harness(**{**UNPACED, 'decorrelation.method': 'pace'})
    h.reference(0)
    h.reference(SECOND_NS)
    pacer = h.node.engine.pacer
    h.node.engine.pacer = None            # the next pairing raises AttributeError
    h.estimate(SECOND_NS // 2)
    assert dict(h.node.health.callback_errors) == {'AttributeError': 1}
    assert h.node.accounting() == {'estimate': 0, 'reference': 0}
    assert h.node.engine.paired == 1 and not h.outcomes   # paired, then the pacer failed
    h.node.engine.pacer = pacer
    h.spin_until(lambda: any(s.level == DiagnosticStatus.ERROR and 'AttributeError' in s.message
                             for s in h.diagnostics), 'the error on /diagnostics')
    h.estimate(SECOND_NS * 3 // 4)
    h.spin_until(lambda: h.outcomes, 'an outcome after the fault')


def _calibrated_msg(distance, count=32):
    """Return a CalibratedSelfAssessment message judged on ``count`` outcomes at ``distance``."""
    from project_ghost_feedback.core import (
        BeliefSelfAssessment,
        PredictionOutcome,
        SelfAssessmentLevel,
    )
    from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
    from project_ghost_feedback.ros.conversions import calibrated_to_msg

    loop = FeedbackLoop(LoopConfig.make())
    for index in range(count):
        loop.outcome(PredictionOutcome(
            prediction_stamp_sim_ns=index * SECOND_NS, observed_stamp_sim_ns=index * SECOND_NS,
            position_error_m=(0.0, 0.0, 0.0), orientation_error_rad=(0.0, 0.0, 0.0),
            position_mahalanobis=distance, orientation_mahalanobis=distance, frame_id='odom'))
    raw = BeliefSelfAssessment(belief_stamp_sim_ns=(count + 8) * SECOND_NS,
                               overall_level=SelfAssessmentLevel.KNOWN, frame_id='odom')
    return calibrated_to_msg(loop.assessment(raw).calibrated)


@pytest.mark.parametrize('case', ['zero_distances', 'ignored_orientation', 'huge_variances'])
def test_the_calibrated_estimate_never_carries_a_zero_or_infinite_variance(harness, case):
    """Issue 34 findings 2 and 3: a block without evidence gets 1; a non-finite product is not sent.

    ``zero_distances``: a calibrated message whose 32 distances are 0 (deflation allowed) made
    every variance 0. ``ignored_orientation``: roll, pitch and yaw ignored, deflation allowed:
    the orientation block's k was 0, its variances published as 0. ``huge_variances``: variances
    of 1e305 times a factor of 100 were published as inf with /diagnostics OK.
    """
    from project_ghost_feedback_msgs.msg import CalibratedSelfAssessment

    parameters = {'calibrated_estimate.enabled': True}
    if case != 'huge_variances':
        parameters['calibrated_estimate.allow_deflation'] = True
    if case == 'ignored_orientation':
        parameters['ignored_axes'] = ['roll', 'pitch', 'yaw']
    h = harness(**UNPACED, **parameters)
    received = []
    h.client.create_subscription(Odometry, 'estimate/calibrated', received.append,
                                 QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                                            reliability=ReliabilityPolicy.RELIABLE))
    feedback = h.client.create_publisher(CalibratedSelfAssessment, 'self_assessment/calibrated',
                                         10)
    h.spin_until(lambda: feedback.get_subscription_count() >= 1, 'the feedback topic to match')
    if case == 'zero_distances':
        feedback.publish(_calibrated_msg(0.0))
        h.spin_until(lambda: h.node.calibrated_estimate.history is not None, 'the spoofed history')
    elif case == 'huge_variances':
        feedback.publish(_calibrated_msg(1e3))
        h.spin_until(lambda: h.node.calibrated_estimate.factors[0] == 100.0, 'a factor of 100')
    covariance = list(COVARIANCE)
    if case == 'huge_variances':
        covariance = [value * 1e305 / COVARIANCE[0] for value in COVARIANCE]
    if case == 'ignored_orientation':
        # The bridge's own outcomes feed the factor: orientation distances are all 0 here.
        from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
        from project_ghost_feedback.ros.conversions import calibrated_to_msg, outcome_from_msg
        from project_ghost_feedback.core import BeliefSelfAssessment, SelfAssessmentLevel
        for index in range(8):
            h.reference(index * SECOND_NS, yaw=0.3)
            h.estimate(index * SECOND_NS, x=0.05, yaw=0.0)
        h.spin_until(lambda: len(h.outcomes) >= 8, '8 outcomes')
        loop = FeedbackLoop(LoopConfig.make())
        for msg in h.outcomes:
            loop.outcome(outcome_from_msg(msg))
        raw = BeliefSelfAssessment(belief_stamp_sim_ns=20 * SECOND_NS,
                                   overall_level=SelfAssessmentLevel.KNOWN, frame_id='odom')
        calibrated = loop.assessment(raw).calibrated
        assert set(calibrated.calibration_history.orientation_squared_distances) == {0.0}
        feedback.publish(calibrated_to_msg(calibrated))
        h.spin_until(lambda: h.node.calibrated_estimate.history is not None, 'the history')
    published = len(received)
    h.reference(30 * SECOND_NS)
    h.reference(32 * SECOND_NS)
    h.estimate(31 * SECOND_NS, covariance=covariance)
    if case == 'huge_variances':
        h.spin_until(lambda: sum(h.node.calibrated_estimate.refused.values()) == 1,
                     'the refusal to be counted')
        count = len(h.diagnostics)
        h.spin_until(lambda: len(h.diagnostics) > count + 1, 'a status after the refusal')
        statuses = h.diagnostics[count:]
        assert any(s.level == DiagnosticStatus.WARN and 'calibrated estimate not published'
                   in s.message for s in statuses), [s.message for s in statuses]
        values = _values(statuses[-1])
        assert values['calibrated_estimates_not_published'] == '1'
        assert values['calibrated_estimates_not_published[calibrated_covariance_not_finite]'] \
            == '1'
        assert len(received) == published
        return
    h.spin_until(lambda: len(received) > published, 'a calibrated estimate')
    variances = [received[-1].pose.covariance[7 * i] for i in range(6)]
    assert all(math.isfinite(v) and v > 0.0 for v in variances), variances
    # No evidence: factor 1 for that block, the estimator's own variances.
    assert variances[3:] == pytest.approx([COVARIANCE[7 * i] for i in range(3, 6)])
    if case == 'zero_distances':
        assert h.node.calibrated_estimate.factors == (1.0, 1.0)


def test_estimates_and_references_of_different_bodies_are_not_paired(harness):
    """Issue 34 finding 9: robot1/base_link against robot2/base_link paired without a word.

    They are counted as child_frame_mismatch (ERROR on /diagnostics while nothing pairs); a
    child_frame_map entry relates two names of one body.
    """
    h = harness(**UNPACED)

    def send(stamp_s, estimate_child, reference_child):
        reference = odometry(stamp_s * SECOND_NS)
        reference.child_frame_id = reference_child
        received = h.node.counts.received['reference']
        h.reference_publisher.publish(reference)
        h.spin_until(lambda: h.node.counts.received['reference'] > received, 'a reference')
        estimate = odometry(stamp_s * SECOND_NS, x=0.1)
        estimate.child_frame_id = estimate_child
        received = h.node.counts.received['estimate']
        h.estimate_publisher.publish(estimate)
        h.spin_until(lambda: h.node.counts.received['estimate'] > received, 'an estimate')

    for second in range(1, 6):
        send(second, 'robot1/base_link', 'robot2/base_link')
    send(6, 'robot1/base_link', 'robot2/base_link')
    h.spin_until(lambda: h.node.engine.dropped['child_frame_mismatch'] >= 5, 'the mismatches')
    assert h.node.engine.paired == 0 and not h.outcomes
    count = len(h.diagnostics)
    h.spin_until(lambda: len(h.diagnostics) > count, 'a status')
    status = h.diagnostics[-1]
    assert status.level == DiagnosticStatus.ERROR and 'different bodies' in status.message
    assert int(_values(status)['dropped[child_frame_mismatch]']) >= 5
    # Related by the map: they pair.
    h.node.set_parameters([Parameter('child_frame_map',
                                     value=['robot1/base_link:robot2/base_link'])])
    for second in range(20, 24):
        send(second, 'robot1/base_link', 'robot2/base_link')
    h.spin_until(lambda: h.node.engine.paired >= 2, 'pairs once the map relates the bodies')
    refused = h.node.set_parameters([Parameter('child_frame_map', value=['no_colon'])])[0]
    assert not refused.successful and 'child_frame_map' in refused.reason
