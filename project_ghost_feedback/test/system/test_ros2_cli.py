# SPDX-License-Identifier: Apache-2.0
"""The project driven with the real ROS 2 command-line tools, as a ROS user would.

``ros2 launch``, ``ros2 run``, ``ros2 topic echo`` and ``ros2 param set/get`` are the unmodified
Jazzy ros2cli / launch_ros (``scripts/setup.sh`` installs them from ``../shared/ros2_jazzy_tools``
when that folder exists). Without them every test here skips with the reason. Inputs are
published from this test with rclpy in a private ``rclpy.Context`` (a feeder thread), which also
collects the calibrated output. Every subprocess has a timeout; every wait is bounded; nothing
asserts on elapsed time. Launches run in their own process group, stopped with SIGINT.
"""

import collections
import importlib.util
import os
import random
import shutil
import signal
import subprocess
import time

from project_ghost_feedback_msgs.msg import (
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
)
import pytest

from support.ros2_tools import (
    BackgroundNode,
    DEADLINE_S,
    Feeder,
    Process,
    QOS,
)

PACKAGE = 'project_ghost_feedback'
CLI_TIMEOUT_S = 60.0
"""Timeout of one ``ros2`` command (discovery on a loaded machine included)."""
CLI = ('--no-daemon', '--spin-time', '1')
"""Discovery options of every ros2 command here (no daemon to start or stop): each command
discovers the graph for 1 s; :func:`discovered` runs it again while that was too short."""
NOT_DISCOVERED_YET = ('does not appear to be published yet', 'Node not found')
"""What a ros2 command says when its discovery time ended before it saw its topic or node."""


def _ros2_missing():
    """Return why the real ros2 tools are unusable here, or '' when they are usable."""
    if shutil.which('ros2') is None:
        return 'the ros2 command is not on PATH'
    for module in ('ros2cli', 'ros2launch', 'ros2param', 'ros2topic', 'ros2run', 'launch_ros'):
        if importlib.util.find_spec(module) is None:
            return f'{module} is not importable'
    return ''


pytestmark = [
    pytest.mark.skipif(
        bool(_ros2_missing()),
        reason=f'real ROS 2 CLI tools unavailable ({_ros2_missing()}); scripts/setup.sh installs '
               'them from ../shared/ros2_jazzy_tools when that folder exists'),
    pytest.mark.long,   # launches and ros2 commands, ~100 s in all: scheduled first (conftest.py)
]


def ros2(*args, timeout=CLI_TIMEOUT_S):
    """Run ``ros2 *args`` to completion and return the CompletedProcess (text, merged output)."""
    return subprocess.run(
        ('ros2',) + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=timeout, check=False)


def discovered(*args):
    """``ros2 *args`` (with CLI's options), again while its discovery has not seen its target.

    Without a daemon a command discovers the graph for ``--spin-time`` only, and on a loaded
    machine a topic or a node can take longer to appear (NOT_DISCOVERED_YET): retried within
    DEADLINE_S, the last result returned.
    """
    deadline = time.monotonic() + DEADLINE_S
    while True:
        result = ros2(*args)
        if result.returncode == 0 or not any(
                text in result.stdout for text in NOT_DISCOVERED_YET) or (
                time.monotonic() > deadline):
            return result


def echo_once(topic):
    """``ros2 topic echo --once topic`` once discovery has seen the topic (:func:`discovered`)."""
    return discovered('topic', 'echo', '--once', *CLI, topic)


def assert_clean_sigint(process, nodes=1):
    """SIGINT the launch; assert it and each of its ``nodes`` processes ended with exit 0."""
    code = process.stop(signal.SIGINT)
    text = process.output()
    assert code == 0, text
    assert text.count('process has finished cleanly') == nodes, text
    assert 'Traceback' not in text, text


def params_file(directory, **parameters):
    """Write a ROS parameters file for every node (``/**``) and return its path."""
    path = os.path.join(directory, 'params.yaml')
    lines = ['/**:', '  ros__parameters:']
    lines += [f'    {name}: {value}' for name, value in parameters.items()]
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write('\n'.join(lines) + '\n')
    return path


