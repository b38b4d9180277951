# SPDX-License-Identifier: Apache-2.0
"""tf2 behind the pairing engine's transform provider (bridge/transforms.py).

:class:`Tf2Transforms` answers the engine's lookups from a tf2 ``BufferCore``: the bridge node
passes its ``tf2_ros.Buffer`` (a BufferCore fed from its /tf and /tf_static subscriptions),
``ghost-feedback evaluate`` a plain ``tf2_py.BufferCore`` it feeds from a bag's /tf and
/tf_static (:func:`offline_buffer`, :func:`feed`): one rule, two drivers.

tf2 comes from a ROS 2 install or from third_party/tf2 (built by scripts/setup.sh);
:func:`tf2_missing` says why it cannot be imported, if it cannot.
"""

from typing import Any

from .transforms import (
    TF_EXTRAPOLATION_FUTURE,
    TF_EXTRAPOLATION_PAST,
    TF_UNAVAILABLE,
    Transform,
    TransformFailure,
)
from ..core import NS_PER_S

TF_TOPIC = '/tf'
TF_STATIC_TOPIC = '/tf_static'
AUTHORITY = 'project_ghost_feedback'
MAX_DETAIL = 300


def tf2_missing() -> str | None:
    """Return None when tf2 (tf2_py, tf2_ros, tf2_msgs) imports, else a one-line reason."""
    try:
        import tf2_msgs.msg  # noqa: F401
        import tf2_py  # noqa: F401
        import tf2_ros  # noqa: F401
    except ImportError as error:  # also a built module whose shared library is missing
        return (f'tf2 is not importable ({error}); run scripts/setup.sh (it builds '
                'third_party/tf2) or source a ROS 2 install')
    return None


def _time(stamp_ns: int) -> Any:
    from rclpy.time import Time

    return Time(nanoseconds=int(stamp_ns))


def _one_line(error: BaseException) -> str:
    text = ' '.join(str(error).split())
    return text if len(text) <= MAX_DETAIL else f'{text[:MAX_DETAIL]}...'


class Tf2Transforms:
    """The engine's transform provider over a tf2 BufferCore (a ``tf2_ros.Buffer`` is one)."""

    def __init__(self, core: Any) -> None:
        import tf2_py

        self.core = core
        self._tf2 = tf2_py

    def lookup(self, target_frame: str, source_frame: str,
               stamp_ns: int) -> Transform | TransformFailure:
        """Return a Transform (``p_target = R p_source + t``) or a TransformFailure."""
        tf2 = self._tf2
        try:
            time = stamp_ns
            if stamp_ns == 0:
                # tf2 reads time 0 as "the latest data": that is the stamp only when the latest
                # data is at 0 (or static); else ask 1 ns later (the same for every purpose).
                latest = self.core.get_latest_common_time(target_frame, source_frame)
                time = 0 if latest.nanoseconds == 0 else 1
            found = self.core.lookup_transform_core(target_frame, source_frame, _time(time))
        except tf2.ExtrapolationException as error:
            # One exception for both directions: the chain's newest common time tells which.
            try:
                latest = self.core.get_latest_common_time(target_frame, source_frame)
            except tf2.TransformException:
                return TransformFailure(TF_UNAVAILABLE, _one_line(error))
            future = stamp_ns > latest.nanoseconds
            return TransformFailure(TF_EXTRAPOLATION_FUTURE if future else TF_EXTRAPOLATION_PAST,
                                    _one_line(error))
        except tf2.TransformException as error:  # lookup, connectivity, invalid argument
            return TransformFailure(TF_UNAVAILABLE, _one_line(error))
        t, r = found.transform.translation, found.transform.rotation
        return Transform((t.x, t.y, t.z), (r.x, r.y, r.z, r.w))

    def add(self, read: Any, static: bool) -> str | None:
        """Put one transform (rclpy or rosbags TransformStamped) into tf2; None, or why not."""
        from geometry_msgs.msg import TransformStamped

        try:
            # tf2_py takes rclpy messages only: copy a rosbags one field by field.
            transform = read if isinstance(read, TransformStamped) else _rclpy_transform(read)
            if static:
                self.core.set_transform_static(transform, AUTHORITY)
            else:
                self.core.set_transform(transform, AUTHORITY)
        except Exception as error:  # noqa: BLE001 - tf2 refuses with various errors; counted
            return _one_line(error)
        return None

    def clear(self) -> None:
        """Forget the dynamic transforms (tf2 keeps the static ones)."""
        self.core.clear()


def offline_buffer(cache_time_s: float) -> Any:
    """Return a tf2 BufferCore keeping ``cache_time_s`` seconds of dynamic transforms."""
    import tf2_py
    from rclpy.duration import Duration

    return tf2_py.BufferCore(Duration(nanoseconds=int(cache_time_s * NS_PER_S)))


def feed(core: Any, message: Any, static: bool) -> int:
    """Put every transform of a tf2_msgs/TFMessage (rclpy or rosbags) into ``core``.

    Return the number refused by tf2 (a bad frame name, a non-finite value: tf2 logs them).
    Without the bridge's gate (bridge/tf_gate.py): the engine's ``take_transforms`` is what the
    node and evaluate use; this is for tests that build a buffer by hand.
    """
    transforms = Tf2Transforms(core)
    return sum(transforms.add(read, static) is not None for read in message.transforms)


def _rclpy_transform(read: Any) -> Any:
    """Return an rclpy geometry_msgs/TransformStamped equal to ``read`` (any object alike)."""
    from geometry_msgs.msg import TransformStamped

    transform = TransformStamped()
    transform.header.stamp.sec = int(read.header.stamp.sec)
    transform.header.stamp.nanosec = int(read.header.stamp.nanosec)
    transform.header.frame_id = str(read.header.frame_id)
    transform.child_frame_id = str(read.child_frame_id)
    t, r = read.transform.translation, read.transform.rotation
    out_t, out_r = transform.transform.translation, transform.transform.rotation
    out_t.x, out_t.y, out_t.z = float(t.x), float(t.y), float(t.z)
    out_r.x, out_r.y, out_r.z, out_r.w = float(r.x), float(r.y), float(r.z), float(r.w)
    return transform
