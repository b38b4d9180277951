# SPDX-License-Identifier: Apache-2.0
"""The colcon-built interfaces of project_ghost_feedback_msgs, exercised through rclpy.

- the generated Python modules import, from the colcon install space (ament index);
- every message type survives rclpy's serialize/deserialize, +inf in float64 fields included;
- every message type goes through a real publisher -> subscriber pair: two nodes in two private
  rclpy contexts (two DDS participants) in this process, on the loopback-confined environment of
  scripts/env.sh.
"""

import math
import os
import pathlib
import time

from ament_index_python.packages import get_package_prefix, get_package_share_directory
from support.ros_context import new_rclpy_context
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message

from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment,
    CalibratedSelfAssessment,
    CalibrationHistory,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from builtin_interfaces.msg import Time
from std_msgs.msg import Header

MESSAGE_NAMES = [
    'SelfAssessmentLevel',
    'NamedLevel',
    'BeliefSelfAssessment',
    'PredictionOutcome',
    'CalibrationHistory',
    'CalibratedSelfAssessment',
]
PUBSUB_TIMEOUT_S = 20.0


def _level(name):
    return SelfAssessmentLevel(value=getattr(SelfAssessmentLevel, name))


def _belief():
    return BeliefSelfAssessment(
        header=Header(stamp=Time(sec=1_700_000_000, nanosec=123_456_789), frame_id='odom'),
        overall_level=_level('UNCERTAIN'),
        axis_levels=[
            NamedLevel(name='position_x', level=_level('KNOWN')),
            NamedLevel(name='yaw', level=_level('UNKNOWN')),
        ],
        block_levels=[NamedLevel(name='pose', level=_level('UNCERTAIN'))],
        schema_version=BeliefSelfAssessment.SCHEMA_VERSION,
    )


def _history():
    return CalibrationHistory(
        outcomes_considered=10,
        count_within_1_std=4,
        count_beyond_1_std=3,
        count_beyond_3_std=2,
        count_beyond_5_std=1,
        worst_position_mahalanobis=math.inf,
        worst_orientation_mahalanobis=4.25,
        position_squared_distances=[0.25] * 9 + [math.inf],
        orientation_squared_distances=[18.0625] + [0.0] * 9,
        most_recent_observed_stamp=Time(sec=2**31 - 1, nanosec=999_999_999),
        history_schema_version=CalibrationHistory.HISTORY_SCHEMA_SQUARED_DISTANCES,
        schema_version=CalibrationHistory.SCHEMA_VERSION,
    )


def _example(name):
    """Return a fully populated message of type name (+inf in a float64 field where it has one)."""
    if name == 'SelfAssessmentLevel':
        return _level('KNOWN')
    if name == 'NamedLevel':
        return NamedLevel(name='position_x', level=_level('UNKNOWN'))
    if name == 'BeliefSelfAssessment':
        return _belief()
    if name == 'PredictionOutcome':
        return PredictionOutcome(
            header=Header(stamp=Time(sec=2, nanosec=0), frame_id='base_link'),
            prediction_stamp=Time(sec=1, nanosec=999_999_999),
            position_error_m=[0.5, -1.25, 3.0],
            orientation_error_rad=[0.0, 1e-9, -0.1],
            position_mahalanobis=math.inf,
            orientation_mahalanobis=0.75,
            schema_version=PredictionOutcome.SCHEMA_VERSION,
        )
    if name == 'CalibrationHistory':
        return _history()
    if name == 'CalibratedSelfAssessment':
        return CalibratedSelfAssessment(
            header=_belief().header,
            raw_assessment=_belief(),
            calibration_history=_history(),
            adjusted_overall_level=_level('UNKNOWN'),
            adjustment_policy_id='mahalanobis_downgrade',
            adjustment_reason='downgrade_from_calibration',
            schema_version=CalibratedSelfAssessment.SCHEMA_VERSION,
        )
    raise AssertionError(f'no example for {name}')


def _has_inf(value):
    """Return True if the message (recursively) holds +inf in some float field."""
    if isinstance(value, float):
        return math.isinf(value) and value > 0
    if hasattr(value, 'get_fields_and_field_types'):
        return any(_has_inf(getattr(value, field)) for field in value.get_fields_and_field_types())
    if isinstance(value, (list, tuple)) or hasattr(value, 'tolist'):
        return any(_has_inf(item) for item in list(value))
    return False


