# SPDX-License-Identifier: Apache-2.0
"""Play the simulated robot + Kalman filter (sim/localization_stack.py) over DDS.

Publishes ``/clock`` (sim time, at the filter's steps: :func:`clock_msg`), the filter's estimate
as nav_msgs/Odometry with covariance on ``odometry/filtered`` (10 Hz of sim time) and the ground
truth as Odometry on ``ground_truth/odom`` (50 Hz, zero covariance), both in frame ``odom`` with
child ``base_link``, at ``--speed`` sim seconds per wall second. Topics are relative: remap or
set a namespace.

With ``--tf`` it publishes its frames as a real stack does: the ground truth in ``map``, the
estimate in ``odom``, and ``map -> odom`` on /tf at every truth step, moving as a localization
corrects odometry drift in steps (sim/odom_drift.py); the outcome bridge relates them with tf2.

    python -m project_ghost_feedback.ros.sim_stack_node --speed 20 --seed 1 [--tf]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
import sys
import time
from typing import Any, TYPE_CHECKING

from nav_msgs.msg import Odometry
import numpy
from numpy.typing import NDArray
import rclpy
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rosgraph_msgs.msg import Clock

from ..sim.localization_stack import LocalizationStack, StackPhase
from ..core import NS_PER_S
from .node_main import ShutdownRequest

if TYPE_CHECKING:
    from ..sim.odom_drift import OdomDrift

FRAME_ID = 'odom'
CHILD_FRAME_ID = 'base_link'


def clock_msg(sample: Any) -> Clock | None:
    """Return the ``/clock`` message of a simulator step, or None between the filter's steps.

    The clock ticks at the filter's steps only (10 Hz of sim time by default, not the truth's
    50 Hz), as a simulator throttles it (gazebo_ros publishes /clock at 10 Hz by default): the
    nodes judge their inputs by stamps, and their sim-time timers need no finer clock.
    """
    if not sample.is_estimate:
        return None
    tick = Clock()
    tick.clock.sec, tick.clock.nanosec = divmod(sample.stamp_ns, NS_PER_S)
    return tick


def odometry_msg(stamp_ns: int, position: Sequence[float], quaternion: Sequence[float],
                 velocity: Sequence[float], covariance: NDArray[numpy.float64] | None = None,
                 frame_id: str = FRAME_ID) -> Odometry:
    """Return an Odometry in ``frame_id`` with the pose (and 6x6 pose covariance, if any)."""
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, NS_PER_S)
    msg.header.frame_id = frame_id
    msg.child_frame_id = CHILD_FRAME_ID
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    q.x, q.y, q.z, q.w = (float(v) for v in quaternion)
    msg.twist.twist.linear.x, msg.twist.twist.linear.y = float(velocity[0]), float(velocity[1])
    msg.twist.twist.angular.z = float(velocity[2])
    if covariance is not None:
        msg.pose.covariance = [float(v) for v in covariance.reshape(36)]
    return msg


def tf_msg(stamp_ns: int, parent: str, child: str, translation: Sequence[float],
           rotation: Sequence[float]) -> Any:
    """Return a tf2_msgs/TFMessage holding one transform ``parent -> child``."""
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    transform = TransformStamped()
    transform.header.stamp.sec, transform.header.stamp.nanosec = divmod(stamp_ns, NS_PER_S)
    transform.header.frame_id, transform.child_frame_id = parent, child
    t, r = transform.transform.translation, transform.transform.rotation
    t.x, t.y, t.z = (float(v) for v in translation)
    r.x, r.y, r.z, r.w = (float(v) for v in rotation)
    return TFMessage(transforms=[transform])


class StackFrames:
    """What one step of the stack publishes: ``(tf or None, truth, estimate or None)``.

    Without ``drift`` both poses are in ``odom`` and no tf is sent. With an
    :class:`~..sim.odom_drift.OdomDrift`, the truth is in ``map``, the estimate (pose and
    covariance) in ``odom``, and ``map -> odom`` at the step's stamp goes on /tf first.
    """

    def __init__(self, drift: 'OdomDrift | None' = None) -> None:
        self.drift = drift

    def estimate_in_frame(self, sample: Any) -> tuple[Any, Any, Any]:
        """Return ``(position, quaternion, covariance)`` of the estimate as published."""
        if self.drift is None:
            return sample.estimate_position, sample.estimate_quaternion, sample.pose_covariance
        return self.drift.to_odom(sample.stamp_ns, sample.estimate_position,
                                  sample.estimate_quaternion, sample.pose_covariance)

    def truth_in_estimate_frame(self, sample: Any) -> tuple[Any, Any]:
        """Return ``(position, quaternion)`` of the truth in the estimate's frame."""
        if self.drift is None:
            return sample.truth_position, sample.truth_quaternion
        position, quaternion, _ = self.drift.to_odom(
            sample.stamp_ns, sample.truth_position, sample.truth_quaternion)
        return position, quaternion

    def as_published(self, sample: Any) -> Any:
        """Return the sample's estimate, covariance and truth in the estimate's frame (NEES)."""
        from types import SimpleNamespace

        position, quaternion, covariance = self.estimate_in_frame(sample)
        truth_position, truth_quaternion = self.truth_in_estimate_frame(sample)
        return SimpleNamespace(
            stamp_ns=sample.stamp_ns, estimate_position=position, estimate_quaternion=quaternion,
            pose_covariance=covariance, truth_position=truth_position,
            truth_quaternion=truth_quaternion)

    def messages(self, sample: Any) -> tuple[Any, Odometry, Odometry | None]:
        """Return the messages of one step, in publication order."""
        from ..sim.odom_drift import MAP_FRAME

        tf = None
        truth_frame = FRAME_ID
        if self.drift is not None:
            tf = tf_msg(sample.stamp_ns, MAP_FRAME, FRAME_ID,
                        *self.drift.map_to_odom(sample.stamp_ns))
            truth_frame = MAP_FRAME
        truth = odometry_msg(sample.stamp_ns, sample.truth_position, sample.truth_quaternion,
                             sample.truth_velocity, frame_id=truth_frame)
        estimate = None
        if sample.is_estimate:
            position, quaternion, covariance = self.estimate_in_frame(sample)
            estimate = odometry_msg(sample.stamp_ns, position, quaternion,
                                    sample.estimate_velocity, covariance)
        return tf, truth, estimate


