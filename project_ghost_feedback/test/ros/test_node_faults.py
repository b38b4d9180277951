# SPDX-License-Identifier: Apache-2.0
"""The feedback node process against faults of a real stack (issue 10), through real pub/sub.

- Disk full while recording, then SIGINT: the bag goes to a 2 MiB tmpfs (root only; skipped with
  the reason elsewhere) or to a process whose RLIMIT_FSIZE is 2 MiB (SIGXFSZ ignored, so writes
  fail with EFBIG; runs everywhere). The node keeps publishing, logs the error once, reports it
  and the counts on /diagnostics, exits 0 on SIGINT, and what an independent reader (mcap's
  stream reader) recovers from the bag is a prefix of what was sent, as many messages as the
  node says it recorded.
- One /clock message with sec = -1 to a use_sim_time node: rejected and counted, the node keeps
  running on later clocks and data.
- A burst of outcomes far beyond the input queue depth: the loss shows on /diagnostics.
- Two consecutive runs with the same telemetry_dir: each records its own readable bag.
- telemetry_bag without an importable rosbags: one ROS log line, exit 2, no traceback.

Every process started here is stopped by its PID; every mount is unmounted. No assertion on time.
"""

import collections
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import pytest
from rosgraph_msgs.msg import Clock

from project_ghost_feedback.ros.conversions import calibrated_from_msg, outcome_to_msg
from project_ghost_feedback.telemetry import (
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    decode,
)
from support.node_process import (
    first_difference,
    Client,
    expected_outputs,
    make_stream,
    MAX_HISTORY,
    recover_mcap,
)

DEADLINE_S = 90.0
DISK_BYTES = 2 * 2**20
TYPES = {
    CHANNEL_PREDICTION_OUTCOME: 'project_ghost_feedback_msgs/msg/PredictionOutcome',
    CHANNEL_RAW_SELF_ASSESSMENT: 'project_ghost_feedback_msgs/msg/BeliefSelfAssessment',
    CHANNEL_CALIBRATED_SELF_ASSESSMENT: 'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment',
}


class NodeProcess:
    """``python -m project_ghost_feedback.ros.feedback_node`` with its output in a file."""

    def __init__(self, *parameters, remaps=(), env=None, preexec_fn=None):
        self._log = tempfile.TemporaryFile(mode='w+')
        command = [sys.executable, '-m', 'project_ghost_feedback.ros.feedback_node',
                   '--ros-args']
        for parameter in parameters:
            command += ['-p', parameter]
        for remap in remaps:
            command += ['-r', remap]
        self.popen = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, text=True, env=env,
            preexec_fn=preexec_fn)

    def output(self):
        """Return everything the process printed so far."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read()

    def interrupt(self, timeout=60.0):
        """Send SIGINT (by PID) and return the exit code; SIGKILL if it does not exit."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=10)
            raise AssertionError(f'no exit after SIGINT: {self.output()}') from None

    def close(self):
        """Kill the process (by PID) if it still runs; drop the log."""
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=10)
        self._log.close()


class StatusClient(Client):
    """test_faults' Client, also keeping the last /diagnostics status message."""

    def __init__(self, name):
        super().__init__(name)
        self.status_message = ''
        self.status_messages = set()
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_status, 10)

    def _on_status(self, array):
        for status in array.status:
            self.status_message = status.message
            self.status_messages.add((status.level, status.message))

    def value(self, key, default=0):
        """Return a /diagnostics value as an int (``default`` when not reported yet)."""
        return int(self.diagnostics.get(key, default))

    def send_paced(self, steps, process, first_output):
        """Publish ``steps`` in batches that stay inside the input queue depth."""
        for offset in range(0, len(steps), 200):
            for step in steps[offset:offset + 200]:
                self.publish(step)
            expected = first_output + offset + len(steps[offset:offset + 200])
            self.spin_until(lambda: len(self.outputs) >= expected, f'{expected} outputs',
                            process)


def run_node(node, client, feed):
    """Wait for matching, run ``feed()``, SIGINT the node; close node process and client.

    Return the last /diagnostics values, the exit code, the output and what ``feed()`` returned.
    """
    try:
        client.wait_matched(node.popen)
        fed = feed()
        diagnostics = dict(client.diagnostics)
        returncode = node.interrupt()
        return diagnostics, returncode, node.output(), fed
    finally:
        node.close()
        client.close()


