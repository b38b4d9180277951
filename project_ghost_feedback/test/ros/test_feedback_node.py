# SPDX-License-Identifier: Apache-2.0
"""The feedback node over real rclpy pub/sub (loopback DDS, a private rclpy.Context per test).

Each in-process test builds a FeedbackNode and a client node in a namespace of its own (the node's
topic names are relative, /diagnostics is filtered by the node's name), publishes contracts
converted to messages, and polls with ``spin_once`` until a condition holds or a bounded deadline
passes: nothing here asserts on elapsed time. The expected outputs always come from the pure
``assess_with_feedback`` over the same inputs, compared as whole CalibratedSelfAssessment
objects. Process tests start ``python -m project_ghost_feedback.ros.feedback_node`` (and the
installed ``feedback_node`` executable) in this test's environment and stop them with signals.
"""

import collections
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

from ament_index_python.packages import get_package_prefix
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from std_srvs.srv import Trigger
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from support.contracts import named_level_msg
from support.ros_context import publish_clock_until, spin_in_turn
import numpy as np
import pytest
import rclpy
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rcl_interfaces.srv import SetParameters
from rosgraph_msgs.msg import Clock

from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    assess_with_feedback,
    DEFAULT_MAX_HISTORY,
    format_overconfidence,
    make_policy,
    MahalanobisDowngradePolicy,
    REASON_CALIBRATION_WITHIN_TOLERANCE,
    REASON_DOWNGRADE_FROM_CALIBRATION,
    REASON_NO_OUTCOMES_YET,
    REASON_UNDERCONFIDENT_CALIBRATION,
)
from project_ghost_feedback.ros.conversions import (
    belief_to_msg,
    calibrated_from_msg,
    ns_to_stamp,
    outcome_to_msg,
    stamp_to_ns,
)
from project_ghost_feedback.ros.feedback_node import EXECUTORS, FeedbackNode, make_executor

DEADLINE_S = 15.0
"""Upper bound for any wait; a healthy run needs a small fraction of it."""
SECOND_NS = 1_000_000_000
QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE)
REFERENCE = 'mahalanobis_downgrade'
LEVELS = (SelfAssessmentLevel.KNOWN, SelfAssessmentLevel.UNCERTAIN, SelfAssessmentLevel.UNKNOWN)
PACKAGE = 'project_ghost_feedback'


# -- input streams (contracts) -------------------------------------------------------------------

