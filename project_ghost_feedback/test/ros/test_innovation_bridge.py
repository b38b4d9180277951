# SPDX-License-Identifier: Apache-2.0
"""innovation_bridge + feedback node over DDS, fed by a Kalman filter in the test (field mode).

The filter (sim/random_walk_filter.py, shared with bench/field_bench.py; not the project's
localization simulator) tracks a 3-D position random walk (per axis x' = x + w, w ~ N(0, q);
z = x + v, v ~ N(0, r)) at 10 Hz of stamp time and publishes each measurement's innovation with
the S it believes, as any filter would. Honest: 20 starts, 60 s of stamp time each, none
downgraded. Measurement noise claimed 3x too small (standard
deviation; covariance 9x): UNKNOWN within one window of 32 outcomes. Time is the messages'
stamps only: the test waits on progress (the feedback node's answers), never on wall time, so
it runs as fast as the machine allows.
"""

import math

from project_ghost_feedback.core import NS_PER_S
from project_ghost_feedback.ros.feedback_node import FeedbackNode
from project_ghost_feedback.ros.innovation_bridge_node import InnovationBridgeNode
from project_ghost_feedback.sim.random_walk_filter import RandomWalkFilter
from project_ghost_feedback_msgs.msg import CalibratedSelfAssessment, Innovation
import pytest
from support.field_starts import (
    FilterRig, honest_starts, listen, KNOWN, outcomes_to_unknown, PROGRESS_CEILING_S, UNKNOWN)
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

RATE_HZ = 10
PERIOD_NS = NS_PER_S // RATE_HZ
Q = 1e-4     # process noise variance per step, m^2
R = 1.0      # true measurement noise variance, m^2
QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def make_filter(seed, claimed_r):
    """Return the shared random-walk filter (sim/random_walk_filter.py): 3 axes, q = 1e-4 r."""
    return RandomWalkFilter(seed, 3, q=Q, r=R, claimed_r=claimed_r)


class Rig(FilterRig):
    """A filter node, an innovation bridge and a feedback node, one executor, one context."""

    rate_hz, period = RATE_HZ, PERIOD_NS

    def __init__(self, context, bridge_overrides=()):
        from rclpy.parameter import Parameter
        self.executor = SingleThreadedExecutor(context=context)
        self.bridge = InnovationBridgeNode(
            context=context,
            parameter_overrides=[Parameter(n, value=v) for n, v in bridge_overrides])
        self.feedback = FeedbackNode(context=context)
        self.driver = Node('kalman_filter', context=context)
        self.publisher = self.driver.create_publisher(Innovation, 'innovation', QOS)
        listen(self, QOS)
        self.spin_until(lambda: self.publisher.get_subscription_count() >= 1
                        and self.bridge.count_subscribers('prediction_outcome') >= 1,
                        'discovery')

    def publish(self, stamp_ns, innovation, s_diag, source='gnss'):
        msg = Innovation()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, NS_PER_S)
        msg.header.frame_id = 'map'
        msg.source = source
        msg.innovation = [float(v) for v in innovation]
        m = len(innovation)
        msg.innovation_covariance = [s_diag[i] if i == j else 0.0
                                     for i in range(m) for j in range(m)]
        msg.component_kinds = [Innovation.KIND_POSITION] * m
        msg.schema_version = Innovation.SCHEMA_VERSION
        self.publisher.publish(msg)


@pytest.mark.long
def test_honest_filter_twenty_starts_in_60_s_none_downgraded(rclpy_context):
    """20 starts (fresh nodes each), 60 s of 10 Hz innovations (300 outcomes each): none downgraded.

    The default policy spends a false-alarm budget of 1 episode per 24 h at the outcome rate it
    measures (docs/policies.md): a start of 60 s is falsely downgraded with a probability of the
    order of 1e-4 (field_bench: 0 of 1000 starts), so the issue's "no downgrade" is asserted, and
    that every honest outcome arrived and was accepted. The seeds are fixed, so the result is the
    same on every machine. (At the per-window thresholds before the budget, 2.3% per start: one
    of these 20 was downgraded.)
    """
    def check(rig):
        assert rig.bridge.engine.pairing.refused == {}  # 600 innovations, all accepted

    downgraded = honest_starts(lambda: Rig(rclpy_context),
                               lambda rig, seed: rig.run_filter(make_filter(seed, R), 60),
                               check=check)
    assert downgraded == {}, downgraded