# -- disk full -----------------------------------------------------------------------------------

def _limit_file_size(limit_bytes):
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return preexec


@pytest.fixture(params=['tmpfs', 'rlimit_fsize'])
def full_disk(request, tmp_path):
    """Yield ``(directory, preexec_fn, error text)`` where a bag can hold about 2 MiB."""
    if request.param == 'rlimit_fsize':
        yield tmp_path, _limit_file_size(DISK_BYTES), 'File too large'
        return
    mount_point = tmp_path / 'tmpfs'
    mount_point.mkdir()
    if shutil.which('mount') is None:
        pytest.skip('no mount command to create a 2 MiB tmpfs')
    result = subprocess.run(
        ['mount', '-t', 'tmpfs', '-o', f'size={DISK_BYTES}', 'tmpfs', str(mount_point)],
        capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs here: {result.stderr.strip() or result.returncode}')
    try:
        yield mount_point, None, 'No space left on device'
    finally:
        subprocess.run(['umount', str(mount_point)], capture_output=True, timeout=30)


@pytest.mark.long
def test_disk_full_then_sigint_keeps_publishing_and_leaves_a_readable_prefix(full_disk):
    """The bag's disk fills up: outputs continue, one error line, exit 0, readable prefix."""
    directory, preexec_fn, error_text = full_disk
    bag = directory / 'bag'
    steps = make_stream(12_000)   # ~5 MiB of records: more than twice what the disk takes
    # /diagnostics is not recorded here, so every record is the data path's or the start event.
    node = NodeProcess(
        f'telemetry_bag:={bag}', f'max_history:={MAX_HISTORY}', 'diagnostics_period_s:=0.05',
        'policy:=mahalanobis_downgrade', 'record_diagnostics:=false', preexec_fn=preexec_fn)
    client = StatusClient('node_faults_disk_full')

    def feed():
        client.prime(steps[0], node.popen)
        # Feed until /diagnostics says the recording stopped (the disk is full)...
        sent = 1
        while client.value('telemetry_not_recorded') == 0 and sent < 9000:
            client.send_paced(steps[sent:sent + 1000], node.popen, sent)
            sent += 1000
            client.spin_until(lambda: client.value('outcomes_received') >= sent,
                              'diagnostics of what was sent', node.popen)
        assert client.value('telemetry_not_recorded') > 0, client.diagnostics
        full_at = sent
        # ...then as much again: the node keeps publishing calibrated outputs.
        client.send_paced(steps[sent:], node.popen, sent)
        client.spin_until(
            lambda: client.value('assessments_received') == len(steps)
            and 'telemetry stopped' in client.status_message, 'the last diagnostics', node.popen)
        return full_at, client.status_message

    diagnostics, returncode, output, (full_at, status_message) = run_node(node, client, feed)

    received = [calibrated_from_msg(m) for m in client.outputs]
    expected = expected_outputs(steps)
    assert received == expected, first_difference(received, expected)
    assert len(received) - full_at >= 3000   # published after the disk filled
    assert returncode == 0, output
    assert 'Traceback' not in output, output
    assert output.count(error_text) == 1, output
    assert 'telemetry stopped: [Errno' in status_message and error_text in status_message
    assert int(diagnostics['telemetry_not_recorded']) > 0

    # What an independent reader recovers is an in-order prefix of what the node accepted...
    (mcap_file,) = bag.glob('*.mcap')
    recovered, _ = recover_mcap(mcap_file)
    sent_contracts = {
        CHANNEL_PREDICTION_OUTCOME: [outcome for outcome, _ in steps],
        CHANNEL_RAW_SELF_ASSESSMENT: [raw for _, raw in steps],
        CHANNEL_CALIBRATED_SELF_ASSESSMENT: received,
    }
    for topic, contracts in sent_contracts.items():
        payloads = recovered.get(topic, [])
        assert payloads, f'nothing recoverable on {topic}'
        assert [decode(TYPES[topic], p) for p in payloads] == contracts[:len(payloads)]
    readable = sum(len(p) for p in recovered.values())
    print(f'disk full: {readable} of {3 * len(steps)} messages recorded (readable), '
          f'full after {full_at} cycles; /diagnostics: {diagnostics["telemetry_recorded"]} '
          f'recorded, {diagnostics["telemetry_not_recorded"]} not recorded')
    # ...exactly as many messages as the node says it recorded, the rest counted as not recorded.
    assert int(diagnostics['telemetry_recorded']) == readable, (diagnostics, readable)
    total = 3 * len(steps) + 1  # and the start configuration event, the bag's first record
    assert recovered['/feedback_events'], 'the start event is the first record'
    assert int(diagnostics['telemetry_not_recorded']) == total - readable, diagnostics
    assert f'telemetry: {readable} messages recorded in {bag}' in output, output
    assert f'{total - readable} not recorded' in output, output


# -- /clock with a negative time -----------------------------------------------------------------

def _publish_clock_until(client, publisher, sec, condition, what, process):
    """Publish /clock (best effort, so again every 50 ms) until ``condition()``."""
    msg = Clock()
    msg.clock.sec = sec
    state = {'next': 0.0}

    def published_and(condition):
        if time.monotonic() >= state['next']:
            publisher.publish(msg)
            state['next'] = time.monotonic() + 0.05
        return condition()

    client.spin_until(lambda: published_and(condition), what, process)


def test_negative_clock_is_rejected_and_counted_and_the_node_runs_on():
    """One /clock with sec = -1 to a use_sim_time node: counted, later clocks and data work."""
    node = NodeProcess('use_sim_time:=true', 'diagnostics_period_s:=0.05',
                       'policy:=mahalanobis_downgrade', f'max_history:={MAX_HISTORY}')
    client = StatusClient('node_faults_clock')
    clock = client.node.create_publisher(Clock, '/clock', 10)
    steps = make_stream(50)

    def feed():
        _publish_clock_until(client, clock, 100, lambda: client.value('node_clock_ns') == 100e9,
                             'the node clock at 100 s', node.popen)
        _publish_clock_until(client, clock, -1, lambda: client.value('clock_rejected') > 0,
                             'the negative clock to be counted', node.popen)
        _publish_clock_until(client, clock, 200, lambda: client.value('node_clock_ns') == 200e9,
                             'the node clock at 200 s', node.popen)
        client.prime(steps[0], node.popen)
        client.send_paced(steps[1:], node.popen, 1)

    diagnostics, returncode, output, _ = run_node(node, client, feed)
    assert [calibrated_from_msg(m) for m in client.outputs] == expected_outputs(steps)
    assert int(diagnostics['clock_rejected']) >= 1, diagnostics
    assert 'negative' in diagnostics['last_clock_rejection'], diagnostics
    assert any(level == DiagnosticStatus.WARN and 'rejecting /clock' in message
               for level, message in client.status_messages), client.status_messages
    assert returncode == 0, output
    assert 'Traceback' not in output, output
    assert 'cannot start' not in output, output
    assert output.count('/clock message rejected') == 1, output


# -- telemetry without rosbags ---------------------------------------------------------------------

def test_telemetry_without_rosbags_is_one_log_line_and_exit_2(tmp_path):
    """telemetry_bag set, rosbags not importable (a stub package first on PYTHONPATH): exit 2."""
    stub = tmp_path / 'stub' / 'rosbags'
    stub.mkdir(parents=True)
    (stub / '__init__.py').write_text(
        "raise ImportError('rosbags stubbed out by test_node_faults')\n")
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(stub.parent)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    probe = subprocess.run([sys.executable, '-c', 'import rosbags'], env=env,
                           capture_output=True, text=True, timeout=60)
    assert 'stubbed out by test_node_faults' in probe.stderr, probe.stderr   # the stub works
    bag = tmp_path / 'bag'
    node = NodeProcess(f'telemetry_bag:={bag}', env=env)
    try:
        returncode = node.popen.wait(timeout=DEADLINE_S)
        output = node.output()
    finally:
        node.close()
    assert returncode == 2, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith('[FATAL] ') and '[feedback_node]: cannot start: ' in lines[0]
    assert 'rosbags' in lines[0] and 'stubbed out by test_node_faults' in lines[0], lines[0]
    assert 'Traceback' not in output
    assert not bag.exists()


# -- respawn with telemetry_dir -------------------------------------------------------------------

def test_consecutive_runs_with_one_telemetry_dir_record_their_own_bags(tmp_path):
    """Two runs (a respawn) with the same telemetry_dir: two timestamped bags, both readable."""
    from rosbags.rosbag2 import Reader

    from project_ghost_feedback.telemetry import read_bag

    parent = tmp_path / 'telemetry'
    runs = [make_stream(60), make_stream(40, first=1000)]
    for run, steps in enumerate(runs):
        node = NodeProcess(f'telemetry_dir:={parent}', 'diagnostics_period_s:=0.05',
                           'policy:=mahalanobis_downgrade', f'max_history:={MAX_HISTORY}',
                           'record_diagnostics:=false')
        client = StatusClient(f'node_faults_respawn_{run}')

        def feed(client=client, node=node, steps=steps):
            client.prime(steps[0], node.popen)
            client.send_paced(steps[1:], node.popen, 1)
            client.spin_until(lambda: client.value('outcomes_received') == len(steps),
                              'the last diagnostics', node.popen)

        diagnostics, returncode, output, _ = run_node(node, client, feed)
        assert returncode == 0, output
        assert diagnostics['messages_missed'] == '0', diagnostics   # nothing lost, none missed
        # The data path's three records per cycle, and the start configuration event.
        assert f'{3 * len(steps) + 1} messages recorded in {parent}' in output, output
    bags = sorted(p for p in parent.iterdir())
    assert len(bags) == 2, bags
    assert all(p.name.startswith('ghost_feedback_') for p in bags), bags
    for bag, steps in zip(bags, runs):
        with Reader(bag) as reader:
            counts = collections.Counter(c.topic for c, _, _ in reader.messages())
        assert counts == {**{topic: len(steps) for topic in TYPES}, '/feedback_events': 1}, (
            bag, counts)
        outcomes = [m.contract for m in read_bag(bag) if m.topic == CHANNEL_PREDICTION_OUTCOME]
        assert outcomes == [outcome for outcome, _ in steps]


# -- input lost in the middleware ----------------------------------------------------------------

def test_a_burst_beyond_the_input_queue_shows_as_missed_messages():
    """20k outcomes at once into a queue of 10: every one is received or counted as missed.

    rmw_fastrtps' message-lost event does not count samples a reliable KEEP_LAST reader queue
    overwrote (it reported 0-1 here); the node counts them from the publication sequence
    numbers (``messages_missed``). Both figures are printed.
    """
    count = 20_000
    node = NodeProcess('input_qos_depth:=10', 'diagnostics_period_s:=0.05')
    client = StatusClient('node_faults_burst')
    messages = [outcome_to_msg(outcome) for outcome, _ in make_stream(count)]

    def feed():
        client.spin_until(lambda: client.value('outcome_publishers') == 1, 'the node to match',
                          node.popen)
        client.wait_matched(node.popen)
        # The first message taken from a writer is the baseline of its sequence numbers (what
        # went out before it counts as not meant for this reader, as for a late joiner): make
        # sure it is the first of the burst, then send the rest at once.
        client.outcomes.publish(messages[0])
        client.spin_until(lambda: client.value('outcomes_received') >= 1, 'the first outcome',
                          node.popen)
        for msg in messages[1:]:
            client.outcomes.publish(msg)
        client.spin_until(
            lambda: client.value('outcomes_received') + client.value('messages_missed') >= count,
            'every outcome received or missed', node.popen,
            what_else=lambda: {key: client.diagnostics.get(key) for key in (
                'outcomes_received', 'messages_missed', 'messages_lost', 'outcome_publishers')})

    diagnostics, returncode, output, _ = run_node(node, client, feed)
    received, missed = int(diagnostics['outcomes_received']), int(diagnostics['messages_missed'])
    print(f'burst of {count} outcomes, input depth 10: {received} received, {missed} missed, '
          f'RMW messages_lost {diagnostics["messages_lost"]}')
    assert received + missed == count, diagnostics
    assert missed > 0, diagnostics
    assert any(level == DiagnosticStatus.WARN and 'missing from the publication sequence' in m
               for level, m in client.status_messages), client.status_messages
    assert returncode == 0, output


# -- record_topics never costs the node its own bag (issue 34, findings 6-8) ----------------------

def _cli(*arguments):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, '-m', 'project_ghost_feedback.cli', *arguments],
                          capture_output=True, text=True, timeout=300, env=env)


