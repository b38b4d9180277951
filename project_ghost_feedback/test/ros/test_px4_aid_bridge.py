# SPDX-License-Identifier: Apache-2.0
"""innovation_bridge + feedback node over DDS, fed PX4 aid-source messages live (px4_aid_topics).

The filter in the test (sim/random_walk_filter.py, two axes: a GNSS horizontal position) publishes
what PX4's EKF2 publishes over uXRCE-DDS for it: ``px4_msgs/msg/EstimatorAidSource2d`` on
``/fmu/out/estimator_aid_src_gnss_pos``, best effort as PX4 publishes, one sample per fusion at
10 Hz of ``timestamp_sample`` (microseconds), innovation and innovation variance as float32.
The bridge subscribes with ``px4_aid_topics`` (the type read from the topic's name) and the
feedback node judges the outcomes. Honest: 20 starts, 60 s of stamp time each, none
downgraded. Innovation variance claimed 3x too small (standard deviation; variance 9x): UNKNOWN
within one window of 32 outcomes. Samples not fused or rejected by EKF2 are counted, never judged.
Time is the messages' stamps only: the test waits on progress, never on wall time.
"""


from ament_index_python.packages import get_package_share_directory, PackageNotFoundError
from project_ghost_feedback.px4_aid_source import register_types
from project_ghost_feedback.ros.feedback_node import FeedbackNode
from project_ghost_feedback.ros.innovation_bridge_node import InnovationBridgeNode
from project_ghost_feedback.ros.node_kit import message_class
from project_ghost_feedback.sim.random_walk_filter import RandomWalkFilter
import pytest
from support.field_starts import FilterRig, honest_starts, listen, outcomes_to_unknown, UNKNOWN
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy

TOPIC = '/fmu/out/estimator_aid_src_gnss_pos'
TYPE = 'px4_msgs/msg/EstimatorAidSource2d'
try:
    get_package_share_directory('px4_msgs')
except PackageNotFoundError:
    pytest.skip('px4_msgs is not built (make setup builds it)', allow_module_level=True)
# px4_msgs is an optional dependency (only px4_aid_topics needs it): imported as the node does.
EstimatorAidSource2d = message_class(TYPE)
RATE_HZ = 10
PERIOD_US = 1_000_000 // RATE_HZ
Q = 1e-4     # process noise variance per step, m^2
R = 1.0      # true measurement noise variance, m^2
HONEST_STARTS = 20
PX4_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
"""What PX4's uXRCE-DDS client offers: best effort."""
QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def make_filter(seed, claimed_r):
    """Return the shared random-walk filter: 2 axes (GNSS north, east), q = 1e-4 r."""
    return RandomWalkFilter(seed, 2, q=Q, r=R, claimed_r=claimed_r)


class Rig(FilterRig):
    """A PX4-like filter node, an innovation bridge on px4_aid_topics and a feedback node."""

    rate_hz, period = RATE_HZ, PERIOD_US

    def __init__(self, context):
        self.executor = SingleThreadedExecutor(context=context)
        self.bridge = InnovationBridgeNode(
            context=context, parameter_overrides=[Parameter('px4_aid_topics', value=[TOPIC])])
        # A one-block source of 2 components fills both slots of an outcome (2, 2): set for an
        # unbiased k, as the bridge's log says; the levels do not depend on it.
        self.feedback = FeedbackNode(context=context, parameter_overrides=[
            Parameter('position_components', value=2),
            Parameter('orientation_components', value=2)])
        self.driver = Node('ekf2', context=context)
        self.publisher = self.driver.create_publisher(EstimatorAidSource2d, TOPIC, PX4_QOS)
        listen(self, QOS)
        self.spin_until(lambda: self.publisher.get_subscription_count() >= 1
                        and self.bridge.count_subscribers('prediction_outcome') >= 1,
                        'discovery')

    def publish(self, stamp_us, innovation, variance, fused=True, rejected=False):
        msg = EstimatorAidSource2d()
        msg.timestamp = msg.timestamp_sample = stamp_us
        msg.time_last_fuse = stamp_us if fused else 0
        msg.innovation = [float(v) for v in innovation]
        msg.innovation_variance = [float(v) for v in variance]
        msg.test_ratio = [e * e / s for e, s in zip(innovation, variance)]
        msg.fused, msg.innovation_rejected = fused, rejected
        self.publisher.publish(msg)


def test_the_bridge_subscribes_with_px4s_type_name_hash_and_qos(rclpy_context):
    """The live type is PX4's: its name and RIHS01 hash (== rosbags' from the .msg text)."""
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_JAZZY)
    register_types(store)
    rig = Rig(rclpy_context)
    try:
        (info,) = rig.driver.get_subscriptions_info_by_topic(TOPIC)
        assert info.topic_type == TYPE
        assert str(info.topic_type_hash) == store.hash_rihs01(TYPE)
        assert info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
    finally:
        rig.close()


