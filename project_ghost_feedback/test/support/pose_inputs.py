# SPDX-License-Identifier: Apache-2.0
"""The bridge's inputs without ROS: message-shaped objects, the constants the bridge tests share.

The pairing engine reads its inputs by attribute (bridge/engine_interface.py), so an object with
the fields of a ``nav_msgs/msg/Odometry``, a ``geometry_msgs/msg/PoseWithCovarianceStamped`` or a
``geometry_msgs/msg/PoseStamped`` stands for the message. :func:`pose_input` builds them with the
defaults the DDS harness (support/bridge_node.py) publishes: an Odometry whose ``child_frame_id``
is empty and whose covariance is all zero unless given. Stdlib only: no rclpy, no message package.
"""

import math
from types import SimpleNamespace

SECOND_NS = 1_000_000_000


COVARIANCE = [0.01 if row == column else 0.0 for row in range(6) for column in range(6)]
"""Estimate covariance: std 0.1 m on x y z, 0.1 rad on roll pitch yaw."""


UNPACED = {'decorrelation.method': 'none', 'decorrelation.adaptive': False,
           'decorrelation.min_interval_s': 0.0, 'max_reference_gap_s': 5.0}
"""Every paired estimate gives an outcome with its raw distance (no whitening, no pacing)."""


ODOMETRY, POSE_WITH_COVARIANCE, POSE = 'odometry', 'pose_with_covariance', 'pose'
"""Input shapes, named as the bridge's ``estimate_type`` / ``reference_type`` choices."""


def pose_input(stamp_ns, frame_id='odom', x=0.0, y=0.0, yaw=0.0, covariance=None,
               kind=ODOMETRY, child_frame_id='', quaternion=None, sec=None, nanosec=0):
    """Return an input of shape ``kind`` at ``stamp_ns`` in ``frame_id``.

    Position ``(x, y, 0)``; orientation ``yaw`` about z, or ``quaternion`` (x, y, z, w) as given;
    ``covariance`` 36 values (all zero when None; a PoseStamped has none). ``sec`` (with
    ``nanosec``) overrides the stamp as given, out-of-range values too.
    """
    if sec is None:
        sec, nanosec = divmod(stamp_ns, SECOND_NS)
    if quaternion is None:
        quaternion = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
    qx, qy, qz, qw = (float(v) for v in quaternion)
    pose = SimpleNamespace(position=SimpleNamespace(x=float(x), y=float(y), z=0.0),
                           orientation=SimpleNamespace(x=qx, y=qy, z=qz, w=qw))
    header = SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec), frame_id=frame_id)
    if kind == POSE:
        return SimpleNamespace(header=header, pose=pose)
    values = [0.0] * 36 if covariance is None else [float(v) for v in covariance]
    with_covariance = SimpleNamespace(pose=pose, covariance=values)
    if kind == POSE_WITH_COVARIANCE:
        return SimpleNamespace(header=header, pose=with_covariance)
    if kind != ODOMETRY:
        raise ValueError(f'unknown input kind {kind!r}')
    return SimpleNamespace(header=header, child_frame_id=child_frame_id, pose=with_covariance)
