# SPDX-License-Identifier: Apache-2.0
"""The feedback node as a separate process, a client that streams to it, and recovery of its bag."""

import collections
import math
import subprocess
import time
from diagnostic_msgs.msg import DiagnosticArray
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from support.ros_context import new_rclpy_context, spin_in_turn
import rclpy
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import assess_with_feedback, make_policy
from project_ghost_feedback.ros.conversions import (
    belief_to_msg,
    outcome_to_msg,
)


DEADLINE_S = 60.0


QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                 reliability=ReliabilityPolicy.RELIABLE)


MS = 1_000_000


MAX_HISTORY = 32


KNOWN = SelfAssessmentLevel.KNOWN


def make_stream(cycles, first=1):
    """Return [(outcome, raw)] per cycle, ordered, alternating calibrated and overconfident."""
    steps = []
    for i in range(first, first + cycles):
        stamp = i * MS
        overconfident = (i // 200) % 2 == 1
        distance = (0.3 + (i % 7) * 0.25) * (3.0 if overconfident else 1.0)
        if i % 97 == 0:
            distance = math.inf
        outcome = PredictionOutcome(
            stamp - MS // 2, stamp, (0.01 * (i % 5), -0.02, 0.003), (0.001, 0.0, -0.002),
            distance, distance / 2)
        raw = BeliefSelfAssessment(
            stamp, KNOWN, (NamedLevel('position_x', KNOWN), NamedLevel('yaw', KNOWN)),
            (NamedLevel('pose', KNOWN),))
        steps.append((outcome, raw))
    return steps


def expected_outputs(steps):
    """Return the pure function's output for each step of an ordered stream."""
    policy = make_policy('mahalanobis_downgrade')
    outcomes, outputs = [], []
    for outcome, raw in steps:
        outcomes.append(outcome)
        outputs.append(assess_with_feedback(raw, outcomes[-MAX_HISTORY:], policy, MAX_HISTORY))
    return outputs


class Client:
    """Publishers of both inputs and a subscriber of the output, in a private context."""

    def __init__(self, name, extra_executor=None):
        self.context = new_rclpy_context()
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.extra_executor = extra_executor
        self.matched = collections.Counter()
        self.outputs = []

        def on_matched(key):
            return lambda info: self.matched.__setitem__(key, info.current_count)

        self.outcomes = self.node.create_publisher(
            PredictionOutcomeMsg, '/prediction_outcome', QOS,
            event_callbacks=PublisherEventCallbacks(matched=on_matched('outcome')))
        self.assessments = self.node.create_publisher(
            BeliefSelfAssessmentMsg, '/self_assessment/raw', QOS,
            event_callbacks=PublisherEventCallbacks(matched=on_matched('raw')))
        self.subscription = self.node.create_subscription(
            CalibratedSelfAssessmentMsg, '/self_assessment/calibrated', self.outputs.append, QOS,
            event_callbacks=SubscriptionEventCallbacks(matched=on_matched('output')))
        self.diagnostics = {}
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)

    def _on_diagnostics(self, array):
        for status in array.status:
            self.diagnostics.update((kv.key, kv.value) for kv in status.values)

    def spin_until(self, condition, what, process=None, deadline_s=DEADLINE_S, what_else=None):
        """Spin until ``condition()``; fail after ``deadline_s`` or if ``process`` exited.

        ``what_else()``, if given, adds what the failure message should show.
        """
        deadline = time.monotonic() + deadline_s
        while not condition():
            if process is not None and process.poll() is not None:
                raise AssertionError(f'node process exited ({process.returncode}) while '
                                     f'waiting for {what}: {_output(process)}')
            if time.monotonic() > deadline:
                extra = '' if what_else is None else f', {what_else()}'
                raise AssertionError(
                    f'timed out waiting for {what} ({len(self.outputs)} outputs{extra})')
            if self.extra_executor is not None:
                spin_in_turn(self.extra_executor, self.executor)
            else:
                self.executor.spin_once(timeout_sec=0.005)

    def wait_matched(self, process=None):
        """Wait until both inputs and the output matched at the DDS level."""
        self.spin_until(lambda: all(self.matched[k] for k in ('outcome', 'raw', 'output')),
                        'DDS matching', process)

    def prime(self, step, process):
        """Send the first step in two waited halves, so both inputs are fully matched.

        A sample published right after the writer matched may reach a reader that has not
        matched the writer yet; reliable DDS then delivers it later, after the next topic's
        samples (so the first outcome could arrive after the first assessment). Waiting for the
        node to count the outcome (its /diagnostics), then for the output, rules that out.
        """
        outcome, raw = step
        self.outcomes.publish(outcome_to_msg(outcome))
        self.spin_until(lambda: self.diagnostics.get('outcomes_received') == '1',
                        'the node to count the first outcome', process)
        self.assessments.publish(belief_to_msg(raw))
        self.spin_until(lambda: len(self.outputs) == 1, 'the first output', process)

    def publish(self, step):
        """Publish one (outcome, raw) step."""
        outcome, raw = step
        self.outcomes.publish(outcome_to_msg(outcome))
        self.assessments.publish(belief_to_msg(raw))

    def close(self):
        """Destroy the node and shut the context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def first_difference(actual, expected):
    """Return a short description of where two output lists first differ (for messages)."""
    for index, (got, want) in enumerate(zip(actual, expected)):
        if got != want:
            return (f'#{index} (stamp {got.raw_assessment.belief_stamp_sim_ns}): got '
                    f'{got.calibration_history}, expected {want.calibration_history}')
    return f'lengths {len(actual)} vs {len(expected)}'


def _output(process):
    try:
        return process.communicate(timeout=10)[0]
    except subprocess.TimeoutExpired:
        return '(no output: still running)'


def recover_mcap(path):
    """Read an MCAP file without summary/footer; return (records by channel topic, error).

    Streams the file from the start and stops at the first incomplete or unreadable record:
    everything before it (complete chunks) is returned as ``{topic: [payload, ...]}`` in file
    order, plus the exception that ended the read (None if the file is complete).
    """
    from mcap.records import Channel, Message
    from mcap.stream_reader import StreamReader

    topics, recovered, error = {}, collections.defaultdict(list), None
    with open(path, 'rb') as stream:
        try:
            for record in StreamReader(stream, skip_magic=False).records:
                if isinstance(record, Channel):
                    topics[record.id] = record.topic
                elif isinstance(record, Message):
                    recovered[topics[record.channel_id]].append(bytes(record.data))
        except Exception as exc:  # noqa: BLE001 - any reader error ends the readable prefix
            error = exc
    return dict(recovered), error
