# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's inputs read from the CDR bytes DDS carries.

The bridge subscribes its estimate and reference raw: rclpy would build a nested Odometry object
for every input (~35 us here: the pose, the twist and two 36-value covariances) only for the
bridge to read a stamp, two frame names, seven numbers and one covariance from it. The views here
have the message's attribute names (``header.stamp.sec``, ``child_frame_id``,
``pose.pose.position.x``, ``pose.covariance``), so the bridge's engine reads a view and a message
object alike (:mod:`..bridge.engine_interface`).

- :data:`VIEWS`: for each ``estimate_type`` / ``reference_type`` choice (``odometry``,
  ``pose_with_covariance``, ``pose``), the function returning a :class:`PoseInputView` of a
  payload. Anything it cannot read exactly (another encapsulation, a truncated payload or bytes
  after the last field) raises :class:`.wire.WireError`; the caller then uses rclpy's
  ``deserialize_message``, which reads every encapsulation, or counts the message as malformed.
- :meth:`PoseInputView.with_covariance`: the same message's bytes with another pose covariance
  (the calibrated estimate republishes an estimate so, without building a message).

No rclpy here. The layouts (little-endian plain CDR, each primitive aligned to its size from the
start of the body) are checked against rclpy's ``serialize_message`` in ``test_pose_wire.py``.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Sequence
import struct

import numpy as np

from .wire import cdr_body, Header, read_header, read_string, WireError

Point = namedtuple('Point', 'x y z')
Quaternion = namedtuple('Quaternion', 'x y z w')
Pose = namedtuple('Pose', 'position orientation')
PoseWithCovariance = namedtuple('PoseWithCovariance', 'pose covariance')

_POSE = struct.Struct('<7d')
_COVARIANCE_BYTES = 36 * 8
_TWIST_WITH_COVARIANCE_BYTES = 6 * 8 + _COVARIANCE_BYTES
_ENCAPSULATION = 4


class PoseInputView:
    """An Odometry, PoseWithCovarianceStamped or PoseStamped read from its bytes.

    ``pose`` is a PoseWithCovariance (``covariance``: a read-only float64 array of 36 over the
    payload) or, for PoseStamped, a Pose. ``child_frame_id`` is '' for the types without one.
    """

    __slots__ = ('header', 'child_frame_id', 'pose', 'data', 'covariance_at')

    def __init__(self, header: Header, child_frame_id: str, pose: PoseWithCovariance | Pose,
                 data: bytes, covariance_at: int) -> None:
        self.header = header
        self.child_frame_id = child_frame_id
        self.pose = pose
        self.data = data
        self.covariance_at = covariance_at
        """Offset of the pose covariance in ``data`` (-1: the type has none)."""

    def with_covariance(self, covariance: Sequence[float]) -> bytes:
        """Return the message's bytes with ``covariance`` (36 values) as its pose covariance."""
        if self.covariance_at < 0:
            raise ValueError('this message type carries no pose covariance')
        values = np.asarray(covariance, dtype='<f8').reshape(-1)
        if values.size != 36:
            raise ValueError(f'a pose covariance has 36 values, got {values.size}')
        at = self.covariance_at
        return self.data[:at] + values.tobytes() + self.data[at + _COVARIANCE_BYTES:]


def _pose(body: bytes, offset: int) -> tuple[Pose, int]:
    offset = (offset + 7) & ~7
    x, y, z, qx, qy, qz, qw = _POSE.unpack_from(body, offset)
    return Pose(Point(x, y, z), Quaternion(qx, qy, qz, qw)), offset + _POSE.size


def _check_end(body: bytes, end: int, name: str) -> None:
    if end != len(body):
        raise WireError(f'{name} payload of {len(body)} bytes, expected {end}')


def _read(data: bytes, name: str, child: bool, covariance: bool, twist: bool) -> PoseInputView:
    body = cdr_body(data)
    try:
        header, offset = read_header(body)
        child_frame_id = ''
        if child:
            child_frame_id, offset = read_string(body, (offset + 3) & ~3)
        bare_pose, offset = _pose(body, offset)
        pose: Pose | PoseWithCovariance = bare_pose
        covariance_at = -1
        if covariance:
            if offset + _COVARIANCE_BYTES > len(body):
                raise WireError(f'{name} payload of {len(body)} bytes ends inside its covariance')
            covariance_at = offset + _ENCAPSULATION
            pose = PoseWithCovariance(bare_pose, np.frombuffer(body, '<f8', 36, offset))
            offset += _COVARIANCE_BYTES
        if twist:
            offset += _TWIST_WITH_COVARIANCE_BYTES
    except struct.error as error:
        raise WireError(f'{name} payload of {len(body)} bytes: {error}') from None
    _check_end(body, offset, name)
    return PoseInputView(header, child_frame_id, pose, bytes(data), covariance_at)


def odometry_view(data: bytes) -> PoseInputView:
    """Return the nav_msgs/Odometry view of ``data``; WireError if unreadable."""
    return _read(data, 'Odometry', child=True, covariance=True, twist=True)


def pose_with_covariance_view(data: bytes) -> PoseInputView:
    """Return the geometry_msgs/PoseWithCovarianceStamped view of ``data``."""
    return _read(data, 'PoseWithCovarianceStamped', child=False, covariance=True, twist=False)


def pose_view(data: bytes) -> PoseInputView:
    """Return the geometry_msgs/PoseStamped view of ``data``."""
    return _read(data, 'PoseStamped', child=False, covariance=False, twist=False)


VIEWS: dict[str, Callable[[bytes], PoseInputView]] = {
    'odometry': odometry_view,
    'pose_with_covariance': pose_with_covariance_view,
    'pose': pose_view,
}
"""The view of each ``estimate_type`` / ``reference_type`` choice (bridge.parameters)."""