def test_measurement_noise_claimed_3x_too_small_is_unknown_within_a_window(rclpy_context):
    """Claimed std 3x too small: UNKNOWN within 32 outcomes (64 innovations, 6.4 s), 5 seeds."""
    delays = outcomes_to_unknown(
        lambda: Rig(rclpy_context),
        lambda rig, seed: rig.run_filter(make_filter(seed, claimed_r=R / 9.0), 10, batch=4,
                                         stop=lambda levels: UNKNOWN in levels),
        range(100, 105))
    assert max(delays) <= 32, delays


def test_bad_innovations_are_refused_by_reason_and_named_on_diagnostics(rclpy_context):
    rig = Rig(rclpy_context)
    try:
        rig.publish(PERIOD_NS, [0.1, 0.2], [1.0, 1.0])            # accepted (pending)
        rig.publish(2 * PERIOD_NS, [0.1, 0.2, 0.3], [1.0, 1.0, 1.0])  # layout_changed
        rig.publish(3 * PERIOD_NS, [math.nan, 0.2], [1.0, 1.0])   # not_finite
        rig.publish(4 * PERIOD_NS, [0.1] * 7, [1.0] * 7)          # too_many_components
        rig.publish(5 * PERIOD_NS, [0.1, 0.2], [1.0, -1.0])       # not_positive_definite
        msg = Innovation(source='gnss', schema_version=Innovation.SCHEMA_VERSION)
        rig.publisher.publish(msg)                                # no_components
        rig.spin_until(lambda: rig.bridge.received == 6, 'six innovations')
        assert rig.bridge.engine.pairing.refused == {
            'layout_changed': 1, 'not_finite': 1, 'too_many_components': 1,
            'not_positive_definite': 1, 'no_components': 1}
        rig.spin_until(lambda: any(
            s.name.endswith('innovation_bridge: innovations') and s.level == b'\x01'
            for a in rig.diagnostics for s in a.status), 'a WARN status')
        status = next(s for a in rig.diagnostics for s in a.status
                      if s.name.endswith('innovation_bridge: innovations'))
        values = {kv.key: kv.value for kv in status.values}
        assert values['innovations_refused'] == '5'
        assert values['innovations_refused[layout_changed]'] == '1'
        assert 'not_finite 1' in status.message
    finally:
        rig.close()


@pytest.mark.parametrize('value', ['Bad Name', '1gnss'])
def test_source_parameter_is_validated(rclpy_context, value):
    from rclpy.parameter import Parameter
    with pytest.raises(ValueError, match='source'):
        InnovationBridgeNode(context=rclpy_context,
                             parameter_overrides=[Parameter('source', value=value)])


def test_launch_file_starts_the_installed_executable_and_includes_the_feedback_launch():
    """Parsed, not run (launch_ros may be absent): the executable and the include exist."""
    import ast
    import pathlib

    from ament_index_python.packages import get_package_prefix

    package_dir = pathlib.Path(__file__).resolve().parents[2]
    text = (package_dir / 'launch' / 'innovation_feedback_launch.py').read_text(encoding='utf-8')
    tree = ast.parse(text)
    constants = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 for t in n.targets if isinstance(t, ast.Name) and isinstance(
                     n.value, (ast.Constant, ast.Tuple))}
    assert constants['BRIDGE_EXECUTABLE'] == 'innovation_bridge'
    assert constants['NAVSAT_EXECUTABLE'] == 'navsat_bridge'  # input:=navsat
    prefix = pathlib.Path(get_package_prefix('project_ghost_feedback'))
    for executable in ('innovation_bridge', 'navsat_bridge'):
        assert (prefix / 'lib' / 'project_ghost_feedback' / executable).is_file()
    assert "choices=['innovation', 'navsat']" in text
    assert "('fix', LaunchConfiguration('fix_topic'))" in text
    assert "'feedback_launch.py'" in text
    assert "('innovation', LaunchConfiguration('innovation_topic'))" in text


def _rosbag2_missing():
    import shutil

    from ament_index_python.packages import get_package_prefix, PackageNotFoundError

    if shutil.which('ros2') is None:
        return 'the ros2 command is not on PATH'
    try:
        get_package_prefix('rosbag2_storage_mcap')
    except PackageNotFoundError:
        return 'rosbag2 is not installed (make rosbag2)'
    return ''


@pytest.mark.parametrize('recorder', ['rosbags_writer', 'ros2_bag_record'])
def test_a_recording_of_the_innovations_re_evaluates_to_the_live_verdict(
        rclpy_context, tmp_path, recorder):
    """Live bridge + node over DDS; the innovations, recorded as received, evaluated offline.

    Recorded by the test (a raw subscription whose CDR payloads rosbags' Writer writes) or by
    the real ``ros2 bag record`` (skipped without rosbag2); evaluate's engine and loop over that
    bag give the node's calibrated level and reason at every stamp, and the same episodes.
    """
    import json

    from project_ghost_feedback.cli import main
    from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
    from project_ghost_feedback.field_inputs import innovation_outputs, innovation_parameters
    from rosbags.rosbag2 import Reader, StoragePlugin, Writer
    from support.innovation_bags import INNOVATION, typestore

    if recorder == 'ros2_bag_record' and _rosbag2_missing():
        pytest.skip(_rosbag2_missing())
    bag = tmp_path / 'recorded'
    recorded = []
    writer = process = None
    if recorder == 'rosbags_writer':
        writer = Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP)
        writer.open()
        connection = writer.add_connection('/innovation', INNOVATION, typestore=typestore())
    else:
        from support.ros2_tools import Process, qos_overrides_file, subscribed, wait_for_output

        qos = qos_overrides_file(tmp_path / 'qos.yaml', ['/innovation'])
        process = Process('bag', 'record', '-s', 'mcap', '-o', str(bag),
                          '--qos-profile-overrides-path', str(qos), '/innovation')
    rig = Rig(rclpy_context)
    live = []
    try:
        if writer is not None:
            def record(data):
                recorded.append(bytes(data))
                writer.write(connection, len(recorded), bytes(data))

            rig.driver.create_subscription(Innovation, 'innovation', record, QOS, raw=True)
        rig.driver.create_subscription(
            CalibratedSelfAssessment, 'self_assessment/calibrated',
            lambda m: live.append((m.header.stamp.sec * NS_PER_S + m.header.stamp.nanosec,
                                   m.adjusted_overall_level.value, m.adjustment_reason)), QOS)
        rig.spin_until(lambda: rig.publisher.get_subscription_count() >= 2, 'the recorder')
        if process is not None:
            wait_for_output(process, subscribed(['/innovation']), 'ros2 bag record')
        kf = make_filter(7, claimed_r=R)
        steps = 40 * RATE_HZ
        for n in range(1, steps + 1):
            if n == 20 * RATE_HZ:
                kf.noise_factor = 3.0  # measurement noise 3x the claim from 20 s on
            rig.publish(n * PERIOD_NS, *kf.step())
            if n % 20 == 0:
                rig.spin_until(lambda n=n: len(live) >= n // 2 and (
                    writer is None or len(recorded) >= n), f'{n // 2} assessments')
        # The recorder is another process: every innovation is acknowledged by every reader
        # before it is stopped (a stop right after the last publish lost 3 of 400 once).
        assert rig.publisher.wait_for_all_acked(Duration(seconds=PROGRESS_CEILING_S))
    finally:
        rig.close()
        if writer is not None:
            writer.close()
        if process is not None:
            assert process.stop() == 0, process.output()[-2000:]
            process.close()
    with Reader(bag) as reader:  # an independent count of what was recorded
        assert sum(1 for _ in reader.messages()) == steps
    assert len(live) == steps // 2
    assert any(level == UNKNOWN for _, level, _ in live)

    run = innovation_outputs(bag, ['/innovation'], innovation_parameters())
    loop = FeedbackLoop(LoopConfig.make())
    offline = []
    for kind, contract in run:
        if kind == 'outcome':
            loop.outcome(contract)
        else:
            calibrated = loop.assessment(contract).calibrated
            offline.append((contract.belief_stamp_sim_ns,
                            calibrated.adjusted_overall_level.value,
                            calibrated.adjustment_reason))
    assert offline == live

    out = tmp_path / 'out'
    assert main(['evaluate', str(bag), '--innovation', '/innovation', '--output-dir', str(out),
                 '--no-plot']) == 0
    summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    first_live = next(stamp for stamp, level, _ in live if level != KNOWN)
    assert summary['first_downgrade_stamp_ns'] == first_live
    assert summary['calibrated_levels']['UNKNOWN'] == sum(level == UNKNOWN for _, level, _ in live)