def _record_topic_harness(bag, topic, depth):
    """Return ``(harness, publisher)``: a recording node (record_topics: ``topic`` as String)."""
    from std_msgs.msg import String
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from support.feedback_node import FeedbackNodeHarness

    harness = FeedbackNodeHarness(
        bag, parameters=[('record_topics', [f'{topic}:std_msgs/msg/String'])])
    try:
        harness.connect()
        publisher = harness.driver.create_publisher(
            String, topic, QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE))
        harness.spin_until(lambda: publisher.get_subscription_count() >= 1, 'the recorder')
    except BaseException:
        harness.close()
        raise
    return harness, publisher


def _calibrated_half(harness):
    """Feed the scenario's calibrated half (nothing above WARN), then start a new period."""
    from support.feedback_node import scenario

    for outcomes, raw in scenario()[:6]:
        for outcome in outcomes:
            harness.send_outcome(outcome_to_msg(outcome))
        harness.send_assessment(raw)
    harness.node.diagnostic_status()


def test_record_topics_messages_over_the_readers_limit_are_refused_and_counted(tmp_path):
    """2 MB messages on record_topics: not recorded, counted, WARN; the bag stays readable.

    They were recorded ("10 recorded, 0 not recorded"), and then info and replay refused the
    whole bag (a record over the 1 MiB limit): the calibration telemetry was lost with it.
    """
    from std_msgs.msg import String

    bag = tmp_path / 'bag'
    harness, publisher = _record_topic_harness(bag, '/big', 10)
    try:
        _calibrated_half(harness)
        for index in range(6):
            size = 2_000_000 if index % 2 else 1000
            publisher.publish(String(data='x' * size))
            harness.spin_until(lambda: harness.node.topic_recorder.recorded > index,
                               'the message')
        status = harness.node.diagnostic_status()
        values = {kv.key: kv.value for kv in status.values}
    finally:
        harness.close()
    assert values['telemetry_not_recorded[too_large]'] == '3', values
    assert status.level >= DiagnosticStatus.WARN, status.message
    assert 'not recorded (too_large)' in status.message, status.message
    for command in ('info', 'replay'):
        result = _cli(command, str(bag), '--json')
        assert result.returncode == 0, (command, result.stderr)
    topics = {t['name']: t['message_count'] for t in json.loads(_cli('info', str(bag),
                                                                     '--json').stdout)['topics']}
    assert topics['/big'] == 3


