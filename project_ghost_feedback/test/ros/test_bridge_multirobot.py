# SPDX-License-Identifier: Apache-2.0
"""Two robots, each with its own namespace and its own namespaced tf, over real rclpy and tf2.

``robot1`` publishes its transforms on ``/robot1/tf`` with plain frame names (``map -> odom``);
``robot2`` on ``/robot2/tf`` with prefixed ones (``robot2/map -> robot2/odom``) while its
messages say ``map`` and ``odom``, so its bridge runs with ``frame_prefix: robot2/``. Each
robot's ``map -> odom`` moves differently, and a decoy on the global ``/tf`` names both robots'
frames with a transform 50 m off. robot1's filter is honest, robot2 claims a covariance 9 times
too small (3 times in std). Both must pair every reference through their own tf only: robot1's
distances are those of the stream computed in ``map`` without tf, robot2's exactly 3 times them,
and each bridge's tf holds only its own frames.
"""

import math

import numpy as np
import pytest
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time

from project_ghost_feedback.bridge.engine_interface import EngineListener
from project_ghost_feedback.bridge.pairing import PairingEngine
from project_ghost_feedback.bridge.parameters import engine_config, PARAMETERS
from project_ghost_feedback.bridge.tf2_transforms import tf2_missing
from project_ghost_feedback.ros.sim_stack_node import tf_msg
from project_ghost_feedback.sim.localization_stack import StackPhase
from project_ghost_feedback.sim.odom_drift import OdomDrift
from support.bridge_node import harnesses, UNPACED
from support.evaluate_live import odometry_msg
from support.ordinary_bags import ordered, stack_samples

TF2_MISSING = tf2_missing()
pytestmark = pytest.mark.skipif(TF2_MISSING is not None, reason=f'{TF2_MISSING}')

TF_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                    reliability=ReliabilityPolicy.RELIABLE)
OVERCONFIDENCE = 3.0
"""robot2's claimed std is this many times too small."""


class _Robot:
    """One robot: its bridge (namespace, tf topics, prefix), its drift, its tf publisher."""

    def __init__(self, make, name, frame_prefix, drift_seed, covariance_scale):
        self.name, self.prefix = name, frame_prefix
        self.drift = OdomDrift(step_period_s=1.0, seed=drift_seed)
        self.covariance_scale = covariance_scale
        self.h = make(namespace=f'/{name}', tf_topics=(f'/{name}/tf', f'/{name}/tf_static'),
                      frame_prefix=frame_prefix, **UNPACED)
        assert self.h.node.counts.tf_state == 'on'
        from tf2_msgs.msg import TFMessage

        self.tf = self.h.client.create_publisher(TFMessage, f'/{name}/tf', TF_QOS)
        self.h.spin_until(lambda: self.tf.get_subscription_count() >= 1, f'{name} tf to match')

    def can_transform(self, stamp_ns):
        # The bridge's own tf2_ros Buffer (a BufferCore): has this robot's tf for the stamp come?
        return self.h.node._tf_buffer.can_transform_core(
            f'{self.prefix}odom', f'{self.prefix}map', Time(nanoseconds=stamp_ns))[0]

    def publish(self, kind, sample):
        """Publish one message of the stream (a reference after its tf), wait for the bridge."""
        h, stamp = self.h, sample.stamp_ns
        if kind == 'reference':
            translation, rotation = self.drift.map_to_odom(stamp)
            self.tf.publish(tf_msg(stamp, f'{self.prefix}map', f'{self.prefix}odom',
                                   translation, rotation))
            h.spin_until(lambda: self.can_transform(stamp), f'{self.name} tf')
            msg = odometry_msg(stamp, sample.truth_position, sample.truth_quaternion,
                               frame_id='map')
            publisher = h.reference_publisher
        else:
            position, quaternion, covariance = self.drift.to_odom(
                stamp, sample.estimate_position, sample.estimate_quaternion,
                np.asarray(sample.pose_covariance) * self.covariance_scale)
            msg = odometry_msg(stamp, position, quaternion, covariance, frame_id='odom')
            publisher = h.estimate_publisher
        received = h.node.counts.received[kind]
        publisher.publish(msg)
        h.spin_until(lambda: h.node.counts.received[kind] > received, f'{self.name} {kind}')

    def distances(self):
        return [(m.position_mahalanobis, m.orientation_mahalanobis) for m in self.h.outcomes]


def _distances_in_map(samples):
    """Return the stream's distances computed in ``map`` by the pure engine, without tf."""
    outcomes = []

    class Collect(EngineListener):
        def outcome_ready(self, outcome, estimate):
            outcomes.append((outcome.position_mahalanobis, outcome.orientation_mahalanobis))

    values = {name: spec.default for name, spec in PARAMETERS.items()} | UNPACED
    engine = PairingEngine(engine_config(values), Collect())
    for kind, sample in ordered(samples):
        if kind == 'reference':
            engine.take_reference(odometry_msg(sample.stamp_ns, sample.truth_position,
                                               sample.truth_quaternion, frame_id='map'))
        else:
            engine.take_estimate(odometry_msg(
                sample.stamp_ns, sample.estimate_position, sample.estimate_quaternion,
                np.asarray(sample.pose_covariance), frame_id='map'))
    return outcomes


def test_two_robots_each_on_its_own_namespaced_tf_pair_without_interference():
    """robot1 (plain frames) honest, robot2 (prefixed frames) overconfident: no crosstalk."""
    samples = stack_samples(seed=7, phases=(StackPhase('tuned', 4.0),))
    estimates = sum(sample.is_estimate for sample in samples)
    with harnesses() as make:
        robots = (_Robot(make, 'robot1', '', 3, 1.0),
                  _Robot(make, 'robot2', 'robot2/', 11, 1.0 / OVERCONFIDENCE ** 2))
        decoy_node = robots[0].h.client
        from tf2_msgs.msg import TFMessage

        decoy = decoy_node.create_publisher(TFMessage, '/tf', TF_QOS)
        static = decoy_node.create_publisher(TFMessage, '/tf_static', QoSProfile(
            depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        static.publish(tf_msg(0, 'map', 'odom', (50.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
        for kind, sample in ordered(samples):
            if kind == 'reference':
                for prefix in ('', 'robot2/'):
                    decoy.publish(tf_msg(sample.stamp_ns, f'{prefix}map', f'{prefix}odom',
                                         (50.0, -20.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
            for robot in robots:
                robot.publish(kind, sample)
        for robot in robots:
            robot.h.wait_assessments(estimates)
            robot.h.spin_until(
                lambda h=robot.h: len(h.outcomes) >= h.node.counts.outcomes_published,
                'the outcomes')
        results = []
        for robot in robots:
            engine = robot.h.node.engine
            results.append((robot.distances(), dict(engine.dropped),
                            dict(engine.references_dropped), engine.references_used,
                            set(engine.tf_gate.frames), engine.transforms_accepted,
                            {m.header.frame_id for m in robot.h.outcomes}))
    expected = _distances_in_map(samples)
    assert len(expected) == estimates
    references = len(samples)
    (d1, dropped1, ref_dropped1, used1, frames1, accepted1, outcome_frames1), \
        (d2, dropped2, ref_dropped2, used2, frames2, accepted2, outcome_frames2) = results
    # Both pair every reference, each through its own tf only.
    assert dropped1 == dropped2 == {} and ref_dropped1 == ref_dropped2 == {}
    assert used1 == used2 == references
    assert frames1 == {'map', 'odom'} and frames2 == {'robot2/map', 'robot2/odom'}
    assert accepted1 == accepted2 == references
    assert outcome_frames1 == {'odom'} and outcome_frames2 == {'robot2/odom'}
    # robot1's distances are the stream's (in map, without tf); robot2's 3 times them.
    assert len(d1) == len(d2) == estimates
    np.testing.assert_allclose(d1, expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(d2, OVERCONFIDENCE * np.asarray(expected), rtol=1e-6, atol=1e-9)
    mean_square = [math.fsum(p * p for p, _ in d) / len(d) for d in (d1, d2)]
    assert mean_square[1] == pytest.approx(OVERCONFIDENCE ** 2 * mean_square[0], rel=1e-6)