def test_messages_come_from_the_colcon_install_space():
    """The generated package is found through the ament index and imported from its prefix."""
    import project_ghost_feedback_msgs

    # Not resolve(): with --symlink-install the installed files are symlinks into build/.
    prefix = pathlib.Path(os.path.abspath(get_package_prefix('project_ghost_feedback_msgs')))
    module_path = pathlib.Path(os.path.abspath(project_ghost_feedback_msgs.__file__))
    assert prefix in module_path.parents, f'{module_path} is not under {prefix}'
    share = pathlib.Path(get_package_share_directory('project_ghost_feedback_msgs'))
    for name in MESSAGE_NAMES:
        assert (share / 'msg' / f'{name}.msg').is_file()
        assert (share / 'msg' / f'{name}.idl').is_file()


def test_python_package_is_registered_with_its_executables():
    """ros2 run finds executables in <prefix>/lib/project_ghost_feedback (setup.cfg)."""
    prefix = pathlib.Path(get_package_prefix('project_ghost_feedback'))
    lib_dir = prefix / 'lib' / 'project_ghost_feedback'
    for executable in ('feedback_node', 'ghost-feedback'):
        assert os.access(lib_dir / executable, os.X_OK), f'{lib_dir / executable} missing'
    share = pathlib.Path(get_package_share_directory('project_ghost_feedback'))
    assert (share / 'package.xml').is_file()


def test_level_constants_are_one_catalog():
    """The catalog is defined once (SelfAssessmentLevel); zero is UNKNOWN, the safe default."""
    assert (SelfAssessmentLevel.UNKNOWN, SelfAssessmentLevel.UNCERTAIN,
            SelfAssessmentLevel.KNOWN) == (0, 1, 2)
    assert SelfAssessmentLevel().value == SelfAssessmentLevel.UNKNOWN
    for cls in (NamedLevel, BeliefSelfAssessment, CalibratedSelfAssessment):
        assert not [name for name in dir(cls) if name.startswith('LEVEL_')]
    share = pathlib.Path(get_package_share_directory('project_ghost_feedback_msgs'))
    defining = [p.name for p in sorted((share / 'msg').glob('*.msg'))
                if 'KNOWN=' in p.read_text()]
    assert defining == ['SelfAssessmentLevel.msg']
    for cls in (BeliefSelfAssessment, CalibratedSelfAssessment):
        assert cls.SCHEMA_VERSION == 2
    assert PredictionOutcome.SCHEMA_VERSION == 3  # the bias evidence
    assert CalibrationHistory.SCHEMA_VERSION == 3  # ADR-0026a: squared distances, a Time stamp
    assert (CalibrationHistory.HISTORY_SCHEMA_COUNTS,
            CalibrationHistory.HISTORY_SCHEMA_SQUARED_DISTANCES) == (1, 2)


def test_sequences_and_strings_are_bounded():
    """v2 bounds: at most 64 levels per list, 64-character names; a longer list cannot be sent.

    rclpy (Jazzy) does not check bounds on assignment unless ROS_PYTHON_CHECK_FIELDS is set; the
    typesupport refuses an over-long sequence when serializing, and the contracts refuse the rest
    (test_core_contracts).
    """
    assert NamedLevel.get_fields_and_field_types()['name'] == 'string<64>'
    fields = BeliefSelfAssessment.get_fields_and_field_types()
    assert fields['axis_levels'] == fields['block_levels'] == (
        'sequence<project_ghost_feedback_msgs/NamedLevel, 64>')
    fields = CalibratedSelfAssessment.get_fields_and_field_types()
    assert fields['adjustment_policy_id'] == fields['adjustment_reason'] == 'string<64>'
    serialize_message(BeliefSelfAssessment(
        axis_levels=[NamedLevel(name=f'a{i}') for i in range(64)]))
    with pytest.raises(Exception, match='serialize'):
        serialize_message(BeliefSelfAssessment(
            axis_levels=[NamedLevel(name=f'a{i}') for i in range(65)]))


