# SPDX-License-Identifier: Apache-2.0
"""Play the simulated robot + Kalman filter (sim/localization_stack.py) over DDS.

Publishes ``/clock`` (sim time, every truth step), the filter's estimate as nav_msgs/Odometry
with covariance on ``odometry/filtered`` (10 Hz of sim time) and the ground truth as Odometry on
``ground_truth/odom`` (50 Hz, zero covariance), both in frame ``odom`` with child ``base_link``,
at ``--speed`` sim seconds per wall second. Topics are relative: remap or set a namespace.

    python -m project_ghost_feedback.ros.sim_stack_node --speed 20 --seed 1
"""

import argparse
from collections.abc import Callable, Sequence
import sys
import time

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

FRAME_ID = 'odom'
CHILD_FRAME_ID = 'base_link'


def odometry_msg(stamp_ns: int, position: Sequence[float], quaternion: Sequence[float],
                 velocity: Sequence[float],
                 covariance: NDArray[numpy.float64] | None = None) -> Odometry:
    """Return an Odometry in FRAME_ID with the pose (and 6x6 pose covariance, if any)."""
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, NS_PER_S)
    msg.header.frame_id = FRAME_ID
    msg.child_frame_id = CHILD_FRAME_ID
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    q.x, q.y, q.z, q.w = (float(v) for v in quaternion)
    msg.twist.twist.linear.x, msg.twist.twist.linear.y = float(velocity[0]), float(velocity[1])
    msg.twist.twist.angular.z = float(velocity[2])
    if covariance is not None:
        msg.pose.covariance = [float(v) for v in covariance.reshape(36)]
    return msg


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
    return parser


def play(node: Node, stack: LocalizationStack, speed: float,
         stop: Callable[[], bool] = lambda: False) -> int:
    """Publish every sample of ``stack`` paced at ``speed``; return the estimates published."""
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    clock = node.create_publisher(Clock, '/clock', 10)
    estimate = node.create_publisher(Odometry, 'odometry/filtered', qos)
    truth = node.create_publisher(Odometry, 'ground_truth/odom', qos)
    start = time.monotonic()
    published = 0
    for sample in stack.run():
        if stop():
            break
        delay = start + sample.stamp_ns / NS_PER_S / speed - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        tick = Clock()
        tick.clock.sec, tick.clock.nanosec = divmod(sample.stamp_ns, NS_PER_S)
        clock.publish(tick)
        truth.publish(odometry_msg(sample.stamp_ns, sample.truth_position,
                                   sample.truth_quaternion, sample.truth_velocity))
        if sample.is_estimate:
            estimate.publish(odometry_msg(
                sample.stamp_ns, sample.estimate_position, sample.estimate_quaternion,
                sample.estimate_velocity, sample.pose_covariance))
            published += 1
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
    shutdown = ShutdownRequest()
    shutdown.install()
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('sim_stack', namespace=args.namespace or None)
    try:
        stack = LocalizationStack(phases=scaled_phases(args.scale), seed=args.seed)
        count = play(node, stack, args.speed, stop=shutdown.__bool__)
        node.get_logger().info(f'published {count} estimates')
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        shutdown.restore()
    return 0


if __name__ == '__main__':
    sys.exit(main())
