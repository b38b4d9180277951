# SPDX-License-Identifier: Apache-2.0
"""Faults around the feedback node: kill, signals mid-stream, a restarting publisher.

- SIGKILL of a recording node process. What is readable afterwards (documented here and in
  docs/benchmarks.md): the bag directory has no ``metadata.yaml`` (written at close), so
  ``ghost-feedback replay``/``info`` refuse it with one line and exit 2; its MCAP file has no
  summary or footer, but every *chunk* written before the kill is intact. The telemetry writer
  (rosbags) puts the schemas and channels in the first chunk and closes a chunk once it holds
  1 MiB, so a tolerant stream read recovers every message up to the last complete chunk (a
  prefix of what the node accepted, in order) and loses at most the open chunk, < 1 MiB (about
  2300 outcome/raw/calibrated cycles here). Fast DDS shared-memory segments left by the killed
  process are removed with ``fastdds shm clean`` (zombie segments only; live ones are kept).
- SIGINT or SIGTERM while the node is busy with a backlog: the process exits 0 and the bag is
  closed and readable; every calibrated output a subscriber received is in it; each topic holds
  a prefix of what was sent, in order; raw and calibrated counts are equal (every accepted
  assessment recorded with its output); replay recomputes every output. (The quiescent case,
  counts equal to everything sent, is ``test_replay.py``'s; a truncated or corrupted bag given
  to replay is ``test_telemetry.py``'s.)
- A publisher that goes away mid-stream and comes back (a new node in a new context): the node
  keeps answering, and every output equals the pure function over the whole stream.
"""

import collections
import os
import signal
import subprocess
import sys
import time

from project_ghost_feedback_msgs.msg import (
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
)
import pytest
import rclpy
from rclpy.parameter import Parameter
from rclpy.executors import SingleThreadedExecutor
from rosbags.rosbag2 import Reader

from project_ghost_feedback.ros.conversions import (
    belief_to_msg,
    calibrated_from_msg,
    outcome_to_msg,
)
from project_ghost_feedback.ros.feedback_node import EXECUTORS, FeedbackNode, make_executor
from project_ghost_feedback.telemetry import (
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    decode,
    read_bag,
    replay_bag,
)
from support.node_process import (
    DEADLINE_S,
    first_difference,
    Client,
    expected_outputs,
    make_stream,
    MAX_HISTORY,
    QOS,
    recover_mcap,
)
from support.ros_context import spin_in_turn

CHUNK_BYTES = 2**20          # rosbags' MCAP writer closes a chunk beyond this many bytes
MESSAGE_RECORD_OVERHEAD = 31  # MCAP Message record: opcode, length, channel, sequence, 2 times
CLI = [sys.executable, '-m', 'project_ghost_feedback.cli']


