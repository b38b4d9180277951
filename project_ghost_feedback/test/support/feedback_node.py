# SPDX-License-Identifier: Apache-2.0
"""A running feedback node in-process with a telemetry bag, fed a scripted scenario over DDS."""

import math
import time
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    SelfAssessmentLevel,
)
from project_ghost_feedback.ros.conversions import (
    belief_to_msg,
)
from project_ghost_feedback.ros.feedback_node import FeedbackNode
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from support.contracts import build_outcome
from support.ros_context import new_rclpy_context, spin_in_turn
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_srvs.srv import Trigger


KNOWN = SelfAssessmentLevel.KNOWN


UNCERTAIN = SelfAssessmentLevel.UNCERTAIN


TIMEOUT_S = 30.0


QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                 reliability=ReliabilityPolicy.RELIABLE)


MS = 1_000_000


def raw_assessment(stamp_ns, level=KNOWN):
    return BeliefSelfAssessment(
        stamp_ns, level, (NamedLevel('position_x', KNOWN), NamedLevel('yaw', UNCERTAIN)),
        (NamedLevel('pose', level),))


def scenario(cycles=24):
    """Return [(outcomes, raw)] per cycle: calibrated, then overconfident (d up to +inf)."""
    steps = []
    for i in range(cycles):
        stamp = (i + 1) * 100 * MS
        distance = 0.5 + (i % 3) * 0.4 if i < cycles // 2 else 3.5 + (i % 4)
        if i == cycles - 3:
            distance = math.inf
        steps.append(([build_outcome(stamp - MS, distance, distance / 2)],
                      raw_assessment(stamp, UNCERTAIN if i % 5 else KNOWN)))
    return steps


class FeedbackNodeHarness:
    """A FeedbackNode and a driver node in two private contexts, spun from this thread.

    With ``sim_time`` the node runs on /clock, which :meth:`set_clock` publishes.
    """

    def __init__(self, bag, parameters=(), sim_time=False):
        self.contexts = []
        for _ in range(2):
            self.contexts.append(new_rclpy_context())
        overrides = [Parameter('telemetry_bag', value=str(bag)),
                     Parameter('policy', value='mahalanobis_downgrade')]
        overrides += [Parameter(name, value=value) for name, value in parameters]
        if sim_time:
            overrides.append(Parameter('use_sim_time', value=True))
        self.node = FeedbackNode(context=self.contexts[0], parameter_overrides=overrides)
        self.driver = rclpy.create_node('replay_test_driver', context=self.contexts[1])
        self.executors = [SingleThreadedExecutor(context=c) for c in self.contexts]
        self.executors[0].add_node(self.node)
        self.executors[1].add_node(self.driver)
        self.outcomes = self.driver.create_publisher(
            PredictionOutcomeMsg, '/prediction_outcome', QOS)
        self.assessments = self.driver.create_publisher(
            BeliefSelfAssessmentMsg, '/self_assessment/raw', QOS)
        self.received = []
        self.calibrated = self.driver.create_subscription(
            CalibratedSelfAssessmentMsg, '/self_assessment/calibrated', self.received.append,
            QOS)
        self.clock = self.driver.create_publisher(Clock, '/clock', 10)
        self.reset_client = self.driver.create_client(Trigger, '/feedback_node/reset')

    def spin_until(self, condition, what):
        deadline = time.monotonic() + TIMEOUT_S
        while not condition():
            assert time.monotonic() < deadline, f'timed out waiting for {what}'
            spin_in_turn(*self.executors)

    def connect(self):
        self.spin_until(
            lambda: (self.outcomes.get_subscription_count() > 0
                     and self.assessments.get_subscription_count() > 0
                     and self.calibrated.get_publisher_count() > 0
                     and self.node._publisher.get_subscription_count() > 0),
            'discovery')

    def send_outcome(self, message):
        before = self.node.counts.received['outcome']
        self.outcomes.publish(message)
        self.spin_until(lambda: self.node.counts.received['outcome'] > before, 'an outcome')

    def send_assessment(self, raw):
        before = len(self.received)
        self.assessments.publish(belief_to_msg(raw))
        self.spin_until(lambda: len(self.received) > before, 'a calibrated assessment')

    def send_refused(self, message, kind):
        """Publish an input the node must refuse; wait until it counted the refusal."""
        before = sum(self.node.health.rejected.values())
        (self.outcomes if kind == 'outcome' else self.assessments).publish(message)
        rejected = self.node.health.rejected
        self.spin_until(lambda: sum(rejected.values()) > before, f'a refused {kind}')

    def set_clock(self, stamp_ns):
        """Publish /clock = ``stamp_ns`` until the node's clock reads it."""
        message = Clock()
        message.clock.sec, message.clock.nanosec = divmod(stamp_ns, 10**9)

        def arrived():
            self.clock.publish(message)
            return self.node.get_clock().now().nanoseconds == stamp_ns

        self.spin_until(arrived, f'/clock at {stamp_ns} ns')

    def call_reset(self):
        """Call ~/reset and wait for its answer."""
        self.spin_until(self.reset_client.service_is_ready, 'the ~/reset service')
        future = self.reset_client.call_async(Trigger.Request())
        self.spin_until(future.done, 'the ~/reset answer')
        assert future.result().success

    def close(self):
        for executor in self.executors:
            executor.shutdown()
        self.node.close()
        self.node.destroy_node()
        self.driver.destroy_node()
        for context in self.contexts:
            context.try_shutdown()