@pytest.fixture
def feeder_factory():
    """Yield a function that starts a Feeder; every feeder is closed at teardown."""
    feeders = []

    def start(namespace='', **kwargs):
        feeders.append(Feeder(namespace, **kwargs))
        return feeders[-1]

    yield start
    for feeder in feeders:
        feeder.close()


@pytest.fixture
def process_factory():
    """Yield a function that starts ``ros2 ...``; every process group is killed at teardown."""
    processes = []

    def start(*args, cwd=None):
        processes.append(Process(*args, cwd=cwd))
        return processes[-1]

    yield start
    for process in processes:
        process.close()


@pytest.fixture(scope='module')
def robot1():
    """Yield (process, feeder): the launch file with ``namespace:=robot1`` while inputs flow."""
    process = Process('launch', PACKAGE, 'feedback_launch.py', 'namespace:=robot1')
    feeder = Feeder('robot1')
    try:
        feeder.wait_for(lambda msg: True, 'from the launched node')
        yield process, feeder
        assert_clean_sigint(process)
    finally:
        feeder.close()
        process.close()


# -- ros2 launch ---------------------------------------------------------------------------------

def test_launch_alone_calibrates_at_the_root_and_stops_cleanly(process_factory, feeder_factory):
    process = process_factory('launch', PACKAGE, 'feedback_launch.py')
    feeder = feeder_factory('')
    msg = feeder.wait_for(lambda msg: msg.calibration_history.outcomes_considered > 0, 'at /')
    assert msg.adjustment_policy_id
    assert_clean_sigint(process)


def test_launch_in_namespace_echo_calibrated_and_diagnostics(robot1):
    _, feeder = robot1
    echo = echo_once('/robot1/self_assessment/calibrated')
    assert echo.returncode == 0, echo.stdout
    assert 'calibration_history:' in echo.stdout and 'adjustment_policy_id:' in echo.stdout
    diagnostics = echo_once('/diagnostics')
    assert diagnostics.returncode == 0, diagnostics.stdout
    assert '/robot1/feedback_node' in diagnostics.stdout, diagnostics.stdout


def test_param_set_valid_value_changes_the_output(robot1):
    _, feeder = robot1
    result = discovered('param', 'set', *CLI, '/robot1/feedback_node', 'max_history', '3')
    assert result.returncode == 0 and 'Set parameter successful' in result.stdout, result.stdout
    feeder.wait_for(lambda msg: msg.calibration_history.outcomes_considered == 3,
                    'with a window of 3 outcomes after ros2 param set max_history 3')
    assert feeder.parameter('/robot1/feedback_node', 'max_history') == 3


def test_service_call_reset_clears_the_window(process_factory, feeder_factory):
    """``ros2 service call <node>/reset std_srvs/srv/Trigger``: answered; the window restarts."""
    process = process_factory('launch', PACKAGE, 'feedback_launch.py', 'namespace:=robot2')
    feeder = feeder_factory('robot2')
    feeder.wait_for(lambda msg: msg.calibration_history.outcomes_considered >= 8,
                    'with at least 8 outcomes in the window before the reset')
    result = ros2('service', 'call', '/robot2/feedback_node/reset',
                  'std_srvs/srv/Trigger')
    assert result.returncode == 0, result.stdout
    assert 'success=True' in result.stdout and 'window cleared' in result.stdout, result.stdout
    # Four outcomes arrive per assessment: a window refilling from empty shows 4 again.
    feeder.wait_for(lambda msg: msg.calibration_history.outcomes_considered <= 4,
                    'with a window refilled from empty after ~/reset')
    assert_clean_sigint(process)