@pytest.mark.long
def test_honest_gnss_pos_twenty_starts_in_60_s_none_downgraded(rclpy_context):
    """Fresh nodes per start, 60 s of 10 Hz fused samples (300 outcomes each): none downgraded.

    As for Innovation messages (test_innovation_bridge.py): a start of 60 s is falsely
    downgraded with a probability of the order of 1e-4, and the seeds are fixed.
    """
    def check(rig):
        assert rig.bridge.engine.pairing.refused == {}  # 600 samples, all accepted
        assert rig.bridge.engine.not_fused == 0

    downgraded = honest_starts(lambda: Rig(rclpy_context),
                               lambda rig, seed: rig.run_filter(make_filter(seed, R), 60),
                               starts=HONEST_STARTS, check=check)
    assert downgraded == {}, downgraded


def test_innovation_variance_claimed_3x_too_small_is_unknown_within_a_window(rclpy_context):
    """Claimed std 3x too small: UNKNOWN within 32 outcomes (64 samples, 6.4 s), 5 seeds."""
    delays = outcomes_to_unknown(
        lambda: Rig(rclpy_context),
        lambda rig, seed: rig.run_filter(make_filter(seed, claimed_r=R / 9.0), 10, batch=4,
                                         stop=lambda levels: UNKNOWN in levels),
        range(100, 105))
    assert max(delays) <= 32, delays


def test_samples_not_fused_or_rejected_are_counted_not_judged(rclpy_context):
    rig = Rig(rclpy_context)
    try:
        stamp = 0
        for fused, rejected in [(False, False)] * 3 + [(False, True)] * 2:
            stamp += PERIOD_US
            rig.publish(stamp, [50.0, -50.0], [1.0, 1.0], fused=fused, rejected=rejected)
        rig.spin_until(lambda: rig.bridge.received == 5, 'five samples')
        engine = rig.bridge.engine
        assert engine.not_fused == 3
        assert engine.pairing.refused == {'rejected_by_filter': 2}
        assert engine.outcomes_published == 0 and engine.pairing.accepted == 0
        for _ in range(2):  # two fused samples: one outcome, the rejected ones not in it
            stamp += PERIOD_US
            rig.publish(stamp, [0.1, -0.2], [1.0, 1.0])
        rig.spin_until(lambda: len(rig.levels) == 1, 'one assessment')
        assert engine.outcomes_published == 1
        rig.spin_until(lambda: any(
            s.name.endswith('innovation_bridge: innovations')
            for a in rig.diagnostics for s in a.status), 'a status')
        status = next(s for a in reversed(rig.diagnostics) for s in a.status
                      if s.name.endswith('innovation_bridge: innovations'))
        values = {kv.key: kv.value for kv in status.values}
        assert values['innovations_not_fused'] == '3'
        assert values['innovations_refused[rejected_by_filter]'] == '2'
        assert values['vec3_components[gnss_pos]'] == '2,2'
    finally:
        rig.close()


@pytest.mark.parametrize('value, match', [
    (['/fmu/out/vehicle_odometry'], "'vehicle_odometry' is not a PX4 aid-source topic name"),
    (['/fmu/out//estimator_aid_src_gnss_pos'], 'is not a topic name'),
    ([TOPIC, TOPIC], 'listed twice'),
    ('/fmu/out/estimator_aid_src_gnss_pos', 'must be a list of topic names'),
])
def test_px4_aid_topics_is_validated_with_a_clear_error(rclpy_context, value, match):
    with pytest.raises(ValueError, match=match):
        InnovationBridgeNode(context=rclpy_context,
                             parameter_overrides=[Parameter('px4_aid_topics', value=value)])


def test_px4_aid_topics_is_read_only(rclpy_context):
    bridge = InnovationBridgeNode(context=rclpy_context)
    try:
        assert bridge.get_parameter('px4_aid_topics').value == []
        (result,) = bridge.set_parameters([Parameter('px4_aid_topics', value=[TOPIC])])
        assert not result.successful and 'read-only' in result.reason
    finally:
        bridge.destroy_node()


def test_launch_file_passes_px4_aid_topics_to_the_bridge_as_a_list():
    """Parsed, not run (launch_ros may be absent): the argument, and the expression it goes in."""
    import ast
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[2] / 'launch'
            / 'innovation_feedback_launch.py').read_text(encoding='utf-8')
    assert "DeclareLaunchArgument('px4_aid_topics', default_value=''," in text
    assert "'px4_aid_topics': _aid_topics()" in text
    (head, tail), = [ast.literal_eval(n.value) for n in ast.parse(text).body
                     if isinstance(n, ast.Assign)
                     and getattr(n.targets[0], 'id', '') == 'AID_TOPICS_AS_LIST']
    for given, expected in [('', []), (TOPIC, [TOPIC]),
                            (f'{TOPIC},/fmu/out/estimator_aid_src_baro_hgt',
                             [TOPIC, '/fmu/out/estimator_aid_src_baro_hgt'])]:
        assert eval(head + given + tail) == expected  # what PythonExpression evaluates