def test_record_topics_bytes_rosbags_cannot_decode_are_refused_and_counted(tmp_path):
    """Strings rclpy passes on as bytes but rosbags cannot decode: not recorded, counted, WARN.

    They were recorded as received, and then rosbags could not decode the node's own bag (a
    string without its terminator, in invalid UTF-8) or read another string than rclpy (an
    embedded null). Over DDS: each is published as raw CDR bytes.
    """
    from support.telemetry_samples import recorded_strings, string_cdr

    payloads = [string_cdr(4, b'map\x00'), string_cdr(3, b'map'), string_cdr(3, b'\xff\xfe\x00'),
                string_cdr(8, b'ma\x00mapm\x00'), string_cdr(5, b'odom\x00')]
    bag = tmp_path / 'bag'
    harness, publisher = _record_topic_harness(bag, '/strings', 10)
    try:
        _calibrated_half(harness)
        for index, payload in enumerate(payloads):
            publisher.publish(payload)
            harness.spin_until(lambda: harness.node.topic_recorder.recorded > index,
                               'the message')
        harness.spin_until(lambda: harness.node.telemetry.not_recorded >= 3, 'the check')
        status = harness.node.diagnostic_status()
        values = {kv.key: kv.value for kv in status.values}
    finally:
        harness.close()
    assert values['telemetry_not_recorded[malformed]'] == '2', values
    assert values['telemetry_not_recorded[string_with_null]'] == '1', values
    assert status.level >= DiagnosticStatus.WARN, status.message
    for command in ('info', 'replay'):
        result = _cli(command, str(bag), '--json')
        assert result.returncode == 0, (command, result.stderr)
    assert recorded_strings(bag, '/strings') == ['map', 'odom']


def test_record_topics_losses_are_counted_like_the_inputs(tmp_path):
    """A flood beyond the recording queue: every message recorded or counted as missed.

    500 messages on record_topics, 288 of them lost without a count or a WARN, was finding 7.
    The flood goes out while the node does not spin, so its queue (depth 10) overwrites.
    """
    from std_msgs.msg import String

    harness, publisher = _record_topic_harness(tmp_path / 'bag', '/flood', 1000)
    try:
        node = harness.node
        # The first message taken is the baseline of the sequence numbers (as for the inputs).
        publisher.publish(String(data='first'))
        sent = 1
        harness.spin_until(lambda: node.topic_recorder.recorded == 1, 'the first message')
        for _ in range(300):
            publisher.publish(String(data='y' * 1000))
            sent += 1

        def accounted():
            values = {kv.key: kv.value for kv in node.diagnostic_status().values}
            return int(values['record_topics_messages']) + int(
                values['record_topics_messages_missed'])

        deadline = time.monotonic() + DEADLINE_S
        while accounted() < sent:  # a last marker taken accounts for every number before it
            assert time.monotonic() < deadline, (accounted(), sent)
            publisher.publish(String(data='marker'))
            sent += 1
            for _ in range(20):
                harness.executors[0].spin_once(timeout_sec=0.01)
        status = node.diagnostic_status()
        values = {kv.key: kv.value for kv in status.values}
    finally:
        harness.close()
    recorded = int(values['record_topics_messages'])
    missed = int(values['record_topics_messages_missed'])
    print(f'record_topics flood: {sent} sent, {recorded} recorded, {missed} missed, '
          f'{values["record_topics_messages_lost"]} lost (RMW)')
    assert recorded + missed == sent, values
    assert missed > 0, values


