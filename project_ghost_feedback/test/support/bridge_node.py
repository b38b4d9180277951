# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge node in-process, its inputs and outputs over DDS; Odometry builders."""

import contextlib
import math
import time
import uuid
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from support.pose_inputs import COVARIANCE, SECOND_NS, UNPACED  # noqa: F401 - re-exported
from support.ros_context import new_rclpy_context, publish_clock_until
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from project_ghost_feedback.ros.outcome_bridge_node import OutcomeBridge


DEADLINE_S = 15.0
"""Upper bound for any wait; a healthy run needs a small fraction of it."""


QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                 reliability=ReliabilityPolicy.RELIABLE)


def set_pose(msg, stamp_ns, frame_id, x=0.0, y=0.0, yaw=0.0, covariance=None):
    """Fill the header and pose of an Odometry / PoseWithCovarianceStamped / PoseStamped."""
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, SECOND_NS)
    msg.header.frame_id = frame_id
    pose = msg.pose if isinstance(msg, PoseStamped) else msg.pose.pose
    pose.position.x, pose.position.y = float(x), float(y)
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    if covariance is not None:
        msg.pose.covariance = [float(v) for v in covariance]
    return msg


def odometry(stamp_ns=None, sec=None, nanosec=0, quaternion=(0.0, 0.0, 0.0, 1.0),
             covariance=COVARIANCE, x=0.0):
    """Return an Odometry in ``odom`` at ``stamp_ns`` (0 if None) with ``quaternion`` and ``x``.

    ``sec`` (with ``nanosec``) overrides the header stamp as given, out-of-range values too.
    """
    msg = set_pose(Odometry(), 0 if stamp_ns is None else stamp_ns, 'odom', x=x,
                   covariance=covariance)
    if sec is not None:
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    o = msg.pose.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in quaternion)
    return msg


class Harness:
    """An OutcomeBridge plus a client node in a fresh namespace, one context."""

    def __init__(self, context, estimate_type=Odometry, reference_type=Odometry, namespace=None,
                 tf_topics=None, **parameters):
        """Start the bridge and a client node, matched.

        ``namespace``: the nodes' (default a fresh one); ``tf_topics``: ``(tf, tf_static)`` the
        bridge's /tf and /tf_static are remapped to (as the launch's tf_topic does).
        """
        names = {Odometry: 'odometry', PoseWithCovarianceStamped: 'pose_with_covariance',
                 PoseStamped: 'pose'}
        parameters = {'estimate_type': names[estimate_type],
                      'reference_type': names[reference_type], **parameters}
        self.namespace = namespace or f'/bridge_test_{uuid.uuid4().hex[:12]}'
        remaps = []
        if tf_topics is not None:
            remaps = ['--ros-args', '-r', f'/tf:={tf_topics[0]}', '-r',
                      f'/tf_static:={tf_topics[1]}']
        self.node = OutcomeBridge(
            context=context, namespace=self.namespace, cli_args=remaps or None,
            parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()])
        self.client = rclpy.create_node('bridge_client', namespace=self.namespace,
                                        context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.client)
        self.estimate_type, self.reference_type = estimate_type, reference_type
        self.estimate_publisher = self.client.create_publisher(estimate_type, 'estimate', QOS)
        self.reference_publisher = self.client.create_publisher(reference_type, 'reference', QOS)
        self.outcomes, self.assessments, self.diagnostics = [], [], []
        self._clock_publisher = None
        self.client.create_subscription(
            PredictionOutcomeMsg, 'prediction_outcome', self.outcomes.append, QOS)
        self.client.create_subscription(
            BeliefSelfAssessmentMsg, 'self_assessment/raw', self.assessments.append, QOS)
        self.client.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        self.spin_until(
            lambda: (self.estimate_publisher.get_subscription_count() >= 1
                     and self.reference_publisher.get_subscription_count() >= 1
                     and self.node.count_subscribers(
                         f'{self.namespace}/self_assessment/raw') >= 1
                     and self.node.count_subscribers(
                         f'{self.namespace}/prediction_outcome') >= 1),
            'the bridge and the client to match')
        self.wait_inputs_matched()

    def wait_inputs_matched(self, estimate=1, reference=1):
        """Spin until the bridge's input subscriptions have matched that many publishers each.

        The publisher side matching first is not enough: a best-effort reader drops what comes
        before it matched the writer (under load, seconds later).
        """
        wanted = {f'{self.namespace}/estimate': estimate,
                  f'{self.namespace}/reference': reference}
        self.spin_until(lambda: all(
            subscription.get_publisher_count() >= wanted[subscription.topic_name]
            for subscription in self.node.subscriptions if subscription.topic_name in wanted),
            f'the bridge to match {estimate} estimate and {reference} reference publisher(s)')

    def _on_diagnostics(self, array):
        name = self.node.get_fully_qualified_name()
        self.diagnostics.extend(s for s in array.status if s.hardware_id == name)

    def spin_until(self, condition, what):
        deadline = time.monotonic() + DEADLINE_S
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f'timed out waiting for {what}: received {dict(self.node.counts.received)}, '
                    f'dropped {dict(self.node.engine.dropped)}, paired {self.node.engine.paired}')
            self.executor.spin_once(timeout_sec=0.01)

    def reference(self, stamp_ns, frame_id='odom', **pose):
        received = self.node.counts.received['reference']
        self.reference_publisher.publish(
            set_pose(self.reference_type(), stamp_ns, frame_id, **pose))
        self.spin_until(lambda: self.node.counts.received['reference'] > received, 'a reference')

    def estimate(self, stamp_ns, frame_id='odom', covariance=COVARIANCE, **pose):
        received = self.node.counts.received['estimate']
        self.estimate_publisher.publish(
            set_pose(self.estimate_type(), stamp_ns, frame_id, covariance=covariance, **pose))
        self.spin_until(lambda: self.node.counts.received['estimate'] > received, 'an estimate')

    def set_clock(self, seconds):
        """Publish /clock = ``seconds`` until the bridge's clock reads it (use_sim_time)."""
        if self._clock_publisher is None:
            self._clock_publisher = self.client.create_publisher(Clock, '/clock', 10)
        publish_clock_until(self.spin_until, self._clock_publisher, self.node,
                            seconds * SECOND_NS)

    def wait_assessments(self, count):
        self.spin_until(lambda: len(self.assessments) >= count, f'{count} assessments')
        assert len(self.assessments) == count

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        self.client.destroy_node()


@contextlib.contextmanager
def harnesses():
    """Yield a factory of Harness objects in a private context; all closed afterwards."""
    context = new_rclpy_context()
    made = []

    def make(**kwargs):
        made.append(Harness(context, **kwargs))
        return made[-1]

    try:
        yield make
    finally:
        for h in made:
            h.close()
        context.try_shutdown()