def test_squared_distances_are_bounded_by_the_largest_max_history():
    """ADR-0026a: float64[<=N] with N the node's largest max_history; N + 1 cannot be sent."""
    from project_ghost_feedback.ros.feedback_parameters import NODE_PARAMETERS

    bound = NODE_PARAMETERS['max_history'].integer_range[1]
    assert CalibrationHistory.MAX_SQUARED_DISTANCES == bound == 100_000
    fields = CalibrationHistory.get_fields_and_field_types()
    assert fields['position_squared_distances'] == fields['orientation_squared_distances'] == (
        f'sequence<double, {bound}>')
    assert fields['most_recent_observed_stamp'] == 'builtin_interfaces/Time'
    serialize_message(CalibrationHistory(position_squared_distances=[0.0] * bound))
    with pytest.raises(Exception, match='serialize'):
        serialize_message(CalibrationHistory(position_squared_distances=[0.0] * (bound + 1)))


def calibrated_cdr_bytes(window):
    """Return the CDR size of the CalibratedSelfAssessment the node publishes for a full window."""
    history = _history()
    history.outcomes_considered = window
    history.count_within_1_std, history.count_beyond_1_std = window, 0
    history.count_beyond_3_std = history.count_beyond_5_std = 0
    history.position_squared_distances = [0.5] * window
    history.orientation_squared_distances = [0.5] * window
    message = _example('CalibratedSelfAssessment')
    message.calibration_history = history
    return len(serialize_message(message))


def test_calibrated_message_size_grows_by_16_bytes_per_outcome():
    """Size of a CalibratedSelfAssessment: fixed part + 16 bytes per outcome (two float64)."""
    base = calibrated_cdr_bytes(0)
    assert calibrated_cdr_bytes(32) == base + 32 * 16
    assert calibrated_cdr_bytes(100_000) == base + 100_000 * 16


@pytest.mark.parametrize('name', MESSAGE_NAMES)
def test_serialize_roundtrip(name):
    """CDR serialization with rclpy round-trips every field exactly, +inf included."""
    original = _example(name)
    if name not in ('SelfAssessmentLevel', 'NamedLevel', 'BeliefSelfAssessment'):
        assert _has_inf(original), 'the example must exercise +inf'
    data = serialize_message(original)
    assert isinstance(data, bytes) and data
    restored = deserialize_message(data, type(original))
    assert restored == original
    assert _has_inf(restored) == _has_inf(original)


@pytest.fixture
def two_contexts():
    """Yield two private, initialised rclpy contexts; shut both down afterwards."""
    contexts = []
    for _ in range(2):
        contexts.append(new_rclpy_context())
    try:
        yield contexts
    finally:
        for context in contexts:
            context.try_shutdown()


@pytest.mark.parametrize('name', MESSAGE_NAMES)
def test_pubsub_between_two_nodes(name, two_contexts):
    """A message published by one node arrives intact at a node of another DDS participant."""
    sent = _example(name)
    msg_type = type(sent)
    topic = f'/ghost_feedback_test/{name.lower()}'
    qos = QoSProfile(
        depth=10,
        history=HistoryPolicy.KEEP_LAST,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )
    pub_context, sub_context = two_contexts
    pub_node = rclpy.create_node('interfaces_test_pub', context=pub_context)
    sub_node = rclpy.create_node('interfaces_test_sub', context=sub_context)
    executors = [SingleThreadedExecutor(context=pub_context),
                 SingleThreadedExecutor(context=sub_context)]
    executors[0].add_node(pub_node)
    executors[1].add_node(sub_node)
    received = []
    try:
        publisher = pub_node.create_publisher(msg_type, topic, qos)
        sub_node.create_subscription(msg_type, topic, received.append, qos)
        deadline = time.monotonic() + PUBSUB_TIMEOUT_S
        while not received and time.monotonic() < deadline:
            if publisher.get_subscription_count() > 0:
                publisher.publish(sent)
            for executor in executors:
                executor.spin_once(timeout_sec=0.02)
        assert received, f'no {name} received within {PUBSUB_TIMEOUT_S} s'
        assert received[0] == sent
        assert _has_inf(received[0]) == _has_inf(sent)
    finally:
        for executor in executors:
            executor.shutdown()
        pub_node.destroy_node()
        sub_node.destroy_node()