@pytest.mark.parametrize('name,value', [
    ('max_history', '0'),                 # below its range
    ('max_history', 'many'),              # wrong type
    ('diagnostics_period_s', '-1.0'),     # not > 0
    ('input_qos_depth', '5'),             # read-only
])
def test_param_set_invalid_value_is_refused_and_old_value_kept(robot1, name, value):
    _, feeder = robot1
    before = feeder.parameter('/robot1/feedback_node', name)
    result = discovered('param', 'set', *CLI, '/robot1/feedback_node', name, value)
    # ros2 param set exits 0 even when the node refuses: its text says so.
    assert 'Setting parameter failed' in result.stdout, result.stdout
    assert feeder.parameter('/robot1/feedback_node', name) == before
    assert str(before) != value


def test_launch_with_params_file_while_input_flows(process_factory, feeder_factory, tmp_path):
    path = params_file(str(tmp_path), policy='mahalanobis_downgrade', max_history=5)
    process = process_factory('launch', PACKAGE, 'feedback_launch.py', 'namespace:=pf',
                              f'params_file:={path}')
    feeder = feeder_factory('pf')
    msg = feeder.wait_for(lambda msg: msg.calibration_history.outcomes_considered == 5,
                          'with the window of 5 from the params file')
    assert msg.adjustment_policy_id == 'mahalanobis_downgrade'
    assert_clean_sigint(process)


def test_ros2_run_with_params_file_and_remapped_output(process_factory, feeder_factory, tmp_path):
    path = params_file(str(tmp_path), policy='mahalanobis_downgrade', max_history=7)
    process = process_factory('run', PACKAGE, 'feedback_node', '--ros-args', '-r', '__ns:=/run',
                              '-r', 'self_assessment/calibrated:=calibrated_out',
                              '--params-file', path)
    feeder = feeder_factory('run', output='calibrated_out')
    msg = feeder.wait_for(lambda msg: msg.calibration_history.outcomes_considered == 7,
                          'on the remapped /run/calibrated_out with max_history 7 from the file')
    assert msg.adjustment_policy_id == 'mahalanobis_downgrade'
    assert process.stop(signal.SIGINT) == 0, process.output()


def _read_bag(path):
    """Return ``{topic: messages}`` of a bag read by rosbags (counts checked against metadata)."""
    from rosbags.rosbag2 import Reader

    with Reader(path) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        read = collections.Counter(c.topic for c, _, _ in reader.messages())
    assert counts == {topic: read[topic] for topic in counts}, (path, counts, read)
    return counts


def _wait_for_text(process, text):
    deadline = time.monotonic() + DEADLINE_S
    while text not in process.output() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert text in process.output(), process.output()


def test_launch_record_without_rosbag2_records_with_the_node(
        process_factory, feeder_factory, tmp_path):
    """record:=true without rosbag2: one line says so, and the node records its own bag."""
    if importlib.util.find_spec('ros2bag') is not None:
        pytest.skip('ros2bag is installed: this test covers a ROS install without rosbag2')
    process = process_factory('launch', PACKAGE, 'feedback_launch.py', 'namespace:=rec',
                              'record:=true', cwd=str(tmp_path))
    feeder = feeder_factory('rec')
    feeder.wait_for(lambda msg: len(feeder.received) > 3, 'from the node launched with record')
    _wait_for_text(process, 'rosbag2 is not installed here')
    assert_clean_sigint(process)
    text = process.output()
    assert text.count("record:=true: rosbag2 is not installed here (ros2bag, "
                      "rosbag2_storage_mcap), so the feedback node's own recorder records "
                      'instead') == 1, text
    assert 'feedback_bag_record' not in text, text
    (bag,) = tmp_path.glob('ghost_feedback_*')
    # The node's recorder names its channels as at the root (docs/telemetry.md).
    assert _read_bag(bag)['/self_assessment/calibrated'] > 0


