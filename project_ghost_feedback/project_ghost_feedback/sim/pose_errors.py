# SPDX-License-Identifier: Apache-2.0
"""Known pose errors fed straight to the bridge's pairing engine (tests and benches, no ROS).

:func:`pose_like` is an object with the fields of a ``nav_msgs/msg/Odometry`` the engine
reads (``header``, ``child_frame_id``, ``pose.pose``, ``pose.covariance``), at the origin plus a
given 6-D error, with a diagonal covariance of given standard deviations; :func:`odometry_like`
the same for a position error and a yaw, one standard deviation on all six axes.
:func:`feed_errors` gives the engine one estimate per period with given errors against a
reference at the origin (a reference sample half a period before and after each estimate, so
every estimate is interpolated, never extrapolated), then flushes it. Stdlib only.
"""

from collections.abc import Sequence
import math
from types import SimpleNamespace
from typing import Any

from ..core import NS_PER_S


def odometry_like(stamp_ns: int, xyz: Sequence[float] = (0.0, 0.0, 0.0), yaw: float = 0.0,
                  std: float = 0.1) -> SimpleNamespace:
    """Return an Odometry-shaped object in ``odom`` (child ``base``) at ``xyz`` with ``yaw``."""
    return pose_like(stamp_ns, (*xyz, 0.0, 0.0, yaw), (std,) * 6)


def pose_like(stamp_ns: int, error: Sequence[float],
              stds: Sequence[float]) -> SimpleNamespace:
    """Return an Odometry-shaped object at a 6-D error (x, y, z m; rotation vector rad).

    ``stds``: the claimed standard deviation of each of the six axes (a diagonal covariance).
    """
    sec, nanosec = divmod(stamp_ns, NS_PER_S)
    rx, ry, rz = error[3], error[4], error[5]
    angle = math.sqrt(rx * rx + ry * ry + rz * rz)
    scale = math.sin(angle / 2) / angle if angle > 0 else 0.5
    covariance = [0.0] * 36
    for i in range(6):
        covariance[i * 7] = stds[i] * stds[i]
    return SimpleNamespace(
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec), frame_id='odom'),
        child_frame_id='base',
        pose=SimpleNamespace(
            pose=SimpleNamespace(
                position=SimpleNamespace(x=error[0], y=error[1], z=error[2]),
                orientation=SimpleNamespace(x=rx * scale, y=ry * scale, z=rz * scale,
                                            w=math.cos(angle / 2))),
            covariance=covariance))


def feed_errors(engine: Any, errors: Sequence[Sequence[float]], start: int = 0,
                yaw_errors: Sequence[float] | None = None, period_ns: int = NS_PER_S // 10,
                std: float = 0.1) -> None:
    """Feed ``engine`` one estimate per ``period_ns`` with these position errors (m), then flush.

    Estimate ``i`` is stamped ``(start + i) * period_ns``, with ``yaw_errors[i]`` (rad) when
    given and a claimed standard deviation ``std``; the reference (zero covariance) is at the
    origin.
    """
    for i, error in enumerate(errors):
        stamp = (start + i) * period_ns
        engine.take_reference(odometry_like(stamp, std=0.0))
        yaw = 0.0 if yaw_errors is None else float(yaw_errors[i])
        engine.take_estimate(odometry_like(stamp, xyz=tuple(error), yaw=yaw, std=std))
        engine.take_reference(odometry_like(stamp + period_ns // 2, std=0.0))
    engine.flush()
