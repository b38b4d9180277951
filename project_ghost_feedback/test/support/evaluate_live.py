# SPDX-License-Identifier: Apache-2.0
"""The live bridge and evaluate over one stream: messages, offline outputs, comparable keys."""

from nav_msgs.msg import Odometry
from project_ghost_feedback.bridge_inputs import (
    ASSESSMENT,
)


def odometry_msg(stamp_ns, position, quaternion, covariance=None, frame_id='odom'):
    """Return an Odometry in ``frame_id`` (child base_link) with a pose and its covariance."""
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    msg.header.frame_id = frame_id
    msg.child_frame_id = 'base_link'
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    q.x, q.y, q.z, q.w = (float(v) for v in quaternion)
    if covariance is not None:
        msg.pose.covariance = [float(v) for v in covariance.reshape(36)]
    return msg


def outcome_key(stamp_ns, position_error, orientation_error, position_d, orientation_d):
    return (stamp_ns, tuple(float(v) for v in position_error),
            tuple(float(v) for v in orientation_error), float(position_d), float(orientation_d))


def offline_outputs(run):
    """Return ``(outcome keys, (stamp, overall level) of each assessment)`` of an offline run."""
    outcomes, levels = [], []
    for kind, contract in run:
        if kind == ASSESSMENT:
            levels.append((contract.belief_stamp_sim_ns, contract.overall_level.value))
        else:
            outcomes.append(outcome_key(
                contract.observed_stamp_sim_ns, contract.position_error_m,
                contract.orientation_error_rad, contract.position_mahalanobis,
                contract.orientation_mahalanobis))
    return outcomes, levels