class _OdometryFeeder(BackgroundNode):
    """Publish an estimate and a reference (nav_msgs/Odometry, stamped now) at 20 Hz.

    Also a static transform on /tf_static (transient local, published once at the start, as a
    robot's static publisher does before anything listens) and one on /tf with every reference,
    between frames the inputs do not use (the pairing is unchanged).
    """

    def __init__(self, estimate_topic, reference_topic):
        from geometry_msgs.msg import TransformStamped
        from nav_msgs.msg import Odometry
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from tf2_msgs.msg import TFMessage

        from project_ghost_feedback.ros.sim_stack_node import odometry_msg

        super().__init__('cli_test_odometry')
        self._estimate = self.node.create_publisher(Odometry, estimate_topic, QOS)
        self._reference = self.node.create_publisher(Odometry, reference_topic, QOS)
        self._tf = self.node.create_publisher(TFMessage, '/tf', 100)
        self._transform = TransformStamped()
        self._transform.header.frame_id, self._transform.child_frame_id = 'world', 'marker'
        self._transform.transform.rotation.w = 1.0
        self._tf_message = TFMessage
        static = self.node.create_publisher(TFMessage, '/tf_static', QoSProfile(
            depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        static.publish(TFMessage(transforms=[self._transform]))
        self._make = odometry_msg
        self._rng = random.Random(3)
        self.received = []
        self.node.create_subscription(CalibratedSelfAssessmentMsg, '/self_assessment/calibrated',
                                      self.received.append, QOS)
        self.node.create_timer(0.05, self._publish)
        self.start()

    def _publish(self):
        import numpy as np

        stamp = self.node.get_clock().now().nanoseconds
        truth = (self._rng.gauss(0.0, 0.1), 0.0, 0.0)
        quaternion = (0.0, 0.0, 0.0, 1.0)
        self._reference.publish(self._make(stamp, truth, quaternion, (0.0, 0.0, 0.0)))
        self._transform.header.stamp.sec, self._transform.header.stamp.nanosec = divmod(
            stamp, 1_000_000_000)
        self._tf.publish(self._tf_message(transforms=[self._transform]))
        self._estimate.publish(self._make(stamp, (0.0, 0.0, 0.0), quaternion, (0.0, 0.0, 0.0),
                                          np.eye(6) * 0.01))


@pytest.mark.parametrize('recording', ['record:=true', 'telemetry_bag:=run1'])
def test_readme_robot_example_records_here(process_factory, tmp_path, recording):
    """README's ``bridge_feedback_launch.py ... record:=true`` as written, and telemetry_bag.

    With rosbag2 absent (this machine) record:=true falls back to the feedback node's recorder
    (one line says so); telemetry_bag:=DIR records the bridge's two inputs too, so the bag is
    one that ghost-feedback replay verifies and evaluate reads.
    """
    if recording == 'record:=true' and importlib.util.find_spec('ros2bag') is not None:
        pytest.skip('ros2bag is installed: record:=true records with it')
    process = process_factory(
        'launch', PACKAGE, 'bridge_feedback_launch.py', 'estimate_topic:=/odometry/filtered',
        'reference_topic:=/ground_truth/odom', recording, cwd=str(tmp_path))
    feeder = _OdometryFeeder('/odometry/filtered', '/ground_truth/odom')
    try:
        deadline = time.monotonic() + DEADLINE_S * 2
        while len(feeder.received) < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(feeder.received) >= 20, process.output()
    finally:
        feeder.close()
    assert_clean_sigint(process, nodes=2)
    if recording == 'record:=true':
        (bag,) = tmp_path.glob('ghost_feedback_*')
        assert process.output().count('rosbag2 is not installed here') == 1, process.output()
    else:
        bag = tmp_path / 'run1'
        assert 'rosbag2 is not installed' not in process.output()
    counts = _read_bag(bag)
    assert counts['/self_assessment/calibrated'] >= 20, counts
    # Both recordings hold the inputs and tf, the static transform published before the launch
    # listened included: what evaluate and replay need.
    assert counts['/odometry/filtered'] > 0 and counts['/ground_truth/odom'] > 0, counts
    assert counts.get('/tf', 0) > 0 and counts.get('/tf_static', 0) >= 1, counts
    if recording.startswith('telemetry_bag'):
        assert counts['/odometry/filtered'] > 0 and counts['/ground_truth/odom'] > 0, counts
        from project_ghost_feedback.telemetry.replay import verify_bag

        ok, line = verify_bag(str(bag))
        assert ok, line


def test_ros2_run_ghost_feedback_cli():
    result = ros2('run', PACKAGE, 'ghost-feedback', '--help')
    assert result.returncode == 0, result.stdout
    assert 'demo' in result.stdout, result.stdout


# -- bridge + node (launch/bridge_feedback_launch.py, added with the bridge) ---------------------
# HOOK(bridge_feedback_launch): this checks the launch starts both processes and SIGINT ends both
# with exit 0. Once the bridge's input topics are settled, feed them here and wait for the
# calibrated output as test_launch_with_params_file_while_input_flows does.

def test_bridge_launch_starts_both_nodes_and_stops_cleanly(process_factory, tmp_path):
    """``bridge_feedback_launch.py``: ``ros2 node list`` shows both nodes; SIGINT ends both.

    With a planar bridge parameters file (``ignored_axes`` z, roll, pitch) the feedback node
    gets ``position_components`` 2 and ``orientation_components`` 1 (``ros2 param get``).
    """
    bridge_params = tmp_path / 'planar_bridge.yaml'
    bridge_params.write_text(
        "/**:\n  ros__parameters:\n    ignored_axes: ['z', 'roll', 'pitch']\n", encoding='utf-8')
    process = process_factory('launch', PACKAGE, 'bridge_feedback_launch.py',
                              f'bridge_params_file:={bridge_params}')
    deadline = time.monotonic() + DEADLINE_S
    listed = ''
    while time.monotonic() < deadline and process.popen.poll() is None:
        listed = ros2('node', 'list', *CLI).stdout
        if '/feedback_node' in listed and '/outcome_bridge' in listed:
            break
    assert '/feedback_node' in listed and '/outcome_bridge' in listed, listed + process.output()
    assert process.output().count('process started with pid') == 2, process.output()
    for name, value in (('position_components', 2), ('orientation_components', 1)):
        got = discovered('param', 'get', *CLI, '/feedback_node', name)
        assert f'Integer value is: {value}' in got.stdout, got.stdout
    assert_clean_sigint(process, nodes=2)


def _node_pids(process):
    """Return the PIDs of the launch's feedback_node processes (psutil, by parent)."""
    import psutil

    try:
        children = psutil.Process(process.popen.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    pids = []
    for child in children:
        try:
            if any(part.endswith('feedback_node') for part in child.cmdline()):
                pids.append(child.pid)
        except psutil.NoSuchProcess:
            continue
    return pids


def test_launch_respawn_with_telemetry_dir_records_a_new_bag_per_run(
        process_factory, feeder_factory, tmp_path):
    """respawn:=true and telemetry_dir: the node is stopped, respawns, records a second bag."""
    from rosbags.rosbag2 import Reader

    parent = tmp_path / 'telemetry'
    path = params_file(str(tmp_path), telemetry_dir=str(parent))
    process = process_factory('launch', PACKAGE, 'feedback_launch.py', 'namespace:=respawn',
                              'respawn:=true', f'params_file:={path}')
    feeder = feeder_factory('respawn')
    feeder.wait_for(lambda msg: True, 'from the first run')
    deadline = time.monotonic() + DEADLINE_S
    while len(_node_pids(process)) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    (first_pid,) = _node_pids(process)
    os.kill(first_pid, signal.SIGTERM)   # the node exits 0; launch starts it again
    deadline = time.monotonic() + DEADLINE_S
    while (_node_pids(process) in ([], [first_pid])
           and time.monotonic() < deadline):
        time.sleep(0.05)
    assert _node_pids(process) not in ([], [first_pid]), process.output()
    count = len(feeder.received)
    feeder.wait_for(lambda msg: len(feeder.received) > count + 3, 'from the respawned node')
    assert_clean_sigint(process, nodes=2)
    bags = sorted(parent.iterdir())
    assert len(bags) == 2, (bags, process.output())
    for bag in bags:
        with Reader(bag) as reader:
            counts = {c.topic: c.msgcount for c in reader.connections}
            read = collections.Counter(c.topic for c, _, _ in reader.messages())
        # A run stopped early may hold a channel with no message yet: metadata says 0 for it.
        assert set(read) <= set(counts), (bag, counts, read)
        assert counts == {topic: read[topic] for topic in counts}, (bag, counts, read)
        assert read['/self_assessment/calibrated'] > 0, (bag, counts)


# -- the launch's own recording re-evaluates to the live verdict ----------------------------------

class _DriftingRobot(BackgroundNode):
    """A robot on namespaced tf: truth in ``map``, estimate in ``odom``, ``map -> odom`` moving.

    Every 50 ms (stamped now): ``map -> odom`` (sim/odom_drift.py, a step every 2 s) on
    ``/robot1/tf``, the truth on the reference topic, then the estimate in ``odom`` with its
    covariance. The estimate's error has the claimed std (0.1 m, 0.05 rad per axis) for the
    first ``honest`` ticks, then ``factor`` times it, until ``ticks`` have been published.
    """

    def __init__(self, estimate_topic, reference_topic, honest=160, ticks=320, factor=3.0):
        import numpy as np
        from nav_msgs.msg import Odometry
        from tf2_msgs.msg import TFMessage

        from project_ghost_feedback.sim.odom_drift import OdomDrift

        super().__init__('cli_test_drifting_robot')
        self._estimate = self.node.create_publisher(Odometry, estimate_topic, QOS)
        self._reference = self.node.create_publisher(Odometry, reference_topic, QOS)
        self._tf = self.node.create_publisher(TFMessage, '/robot1/tf', QOS)
        self._drift = OdomDrift(step_period_s=2.0, seed=3)
        self._rng = np.random.default_rng(5)
        self._covariance = np.diag([0.01] * 3 + [0.0025] * 3)
        self.honest, self.ticks, self.factor = honest, ticks, factor
        self.published = 0
        self.last_stamp_ns = None
        self._start_ns = None
        self.received = []
        self.node.create_subscription(CalibratedSelfAssessmentMsg, '/self_assessment/calibrated',
                                      self.received.append, QOS)
        self.bridge_matched = False
        from diagnostic_msgs.msg import DiagnosticArray

        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        self.go = False
        self.node.create_timer(0.05, self._publish)
        self.start()

    def _on_diagnostics(self, array):
        for status in array.status:
            values = {kv.key: kv.value for kv in status.values}
            if status.hardware_id == '/outcome_bridge' and values.get(
                    'estimate_publishers') == '1' and values.get('reference_publishers') == '1':
                self.bridge_matched = True

    def matched(self):
        """Return True once the bridge's inputs and the recorder (two readers each) matched."""
        return self.bridge_matched and all(
            publisher.get_subscription_count() >= 2
            for publisher in (self._estimate, self._reference, self._tf))

    def _publish(self):
        import math

        import numpy as np

        from project_ghost_feedback.ros.sim_stack_node import odometry_msg, tf_msg

        if not self.go or self.published >= self.ticks:
            return
        stamp = self.node.get_clock().now().nanoseconds
        if self._start_ns is None:
            self._start_ns = stamp
        relative = stamp - self._start_ns  # the drift's own timeline starts at 0
        scale = 1.0 if self.published < self.honest else self.factor
        truth = (0.2 * relative / 1e9, 0.0, 0.0)
        translation, rotation = self._drift.map_to_odom(relative)
        self._tf.publish(tf_msg(stamp, 'map', 'odom', translation, rotation))
        self._reference.publish(odometry_msg(stamp, truth, (0.0, 0.0, 0.0, 1.0),
                                             (0.0, 0.0, 0.0), frame_id='map'))
        error = self._rng.normal(0.0, 1.0, 6) * np.sqrt(np.diag(self._covariance)) * scale
        angle = float(np.linalg.norm(error[3:]))
        axis = error[3:] / angle if angle > 0 else np.zeros(3)
        quaternion = (*(axis * math.sin(angle / 2)), math.cos(angle / 2))
        position, quaternion, covariance = self._drift.to_odom(
            relative, np.asarray(truth) + error[:3], quaternion, self._covariance)
        self._estimate.publish(odometry_msg(stamp, position, quaternion, (0.0, 0.0, 0.0),
                                            covariance, frame_id='odom'))
        self.published += 1
        self.last_stamp_ns = stamp


def _live_episodes(bag):
    """Return the downgrade episodes of what the feedback node published (its recorded output).

    The same tracker evaluate uses, fed with the recorded outcomes and calibrated assessments in
    recorded order.
    """
    from project_ghost_feedback.core import PredictionOutcome
    from project_ghost_feedback.core.feedback import CalibratedSelfAssessment, EpisodeTracker
    from project_ghost_feedback.telemetry.replay import read_bag

    tracker = EpisodeTracker()
    for item in read_bag(str(bag), topics={'/prediction_outcome', '/self_assessment/calibrated'}):
        if isinstance(item.contract, CalibratedSelfAssessment):
            tracker.add(item.contract)
        elif isinstance(item.contract, PredictionOutcome):
            tracker.outcome(item.contract)
    return tracker


def test_the_launch_recording_evaluates_to_the_live_episodes(process_factory, tmp_path):
    """telemetry_bag of the bridge launch on namespaced tf: evaluate gives the live episodes.

    A robot whose estimate is in odom, truth in map and map -> odom moving on /robot1/tf, honest
    for 8 s then 3 times overconfident for 8 s. The launch records (telemetry_bag) the inputs,
    /robot1/tf and the node's outputs; ``ghost-feedback evaluate`` of that bag must give the
    downgrade episodes the node published live (start and end stamps, level, reason, number of
    assessments, peak k): the same engine and the same loop over the same inputs.
    """
    import json

    from project_ghost_feedback.cli import main

    estimate, reference = '/odometry/filtered', '/ground_truth/odom'
    process = process_factory(
        'launch', PACKAGE, 'bridge_feedback_launch.py', f'estimate_topic:={estimate}',
        f'reference_topic:={reference}', 'tf_topic:=/robot1/tf',
        'tf_static_topic:=/robot1/tf_static', 'telemetry_bag:=run1', cwd=str(tmp_path))
    _wait_for_text(process, 'recording to')  # the node's recorder is open before inputs flow
    robot = _DriftingRobot(estimate, reference)
    try:
        # Inputs flow only once both the bridge (its own count of matched publishers, on
        # /diagnostics) and the recorder listen: a message only one of them got would make the
        # recording differ from what the bridge saw.
        deadline = time.monotonic() + DEADLINE_S
        while not robot.matched() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert robot.matched(), process.output()
        robot.go = True
        deadline = time.monotonic() + DEADLINE_S * 4  # a ceiling, not a speed requirement
        while time.monotonic() < deadline and not (
                robot.published >= robot.ticks and robot.received
                and _stamp_ns(robot.received[-1].header.stamp) >= robot.last_stamp_ns):
            time.sleep(0.1)
        assert robot.published >= robot.ticks, process.output()
        assert _stamp_ns(robot.received[-1].header.stamp) == robot.last_stamp_ns
    finally:
        robot.close()
    assert_clean_sigint(process, nodes=2)
    live = _live_episodes(tmp_path / 'run1')
    out = tmp_path / 'evaluated'
    assert main(['evaluate', str(tmp_path / 'run1'), '--estimate', estimate, '--reference',
                 reference, '--tf-topics', '/robot1/tf,/robot1/tf_static', '--output-dir',
                 str(out), '--no-plot']) == 0
    summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    origin = summary['time_origin']['stamp_ns']
    assert summary['bridge']['references_dropped'] == {}, summary['bridge']
    assert summary['bridge']['tf_transforms_accepted'] == summary['bridge']['tf_messages'] > 0
    expected = [episode.as_dict(origin) for episode in live.episodes()]
    assert expected, 'the live node never downgraded the overconfident stretch'
    keys = ('start_stamp_ns', 'end_stamp_ns', 'level', 'raw_level', 'reason', 'reasons',
            'assessments', 'ongoing', 'overconfidence')
    assert [{k: e[k] for k in keys} for e in summary['episodes']] == [
        {k: e[k] for k in keys} for e in expected]


def _stamp_ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec
