# SPDX-License-Identifier: Apache-2.0
"""Bags without ground truth, written by rosbags: a filter's Innovation or PX4 aid-source topics."""

from project_ghost_feedback.core import NS_PER_S
from project_ghost_feedback.sim.random_walk_filter import RandomWalkFilter

INNOVATION = 'project_ghost_feedback_msgs/msg/Innovation'
INNOVATION_TOPIC = '/filter/innovation'
RATE_HZ = 10
PERIOD_NS = NS_PER_S // RATE_HZ


def typestore():
    """Return a rosbags store that knows Innovation and the PX4 aid-source types."""
    from project_ghost_feedback.px4_aid_source import register_types
    from project_ghost_feedback.telemetry.msgdefs import typestore as package_store
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_JAZZY)
    store.register({name: store_def for name, store_def in package_store().fielddefs.items()
                    if name not in store.fielddefs})
    register_types(store)
    return store


def innovation_msg(store, stamp_ns, innovation, s_diag, source='gnss', rejected=False):
    """Return a rosbags Innovation with a diagonal S and position components."""
    import numpy as np

    types = store.types
    sec, nanosec = divmod(stamp_ns, NS_PER_S)
    header = types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec), frame_id='map')
    m = len(innovation)
    covariance = [s_diag[i] if i == j else 0.0 for i in range(m) for j in range(m)]
    return types[INNOVATION](
        header=header, source=source, innovation=np.array(innovation, dtype=np.float64),
        innovation_covariance=np.array(covariance, dtype=np.float64),
        component_kinds=np.array([1] * m, dtype=np.uint8), rejected_by_filter=rejected,
        schema_version=1)


def filter_stream(seed, seconds, claimed_r=1.0, fault_at_s=None, noise_factor=1.0, m=3):
    """Yield ``(stamp_ns, innovation, S diagonal)`` of the shared random-walk filter at 10 Hz."""
    kf = RandomWalkFilter(seed, m, claimed_r=claimed_r)
    for n in range(1, seconds * RATE_HZ + 1):
        stamp = n * PERIOD_NS
        if fault_at_s is not None and stamp >= fault_at_s * NS_PER_S:
            kf.noise_factor = noise_factor
        yield (stamp, *kf.step())


def write_innovation_bag(path, stream, topic=INNOVATION_TOPIC, source='gnss'):
    """Write ``(stamp_ns, innovation, S)`` items as Innovation messages (log time = stamp)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore()
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection(topic, INNOVATION, typestore=store)
        for stamp, innovation, s in stream:
            data = store.serialize_cdr(innovation_msg(store, stamp, innovation, s, source),
                                       INNOVATION)
            writer.write(connection, stamp, data)
    return path


def aid_source_msg(store, name, innovation, variance, fused=True, rejected=False, instance=0,
                   t_us=1):
    """Return a rosbags px4_msgs/EstimatorAidSource<m>d sample (PX4's field dtypes)."""
    import numpy as np

    cls = store.types[f'px4_msgs/msg/{name}']
    m = len(innovation)
    dtype = np.float64 if name == 'EstimatorAidSource2d' else np.float32
    if m == 1:
        arrays = dict(observation=0.0, observation_variance=1.0, innovation=innovation[0],
                      innovation_filtered=0.0, innovation_variance=variance[0], test_ratio=0.0,
                      test_ratio_filtered=0.0)
    else:
        arrays = dict(observation=np.zeros(m, dtype), observation_variance=np.ones(m, np.float32),
                      innovation=np.array(innovation, np.float32),
                      innovation_filtered=np.zeros(m, np.float32),
                      innovation_variance=np.array(variance, np.float32),
                      test_ratio=np.zeros(m, np.float32),
                      test_ratio_filtered=np.zeros(m, np.float32))
    return cls(timestamp=t_us, timestamp_sample=t_us, estimator_instance=instance, device_id=0,
               time_last_fuse=0, innovation_rejected=rejected, fused=fused, **arrays)
