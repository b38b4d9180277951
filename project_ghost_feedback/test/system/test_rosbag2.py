# SPDX-License-Identifier: Apache-2.0
"""Bags proven with the real rosbag2 (Jazzy 0.26.5): ``ros2 bag info|play|record`` both ways.

- The node's telemetry bag (``telemetry_bag``) is read by ``ros2 bag info`` (every topic, type and
  count) and played by ``ros2 bag play``: a subscriber receives exactly the recorded messages,
  byte for byte.
- ``ros2 bag record -s mcap`` of a running stack (simulator -> bridge -> feedback node, launched
  with ``bridge_feedback_launch.py record:=true record_inputs:=true``, which records a second bag
  with the same tool) gives bags that ``ghost-feedback info``, ``evaluate``, ``replay`` (with its
  warning: such a bag has no node configuration) and ``audit`` read; ``feedback_launch.py
  record:=true`` records the node's topics.
- The node's own writer writes what rosbag2 writes: the node records a telemetry bag while ``ros2
  bag record`` records the same topics; their metadata.yaml and MCAP records are compared field
  by field.

rosbag2 is not on PyPI: ``make rosbag2`` builds it from the unmodified sources in third_party/
(cached; a ROS 2 Jazzy install has its own). Without it every test here skips with one line.
Every wait is bounded and waits on progress (messages seen, processes ended), never on time.
"""

import importlib.util
import json
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

from support.ros_context import new_rclpy_context
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from support.feedback_node import FeedbackNodeHarness, scenario
from support.ros2_tools import Process, qos_overrides_file, subscribed, wait_for_output
import yaml

from project_ghost_feedback.ros.conversions import outcome_to_msg

PACKAGE = 'project_ghost_feedback'
DEADLINE_S = 60.0
"""Upper bound of any wait here; a healthy run needs a fraction of it."""
CLI_TIMEOUT_S = 120.0
"""Timeout of one command (``ros2 bag info``, ``ghost-feedback ...``)."""
NODE_TOPICS = ('/prediction_outcome', '/self_assessment/raw', '/self_assessment/calibrated',
               '/feedback_events')
"""The feedback node's two inputs, its output and its events."""
STACK_INPUTS = ('/odometry/filtered', '/ground_truth/odom')
"""What the simulator publishes and the bridge reads (the launch file's default topics)."""
INFO_TOPIC = re.compile(
    r'Topic: (\S+) \| Type: (\S+) \| Count: (\d+) \| Serialization Format: (\S+)')


def _rosbag2_missing():
    """Return why the real rosbag2 tools are unusable here, or '' when they are usable."""
    if shutil.which('ros2') is None:
        return 'the ros2 command is not on PATH'
    for module in ('ros2bag', 'rosbag2_py', 'ros2cli', 'ros2launch', 'launch_ros',
                   'rosidl_runtime_py', 'rosbag2_interfaces'):
        if importlib.util.find_spec(module) is None:
            return f'{module} is not importable'
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    try:
        get_package_prefix('rosbag2_storage_mcap')
    except PackageNotFoundError:
        return 'rosbag2_storage_mcap is not installed'
    return ''


pytestmark = [
    pytest.mark.skipif(
        bool(_rosbag2_missing()),
        reason=f'rosbag2 unavailable ({_rosbag2_missing()}): `make rosbag2` builds it'),
    pytest.mark.long,   # its module fixtures record bags: scheduled first (conftest.py)
]


# -- helpers --------------------------------------------------------------------------------------

def run(*command, timeout=CLI_TIMEOUT_S):
    """Run ``command`` to completion; return the CompletedProcess (text, merged output)."""
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)


def metadata(bag):
    """Return metadata.yaml's ``rosbag2_bagfile_information`` mapping."""
    text = (pathlib.Path(bag) / 'metadata.yaml').read_text(encoding='utf-8')
    return yaml.safe_load(text)['rosbag2_bagfile_information']


def read_bag(bag):
    """Return ``({topic: type}, {topic: [CDR payloads in log-time order]})`` read by rosbags.

    rosbags is independent of the project's reader and of rosbag2. Its Reader yields nothing
    for a channel whose QoS disagrees with metadata.yaml, so the counts are checked against
    metadata.yaml's.
    """
    from rosbags.rosbag2 import Reader

    with Reader(bag) as reader:
        types = {connection.topic: connection.msgtype for connection in reader.connections}
        payloads = {topic: [] for topic in types}
        for connection, _, raw in reader.messages():
            payloads[connection.topic].append(bytes(raw))
    counts = {entry['topic_metadata']['name']: entry['message_count']
              for entry in metadata(bag)['topics_with_message_count']}
    assert counts == {topic: len(messages) for topic, messages in payloads.items()}, counts
    return types, payloads


def mcap_records(bag):
    """Return the MCAP header, schemas, channels and metadata records of a one-file bag."""
    from mcap.reader import make_reader

    (path,) = sorted(pathlib.Path(bag).glob('*.mcap'))
    with open(path, 'rb') as stream:
        reader = make_reader(stream)
        header = reader.get_header()
        summary = reader.get_summary()
        records = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
    schemas = {schema.name: schema for schema in summary.schemas.values()}
    channels = {channel.topic: channel for channel in summary.channels.values()}
    return header, schemas, channels, records


def stop(process, sig=signal.SIGINT):
    """Stop a :class:`test_ros2_cli.Process` with ``sig``; return its exit code and output."""
    code = process.stop(sig, timeout=DEADLINE_S)
    return code, process.output()


class Listener:
    """A node in a private context that takes raw (CDR) messages of some topics."""

    def __init__(self, types, durability=DurabilityPolicy.VOLATILE):
        """Subscribe to every ``{topic: type}`` (reliable, deep queue, raw bytes)."""
        from rosidl_runtime_py.utilities import get_message

        self.context = new_rclpy_context()
        self.node = rclpy.create_node('rosbag2_test_listener', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10000,
                         reliability=ReliabilityPolicy.RELIABLE, durability=durability)
        self.received = {topic: [] for topic in types}
        for topic, msgtype in types.items():
            self.node.create_subscription(
                get_message(msgtype), topic,
                lambda message, topic=topic: self.received[topic].append(bytes(message)),
                qos, raw=True)

    def spin_until(self, condition, what):
        """Spin until ``condition()`` holds (bounded)."""
        deadline = time.monotonic() + DEADLINE_S
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f'timed out waiting for {what() if callable(what) else what}')
            self.executor.spin_once(timeout_sec=0.05)

    def call(self, service_type, name):
        """Call service ``name`` with an empty request; return the response (bounded)."""
        client = self.node.create_client(service_type, name)
        self.spin_until(client.service_is_ready, f'the service {name}')
        future = client.call_async(service_type.Request())
        self.spin_until(future.done, f'the answer of {name}')
        return future.result()

    def close(self):
        """Shut the private context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


@pytest.fixture
def processes():
    """Yield a function that starts ``ros2 ...``; every process group is killed at teardown."""
    started = []

    def start(*args):
        started.append(Process(*args))
        return started[-1]

    yield start
    for process in started:
        process.close()


@pytest.fixture(scope='module')
def node_bag(tmp_path_factory):
    """Return a telemetry bag the feedback node recorded (telemetry_bag) over a scenario.

    The node runs on sim time (no /clock yet: its start event is stamped 0), so its events and
    the scenario's inputs (stamped from 0.1 s) share one time line, which ``ros2 bag play``
    follows at rate 1.
    """
    bag = tmp_path_factory.mktemp('rosbag2') / 'telemetry'
    harness = FeedbackNodeHarness(bag, sim_time=True)
    try:
        harness.connect()
        for outcomes, raw in scenario(12):
            for outcome in outcomes:
                harness.send_outcome(outcome_to_msg(outcome))
            harness.send_assessment(raw)
    finally:
        harness.close()
    return bag


# -- the node's telemetry bag read by rosbag2 -----------------------------------------------------

def test_ros2_bag_info_lists_every_topic_and_count_of_the_node_bag(node_bag):
    types, payloads = read_bag(node_bag)
    assert len(payloads['/self_assessment/calibrated']) == 12, payloads.keys()
    result = run('ros2', 'bag', 'info', str(node_bag))
    assert result.returncode == 0, result.stdout
    listed = {topic: (msgtype, int(count), encoding)
              for topic, msgtype, count, encoding in INFO_TOPIC.findall(result.stdout)}
    assert listed == {topic: (types[topic], len(payloads[topic]), 'cdr') for topic in types}, (
        result.stdout)
    total = sum(len(messages) for messages in payloads.values())
    assert re.search(rf'^Messages:\s+{total}$', result.stdout, re.MULTILINE), result.stdout
    assert re.search(r'^Storage id:\s+mcap$', result.stdout, re.MULTILINE), result.stdout


def test_ros2_bag_play_delivers_exactly_the_recorded_messages(node_bag, processes, tmp_path):
    """Every recorded message, in order, byte for byte (but CDR end padding); nothing else.

    The player publishes transient_local (``--qos-profile-overrides-path``, depth 1000) to a
    transient_local listener, and waits for every message to be acknowledged before it exits:
    on a loaded machine its writers could match the listener after the first message of a
    topic was published (seen: 11 of 12 twice in 3 runs under load, volatile).
    """
    from rosbag2_interfaces.srv import IsPaused, Resume

    types, payloads = read_bag(node_bag)
    listener = Listener(types, DurabilityPolicy.TRANSIENT_LOCAL)
    qos = qos_overrides_file(tmp_path / 'qos.yaml', types, durability='transient_local')
    try:
        player = processes('bag', 'play', str(node_bag), '--start-paused',
                           '--disable-keyboard-controls', '--qos-profile-overrides-path',
                           str(qos), '--wait-for-all-acked', str(int(DEADLINE_S * 1000)))
        listener.spin_until(lambda: all(listener.node.count_publishers(t) for t in types),
                            "the player's publishers")
        # An answer from the player means it has discovered this node's service client, which
        # was announced after the subscriptions: the player's publishers know them too.
        assert listener.call(IsPaused, '/rosbag2_player/is_paused').paused
        listener.call(Resume, '/rosbag2_player/resume')
        listener.spin_until(
            lambda: all(len(listener.received[t]) >= len(payloads[t]) for t in types),
            lambda: 'every recorded message: {} of {}\n{}'.format(
                {t: len(m) for t, m in listener.received.items()},
                {t: len(m) for t, m in payloads.items()}, player.output()))
        assert player.popen.wait(timeout=DEADLINE_S) == 0, player.output()
        for _ in range(10):  # anything still on the way would arrive now
            listener.executor.spin_once(timeout_sec=0.05)
        assert {topic: [_unpadded(data, len(sent)) for data, sent in zip(received, payloads[topic])]
                for topic, received in listener.received.items()} == payloads
    finally:
        listener.close()


def _unpadded(data, size):
    """Return ``data`` without the zero bytes that pad a ``size``-byte CDR payload to 4 bytes.

    Delivered from a transient_local writer's history, Fast DDS pads the serialized payload to
    a multiple of 4 (seen on /diagnostics); anything else is returned as it came.
    """
    if len(data) > size and len(data) % 4 == 0 and len(data) - size < 4 and not any(data[size:]):
        return data[:size]
    return data


# -- bags recorded by rosbag2, read by ghost-feedback ---------------------------------------------

@pytest.fixture(scope='module')
def stack_bags(tmp_path_factory):
    """Record a running stack twice: ``ros2 bag record`` and the launch file's ``record:=true``.

    The simulator (nav_msgs/Odometry estimate and truth, /clock) feeds the bridge, the bridge
    feeds the feedback node (bridge_feedback_launch.py). Return (explicit bag, launch bag,
    the launch's output).
    """
    root = tmp_path_factory.mktemp('stack')
    explicit, launched = root / 'recorded', root / 'launched'
    topics = STACK_INPUTS + NODE_TOPICS
    launch = Process('launch', PACKAGE, 'bridge_feedback_launch.py', 'use_sim_time:=true',
                     'record:=true', 'record_inputs:=true', f'bag_output:={launched}')
    recorder = Process('bag', 'record', '-s', 'mcap', '-o', str(explicit), '--topics', *topics)
    sim_log = root / 'sim.log'
    try:
        wait_for_output(recorder, subscribed(NODE_TOPICS[:3]), 'ros2 bag record')
        wait_for_output(launch, subscribed(NODE_TOPICS[:3]), 'record:=true')
        listener = Listener({'/self_assessment/calibrated':
                             'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment',
                             '/self_assessment/raw':
                             'project_ghost_feedback_msgs/msg/BeliefSelfAssessment'})
        try:
            listener.spin_until(lambda: all(listener.node.count_publishers(topic) for topic in (
                '/self_assessment/calibrated', '/self_assessment/raw')), 'the launched nodes')
            with open(sim_log, 'w', encoding='utf-8') as log:
                sim = subprocess.Popen(
                    [sys.executable, '-m', 'project_ghost_feedback.ros.sim_stack_node',
                     '--speed', '10', '--scale', '0.1', '--seed', '3'],
                    stdout=log, stderr=subprocess.STDOUT)
                try:
                    listener.spin_until(lambda: sim.poll() is not None, 'the simulator')
                finally:
                    if sim.poll() is None:
                        sim.kill()
                    sim.wait(timeout=DEADLINE_S)
            assert sim.returncode == 0, sim_log.read_text()
            received = listener.received
            # Every raw assessment the bridge sent has had its calibrated answer.
            listener.spin_until(
                lambda: len(received['/self_assessment/calibrated']) >= len(
                    received['/self_assessment/raw']) > 0, 'the last calibrated assessments')
        finally:
            listener.close()
        code, recorded_output = stop(recorder)
        assert code == 0, recorded_output
        code, launch_output = stop(launch)
        assert code == 0, launch_output
    finally:
        recorder.close()
        launch.close()
    return explicit, launched, launch_output


def test_bridge_launch_record_true_records_inputs_and_node_topics(stack_bags):
    _, launched, output = stack_bags
    assert 'Traceback' not in output, output
    types, payloads = read_bag(launched)
    for topic in STACK_INPUTS + NODE_TOPICS[:3]:
        assert payloads.get(topic), (topic, {t: len(p) for t, p in payloads.items()})
    assert types['/odometry/filtered'] == 'nav_msgs/msg/Odometry'
    result = run('ghost-feedback', 'info', str(launched))
    assert result.returncode == 0, result.stdout
    for topic in NODE_TOPICS[:3]:
        assert f'{topic}' in result.stdout and str(len(payloads[topic])) in result.stdout, (
            result.stdout)


def test_ros2_bag_record_of_the_stack_is_read_by_info(stack_bags):
    explicit, _, _ = stack_bags
    _, payloads = read_bag(explicit)
    result = run('ghost-feedback', 'info', str(explicit))
    assert result.returncode == 0, result.stdout
    for topic, messages in payloads.items():
        line = next((line for line in result.stdout.splitlines() if topic in line.split()), '')
        assert str(len(messages)) in line.split(), (topic, len(messages), result.stdout)


def test_ros2_bag_record_of_the_stack_is_read_by_evaluate(stack_bags, tmp_path):
    explicit, _, _ = stack_bags
    _, payloads = read_bag(explicit)
    out = tmp_path / 'evaluate'
    result = run('ghost-feedback', 'evaluate', str(explicit), '--estimate', STACK_INPUTS[0],
                 '--reference', STACK_INPUTS[1], '--output-dir', str(out), '--no-plot')
    assert result.returncode == 0, result.stdout
    summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    assert summary, result.stdout
    types, evaluated = read_bag(out / 'telemetry')
    # One raw assessment per recorded estimate that found a reference; each was calibrated.
    raw = len(evaluated['/self_assessment/raw'])
    assert 0 < raw <= len(payloads[STACK_INPUTS[0]]), (raw, result.stdout)
    assert len(evaluated['/self_assessment/calibrated']) == raw, result.stdout
    assert evaluated['/prediction_outcome'], result.stdout


def test_ros2_bag_record_of_the_stack_is_read_by_replay_with_its_warning(stack_bags):
    explicit, _, _ = stack_bags
    _, payloads = read_bag(explicit)
    result = run('ghost-feedback', 'replay', str(explicit))
    assert result.returncode in (0, 1), result.stdout
    assert 'does not record the node configuration' in result.stdout, result.stdout
    assert str(len(payloads['/self_assessment/calibrated'])) in result.stdout, result.stdout


def test_ros2_bag_record_of_the_stack_is_read_by_audit(stack_bags, tmp_path):
    explicit, _, _ = stack_bags
    out = tmp_path / 'audit.json'
    result = run('ghost-feedback', 'audit', str(explicit), '--json', str(out), '--workers', '1',
                 '--no-progress', timeout=600)
    assert result.returncode == 0, result.stdout
    document = json.loads(out.read_text(encoding='utf-8'))
    assert str(explicit.name) in json.dumps(document), result.stdout


def test_feedback_launch_record_true_records_the_node_topics(tmp_path, processes):
    from support.ros2_tools import Feeder

    bag = tmp_path / 'bag'
    launch = processes('launch', PACKAGE, 'feedback_launch.py', 'record:=true',
                       f'bag_output:={bag}')
    wait_for_output(launch, subscribed(NODE_TOPICS[2:3]), 'record:=true')
    feeder = Feeder('')
    try:
        # The recorder subscribes to /prediction_outcome and /self_assessment/raw only once it
        # discovers the feeder's publishers: wait for that, then for outputs after it.
        wait_for_output(launch, subscribed(NODE_TOPICS[:3]), 'record:=true with a publisher')
        start = len(feeder.received)
        feeder.wait_for(lambda msg: len(feeder.received) >= start + 10, 'with record:=true')
    finally:
        feeder.close()
    code, output = stop(launch)
    assert code == 0, output
    types, payloads = read_bag(bag)
    assert types['/self_assessment/calibrated'] == (
        'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment')
    for topic in NODE_TOPICS[:3]:
        assert payloads.get(topic), (topic, {t: len(p) for t, p in payloads.items()})
    result = run('ros2', 'bag', 'info', str(bag))
    assert result.returncode == 0, result.stdout


# -- the node's writer against rosbag2's ----------------------------------------------------------

@pytest.fixture(scope='module')
def twin_bags(tmp_path_factory):
    """Record the node's topics twice: its telemetry bag and ``ros2 bag record``.

    Return (the node's bag, rosbag2's bag). Every message is acknowledged by every reader
    (``wait_for_all_acked``) before the recorder stops.
    """
    root = tmp_path_factory.mktemp('twins')
    node_bag, recorded = root / 'node', root / 'rosbag2'
    harness = FeedbackNodeHarness(node_bag)
    recorder = Process('bag', 'record', '-s', 'mcap', '-o', str(recorded), '--topics',
                       *NODE_TOPICS)
    try:
        harness.connect()
        node = harness.node
        publishers = (harness.outcomes, harness.assessments, node._publisher,
                      node._events_publisher)
        # The recorder is subscribed to all four topics (the harness's own subscriber is one).
        harness.spin_until(lambda: all(p.get_subscription_count() >= n for p, n in zip(
            publishers, (2, 2, 2, 1))), 'ros2 bag record subscribing')
        wait_for_output(recorder, subscribed(NODE_TOPICS), 'ros2 bag record')
        for outcomes, raw in scenario(8):
            for outcome in outcomes:
                harness.send_outcome(outcome_to_msg(outcome))
            harness.send_assessment(raw)
        for publisher in publishers:
            assert publisher.wait_for_all_acked(rclpy.duration.Duration(seconds=DEADLINE_S))
    finally:
        harness.close()
        try:
            code, output = stop(recorder)
        finally:
            recorder.close()
    assert code == 0, output
    return node_bag, recorded


def test_node_bag_metadata_yaml_has_rosbag2s_fields(twin_bags):
    ours, theirs = (metadata(bag) for bag in twin_bags)
    assert sorted(ours) == sorted(theirs)
    for key in ('version', 'storage_identifier', 'compression_format', 'compression_mode',
                'ros_distro'):
        assert ours[key] == theirs[key], key
    assert [sorted(f) for f in ours['files']] == [sorted(f) for f in theirs['files']]
    assert ours['relative_file_paths'] == [f['path'] for f in ours['files']]
    assert theirs['relative_file_paths'] == [f['path'] for f in theirs['files']]
    assert isinstance(ours['custom_data'], dict)
    entries = {side: {e['topic_metadata']['name']: e for e in data['topics_with_message_count']}
               for side, data in (('ours', ours), ('theirs', theirs))}
    assert set(entries['theirs']) <= set(entries['ours'])
    for topic, their in entries['theirs'].items():
        our = entries['ours'][topic]
        assert sorted(our) == sorted(their), topic
        assert sorted(our['topic_metadata']) == sorted(their['topic_metadata']), topic
        for key in ('type', 'serialization_format', 'type_description_hash'):
            assert our['topic_metadata'][key] == their['topic_metadata'][key], (topic, key)
        ours_qos, theirs_qos = (e['topic_metadata']['offered_qos_profiles'] for e in (our, their))
        assert [sorted(q) for q in ours_qos] == [sorted(q) for q in theirs_qos], topic
        assert our['message_count'] == their['message_count'], topic


def test_node_bag_mcap_records_have_rosbag2s_fields(twin_bags):
    ours, theirs = (mcap_records(bag) for bag in twin_bags)
    (our_header, our_schemas, our_channels, our_records) = ours
    (their_header, their_schemas, their_channels, their_records) = theirs
    assert our_header.profile == their_header.profile == 'ros2'
    for name, schema in their_schemas.items():
        assert our_schemas[name].encoding == schema.encoding, name
        assert our_schemas[name].data == schema.data, name
    for topic, channel in their_channels.items():
        our = our_channels[topic]
        assert our.message_encoding == channel.message_encoding, topic
        assert sorted(our.metadata) == sorted(channel.metadata), topic
        assert our.metadata['topic_type_hash'] == channel.metadata['topic_type_hash'], topic
        assert our_schemas[their_schemas_name(their_schemas, channel)].name == (
            their_schemas_name(their_schemas, channel))
    assert sorted(our_records) == sorted(their_records) == ['rosbag2']
    assert sorted(our_records['rosbag2']) == sorted(their_records['rosbag2'])
    assert yaml.safe_load(our_records['rosbag2']['serialized_metadata']).keys() == (
        yaml.safe_load(their_records['rosbag2']['serialized_metadata']).keys())


def their_schemas_name(schemas, channel):
    """Return the schema name of ``channel`` (its schema id looked up in ``schemas``)."""
    return next(name for name, schema in schemas.items() if schema.id == channel.schema_id)


def test_node_bag_messages_equal_rosbag2s(twin_bags):
    """The node's calibrated output and events, as rosbag2 received them, byte for byte."""
    (_, ours), (_, theirs) = (read_bag(bag) for bag in twin_bags)
    for topic in NODE_TOPICS:
        assert ours[topic] == theirs[topic], topic
