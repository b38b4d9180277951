# SPDX-License-Identifier: Apache-2.0
"""Ordinary bags with tf: the estimate in ``odom``, the truth in ``map``, ``map -> odom`` on tf.

Written with rosbags' Writer from the simulated stack (sim/localization_stack.py) and a moving
``map -> odom`` (sim/odom_drift.py). The tf topic, the frame names' prefix and the transform
published (a wrong one, for a frame error) are the caller's.
"""

import numpy as np

from project_ghost_feedback.sim.odom_drift import OdomDrift
from support.ordinary_bags import ESTIMATE, ODOMETRY, ordered, REFERENCE, typestore

TF_TYPE = 'tf2_msgs/msg/TFMessage'


def _header(types, stamp_ns, frame_id):
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    return types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec), frame_id=frame_id)


def _odometry(store, stamp_ns, frame_id, position, quaternion, covariance=None):
    types = store.types
    pose = types['geometry_msgs/msg/Pose'](
        position=types['geometry_msgs/msg/Point'](*(float(v) for v in position)),
        orientation=types['geometry_msgs/msg/Quaternion'](*(float(v) for v in quaternion)))
    cov = np.zeros(36) if covariance is None else np.asarray(covariance, dtype=float).reshape(36)
    zero = types['geometry_msgs/msg/Vector3'](0.0, 0.0, 0.0)
    twist = types['geometry_msgs/msg/TwistWithCovariance'](
        twist=types['geometry_msgs/msg/Twist'](linear=zero, angular=zero),
        covariance=np.zeros(36))
    return types[ODOMETRY](
        header=_header(types, stamp_ns, frame_id), child_frame_id='base_link',
        pose=types['geometry_msgs/msg/PoseWithCovariance'](pose=pose, covariance=cov),
        twist=twist)


def _tf(store, stamp_ns, parent, child, translation, rotation):
    types = store.types
    transform = types['geometry_msgs/msg/TransformStamped'](
        header=_header(types, stamp_ns, parent), child_frame_id=child,
        transform=types['geometry_msgs/msg/Transform'](
            translation=types['geometry_msgs/msg/Vector3'](*(float(v) for v in translation)),
            rotation=types['geometry_msgs/msg/Quaternion'](*(float(v) for v in rotation))))
    return types[TF_TYPE](transforms=[transform])


def write_tf_bag(path, samples, drift=None, tf_topic='/tf', tf_prefix='', published_tf=None):
    """Write estimates (``odom``), truth (``map``) and ``map -> odom`` on ``tf_topic``.

    ``tf_prefix`` prefixes the frame names on tf only (the messages say ``map`` and ``odom``).
    ``published_tf(stamp_ns, (translation, rotation)) -> (translation, rotation)``, when given,
    chooses the transform published (e.g. a wrong one for a while); the estimate is always the
    true pose in ``odom``. One tf message before each reference; returns ``path``.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    drift = drift or OdomDrift(step_period_s=2.0, seed=3)
    store = typestore()
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        estimates = writer.add_connection(ESTIMATE, ODOMETRY, typestore=store)
        references = writer.add_connection(REFERENCE, ODOMETRY, typestore=store)
        tf = writer.add_connection(tf_topic, TF_TYPE, typestore=store)
        log_ns = 0
        for kind, sample in ordered(samples):
            stamp = sample.stamp_ns
            if kind == 'reference':
                true = drift.map_to_odom(stamp)
                translation, rotation = published_tf(stamp, true) if published_tf else true
                log_ns += 1
                writer.write(tf, log_ns, store.serialize_cdr(_tf(
                    store, stamp, f'{tf_prefix}map', f'{tf_prefix}odom', translation,
                    rotation), TF_TYPE))
                msg = _odometry(store, stamp, 'map', sample.truth_position,
                                sample.truth_quaternion)
                connection = references
            else:
                position, quaternion, covariance = drift.to_odom(
                    stamp, sample.estimate_position, sample.estimate_quaternion,
                    sample.pose_covariance)
                msg = _odometry(store, stamp, 'odom', position, quaternion, covariance)
                connection = estimates
            log_ns += 1
            writer.write(connection, log_ns, store.serialize_cdr(msg, ODOMETRY))
    return path