def test_the_recording_queue_has_a_byte_budget(tmp_path):
    """A stalled disk: records beyond ``queue_bytes`` are counted, never held in memory.

    The queue was bounded by count only: 1,500 records of 1 MB took the node to 1.4 GB with
    ``not_recorded`` 0. The disk is stalled by holding the writer thread in its first write.
    """
    import threading

    from project_ghost_feedback.core.loop import LoopConfig
    from project_ghost_feedback.telemetry.background import BackgroundRecorder
    from project_ghost_feedback.telemetry.channels import recorded_topic
    from project_ghost_feedback.telemetry.recorder import TelemetryRecorder

    gate = threading.Event()
    taken = threading.Event()

    class StalledDisk(TelemetryRecorder):
        def record_serialized(self, channel, log_time, payload):
            taken.set()
            gate.wait(DEADLINE_S)
            super().record_serialized(channel, log_time, payload)

    channel = recorded_topic('/big:std_msgs/msg/String')
    recorder = StalledDisk(str(tmp_path / 'bag'), LoopConfig.make(), extra_channels=(channel,))
    background = BackgroundRecorder(recorder, queue_size=10_000, queue_bytes=1 << 20,
                                    on_error=print)
    import struct

    # A std_msgs/String of 300,000 bytes in all (the recorder records only what decodes).
    payload = b'\x00\x01\x00\x00' + struct.pack('<I', 299_992) + b'x' * 299_991 + b'\x00'
    assert len(payload) == 300_000
    try:
        background.record_serialized('/big', 1, payload)
        assert taken.wait(DEADLINE_S)
        for index in range(2, 12):
            background.record_serialized('/big', index, payload)
        # 1 MiB holds three of them (the one being written counts until it is written).
        assert background.queued_bytes == 3 * len(payload)
        assert background.losses == {'over_byte_budget': 8}
        assert background.not_recorded == 8
    finally:
        gate.set()
        background.close()
    assert background.recorded == 3 and background.queued_bytes == 0