class StackPublishers:
    """The simulator's publishers, and one step published in order (this node and the demo).

    Per step: ``/clock`` at the filter's steps (:func:`clock_msg`), then what
    :meth:`StackFrames.messages` returns: ``map -> odom`` on /tf (with a drift), the truth, the
    estimate (at the filter's steps). The inputs and /tf are RELIABLE KEEP_LAST 1000: a shallower
    writer overwrites what a lagging bridge has not taken yet (and tf2 would interpolate across a
    lost transform).
    """

    def __init__(self, node: Node, frames: StackFrames,
                 estimate_topic: str = 'odometry/filtered',
                 truth_topic: str = 'ground_truth/odom') -> None:
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.frames = frames
        self.clock = node.create_publisher(Clock, '/clock', 10)
        self.estimate = node.create_publisher(Odometry, estimate_topic, qos)
        self.truth = node.create_publisher(Odometry, truth_topic, qos)
        self.tf: Any = None
        if frames.drift is not None:
            from tf2_msgs.msg import TFMessage

            self.tf = node.create_publisher(TFMessage, '/tf', qos)

    def publish(self, sample: Any) -> bool:
        """Publish the messages of one step; return True when one of them was an estimate."""
        tick = clock_msg(sample)
        if tick is not None:
            self.clock.publish(tick)
        tf_message, truth_message, estimate_message = self.frames.messages(sample)
        if tf_message is not None:
            self.tf.publish(tf_message)
        self.truth.publish(truth_message)
        if estimate_message is None:
            return False
        self.estimate.publish(estimate_message)
        return True


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser."""
    parser = argparse.ArgumentParser(
        description='Play a simulated robot and its Kalman filter over DDS (Odometry topics).')
    parser.add_argument('--speed', type=float, default=20.0,
                        help='sim seconds per wall second (default 20)')
    parser.add_argument('--seed', type=int, default=1, help='simulation seed (default 1)')
    parser.add_argument('--scale', type=float, default=1.0,
                        help='multiply every phase duration (default 1: 300 + 120 + 180 s)')
    parser.add_argument('--namespace', default='', help='namespace of the publishers')
    parser.add_argument('--tf', action='store_true',
                        help='truth in map, estimate in odom, a moving map -> odom on /tf '
                             '(needs tf2: scripts/setup.sh builds it)')
    return parser


def play(node: Node, stack: LocalizationStack, speed: float,
         stop: Callable[[], bool] = lambda: False, frames: StackFrames | None = None) -> int:
    """Publish every sample of ``stack`` paced at ``speed``; return the estimates published.

    ``frames``: a :class:`StackFrames` (default: both poses in odom, no tf).
    """
    publishers = StackPublishers(node, frames or StackFrames())
    start = time.monotonic()
    published = 0
    for sample in stack.run():
        if stop():
            break
        delay = start + sample.stamp_ns / NS_PER_S / speed - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        published += publishers.publish(sample)
    return published


def scaled_phases(scale: float,
                  phases: Sequence[StackPhase] | None = None) -> tuple[StackPhase, ...]:
    """Return ``phases`` (default: the simulator's defaults), every duration times ``scale``."""
    from ..sim.localization_stack import DEFAULT_PHASES
    return tuple(StackPhase(p.name, p.duration_s * scale, p.truth_accel_factor,
                            p.filter_accel_factor) for p in phases or DEFAULT_PHASES)


def main(argv: Sequence[str] | None = None) -> int:
    """Play the default phases once; exit 0 at the end or on SIGINT / SIGTERM."""
    args = build_parser().parse_args(argv)
    frames = StackFrames()
    if args.tf:
        from ..sim.odom_drift import OdomDrift
        from ..bridge.tf2_transforms import tf2_missing

        missing = tf2_missing()
        if missing is not None:
            print(f'sim_stack_node: --tf: {missing}', file=sys.stderr)
            return 2
        frames = StackFrames(OdomDrift(seed=args.seed))
    shutdown = ShutdownRequest()
    shutdown.install()
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('sim_stack', namespace=args.namespace or None)
    try:
        stack = LocalizationStack(phases=scaled_phases(args.scale), seed=args.seed)
        count = play(node, stack, args.speed, stop=shutdown.__bool__, frames=frames)
        node.get_logger().info(f'published {count} estimates')
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        shutdown.restore()
    return 0


if __name__ == '__main__':
    sys.exit(main())