def make_outcome(observed_ns, position_d, orientation_d, rng):
    """Return a valid PredictionOutcome observed at ``observed_ns`` with the given distances."""
    return PredictionOutcome(
        prediction_stamp_sim_ns=max(0, observed_ns - rng.randrange(1, SECOND_NS // 2)),
        observed_stamp_sim_ns=observed_ns,
        position_error_m=tuple(rng.uniform(-0.5, 0.5) for _ in range(3)),
        orientation_error_rad=tuple(rng.uniform(-0.05, 0.05) for _ in range(3)),
        position_mahalanobis=position_d,
        orientation_mahalanobis=orientation_d,
    )


def make_raw(step, rng, level=None):
    """Return the raw assessment of ``step`` (belief stamp ``(step + 1)`` s) with named levels."""
    return BeliefSelfAssessment(
        belief_stamp_sim_ns=(step + 1) * SECOND_NS,
        overall_level=level if level is not None else LEVELS[step % 3],
        axis_levels=(NamedLevel('position_x', rng.choice(LEVELS)),
                     NamedLevel('yaw', rng.choice(LEVELS))),
        block_levels=(NamedLevel('pose', rng.choice(LEVELS)),),
    )


def make_stream(kind, steps=10, per_step=4, seed=0, level=None):
    """Return ``[(outcomes, raw), ...]``: per step, outcomes observed in ``(step, step + 1]`` s.

    ``kind`` is ``'overconfident'`` (distances beyond 3, some ``+inf``) or ``'calibrated'``
    (distances at most 2.5, so the reference policy never downgrades).
    """
    rng = random.Random(f'{kind}-{seed}')
    stream = []
    for step in range(steps):
        outcomes = []
        for j in range(per_step):
            observed = step * SECOND_NS + (j + 1) * (SECOND_NS // (per_step + 1))
            if kind == 'overconfident':
                position = math.inf if rng.random() < 0.1 else rng.uniform(3.5, 25.0)
                orientation = rng.uniform(0.0, 8.0)
            else:
                position, orientation = rng.uniform(0.0, 2.5), rng.uniform(0.0, 2.5)
            outcomes.append(make_outcome(observed, position, orientation, rng))
        stream.append((outcomes, make_raw(step, rng, level)))
    return stream


def expected_outputs(stream, policy=None, max_history=DEFAULT_MAX_HISTORY):
    """Return the pure function's CalibratedSelfAssessment per step for the ordered stream."""
    policy = policy or make_policy(REFERENCE)
    seen, expected = [], []
    for outcomes, raw in stream:
        seen.extend(outcomes)
        expected.append(assess_with_feedback(raw, list(seen), policy, max_history))
    return expected


# -- harness --------------------------------------------------------------------------------------

def diagnostic_values(status):
    """Return the key/value pairs of a DiagnosticStatus as a dict."""
    return {kv.key: kv.value for kv in status.values}


class Harness:
    """A FeedbackNode under test plus a client node, each on its own executor, one context.

    The node runs on the executor named ``executor`` (see EXECUTORS); the client (publishers of
    the inputs and of /clock, subscribers of the output and of /diagnostics) always runs on a
    SingleThreadedExecutor. Both live in a fresh namespace, so tests cannot see each other.
    """

    def __init__(self, context, executor='single_threaded', **parameters):
        # The tests' expectations are computed with the ADR reference policy (REFERENCE).
        parameters.setdefault('policy', REFERENCE)
        # The node's executor parameter names the executor it runs on (it adapts its callbacks).
        parameters['executor'] = executor
        self.context = context
        self.namespace = f'/gf_test_{uuid.uuid4().hex[:12]}'
        self.node = FeedbackNode(
            context=context, namespace=self.namespace,
            parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()])
        self.client = rclpy.create_node(
            'feedback_test_client', namespace=self.namespace, context=context)
        self.node_executor = make_executor(executor, context)
        self.node_executor.add_node(self.node)
        self.client_executor = SingleThreadedExecutor(context=context)
        self.client_executor.add_node(self.client)

        self.outputs = []
        self.diagnostics = []
        self._matched = collections.Counter()
        self.outcome_publisher = self._publisher(PredictionOutcomeMsg, 'prediction_outcome')
        self.raw_publisher = self._publisher(BeliefSelfAssessmentMsg, 'self_assessment/raw')
        self.clock_publisher = self.client.create_publisher(Clock, '/clock', 10)
        self.client.create_subscription(
            CalibratedSelfAssessmentMsg, 'self_assessment/calibrated', self.outputs.append, QOS,
            event_callbacks=SubscriptionEventCallbacks(
                matched=lambda info: self._on_matched('output', info)))
        self.client.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 100)
        # DDS-level matches (not only the ROS graph), so that no early message is lost.
        self.spin_until(
            lambda: all(self._matched[k] >= 1 for k in ('outcome', 'raw', 'output')),
            'the node and the client to match')

    def _on_matched(self, key, info):
        self._matched[key] = info.current_count

    def _publisher(self, msg_type, topic):
        key = 'outcome' if msg_type is PredictionOutcomeMsg else 'raw'
        return self.client.create_publisher(
            msg_type, topic, QOS, event_callbacks=PublisherEventCallbacks(
                matched=lambda info: self._on_matched(key, info)))

    def _on_diagnostics(self, array):
        name = self.node.get_fully_qualified_name()
        stamp_ns = array.header.stamp.sec * SECOND_NS + array.header.stamp.nanosec
        self.diagnostics.extend((s, stamp_ns) for s in array.status if s.hardware_id == name)

    def spin_until(self, condition, what, deadline_s=DEADLINE_S):
        """Spin both executors until ``condition()`` is true; fail after ``deadline_s``."""
        deadline = time.monotonic() + deadline_s
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f'timed out waiting for {what}: received {dict(self.node.counts.received)}, '
                    f'rejected {dict(self.node.health.rejected)}, '
                    f'published {self.node.counts.published}, '
                    f'{len(self.outputs)} outputs received')
            spin_in_turn(self.node_executor, self.client_executor)

    def publish_outcome(self, outcome):
        """Publish a PredictionOutcome contract (or an already built message)."""
        msg = outcome if isinstance(outcome, PredictionOutcomeMsg) else outcome_to_msg(outcome)
        self.outcome_publisher.publish(msg)

    def publish_raw(self, raw):
        """Publish a BeliefSelfAssessment contract (or an already built message)."""
        msg = raw if isinstance(raw, BeliefSelfAssessmentMsg) else belief_to_msg(raw)
        self.raw_publisher.publish(msg)

    def wait_received(self, outcomes=None, assessments=None):
        """Wait until the node has taken that many outcome / assessment messages in total."""
        received = self.node.counts.received
        self.spin_until(
            lambda: ((outcomes is None or received['outcome'] >= outcomes)
                     and (assessments is None or received['assessment'] >= assessments)),
            f'the node to receive {outcomes} outcomes and {assessments} assessments')
        assert outcomes is None or received['outcome'] == outcomes
        assert assessments is None or received['assessment'] == assessments

    def wait_outputs(self, count):
        """Wait until the client has ``count`` outputs; return them as contracts."""
        self.spin_until(lambda: len(self.outputs) >= count, f'{count} calibrated outputs')
        assert len(self.outputs) == count
        return [calibrated_from_msg(m) for m in self.outputs]

    def run_stream(self, stream):
        """Publish ``stream`` step by step (outcomes, then the raw assessment); return outputs.

        Each step waits until the node has taken the step's outcomes before the assessment is
        published, so the result does not depend on delivery timing across the two topics.
        """
        outcomes_sent = self.node.counts.received['outcome']
        start = len(self.outputs)
        for index, (outcomes, raw) in enumerate(stream):
            for outcome in outcomes:
                self.publish_outcome(outcome)
            outcomes_sent += len(outcomes)
            self.wait_received(outcomes=outcomes_sent)
            self.publish_raw(raw)
            self.wait_outputs(start + index + 1)
        return [calibrated_from_msg(m) for m in self.outputs[start:]]

    def wait_diagnostics(self, condition, what):
        """Wait for a status of this node with ``condition(status, stamp_ns)``; return it.

        Statuses seen while waiting are consumed.
        """
        found = []

        def check():
            found.extend(s for s, stamp_ns in self.diagnostics if condition(s, stamp_ns))
            self.diagnostics.clear()
            return bool(found)

        self.spin_until(check, what)
        return found[0]

    def publish_clock(self, nanoseconds):
        """Publish /clock (again every 50 ms) until the node's clock reads ``nanoseconds``."""
        publish_clock_until(self.spin_until, self.clock_publisher, self.node, nanoseconds)

    def close(self):
        """Shut the executors down and destroy both nodes."""
        for executor in (self.node_executor, self.client_executor):
            executor.shutdown()
        self.node.destroy_node()
        self.client.destroy_node()


@pytest.fixture
def harness(rclpy_context):
    """Return a factory of Harness objects in this test's rclpy context; all closed afterwards."""
    made = []

    def make(**kwargs):
        made.append(Harness(rclpy_context, **kwargs))
        return made[-1]

    try:
        yield make
    finally:
        for item in made:
            item.close()


# -- (1) (2) downgrade and passthrough, exactly as the pure function ---------------------------

@pytest.mark.parametrize('executor', EXECUTORS)
def test_overconfident_stream_downgrades_exactly_as_assess_with_feedback(harness, executor):
    """An overconfident stream: every output equals assess_with_feedback on the same inputs."""
    stream = make_stream('overconfident', steps=10, per_step=4)
    h = harness(executor=executor)
    outputs = h.run_stream(stream)
    expected = expected_outputs(stream)
    assert outputs == expected
    # Every step is one level down: 4 outcomes per step reach min_outcomes from the first one.
    assert all(o.adjustment_reason == REASON_DOWNGRADE_FROM_CALIBRATION for o in outputs)
    assert [o.adjusted_overall_level for o in outputs] == [
        raw.overall_level.downgraded() for _, raw in stream]
    assert outputs[-1].calibration_history.outcomes_considered == DEFAULT_MAX_HISTORY
    assert h.node.counts.published == len(stream)


def test_overconfident_stream_with_small_window_and_few_outcomes(harness):
    """Below min_outcomes the node passes through; max_history bounds the window, as the ADR."""
    stream = make_stream('overconfident', steps=8, per_step=1, seed=3)
    h = harness(max_history=5)
    outputs = h.run_stream(stream)
    expected = expected_outputs(stream, max_history=5)
    assert outputs == expected
    assert [o.calibration_history.outcomes_considered for o in outputs] == [1, 2, 3, 4, 5, 5, 5, 5]
    assert [o.was_downgraded for o in outputs[:3]] == [False] * 3
    assert all(o.adjustment_reason == REASON_DOWNGRADE_FROM_CALIBRATION for o in outputs[3:])


def test_calibrated_stream_passes_through(harness):
    """A calibrated stream: the raw assessment passes through unchanged, reasons as the ADR."""
    stream = make_stream('calibrated', steps=8, per_step=3, seed=1)
    h = harness()
    no_outcome_raw = make_raw(-1, random.Random(9), SelfAssessmentLevel.UNCERTAIN)
    h.publish_raw(no_outcome_raw)  # belief stamp 0: before every outcome
    first = h.wait_outputs(1)[0]
    assert first == assess_with_feedback(no_outcome_raw, [], make_policy(REFERENCE))
    assert first.adjustment_reason == REASON_NO_OUTCOMES_YET
    outputs = h.run_stream(stream)
    assert outputs == expected_outputs(stream)
    for output, (_, raw) in zip(outputs, stream):
        assert output.raw_assessment == raw
        assert output.adjusted_overall_level == raw.overall_level
        assert output.adjustment_reason == REASON_CALIBRATION_WITHIN_TOLERANCE


# -- (3) arrival order and duplicates do not matter ----------------------------------------------

def test_out_of_order_and_duplicate_outcomes_match_the_ordered_stream(harness):
    """Outcomes shuffled, duplicated and sent ahead of time give the ordered stream's outputs."""
    stream = make_stream('overconfident', steps=8, per_step=4, seed=5)
    expected = expected_outputs(stream)
    rng = random.Random(11)
    # Outcomes up to 8 s out of order: a tolerance above that (a backward jump beyond it resets).
    h = harness(time_jump_tolerance_s=60.0)

    # All outcomes of the run first, shuffled, a third of them twice: future outcomes wait in
    # the buffer until the assessment whose belief stamp covers them.
    outcomes = [o for step_outcomes, _ in stream for o in step_outcomes]
    duplicates = rng.sample(outcomes, len(outcomes) // 3)
    sent = outcomes + duplicates
    rng.shuffle(sent)
    for outcome in sent:
        h.publish_outcome(outcome)
    h.wait_received(outcomes=len(sent))
    assert h.node.counts.duplicates == len(duplicates)
    for index, (_, raw) in enumerate(stream):
        h.publish_raw(raw)
        h.wait_outputs(index + 1)
    assert [calibrated_from_msg(m) for m in h.outputs] == expected


def test_interleaved_reversed_and_late_duplicates_match_the_ordered_stream(harness):
    """Per step: next step's outcomes early, this step's reversed, old duplicates after it."""
    stream = make_stream('overconfident', steps=8, per_step=4, seed=6)
    expected = expected_outputs(stream)
    h = harness()
    sent = 0
    duplicates = 0
    published = set()
    for index, (outcomes, raw) in enumerate(stream):
        batch = list(reversed(outcomes))
        if index + 1 < len(stream):
            batch += stream[index + 1][0][:2]  # two outcomes of the future, ahead of time
        if index > 0:
            batch += stream[index - 1][0][-1:]  # a duplicate of one already used
        for outcome in batch:
            duplicates += outcome in published
            published.add(outcome)
            h.publish_outcome(outcome)
        sent += len(batch)
        h.wait_received(outcomes=sent)
        h.publish_raw(raw)
        h.wait_outputs(index + 1)
    assert [calibrated_from_msg(m) for m in h.outputs] == expected
    assert h.node.counts.duplicates == duplicates
    assert h.node.counts.late_outcomes == 0


@pytest.mark.parametrize('executor', EXECUTORS)
def test_burst_is_drained_before_each_assessment(harness, executor):
    """A burst (no waiting between steps) under each executor gives the ordered outputs.

    The two topics race in the executor (SingleThreadedExecutor takes one message per ready
    subscription per wait): with ``assessment_hold_s`` the node holds each assessment until the
    outcomes sent before it are in, so every output equals the ordered stream's.
    """
    stream = make_stream('overconfident', steps=10, per_step=6, seed=8)
    h = harness(executor=executor, assessment_hold_s=1.0)
    for outcomes, raw in stream:
        for outcome in outcomes:
            h.publish_outcome(outcome)
        h.publish_raw(raw)
    outputs = h.wait_outputs(len(stream))
    assert outputs == expected_outputs(stream)
    assert h.node.counts.late_outcomes == 0


# -- (4) bad input --------------------------------------------------------------------------------

def _bad_outcomes(good):
    """Return ``[(message, expected rejection key), ...]`` derived from a valid outcome."""
    def variant(change):
        msg = outcome_to_msg(good)
        change(msg)
        return msg

    def set_item(field, index, value):
        return lambda m: getattr(m, field).__setitem__(index, value)

    return [
        (variant(lambda m: setattr(m, 'position_mahalanobis', math.nan)),
         'outcome:nan:PredictionOutcome.position_mahalanobis'),
        (variant(lambda m: setattr(m, 'orientation_mahalanobis', -1.0)),
         'outcome:negative:PredictionOutcome.orientation_mahalanobis'),
        (variant(set_item('position_error_m', 1, math.inf)),
         'outcome:not_finite:PredictionOutcome.position_error_m[1]'),
        (variant(set_item('orientation_error_rad', 2, math.nan)),
         'outcome:nan:PredictionOutcome.orientation_error_rad[2]'),
        (variant(lambda m: setattr(m, 'schema_version', 1)),
         'outcome:unsupported_schema_version:PredictionOutcome.schema_version'),
        (variant(lambda m: setattr(m, 'prediction_stamp', ns_to_stamp(
            stamp_to_ns(m.header.stamp, '', '') + 1))),
         'outcome:stamp_order:PredictionOutcome.observed_stamp_sim_ns'),
        (variant(lambda m: setattr(m.prediction_stamp, 'sec', -1)),
         'outcome:negative:PredictionOutcome.prediction_stamp_sim_ns'),
        (variant(lambda m: setattr(m.header.stamp, 'nanosec', 10**9)),
         'outcome:out_of_range:PredictionOutcome.header.stamp.nanosec'),
    ]


def _bad_assessments(good):
    """Return ``[(message, expected rejection key), ...]`` derived from a valid assessment."""
    def variant(change):
        msg = belief_to_msg(good)
        change(msg)
        return msg

    return [
        (variant(lambda m: setattr(m.overall_level, 'value', 7)),
         'assessment:unknown_level:SelfAssessmentLevel.value'),
        (variant(lambda m: setattr(m, 'schema_version', 0)),
         'assessment:unsupported_schema_version:BeliefSelfAssessment.schema_version'),
        (variant(lambda m: setattr(m.header.stamp, 'sec', -1)),
         'assessment:negative:BeliefSelfAssessment.belief_stamp_sim_ns'),
        (variant(lambda m: setattr(
            m, 'axis_levels', [named_level_msg('Position X', 0)])),
         'assessment:bad_taxonomy:NamedLevel.name'),
        (variant(lambda m: setattr(m, 'block_levels', [named_level_msg('', 1)])),
         'assessment:bad_taxonomy:NamedLevel.name'),
        (variant(lambda m: setattr(m, 'axis_levels', [
            named_level_msg('yaw', 0), named_level_msg('yaw', 1)])),
         'assessment:duplicate_name:BeliefSelfAssessment.axis_levels'),
        (variant(lambda m: setattr(m, 'block_levels', [named_level_msg('pose', 9)])),
         'assessment:unknown_level:SelfAssessmentLevel.value'),
    ]


def test_every_bad_message_is_rejected_and_counted_while_good_traffic_continues(harness):
    """Bad messages are dropped and counted per reason; the good traffic's outputs are exact.

    Only the inputs are checked: CalibrationHistory exists only in the node's output, so its
    inconsistencies cannot come in.
    """
    stream = make_stream('overconfident', steps=8, per_step=3, seed=4)
    h = harness(diagnostics_period_s=0.1, reject_log_throttle_s=0.0)
    bad_outcomes = _bad_outcomes(stream[0][0][0])
    bad_assessments = _bad_assessments(stream[0][1])
    expected_rejections = collections.Counter(
        key for _, key in bad_outcomes + bad_assessments)
    outcomes_sent = assessments_sent = 0
    for index, (outcomes, raw) in enumerate(stream):
        # Bad messages between the good ones, on both topics, before the step's assessment.
        batch = list(outcomes)
        if index < len(bad_outcomes):
            batch.insert(1, bad_outcomes[index][0])
        for outcome in batch:
            h.publish_outcome(outcome)
        outcomes_sent += len(batch)
        h.wait_received(outcomes=outcomes_sent)
        if index < len(bad_assessments):
            h.publish_raw(bad_assessments[index][0])
            assessments_sent += 1
        h.publish_raw(raw)
        assessments_sent += 1
        h.wait_received(assessments=assessments_sent)
        h.wait_outputs(index + 1)
    assert len(bad_outcomes) <= len(stream) and len(bad_assessments) <= len(stream)

    assert [calibrated_from_msg(m) for m in h.outputs] == expected_outputs(stream)
    assert h.node.health.rejected == expected_rejections
    assert h.node.counts.published == len(stream)
    total = sum(expected_rejections.values())

    status = h.wait_diagnostics(
        lambda s, _: diagnostic_values(s).get('published') == str(len(stream)),
        '/diagnostics after the last output')
    values = diagnostic_values(status)
    for key, count in expected_rejections.items():
        assert values[f'rejected[{key}]'] == str(count)
    assert values['outcomes_received'] == str(outcomes_sent)
    assert values['assessments_received'] == str(assessments_sent)
    assert values['rejected_total'] == str(total)
    assert values['last_reject_reason'].startswith(('assessment: ', 'outcome: '))
    # ADR-0026a: how overconfident each vec3 is, from the last output's schema-2 history.
    expected = format_overconfidence(calibrated_from_msg(h.outputs[-1]).calibration_history)
    assert values['overconfidence[position]'] == expected['position'] != ''
    assert values['overconfidence[orientation]'] == expected['orientation'] != ''
    assert re.fullmatch(r'\S+ \[\S+, \S+\]', values['overconfidence[position]'])
    # Beside k, the window's error in metres and degrees (here all 24 good outcomes: fewer than
    # max_history), computed independently with numpy: RMSE of the norms.
    good = [outcome for outcomes, _ in stream for outcome in outcomes]
    assert len(good) < 32
    position = np.linalg.norm([o.position_error_m for o in good], axis=1)
    rotation = np.degrees(np.linalg.norm([o.orientation_error_rad for o in good], axis=1))
    assert float(values['window_position_error_rmse_m']) == pytest.approx(
        math.sqrt(np.mean(position ** 2)), abs=1e-4)
    assert float(values['window_rotation_error_rmse_deg']) == pytest.approx(
        math.sqrt(np.mean(rotation ** 2)), abs=1e-3)
    assert ' m' in values['window_error'] and ' deg' in values['window_error']


# -- (5) parameters -------------------------------------------------------------------------------

@pytest.mark.parametrize(('overrides', 'reason'), [
    ({'policy': 'no_such_policy'}, "policy 'no_such_policy' is not registered"),
    ({'max_history': 0}, 'max_history'),
    ({'max_history': 'many'}, 'max_history'),
    ({'bucket_likelihood_ratio.degrees_of_freedom': 4}, 'degrees_of_freedom'),
    ({'calibrated_exceedance.max_window': 4096}, 'max_window'),
    ({'mahalanobis_downgrade.min_outcomes': 0}, 'min_outcomes'),
    ({'mahalanobis_downgrade.downgrade_threshold': 1.5}, 'downgrade_threshold'),
    ({'calibrated_exceedance.false_alarm_probability': 2.0}, 'false_alarm_probability'),
    ({'diagnostics_period_s': 0.0}, 'diagnostics_period_s'),
    ({'executor': 'multi_threaded'}, 'executor'),
    ({'position_components': 0}, 'position_components'),
    ({'orientation_components': 4}, 'orientation_components'),
    ({'record_topics': ['/odom:nav_msgs/msg/Odometry']},
     'record_topics records into the telemetry bag: set telemetry_bag or telemetry_dir'),
    ({'record_topics': ['/odom:nav_msgs/msg/Odometry'] * 2, 'telemetry_bag': '/tmp/never_made'},
     'record_topics names a topic twice'),
    ({'record_topics': ['odom'], 'telemetry_bag': '/tmp/never_made'},
     "record_topics entry 'odom' is not '/topic:pkg/msg/Type'"),
], ids=lambda value: '-'.join(map(str, value)) if isinstance(value, dict) else None)
def test_invalid_parameters_are_rejected_at_start(rclpy_context, overrides, reason):
    """Constructing the node with an invalid override raises ValueError with the reason."""
    with pytest.raises(ValueError, match=reason) as error:
        FeedbackNode(
            context=rclpy_context,
            parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
    assert str(error.value).startswith('invalid parameters: ')


def test_max_history_above_the_buffer_size_needs_no_order(harness):
    """max_history above outcome_buffer_size is accepted in any order; the buffer grows to it."""
    h = harness(max_history=8, outcome_buffer_size=8)
    node = h.node
    assert node.set_parameters([Parameter('max_history', value=64)])[0].successful
    assert diagnostic_values(node.diagnostic_status())['buffer_fill'] == '0/64'
    assert node.set_parameters([Parameter('outcome_buffer_size', value=16)])[0].successful
    assert diagnostic_values(node.diagnostic_status())['buffer_fill'] == '0/64'
    assert node.set_parameters([Parameter('outcome_buffer_size', value=128)])[0].successful
    assert diagnostic_values(node.diagnostic_status())['buffer_fill'] == '0/128'


def test_invalid_parameter_changes_are_rejected_and_the_old_config_kept(harness):
    """set_parameters refuses invalid values with a reason; the node keeps working as before."""
    stream = make_stream('overconfident', steps=6, per_step=4, seed=2)
    h = harness(max_history=8)
    h.run_stream(stream[:3])
    node = h.node
    names = node.list_parameters([], 0).names
    before = {name: node.get_parameter(name).value for name in names}
    refused = [
        (Parameter('max_history', value=0), 'max_history'),
        (Parameter('bucket_likelihood_ratio.degrees_of_freedom', value=64),
         'degrees_of_freedom'),
        (Parameter('calibrated_exceedance.max_window', value=4096), 'max_window'),
        (Parameter('policy', value='no_such_policy'), 'no_such_policy'),
        (Parameter('mahalanobis_downgrade.downgrade_threshold', value=0), 'downgrade_threshold'),
        (Parameter('mahalanobis_downgrade.min_outcomes', value='four'), 'Type.INTEGER'),
        (Parameter('bucket_likelihood_ratio.min_outcomes', value=-3), 'min_outcomes'),
        (Parameter('diagnostics_period_s', value=0.0), 'diagnostics_period_s'),
        (Parameter('stale_after_s', value=-1.0), 'stale_after_s'),
    ]
    for parameter, reason in refused:
        result, = node.set_parameters([parameter])
        assert result.successful is False, parameter.name
        assert reason in result.reason, (parameter.name, result.reason)
    # A batch with one bad value is refused as a whole.
    result = node.set_parameters_atomically([
        Parameter('mahalanobis_downgrade.downgrade_threshold', value=50),
        Parameter('max_history', value=0)])
    assert result.successful is False
    after = {name: node.get_parameter(name).value for name in names}
    assert after == before
    assert h.run_stream(stream[3:]) == expected_outputs(stream, max_history=8)[3:]


@pytest.mark.parametrize(('name', 'value'), [
    ('input_qos_depth', 5),
    ('output_qos_depth', 5),
    ('executor', 'events'),
    ('telemetry_bag', '/tmp/never_written'),
    ('telemetry_dir', '/tmp/never_written'),
    ('telemetry_queue_size', 5),
])
def test_read_only_parameters_refuse_change(rclpy_context, name, value):
    """Topics, QoS depths, the executor and the telemetry bag are fixed at start."""
    node = FeedbackNode(context=rclpy_context)
    try:
        before = node.get_parameter(name).value
        result, = node.set_parameters([Parameter(name, value=value)])
        assert result.successful is False
        assert name in result.reason
        assert node.get_parameter(name).value == before
    finally:
        node.destroy_node()


def _set_over_service(h, parameters):
    """Set parameters through the node's /set_parameters service; return the results."""
    client = h.client.create_client(
        SetParameters, f'{h.node.get_fully_qualified_name()}/set_parameters')
    try:
        h.spin_until(lambda: client.service_is_ready(), 'the set_parameters service')
        future = client.call_async(
            SetParameters.Request(parameters=[p.to_parameter_msg() for p in parameters]))
        h.spin_until(future.done, 'the set_parameters response')
        return future.result().results
    finally:
        h.client.destroy_client(client)


def test_valid_parameter_changes_take_effect_on_the_next_assessment(harness):
    """Policy parameter, policy and max_history changes apply without a restart."""
    stream = make_stream('overconfident', steps=8, per_step=4, seed=7)
    h = harness()
    expected = expected_outputs(stream)
    assert h.run_stream(stream[:2]) == expected[:2]
    assert all(o.was_downgraded for o in expected[:2])

    # Over the ROS service, as `ros2 param set` would do it.
    result, = _set_over_service(
        h, [Parameter('mahalanobis_downgrade.downgrade_threshold', value=1000)])
    assert result.successful, result.reason
    lenient = MahalanobisDowngradePolicy(downgrade_threshold=1000)
    outputs = h.run_stream(stream[2:4])
    assert outputs == expected_outputs(stream, policy=lenient)[2:4]
    assert not any(o.was_downgraded for o in outputs)

    result, = h.node.set_parameters([Parameter('policy', value='calibrated_exceedance')])
    assert result.successful, result.reason
    exceedance = make_policy('calibrated_exceedance')
    assert h.run_stream(stream[4:6]) == expected_outputs(stream, policy=exceedance)[4:6]

    result, = h.node.set_parameters([Parameter('max_history', value=3)])
    assert result.successful, result.reason
    outputs = h.run_stream(stream[6:])
    assert outputs == expected_outputs(stream, policy=exceedance, max_history=3)[6:]
    assert all(o.calibration_history.outcomes_considered == 3 for o in outputs)


def test_the_vec3_components_give_the_k_the_node_publishes(harness):
    """position_components 2, orientation_components 1: the k the node publishes uses them.

    A planar source (issue 43 item 5): the loop's config, the OverconfidenceEstimate and the
    /diagnostics k are read with the components.
    """
    from project_ghost_feedback.core.feedback import format_overconfidence
    from project_ghost_feedback.core.feedback.overconfidence import estimate_overconfidence
    from project_ghost_feedback.ros.conversions import overconfidence_to_msg

    stream = make_stream('calibrated', steps=4, per_step=4, seed=7)
    h = harness()
    result = h.node.set_parameters_atomically([Parameter('position_components', value=2),
                                               Parameter('orientation_components', value=1)])
    assert result.successful, result.reason
    assert h.node.config.loop.vec3_components == (2, 1)
    h.run_stream(stream)
    calibrated = h.node.verdict.calibrated
    history = calibrated.calibration_history
    fixed = estimate_overconfidence(history, (2, 1))
    msg = overconfidence_to_msg(calibrated, h.node.config.loop.vec3_components)
    assert msg.position_k_hat == fixed['position'].k_hat != estimate_overconfidence(
        history)['position'].k_hat
    assert msg.orientation_k_high == fixed['orientation'].high
    values = {kv.key: kv.value for kv in h.node.diagnostic_status().values}
    assert values['overconfidence[position]'] == format_overconfidence(history, (2, 1))[
        'position']


# -- (6) (7) time and diagnostics -----------------------------------------------------------------

@pytest.mark.parametrize('executor', EXECUTORS)
def test_diagnostics_keep_flowing_and_say_so_when_sim_time_stalls(harness, executor):
    """Diagnostics run on steady time: when /clock stops, they keep flowing and say so.

    With use_sim_time the node clock follows /clock; the statuses keep their stalled sim stamp.
    """
    h = harness(executor=executor, use_sim_time=True, stale_after_s=3600.0,
                diagnostics_period_s=0.1)
    start_ns = 100 * SECOND_NS
    h.publish_clock(start_ns)
    assert h.node.get_clock().ros_time_is_active
    h.run_stream(make_stream('calibrated', steps=1, per_step=2, seed=12))
    # Statuses published before the node clock read /clock (stamp 0) may still be queued on a
    # loaded machine: wait for the first one stamped on the sim clock, then collect from there.
    h.wait_diagnostics(lambda s, stamp_ns: stamp_ns == start_ns, 'a status on the sim clock')
    stamps = set()
    status = h.wait_diagnostics(
        lambda s, stamp_ns: stamps.add(stamp_ns) or diagnostic_values(s)['clock_stalled'] == 'True',
        'a diagnostics status saying the clock stalled')
    assert 'node clock stalled' in status.message
    assert stamps == {start_ns}
    assert diagnostic_values(status)['node_clock_ns'] == str(start_ns)


def _phase(h, start_s, seconds, rate_hz, scale, rng):
    """Publish ``seconds`` of 10 Hz traffic (one outcome per assessment) from sim ``start_s``."""
    steps = int(seconds * rate_hz)
    period_ns = SECOND_NS // rate_hz
    base_ns = int(start_s * SECOND_NS)
    for chunk in range(0, steps, 100):
        stamps = [base_ns + (i + 1) * period_ns for i in range(chunk, min(chunk + 100, steps))]
        h.publish_clock(stamps[-1])
        for stamp in stamps:
            distance = scale * math.sqrt(sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(3)))
            h.publish_outcome(make_outcome(stamp - period_ns // 2, distance, distance / 2, rng))
            h.publish_raw(BeliefSelfAssessment(stamp, SelfAssessmentLevel.KNOWN))
        h.wait_outputs(len(h.outputs) + len(stamps))


@pytest.mark.long
def test_sim_reset_resets_the_window_and_overconfidence_is_caught_after_it(harness):
    """150 s at 10 Hz calibrated, then a sim reset to t=0 with 50x overconfident outcomes.

    The backward /clock jump (or the inputs' stamps going back, whichever the node sees first)
    resets the window once: the output downgrades within the policy's usual delay instead of
    passing KNOWN through as ``no_outcomes_yet`` forever, and /diagnostics counts the reset.
    """
    rng = random.Random(21)
    h = harness(use_sim_time=True, policy='calibrated_exceedance', stale_after_s=3600.0,
                diagnostics_period_s=0.1, assessment_hold_s=0.05)
    h.publish_clock(SECOND_NS)
    _phase(h, 1.0, 150.0, 10, 1.0, rng)
    before = len(h.outputs)
    assert before == 1500
    calm = [calibrated_from_msg(m) for m in h.outputs[-1000:]]
    assert sum(o.was_downgraded for o in calm) <= 10
    # The sim restarts at t = 0 with an estimator 50x overconfident.
    h.publish_clock(0)
    _phase(h, 0.0, 2.0, 10, 50.0, rng)
    after = [calibrated_from_msg(m) for m in h.outputs[before:]]
    assert len(after) == 20
    first = next(i for i, o in enumerate(after) if o.was_downgraded)
    assert first < 5, [o.adjustment_reason for o in after[:8]]
    assert all(o.was_downgraded for o in after[first:])
    assert sum(h.node.counts.resets.values()) == 1
    status = h.wait_diagnostics(
        lambda s, _: diagnostic_values(s)['resets_total'] == '1', 'the reset on /diagnostics')
    assert status.level in (DiagnosticStatus.WARN, DiagnosticStatus.ERROR)
    assert diagnostic_values(status)['last_reset_reason'].split(':')[0] in (
        'clock_jump', 'input_stamp_jump')


def test_reset_service_clears_the_window(harness):
    """~/reset (std_srvs/Trigger) clears the window: the next assessment sees no outcomes."""
    h = harness()
    h.run_stream(make_stream('overconfident', steps=3, per_step=4, seed=4))
    client = h.client.create_client(Trigger, f'{h.namespace}/feedback_node/reset')
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(Trigger.Request())
    h.spin_until(future.done, 'the reset response')
    assert future.result().success and '12 outcomes dropped' in future.result().message
    h.publish_raw(BeliefSelfAssessment(10 * SECOND_NS, SelfAssessmentLevel.KNOWN))
    output = h.wait_outputs(4)[-1]
    assert output.calibration_history.outcomes_considered == 0
    assert h.node.counts.resets == {'service': 1}


def test_diagnostic_name_is_unique_per_node_instance(rclpy_context):
    """Two namespaced nodes publish distinct status names, '<fully qualified name>: calibration'."""
    nodes = [FeedbackNode(context=rclpy_context, namespace=f'/robot{i}') for i in (1, 2)]
    try:
        names = [n.diagnostic_status().name for n in nodes]
        assert names == ['/robot1/feedback_node: calibration', '/robot2/feedback_node: calibration']
    finally:
        for node in nodes:
            node.destroy_node()


def test_diagnostics_warn_when_downgraded_and_report_counts(harness):
    """WARN while the calibrated level is below the raw one, OK once it is not; counts reported."""
    h = harness(diagnostics_period_s=0.1, stale_after_s=3600.0)
    overconfident = make_stream('overconfident', steps=3, per_step=4, seed=13,
                                level=SelfAssessmentLevel.KNOWN)
    h.run_stream(overconfident)
    status = h.wait_diagnostics(
        lambda s, _: diagnostic_values(s).get('published') == '3', 'diagnostics after 3 outputs')
    values = diagnostic_values(status)
    assert status.level == DiagnosticStatus.WARN, status.message
    assert 'UNCERTAIN' in status.message and 'KNOWN' in status.message
    assert values['raw_level'] == 'KNOWN'
    assert values['calibrated_level'] == 'UNCERTAIN'
    assert values['status'] == 'WARN'  # the level by name (ros2 topic echo shows a byte)
    assert 'real error std over the claimed std' in values['overconfidence_is']
    assert values['last_reason'] == REASON_DOWNGRADE_FROM_CALIBRATION
    assert values['outcomes_received'] == '12'
    assert values['assessments_received'] == '3'
    assert values['rejected_total'] == '0'
    assert values['duplicates_dropped'] == '0'
    assert values['buffer_fill'] == '12/1024'
    assert values['max_history'] == str(DEFAULT_MAX_HISTORY)
    assert values['policy'] == REFERENCE
    # The harness's client is the one matched publisher of each input.
    assert (values['outcome_publishers'], values['assessment_publishers']) == ('1', '1')

    # Raw already UNKNOWN: the policy still reports the evidence but the level is not below raw.
    unknown = BeliefSelfAssessment(4 * SECOND_NS, SelfAssessmentLevel.UNKNOWN)
    h.publish_raw(unknown)
    h.wait_outputs(4)
    h.wait_diagnostics(
        lambda s, _: diagnostic_values(s).get('published') == '4', 'diagnostics after 4 outputs')
    # The next period starts from the last assessment's severity: no downgrade in it, OK.
    status = h.wait_diagnostics(lambda s, _: True, 'the next period')
    assert status.level == DiagnosticStatus.OK, status.message
    assert diagnostic_values(status)['calibrated_level'] == 'UNKNOWN'


def test_diagnostics_stale_without_outcomes(harness):
    """No outcome for stale_after_s (node clock): STALE, even while assessments flow."""
    h = harness(diagnostics_period_s=0.1, stale_after_s=0.3)
    h.publish_raw(make_raw(0, random.Random(3)))
    h.wait_outputs(1)
    # A STALE status of the period before the output may still be queued: wait for one after it.
    status = h.wait_diagnostics(
        lambda s, _: s.level == DiagnosticStatus.STALE and diagnostic_values(s)['published'] == '1',
        'a STALE diagnostic after the output')
    assert 'no outcome received' in status.message


def test_diagnostics_report_underconfidence_without_raising_the_level(harness):
    """Errors far inside the claim: /diagnostics says underconfident, counts it, stays OK."""
    graded = 'overconfidence_scale'
    h = harness(policy=graded, diagnostics_period_s=0.1, stale_after_s=3600.0)
    rng = random.Random(41)
    stream = []
    for step in range(4):
        outcomes = [make_outcome(step * SECOND_NS + (j + 1) * (SECOND_NS // 5),
                                 rng.uniform(0.0, 0.9), rng.uniform(0.0, 0.9), rng)
                    for j in range(2 if step == 0 else 4)]
        stream.append((outcomes, make_raw(step, rng, SelfAssessmentLevel.KNOWN)))
    expected = expected_outputs(stream, make_policy(graded))
    reasons = [e.adjustment_reason for e in expected]
    # Not trivial: the first assessment (2 outcomes, below min_outcomes) is not underconfident.
    assert reasons[0] != REASON_UNDERCONFIDENT_CALIBRATION
    assert reasons[-1] == REASON_UNDERCONFIDENT_CALIBRATION
    outputs = h.run_stream(stream)
    assert outputs == expected
    assert all(o.adjusted_overall_level is SelfAssessmentLevel.KNOWN for o in outputs)
    status = h.wait_diagnostics(
        lambda s, _: diagnostic_values(s).get('published') == '4', 'diagnostics after 4 outputs')
    values = diagnostic_values(status)
    assert status.level == DiagnosticStatus.OK, status.message
    assert 'underconfident' in status.message
    assert values['underconfident'] == 'True'
    assert values['underconfident_assessments'] == str(
        reasons.count(REASON_UNDERCONFIDENT_CALIBRATION))
    assert values['calibrated_level'] == 'KNOWN'
    assert values['last_reason'] == REASON_UNDERCONFIDENT_CALIBRATION

    # Overconfident outcomes take over: a downgrade (WARN/ERROR), no longer "underconfident".
    more = make_stream('overconfident', steps=1, per_step=30, seed=5,
                       level=SelfAssessmentLevel.KNOWN)
    more = [([make_outcome(5 * SECOND_NS + i, o.position_mahalanobis,
                           o.orientation_mahalanobis, rng) for i, o in enumerate(more[0][0])],
             BeliefSelfAssessment(6 * SECOND_NS, SelfAssessmentLevel.KNOWN))]
    h.run_stream(more)
    status = h.wait_diagnostics(
        lambda s, _: diagnostic_values(s).get('published') == '5', 'diagnostics after 5 outputs')
    values = diagnostic_values(status)
    assert status.level in (DiagnosticStatus.WARN, DiagnosticStatus.ERROR), status.message
    assert values['underconfident'] == 'False'
    assert 'underconfident:' not in status.message
    assert values['underconfident_assessments'] == str(
        reasons.count(REASON_UNDERCONFIDENT_CALIBRATION))


# -- (8) (9) the node process ---------------------------------------------------------------------

def _installed_executable():
    try:
        path = os.path.join(get_package_prefix(PACKAGE), 'lib', PACKAGE, 'feedback_node')
    except Exception:  # noqa: BLE001 - package not in the ament index
        return None
    return path if os.access(path, os.X_OK) else None


def _node_command(launcher, *ros_args):
    if launcher == 'module':
        command = [sys.executable, '-m', 'project_ghost_feedback.ros.feedback_node']
    else:
        executable = _installed_executable()
        if executable is None:
            pytest.skip('feedback_node is not installed (run scripts/setup.sh)')
        command = [executable]
    return command + ['--ros-args', *ros_args]


class _StderrReader:
    """Collect a process's stderr lines in a thread; tell when a line contains some text."""

    def __init__(self, process, text):
        self.lines = []
        self.seen = threading.Event()
        self._text = text
        self._thread = threading.Thread(target=self._read, args=(process.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append(line)
            if self._text in line:
                self.seen.set()

    def text(self):
        """Return everything read (waits briefly for the end of the stream)."""
        self._thread.join(timeout=5.0)
        return ''.join(self.lines)


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT], ids=['SIGTERM', 'SIGINT'])
@pytest.mark.parametrize(('launcher', 'executor'), [
    ('module', 'single_threaded'), ('module', 'events'), ('installed', 'single_threaded')])
def test_signal_stops_the_node_process_cleanly(launcher, executor, signum):
    """SIGTERM / SIGINT: the node process exits 0 within a generous bound, no traceback."""
    process = subprocess.Popen(
        _node_command(launcher, '-p', f'executor:={executor}',
                      '-r', f'__ns:=/gf_signal_{uuid.uuid4().hex[:8]}'),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    reader = _StderrReader(process, 'feedback node ready')
    try:
        assert reader.seen.wait(timeout=DEADLINE_S * 2), reader.text()
        process.send_signal(signum)
        try:
            returncode = process.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'no exit within 10 s of {signum!r}') from None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = reader.text()
    assert returncode == 0, stderr
    assert 'Traceback' not in stderr
    assert 'terminate called' not in stderr


@pytest.mark.parametrize(('argument', 'reason'), [
    ('max_history:=0', 'max_history'),
    ('policy:=no_such_policy', 'no_such_policy'),
])
def test_invalid_command_line_parameter_exits_nonzero_with_one_line(argument, reason):
    """An invalid parameter on the command line: exit 2, one ROS log line naming it (FATAL)."""
    completed = subprocess.run(
        _node_command('module', '-p', argument), capture_output=True, text=True,
        timeout=DEADLINE_S * 2)
    assert completed.returncode == 2, completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith('[FATAL] ')
    assert '[feedback_node]: cannot start: invalid parameters: ' in lines[0]
    assert reason in lines[0]
    assert completed.stdout == ''


def test_outcomes_older_than_a_full_buffer_are_counted(harness):
    """An outcome older than everything in a full outcome buffer is dropped and counted."""
    rng = random.Random(3)
    h = harness(max_history=2, outcome_buffer_size=2, time_jump_tolerance_s=60.0)
    for seconds in (10, 20, 5):
        h.publish_outcome(make_outcome(seconds * SECOND_NS, 0.5, 0.5, rng))
        h.wait_received(outcomes={10: 1, 20: 2, 5: 3}[seconds])
    assert h.node.counts.too_old_outcomes == 1
    assert diagnostic_values(h.node.diagnostic_status())['too_old_outcomes_dropped'] == '1'
    h.publish_raw(BeliefSelfAssessment(30 * SECOND_NS, SelfAssessmentLevel.KNOWN))
    (output,) = h.wait_outputs(1)
    assert output.calibration_history.outcomes_considered == 2
    assert output.calibration_history.most_recent_observed_stamp_sim_ns == 20 * SECOND_NS


@pytest.mark.parametrize('user_format', [None, '{severity} {name}: {message}'])
def test_log_lines_give_seconds_since_start_and_ros_time_not_epoch(user_format):
    """A node's line: ``[+0.357 s | ROS time 0.000 s] ...`` (sim time before /clock), no epoch.

    rcutils' default format puts epoch seconds first; the node's own time is what a user
    compares with a bag or a simulator. A format the user set is kept.
    """
    import os
    import re

    environment = dict(os.environ)
    environment.pop('RCUTILS_CONSOLE_OUTPUT_FORMAT', None)
    if user_format is not None:
        environment['RCUTILS_CONSOLE_OUTPUT_FORMAT'] = user_format
    process = subprocess.Popen(
        _node_command('module', '-p', 'use_sim_time:=true',
                      '-r', f'__ns:=/gf_log_{uuid.uuid4().hex[:8]}'),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment)
    reader = _StderrReader(process, 'feedback node ready')
    try:
        assert reader.seen.wait(timeout=DEADLINE_S * 2), reader.text()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    (ready,) = [line for line in reader.lines if 'feedback node ready' in line]
    head = (r'\[INFO\] \[gf_log_\w+\.feedback_node\]: ' if user_format is None
            else r'INFO gf_log_\w+\.feedback_node: ')
    assert re.match(head + r'\[\+\d+\.\d{3} s \| ROS time 0\.000 s\] feedback node ready',
                    ready), ready