def _start_node(bag, executor):
    return subprocess.Popen(
        [sys.executable, '-m', 'project_ghost_feedback.ros.feedback_node', '--ros-args',
         '-p', f'executor:={executor}', '-p', f'telemetry_bag:={bag}',
         '-p', f'max_history:={MAX_HISTORY}', '-p', 'diagnostics_period_s:=0.05',
         '-p', 'policy:=mahalanobis_downgrade'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _stop(process, signum=signal.SIGKILL):
    if process.poll() is None:
        process.send_signal(signum)
    try:
        return process.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()[0]


def _shm_clean():
    """Remove Fast DDS shared-memory segments of dead processes; return fastdds' output."""
    result = subprocess.run(['fastdds', 'shm', 'clean'], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


# -- SIGKILL -------------------------------------------------------------------------------------

def test_sigkill_keeps_every_complete_chunk_and_replay_refuses_the_bag(tmp_path):
    """SIGKILL while recording: complete chunks are recoverable, in order; the rest is lost."""
    bag = tmp_path / 'bag'
    steps = make_stream(5000)
    process = _start_node(bag, 'single_threaded')
    client = Client('fault_sigkill_client')
    try:
        client.wait_matched(process)
        client.prime(steps[0], process)
        for index, step in enumerate(steps[1:], start=1):
            client.publish(step)
            if index % 200 == 199:   # keep the backlog well inside the QoS depth
                client.spin_until(lambda: len(client.outputs) >= index - 400, 'outputs', process)
        client.spin_until(lambda: len(client.outputs) >= len(steps), 'every output', process)
    finally:
        _stop(process, signal.SIGKILL)
        client.close()
    assert process.returncode == -signal.SIGKILL
    cleaned = _shm_clean()
    assert 'zombie segments cleaned' in cleaned, cleaned

    received = [calibrated_from_msg(m) for m in client.outputs]
    assert received == expected_outputs(steps), first_difference(
        received, expected_outputs(steps))
    assert not (bag / 'metadata.yaml').exists()
    mcap_files = list(bag.glob('*.mcap'))
    assert len(mcap_files) == 1
    recovered, error = recover_mcap(mcap_files[0])
    assert error is not None   # no footer: the stream ends inside or after the last chunk

    sent = {
        CHANNEL_PREDICTION_OUTCOME: [outcome for outcome, _ in steps],
        CHANNEL_RAW_SELF_ASSESSMENT: [raw for _, raw in steps],
        CHANNEL_CALIBRATED_SELF_ASSESSMENT: received,
    }
    types = {
        CHANNEL_PREDICTION_OUTCOME: 'project_ghost_feedback_msgs/msg/PredictionOutcome',
        CHANNEL_RAW_SELF_ASSESSMENT: 'project_ghost_feedback_msgs/msg/BeliefSelfAssessment',
        CHANNEL_CALIBRATED_SELF_ASSESSMENT:
            'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment',
    }
    lost_bytes = 0
    for topic, contracts in sent.items():
        payloads = recovered.get(topic, [])
        # What is recoverable is an in-order prefix of what the node recorded.
        assert [decode(types[topic], p) for p in payloads] == contracts[:len(payloads)]
        assert payloads, f'nothing recoverable on {topic}'
        lost = contracts[len(payloads):]
        if lost:
            size = len(recovered[topic][-1]) + MESSAGE_RECORD_OVERHEAD
            lost_bytes += size * len(lost)
    # At most the open chunk is lost (message sizes per topic are nearly constant).
    assert lost_bytes <= CHUNK_BYTES * 1.1, lost_bytes
    # Each recovered calibrated output's inputs were recovered too (written before it).
    count = len(recovered[CHANNEL_CALIBRATED_SELF_ASSESSMENT])
    assert len(recovered[CHANNEL_RAW_SELF_ASSESSMENT]) >= count
    assert len(recovered[CHANNEL_PREDICTION_OUTCOME]) >= count

    # The tools refuse the killed bag with one line, exit 2 (no metadata.yaml).
    for command in ('replay', 'info'):
        result = subprocess.run(CLI + [command, str(bag)], capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 2, (result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith('ghost-feedback: error: '), result.stderr
        assert 'Traceback' not in result.stderr


# -- SIGINT / SIGTERM while busy -----------------------------------------------------------------

@pytest.mark.parametrize('executor', EXECUTORS)
@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_while_busy_closes_a_consistent_bag(tmp_path, executor, signum):
    """A signal while a backlog is processed: exit 0, and the bag holds exactly what went out."""
    bag = tmp_path / 'bag'
    steps = make_stream(900)
    process = _start_node(bag, executor)
    client = Client('fault_signal_client')
    try:
        client.wait_matched(process)
        client.prime(steps[0], process)
        for step in steps[1:600]:   # a burst: the node works through a backlog
            client.publish(step)
        client.spin_until(lambda: len(client.outputs) >= 100, 'the first outputs', process)
        process.send_signal(signum)
        for step in steps[600:]:   # traffic keeps coming while the node shuts down
            client.publish(step)
        client.spin_until(lambda: process.poll() is not None, 'the node to exit')
        settle = time.monotonic() + 0.5
        client.spin_until(lambda: time.monotonic() > settle, 'late outputs')
    finally:
        output = _stop(process, signal.SIGKILL)
        client.close()
    assert process.returncode == 0, output
    assert 'Traceback' not in output, output

    with Reader(bag) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        read = collections.Counter(c.topic for c, _, _ in reader.messages())
    assert set(read) <= set(counts), (counts, read)
    assert counts == {topic: read[topic] for topic in counts}, (counts, read)
    recorded = collections.defaultdict(list)
    for item in read_bag(bag):
        recorded[item.topic].append(item.contract)
    outcomes = recorded[CHANNEL_PREDICTION_OUTCOME]
    raws = recorded[CHANNEL_RAW_SELF_ASSESSMENT]
    calibrated = recorded[CHANNEL_CALIBRATED_SELF_ASSESSMENT]
    # Each topic holds an in-order prefix of what was sent...
    assert outcomes == [outcome for outcome, _ in steps[:len(outcomes)]]
    assert raws == [raw for _, raw in steps[:len(raws)]]
    # ...every accepted assessment with its output, equal to the pure function's...
    assert len(calibrated) == len(raws) >= 100
    expected = expected_outputs(steps)[:len(calibrated)]
    assert calibrated == expected, first_difference(calibrated, expected)
    # ...and every output a subscriber received (a published output is a recorded one).
    received = [calibrated_from_msg(m) for m in client.outputs]
    assert received == calibrated[:len(received)], (
        f'{len(received)} outputs received, {len(calibrated)} recorded: '
        f'{first_difference(received, calibrated)}')
    report = replay_bag(bag)
    assert report.identical is True and report.compared == len(calibrated)


@pytest.mark.parametrize(('module', 'ready'), [('feedback_node', 'feedback node ready'),
                                               ('outcome_bridge_node', 'outcome bridge ready')])
def test_a_signal_repeated_until_the_node_exits_still_ends_in_exit_0(tmp_path, module, ready):
    """SIGINT, then SIGINT again every 2 ms until the process is gone: exit 0, no traceback.

    Ctrl-C in a terminal reaches ``ros2 launch`` and its nodes alike, and launch sends its own
    SIGINT after it, so a second signal can land while a node ends. Before the node ignored it
    there, the interpreter's finalization (which puts the default action back) let it kill the
    process (exit -2, in 5 of 5 runs of this loop and once in a ``ros2 launch`` test).
    """
    log = tmp_path / 'node.log'
    with open(log, 'w', encoding='utf-8') as stream:
        process = subprocess.Popen(
            [sys.executable, '-m', f'project_ghost_feedback.ros.{module}', '--ros-args',
             '-r', f'__ns:=/repeated_signal_{os.getpid()}'],
            stdout=stream, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while ready not in log.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.02)
        assert ready in log.read_text()
        while process.poll() is None:
            try:
                process.send_signal(signal.SIGINT)
            except ProcessLookupError:
                break
            time.sleep(0.002)
            assert time.monotonic() < deadline + DEADLINE_S, 'no exit under repeated SIGINT'
        output = log.read_text()
        assert process.wait() == 0, output
        assert 'Traceback' not in output, output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# -- publisher restart ---------------------------------------------------------------------------

@pytest.mark.long
@pytest.mark.parametrize('executor', EXECUTORS)
def test_node_continues_after_its_publisher_restarts(rclpy_context, executor):
    """The estimator's node goes away mid-stream and a new one appears: outputs keep coming."""
    steps = make_stream(300)
    node = FeedbackNode(node_name='fault_restart_node', context=rclpy_context, parameter_overrides=[
        Parameter('policy', value='mahalanobis_downgrade'), Parameter('executor', value=executor)])
    node_executor = make_executor(executor, rclpy_context)
    node_executor.add_node(node)
    listener = rclpy.create_node('fault_restart_listener', context=rclpy_context)
    listener_executor = SingleThreadedExecutor(context=rclpy_context)
    listener_executor.add_node(listener)
    outputs = []
    listener.create_subscription(
        CalibratedSelfAssessmentMsg, '/self_assessment/calibrated', outputs.append, QOS)

    def spin_node():
        spin_in_turn(node_executor, listener_executor)

    try:
        for part, (begin, end) in enumerate(((0, 120), (120, 300))):
            # A new publisher each time: its own node in its own context (a new participant).
            client = Client(f'fault_restart_publisher_{part}', extra_executor=_Spinner(spin_node))
            try:
                client.wait_matched()
                client.spin_until(lambda: listener.count_publishers(
                    '/self_assessment/calibrated') > 0, 'the listener')
                for index in range(begin, end):
                    outcome, raw = steps[index]
                    client.outcomes.publish(outcome_to_msg(outcome))
                    client.spin_until(lambda: node.counts.received['outcome'] > index, 'an outcome')
                    client.assessments.publish(belief_to_msg(raw))
                    client.spin_until(lambda: len(outputs) > index, f'output {index}')
            finally:
                client.close()   # the publisher goes away (mid-stream for part 0)
        assert node.health.rejected == collections.Counter()
        assert node.counts.received == {'outcome': len(steps), 'assessment': len(steps)}
        assert [calibrated_from_msg(m) for m in outputs] == expected_outputs(steps)
    finally:
        node_executor.shutdown()
        listener_executor.shutdown()
        node.destroy_node()
        listener.destroy_node()


class _Spinner:
    """Adapts a spin function to the ``spin_once(timeout_sec=...)`` interface."""

    def __init__(self, spin):
        self._spin = spin

    def spin_once(self, timeout_sec=None):
        self._spin()


def test_shm_clean_is_available():
    """``fastdds shm clean`` (needs psutil) is on PATH for the clean-up after a SIGKILL."""
    assert 'zombie' in _shm_clean()
    assert os.path.isdir('/dev/shm')
