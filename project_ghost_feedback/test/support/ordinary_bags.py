# SPDX-License-Identifier: Apache-2.0
"""Ordinary bags (no telemetry of ours) written by rosbags from a simulated localization stack."""

import pathlib
import numpy as np
from project_ghost_feedback.cli import main
from project_ghost_feedback.sim.localization_stack import LocalizationStack, StackPhase


CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'outcome_bridge.yaml'


PHASES = (StackPhase('tuned', 12.0), StackPhase('mistuned', 12.0, truth_accel_factor=6.0))


ESTIMATE, REFERENCE = '/odometry/filtered', '/ground_truth'


ODOMETRY = 'nav_msgs/msg/Odometry'


POSE = 'geometry_msgs/msg/PoseStamped'


def stack_samples(seed=3, phases=PHASES):
    """Return the stack's samples: (stamp_ns, is_estimate, position, quaternion, covariance)."""
    return list(LocalizationStack(phases=phases, seed=seed).run())


def typestore():
    from rosbags.typesys import get_typestore, Stores

    return get_typestore(Stores.ROS2_JAZZY)


def _rosbags_msg(store, msgtype, stamp_ns, position, quaternion, covariance=None):
    types = store.types
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    header = types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec), frame_id='odom')
    pose = types['geometry_msgs/msg/Pose'](
        position=types['geometry_msgs/msg/Point'](*(float(v) for v in position)),
        orientation=types['geometry_msgs/msg/Quaternion'](*(float(v) for v in quaternion)))
    if msgtype == POSE:
        return types[POSE](header=header, pose=pose)
    cov = np.zeros(36) if covariance is None else np.asarray(covariance, dtype=float).reshape(36)
    vector3 = types['geometry_msgs/msg/Vector3']
    zero = vector3(0.0, 0.0, 0.0)
    twist = types['geometry_msgs/msg/TwistWithCovariance'](
        twist=types['geometry_msgs/msg/Twist'](linear=zero, angular=zero),
        covariance=np.zeros(36))
    return types[ODOMETRY](
        header=header, child_frame_id='base_link',
        pose=types['geometry_msgs/msg/PoseWithCovariance'](pose=pose, covariance=cov),
        twist=twist)


def write_rosbags_bag(path, samples, reference_type=ODOMETRY, storage='mcap',
                      estimate_topic=ESTIMATE, reference_topic=REFERENCE, shift_reference_ns=0,
                      mangle=None, log_start_ns=1):
    """Write the samples with rosbags' Writer: estimates (Odometry) and truth (reference_type).

    ``mangle(index, kind, cdr) -> cdr``, when given, may change each message's bytes. Log times
    count 1 ns per message from ``log_start_ns``.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore()
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        estimates = writer.add_connection(estimate_topic, ODOMETRY, typestore=store)
        references = writer.add_connection(reference_topic, reference_type, typestore=store)
        for log_ns, (kind, sample) in enumerate(ordered(samples), start=log_start_ns):
            if kind == 'reference':
                stamp = sample.stamp_ns + shift_reference_ns
                msg = _rosbags_msg(store, reference_type, stamp, sample.truth_position,
                                   sample.truth_quaternion)
                data = store.serialize_cdr(msg, reference_type)
                connection = references
            else:
                msg = _rosbags_msg(store, ODOMETRY, sample.stamp_ns, sample.estimate_position,
                                   sample.estimate_quaternion, sample.pose_covariance)
                data = store.serialize_cdr(msg, ODOMETRY)
                connection = estimates
            if mangle is not None:
                data = mangle(log_ns - log_start_ns, kind, data)
            writer.write(connection, log_ns, data)
    return path


def ordered(samples):
    """Yield ('reference'|'estimate', sample): the truth of a step, then its estimate."""
    for sample in samples:
        yield 'reference', sample
        if sample.is_estimate:
            yield 'estimate', sample


def evaluate(bag, out, *extra, estimate=ESTIMATE, reference=REFERENCE):
    """Run ``ghost-feedback evaluate`` and return its exit status."""
    return main(['evaluate', str(bag), '--estimate', estimate, '--reference', reference,
                 '--params-file', str(CONFIG), '--output-dir', str(out), *extra])
