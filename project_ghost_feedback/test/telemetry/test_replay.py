# SPDX-License-Identifier: Apache-2.0
"""Replay of telemetry bags recorded by the running feedback node.

- A bag recorded by the node (real rclpy publish/subscribe between two private contexts, then
  ``node.close()``) replays to exactly the calibrated assessments the node published, including
  an outcome that arrived after the assessment it would have counted for.
- Replaying with another policy or parameters reports what would have changed; ``--json`` parses.
- A tampered bag is reported with its first difference (exit 1).
- SIGTERM or SIGINT of a recording node process leaves a readable bag holding every message the
  node accepted.
"""

import json
import math
import pathlib
import re
import signal
import subprocess
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from project_ghost_feedback.core import (
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import format_overconfidence
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.ros.conversions import (
    belief_to_msg,
    calibrated_from_msg,
    outcome_to_msg,
)
from project_ghost_feedback.ros.feedback_node import FeedbackNode
from project_ghost_feedback.telemetry import (
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    read_bag,
    replay_bag,
    TelemetryRecorder,
)
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from support.contracts import build_outcome
from support.ros_context import new_rclpy_context
import pytest
from ruamel.yaml import YAML
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rosbags.rosbag2 import Reader
from support.feedback_node import (
    FeedbackNodeHarness,
    raw_assessment,
    MS,
    QOS,
    scenario,
    TIMEOUT_S,
)

CLI = [sys.executable, '-m', 'project_ghost_feedback.cli']


# -- in-process pub/sub harness -------------------------------------------------------------------


@pytest.fixture(scope='module')
def node_bag(tmp_path_factory):
    """Run the node with telemetry_bag over the scenario; return (bag, published, accepted).

    Besides the scenario it receives: an exact duplicate outcome (accepted, not stored twice),
    an invalid outcome (NaN distance: rejected, so not recorded) and an outcome that arrives
    after the assessment it would have counted for (recorded where it arrived).
    """
    bag = tmp_path_factory.mktemp('node') / 'bag'
    harness = FeedbackNodeHarness(bag)
    accepted_outcomes = 0
    try:
        harness.connect()
        steps = scenario()
        late = None
        for index, (outcomes, raw) in enumerate(steps):
            for outcome in outcomes:
                if index == 5:
                    late = outcome  # held back: sent after this cycle's assessment
                    continue
                harness.send_outcome(outcome_to_msg(outcome))
                accepted_outcomes += 1
            if index == 3:
                harness.send_outcome(outcome_to_msg(outcomes[0]))  # duplicate
                accepted_outcomes += 1
                invalid = outcome_to_msg(outcomes[0])
                invalid.position_mahalanobis = math.nan
                harness.send_outcome(invalid)  # rejected
            harness.send_assessment(raw)
            if index == 5:
                harness.send_outcome(outcome_to_msg(late))
                accepted_outcomes += 1
        assert harness.node.counts.duplicates == 1
        assert harness.node.counts.late_outcomes == 1
        assert sum(harness.node.health.rejected.values()) == 1
        published = [calibrated_from_msg(m) for m in harness.received]
    finally:
        harness.close()
    return bag, published, accepted_outcomes


def test_node_recorded_bag_holds_every_accepted_message(node_bag):
    """Per-topic counts (rosbags Reader) equal what the node accepted and published."""
    bag, published, accepted_outcomes = node_bag
    with Reader(bag) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        read = {topic: 0 for topic in counts}
        for connection, _, _ in reader.messages():
            read[connection.topic] += 1
    expected = {
        CHANNEL_PREDICTION_OUTCOME: accepted_outcomes,
        CHANNEL_RAW_SELF_ASSESSMENT: len(published),
        CHANNEL_CALIBRATED_SELF_ASSESSMENT: len(published),
        '/feedback_events': 1,  # the start configuration
        # /diagnostics as received (record_diagnostics): however many periods the run lasted
        '/diagnostics': read.get('/diagnostics'),
        # once per diagnostics period with a new output: how many depends on the run's length
        '/self_assessment/overconfidence': read.get('/self_assessment/overconfidence'),
    }
    assert counts == read == expected
    recorded = [item.contract for item in read_bag(bag)
                if item.topic == CHANNEL_CALIBRATED_SELF_ASSESSMENT]
    assert recorded == published


def test_node_recorded_bag_replays_exactly(node_bag):
    """Replay with the recorded configuration reproduces every published calibrated assessment."""
    bag, published, accepted_outcomes = node_bag
    report = replay_bag(bag)
    assert report.mode == 'verify' and report.config_source == 'recorded'
    assert report.identical is True, report.to_dict()
    assert report.compared == report.assessments == len(published) == len(scenario())
    assert report.outcomes == accepted_outcomes
    assert report.recomputed.downgrades == sum(c.was_downgraded for c in published) > 0
    assert not report.warnings


def test_stamp_order_replay_differs_only_by_the_late_outcome(node_bag):
    """In log-time order the late outcome counts one assessment early: the report says where."""
    bag, _, _ = node_bag
    report = replay_bag(bag, order='stamp')
    assert report.identical is False
    first = report.first_difference
    assert first.index == 5 and first.belief_stamp_sim_ns == 600 * MS
    assert first.field == 'calibration_history.outcomes_considered'


def test_replay_with_another_policy_reports_changes(node_bag):
    """Another policy/parameters: per-level table, downgrades, first-downgrade stamps, changes."""
    bag, published, _ = node_bag
    recorded_downgrades = sum(c.was_downgraded for c in published)
    report = replay_bag(bag, parameters={'downgrade_threshold': '1000'})
    assert report.mode == 'compare'
    assert report.replay_config.parameters == (('downgrade_threshold', 1000), ('min_outcomes', 4))
    assert report.recomputed.downgrades == 0
    assert report.recorded.downgrades == recorded_downgrades
    assert report.changed_levels == report.more_confident == recorded_downgrades
    first_downgrade = next(c for c in published if c.was_downgraded)
    assert (report.recorded.first_downgrade_stamp_sim_ns
            == first_downgrade.raw_assessment.belief_stamp_sim_ns)
    assert report.recomputed.first_downgrade_stamp_sim_ns is None
    assert report.first_change.belief_stamp_sim_ns == report.recorded.first_downgrade_stamp_sim_ns
    assert sum(report.recomputed.levels.values()) == len(published)


def test_cli_replay_json_parses(node_bag):
    """ghost-feedback replay --json prints strict JSON; verify exits 0, compare exits 0 too."""
    bag, published, _ = node_bag
    result = subprocess.run(CLI + ['replay', str(bag), '--json'], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data['identical'] is True and data['mode'] == 'verify'
    assert data['compared'] == len(published)
    result = subprocess.run(
        CLI + ['replay', str(bag), '--policy', 'calibrated_exceedance', '--max-history', '16',
               '--json'], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout, parse_constant=pytest.fail)  # no NaN/Infinity tokens
    assert data['mode'] == 'compare'
    assert data['replay_config']['policy'] == 'calibrated_exceedance'
    assert data['replay_config']['max_history'] == 16
    assert data['differences'] == len(published)  # the policy id differs in every output
    assert set(data['recorded']['levels']) == {'KNOWN', 'UNCERTAIN', 'UNKNOWN'}
    assert sum(data['recomputed']['levels'].values()) == len(published)
    result = subprocess.run(CLI + ['replay', str(bag), '--set', 'min_outcomes=2'],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert 'replayed:  mahalanobis_downgrade(downgrade_threshold=2, min_outcomes=2)' in (
        result.stdout)
    assert 'changed level:' in result.stdout


def test_tampered_bag_reports_the_first_difference(tmp_path):
    """A recorded output that the core would not produce: exit 1, first difference named."""
    config = LoopConfig.make('mahalanobis_downgrade', None, 32, 1024)
    loop = FeedbackLoop(config)
    bag = tmp_path / 'bag'
    recorder = TelemetryRecorder(bag, config)
    for index, (outcomes, raw) in enumerate(scenario()):
        for outcome in outcomes:
            loop.outcome(outcome)
            recorder.record_outcome(outcome)
        calibrated = loop.assessment(raw).calibrated
        if index == 7:
            calibrated = type(calibrated)(
                calibrated.raw_assessment, calibrated.calibration_history,
                SelfAssessmentLevel.UNKNOWN, calibrated.adjustment_policy_id,
                'tampered_reason')
        recorder.record_assessment(raw, calibrated)
    recorder.close()
    result = subprocess.run(CLI + ['replay', str(bag)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert 'MISMATCH, 1 of 24' in result.stdout
    assert 'first difference: assessment #7 (belief stamp 800000000 ns' in result.stdout
    assert 'adjusted_overall_level: recorded UNKNOWN' in result.stdout
    result = subprocess.run(CLI + ['replay', str(bag), '--json'], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    first = json.loads(result.stdout)['first_difference']
    assert (first['index'], first['field'], first['recorded']) == (
        7, 'adjusted_overall_level', 'UNKNOWN')


def test_node_refuses_an_existing_telemetry_bag(tmp_path, rclpy_context):
    """telemetry_bag naming an existing path: the node refuses to start (ValueError)."""
    with pytest.raises(ValueError, match='telemetry_bag'):
        FeedbackNode(context=rclpy_context, parameter_overrides=[
            Parameter('telemetry_bag', value=str(tmp_path))])


# -- a recording node process, stopped by a signal ------------------------------------------------

def _diagnostic_values(array):
    return {kv.key: kv.value for status in array.status for kv in status.values}


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT], ids=['SIGTERM', 'SIGINT'])
def test_signal_leaves_a_readable_bag_with_every_accepted_message(tmp_path, signum):
    """Stop a recording node process with a signal: it exits 0 and the bag holds everything."""
    bag = tmp_path / 'bag'
    process = subprocess.Popen(
        [sys.executable, '-m', 'project_ghost_feedback.ros.feedback_node', '--ros-args',
         '-p', f'telemetry_bag:={bag}', '-p', 'diagnostics_period_s:=0.1',
         '-p', 'policy:=mahalanobis_downgrade'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    context = new_rclpy_context()
    node = rclpy.create_node('signal_test_driver', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    received, diagnostics = [], []
    try:
        outcomes = node.create_publisher(PredictionOutcomeMsg, '/prediction_outcome', QOS)
        assessments = node.create_publisher(BeliefSelfAssessmentMsg, '/self_assessment/raw', QOS)
        calibrated = node.create_subscription(
            CalibratedSelfAssessmentMsg, '/self_assessment/calibrated', received.append, QOS)
        node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)

        def spin_until(condition, what):
            deadline = time.monotonic() + TIMEOUT_S
            while not condition():
                assert process.poll() is None, f'node exited early: {process.stdout.read()}'
                if time.monotonic() > deadline:
                    process.kill()
                    raise AssertionError(
                        f'timed out waiting for {what} ({len(received)} calibrated received, '
                        f'last diagnostics {diagnostics and _diagnostic_values(diagnostics[-1])}'
                        f'); node output:\n{process.communicate()[0]}')
                executor.spin_once(timeout_sec=0.02)

        spin_until(lambda: diagnostics and outcomes.get_subscription_count() > 0
                   and assessments.get_subscription_count() > 0
                   and calibrated.get_publisher_count() > 0, 'discovery')
        steps = scenario(40)
        for outcome_list, raw in steps:
            for outcome in outcome_list:
                outcomes.publish(outcome_to_msg(outcome))
            assessments.publish(belief_to_msg(raw))
        invalid = outcome_to_msg(steps[0][0][0])
        invalid.orientation_mahalanobis = -1.0
        outcomes.publish(invalid)
        accepted_outcomes = sum(len(o) for o, _ in steps)

        def processed():
            # The node's own counters (its /diagnostics, 10 Hz): everything taken and handled.
            values = _diagnostic_values(diagnostics[-1]) if diagnostics else {}
            return (values.get('outcomes_received') == str(accepted_outcomes + 1)
                    and values.get('published') == str(len(steps)))

        spin_until(processed, 'the node to process every message')
        assert _diagnostic_values(diagnostics[-1])['rejected_total'] == '1'
    finally:
        process.send_signal(signum)
        try:
            output, _ = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
    assert process.returncode == 0, output
    with Reader(bag) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        read = {topic: 0 for topic in counts}
        for connection, _, _ in reader.messages():
            read[connection.topic] += 1
    assert counts == read == {
        CHANNEL_PREDICTION_OUTCOME: accepted_outcomes,
        CHANNEL_RAW_SELF_ASSESSMENT: len(steps),
        CHANNEL_CALIBRATED_SELF_ASSESSMENT: len(steps),
        '/feedback_events': 1,  # the start configuration
        '/diagnostics': read.get('/diagnostics'),
        # once per diagnostics period with a new output: how many depends on the run's length
        '/self_assessment/overconfidence': read.get('/self_assessment/overconfidence'),
    }
    report = replay_bag(bag)
    assert report.identical is True and report.compared == len(steps)
    recorded = [item.contract for item in read_bag(bag)
                if item.topic == CHANNEL_CALIBRATED_SELF_ASSESSMENT]
    # What this subscriber got is what was recorded (all of it, unless the very first outputs
    # went out before the node's publisher had matched this subscription).
    assert received and [calibrated_from_msg(m) for m in received] == recorded[-len(received):]


def _echo(extra, messages):
    """Run ``ghost-feedback echo`` with ``extra``; publish ``messages`` in turn until it exits.

    Returns ``(exit status, stdout, stderr)``.
    """
    process = subprocess.Popen(CLI + ['echo', *extra], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    context = new_rclpy_context()
    node = rclpy.create_node('echo_test_publisher', context=context)
    try:
        from project_ghost_feedback.ros.conversions import calibrated_to_msg

        publisher = node.create_publisher(
            CalibratedSelfAssessmentMsg, '/self_assessment/calibrated', QOS)
        deadline = time.monotonic() + TIMEOUT_S
        index = 0
        while process.poll() is None and time.monotonic() < deadline:
            if publisher.get_subscription_count() > 0 and messages:
                publisher.publish(calibrated_to_msg(messages[index % len(messages)]))
                index += 1
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()
        output, errors = process.communicate(timeout=TIMEOUT_S)
        node.destroy_node()
        context.try_shutdown()
    return process.returncode, output, errors


def test_cli_echo_full_prints_live_calibrated_assessments():
    """ghost-feedback echo --full --count 2: two YAML documents of live messages, then exit 0."""
    loop = FeedbackLoop(LoopConfig.make('mahalanobis_downgrade', None, 8, 8))
    loop.outcome(build_outcome(50 * MS, math.inf, math.inf / 2))
    calibrated = loop.assessment(raw_assessment(100 * MS)).calibrated
    status, output, errors = _echo(['--full', '--count', '2'], [calibrated])
    assert status == 0, errors
    documents = [d for d in output.split('---\n') if d.strip()]
    assert len(documents) == 2
    assert 'header:\n  stamp:\n    sec: 0\n    nanosec: 100000000\n' in documents[0]
    assert 'raw_assessment:\n  header:\n    stamp:\n      sec: 0\n' in documents[0]
    assert '  worst_position_mahalanobis: .inf\n' in documents[0]
    assert "  - name: 'position_x'\n    level:\n      value: 2\n" in documents[0]
    assert "adjustment_policy_id: 'mahalanobis_downgrade'" in documents[0]


def test_cli_echo_every_prints_one_line_per_assessment():
    """--every: one line each: time from the first, raw -> calibrated by name, reason, k.

    ``ros2 topic echo`` of this message is ~120 lines (64 squared distances, levels as numbers).
    """
    loop = FeedbackLoop(LoopConfig.make('overconfidence_scale', None, 32, 64))
    steps = []
    for i in range(12):  # errors 4 std: k about 4 / sqrt(3) per vec3, downgraded
        loop.outcome(build_outcome((i + 1) * 10 * MS, 4.0))
    steps.append(loop.assessment(raw_assessment(200 * MS)).calibrated)
    steps.append(loop.assessment(raw_assessment(1700 * MS)).calibrated)
    status, output, errors = _echo(['--every', '--count', '2'], steps)
    assert status == 0, errors
    lines = output.splitlines()
    assert len(lines) == 2, output
    reason = steps[0].adjustment_reason
    level = steps[0].adjusted_overall_level.name
    assert level != 'KNOWN'
    assert lines[0].startswith(f'+0.000 s  KNOWN -> {level}  {reason}  '
                               'k (ratio of stds, 95%): position '), lines
    assert lines[1].startswith(f'+1.500 s  KNOWN -> {level}  '), lines
    assert ', orientation ' in lines[0] and '[' in lines[0]


def test_cli_echo_prints_level_changes_and_a_summary_a_second_by_default():
    """Default: a line per change of the levels (or reason), else one summary line a second.

    40 assessments at ~10 Hz, their level changing every 10: exactly 4 change lines, and
    summaries (the latest assessment and how many came) far fewer than the assessments.
    """
    loop = FeedbackLoop(LoopConfig.make('overconfidence_scale', None, 32, 64))
    honest = loop.assessment(raw_assessment(100 * MS)).calibrated
    for i in range(12):
        loop.outcome(build_outcome(200 * MS + (i + 1) * 10 * MS, 4.0))
    downgraded = loop.assessment(raw_assessment(400 * MS)).calibrated
    assert honest.adjusted_overall_level != downgraded.adjusted_overall_level
    status, output, errors = _echo(['--count', '40'], [honest] * 10 + [downgraded] * 10)
    assert status == 0, errors
    lines = output.splitlines()
    summaries = [line for line in lines if 'assessments in the last' in line]
    changes = [line for line in lines if line not in summaries]
    assert len(changes) == 4, output
    assert [('KNOWN (kept)' in line) for line in changes] == [True, False, True, False], output
    assert len(summaries) < 30, output
    for line in summaries:
        assert int(line.rsplit('(', 1)[1].split()[0]) >= 1, line


def test_echo_names_the_bridge_cause_beside_an_unverified_assessment():
    """An unverified line carries what the bridge of the same namespace said; others do not."""
    from types import SimpleNamespace

    from project_ghost_feedback.ros.conversions import calibrated_to_msg
    from project_ghost_feedback.ros.echo import bridge_cause, EchoLines

    said = SimpleNamespace(name='/robot1/outcome_bridge: outcome_bridge', level=b'\x02',
                           message='references cannot be transformed into the estimate frame')
    cause = bridge_cause(said, '/robot1')
    assert cause == ('outcome_bridge ERROR: references cannot be transformed into the estimate '
                     'frame')
    assert bridge_cause(said, '') is None
    assert bridge_cause(SimpleNamespace(name='/robot1/feedback_node: calibration', level=b'\x00',
                                        message=''), '/robot1') is None
    loop = FeedbackLoop(LoopConfig.make(unverified_after_ns=1_000 * MS))
    claim = calibrated_to_msg(loop.assessment(raw_assessment(0)).calibrated)
    unverified = calibrated_to_msg(loop.assessment(raw_assessment(2_000 * MS)).calibrated)
    lines = EchoLines()
    assert not lines.message(claim, 0.0, cause)[0].endswith(cause)
    (line,) = lines.message(unverified, 0.1, cause)
    assert 'unverified_no_outcomes' in line and line.endswith(f'cause: {cause}')


def test_echo_states_the_false_alarm_budget_and_the_outcome_rate_on_its_summary_lines():
    """The feedback node's /diagnostics values -> 'false-alarm budget 1/24 h, 10.00 outcomes/s'."""
    from types import SimpleNamespace

    from project_ghost_feedback.core import PredictionOutcome
    from project_ghost_feedback.ros.conversions import calibrated_to_msg
    from project_ghost_feedback.ros.echo import EchoLines, feedback_budget

    loop = FeedbackLoop(LoopConfig.make())
    assert loop.budget()['outcome_rate_hz'] == 'not measured yet'
    for i in range(20):
        stamp = (i + 1) * 100 * MS
        loop.outcome(PredictionOutcome(stamp - 1, stamp, (0.0,) * 3, (0.0,) * 3, 1.5, 1.5))
        calibrated = loop.assessment(raw_assessment(stamp)).calibrated
    values = loop.budget()
    assert values['false_alarm_budget_per_day'] == '1' and values['outcome_rate_hz'] == '10.00'
    # Half the budget each: ln(86400 * 10.4 / 0.5) (the rate rounded to 1/8 octave).
    assert float(values['one_step_threshold_nats']) == pytest.approx(14.4, abs=0.05)
    assert values['bias_budget_share'] == '0.5' and values['bias_threshold_margin'] == '1'
    # The bias channel's: the same ln(ARL0) less its margin.
    assert float(values['bias_threshold_nats']) == pytest.approx(13.4, abs=0.05)
    status = SimpleNamespace(name='/robot1/feedback_node: calibration', values=[
        SimpleNamespace(key=k, value=v) for k, v in values.items()])
    budget = feedback_budget(status, '/robot1')
    assert budget == 'false-alarm budget 1/24 h, 10.00 outcomes/s'
    assert feedback_budget(status, '') is None
    lines = EchoLines()
    msg = calibrated_to_msg(calibrated)
    lines.message(msg, 0.0, '', budget=budget)
    (summary,) = lines.message(msg, 1.5, '', budget=budget)
    assert summary.endswith(f'(1 assessments in the last 1.5 s; {budget})')


def test_echo_names_the_bridges_frame_step_beside_a_downgrade():
    """A change to a downgraded level carries the bridge's new last_frame_step, once."""
    from types import SimpleNamespace

    from project_ghost_feedback.ros.conversions import calibrated_to_msg
    from project_ghost_feedback.ros.echo import bridge_frame_step, EchoLines

    text = ('position distance jumped 0.9 -> 49.8 at a /tf change: odom <- map stepped 2.000 m, '
            '0.00 deg at stamp 21000000000 ns')
    said = SimpleNamespace(name='/robot1/outcome_bridge: outcome_bridge', level=b'\x01',
                           message='...', values=[SimpleNamespace(key='frame_steps', value='1'),
                                                  SimpleNamespace(key='last_frame_step',
                                                                  value=text)])
    step = bridge_frame_step(said, '/robot1')
    assert step == (1, text) and bridge_frame_step(said, '/robot2') is None
    loop = FeedbackLoop(LoopConfig.make())
    calm = calibrated_to_msg(loop.assessment(raw_assessment(0)).calibrated)
    for stamp in range(1, 4):
        loop.outcome(build_outcome(stamp * 100 * MS, 50.0))
    down = loop.assessment(raw_assessment(400 * MS)).calibrated
    assert down.was_downgraded
    lines = EchoLines()
    assert 'frames:' not in lines.message(calm, 0.0, '', step)[0]
    (line,) = lines.message(calibrated_to_msg(down), 0.1, '', step)
    assert line.endswith(f'frames: {text}')
    lines.message(calm, 0.2, '', step)
    (again,) = lines.message(calibrated_to_msg(down), 0.3, '', step)
    assert 'frames:' not in again  # the same step is named once


def test_cli_echo_says_it_waits_when_nothing_is_published():
    """Echo of /nothing_here: a line on stderr while waiting; --timeout: exit 1, one line."""
    status, output, errors = _echo(['--topic', '/nothing_here', '--timeout', '6'], [])
    assert status == 1 and output == ''
    lines = errors.strip().splitlines()
    assert lines == [
        'ghost-feedback: echo: nothing received on /nothing_here after 5 s (no publisher); '
        'still waiting, Ctrl-C to stop',
        'ghost-feedback: error: echo: 0 of 1 messages on /nothing_here in 6 s (0 publishers)']


def test_replays_a_foreign_bag_by_type_with_assumed_defaults(tmp_path):
    """A bag not written by the node (no custom_data, remapped topics): found by type, verified.

    It stands for a ``ros2 bag record`` bag: written with rosbags' Writer directly, topics under
    a namespace, one per message type, in receive order.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from project_ghost_feedback.telemetry import to_telemetry
    from project_ghost_feedback.telemetry.msgdefs import full_definition, type_hash

    loop = FeedbackLoop(LoopConfig.make('mahalanobis_downgrade', None, 32, 1024))
    records = []
    for outcomes, raw in scenario():
        for outcome in outcomes:
            loop.outcome(outcome)
            records.append(to_telemetry(outcome))
        records.append(to_telemetry(raw))
        records.append(to_telemetry(loop.assessment(raw).calibrated))
    bag = tmp_path / 'foreign'
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for record in records:
            if record.channel not in connections:
                msgtype = {
                    CHANNEL_PREDICTION_OUTCOME: 'project_ghost_feedback_msgs/msg/PredictionOutcome',
                    CHANNEL_RAW_SELF_ASSESSMENT:
                        'project_ghost_feedback_msgs/msg/BeliefSelfAssessment',
                    CHANNEL_CALIBRATED_SELF_ASSESSMENT:
                        'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment',
                }[record.channel]
                connections[record.channel] = writer.add_connection(
                    '/robot1' + record.channel, msgtype, msgdef=full_definition(msgtype),
                    rihs01=type_hash(msgtype))
            writer.write(connections[record.channel], record.log_time, record.payload)
    report = replay_bag(bag)
    assert report.config_source == 'assumed'
    # The policy the bag's calibrated assessments name, not the default (vec3_scale, issue 28).
    assert report.replay_config.policy == 'mahalanobis_downgrade'
    assert any('does not record the node configuration' in w for w in report.warnings)
    assert report.identical is True and report.compared == len(scenario())


def test_parameter_changes_while_recording_are_noted(tmp_path):
    """A dynamic parameter change is counted in custom_data and recorded as an event."""
    context = new_rclpy_context()
    try:
        node = FeedbackNode(context=context, parameter_overrides=[
            Parameter('telemetry_bag', value=str(tmp_path / 'bag'))])
        try:
            result = node.set_parameters([Parameter('max_history', value=16)])
            assert result[0].successful
        finally:
            node.destroy_node()  # closes the bag
    finally:
        context.try_shutdown()
    metadata = YAML(typ='safe').load((tmp_path / 'bag' / 'metadata.yaml').read_text())
    custom = metadata['rosbag2_bagfile_information']['custom_data']
    assert custom['ghost_feedback.config_changes'] == '1'
    report = replay_bag(tmp_path / 'bag')
    assert report.recorded_config.max_history == 32
    # The change is a recorded event (start + parameters), applied where it happened: no warning.
    assert report.events == 2
    assert not any('changed its parameters' in w for w in report.warnings)


def test_the_node_records_diagnostics_that_an_independent_reader_decodes(tmp_path):
    """record_diagnostics (default on): /diagnostics arrays in the bag, decoded by mcap-ros2."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    bag = tmp_path / 'bag'
    harness = FeedbackNodeHarness(bag, parameters=[('diagnostics_period_s', 0.05)])
    try:
        harness.connect()
        for outcomes, raw in scenario(6):
            for outcome in outcomes:
                harness.send_outcome(outcome_to_msg(outcome))
            harness.send_assessment(raw)
        seen = []
        harness.driver.create_subscription(DiagnosticArray, '/diagnostics', seen.append, 10)
        harness.spin_until(lambda: len(seen) >= 3, 'three diagnostics arrays')
    finally:
        harness.close()
    names = set()
    with open(next(bag.glob('*.mcap')), 'rb') as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, channel, _, message in reader.iter_decoded_messages(topics=['/diagnostics']):
            names.update(status.name for status in message.status)
    assert '/feedback_node: calibration' in names
    assert replay_bag(bag).identical is True  # replay reads past it


def test_the_node_records_the_topics_asked_for_and_evaluate_reads_them(tmp_path):
    """record_topics: the bridge's inputs go into the node's bag as received (issue 21).

    An independent reader (mcap-ros2) decodes them, and ``ghost-feedback evaluate`` finds them.
    """
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    from nav_msgs.msg import Odometry
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from project_ghost_feedback.bridge_inputs import (
        ASSESSMENT,
        bridge_outputs,
        bridge_parameters,
    )

    bag = tmp_path / 'bag'
    topics = ['/odometry/filtered:nav_msgs/msg/Odometry',
              '/ground_truth/odom:nav_msgs/msg/Odometry']
    harness = FeedbackNodeHarness(bag, parameters=[('record_topics', topics)])
    try:
        harness.connect()
        publishers = {name: harness.driver.create_publisher(
            Odometry, name, QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
            for name in ('/odometry/filtered', '/ground_truth/odom')}
        harness.spin_until(lambda: all(p.get_subscription_count() >= 1
                                       for p in publishers.values()), 'the recorder to match')
        for outcomes, raw in scenario(4):
            for outcome in outcomes:
                harness.send_outcome(outcome_to_msg(outcome))
            harness.send_assessment(raw)
        sent = 0
        for index in range(5):
            for name, publisher in publishers.items():
                msg = Odometry()
                msg.header.stamp.sec, msg.header.frame_id = index + 1, 'odom'
                msg.pose.pose.position.x, msg.pose.pose.orientation.w = float(index), 1.0
                msg.pose.covariance = [0.01 if i % 7 == 0 else 0.0 for i in range(36)]
                publisher.publish(msg)
                sent += 1
        harness.spin_until(lambda: harness.node.topic_recorder.recorded >= sent, 'the records')
    finally:
        harness.close()
    positions = {}
    with open(next(bag.glob('*.mcap')), 'rb') as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, channel, _, message in reader.iter_decoded_messages(
                topics=['/odometry/filtered', '/ground_truth/odom']):
            positions.setdefault(channel.topic, []).append(message.pose.pose.position.x)
    assert positions == {name: [0.0, 1.0, 2.0, 3.0, 4.0]
                         for name in ('/odometry/filtered', '/ground_truth/odom')}
    assert replay_bag(bag).identical is True  # replay reads past them
    outputs = bridge_outputs(bag, '/odometry/filtered', '/ground_truth/odom',
                             bridge_parameters())
    assert ASSESSMENT in [kind for kind, _ in outputs]


def test_the_node_publishes_and_records_the_overconfidence_estimate_as_numbers(tmp_path):
    """self_assessment/overconfidence: the core's estimate of the last window, recorded too.

    The scenario's window holds a +inf distance: +inf goes through as such.
    """
    from project_ghost_feedback.core.feedback.overconfidence import estimate_overconfidence
    from project_ghost_feedback_msgs.msg import OverconfidenceEstimate

    bag = tmp_path / 'bag'
    harness = FeedbackNodeHarness(bag, parameters=[('diagnostics_period_s', 0.05)])
    seen = []
    try:
        harness.driver.create_subscription(
            OverconfidenceEstimate, '/self_assessment/overconfidence', seen.append, QOS)
        harness.connect()
        for outcomes, raw in scenario(6):
            for outcome in outcomes:
                harness.send_outcome(outcome_to_msg(outcome))
            harness.send_assessment(raw)
        harness.spin_until(lambda: len(harness.received) == 6, 'six calibrated outputs')
        last = harness.received[-1]
        harness.spin_until(lambda: seen and seen[-1].header.stamp == last.header.stamp,
                           'the estimate of the last output')
    finally:
        harness.close()
    history = calibrated_from_msg(last).calibration_history
    expected = estimate_overconfidence(history)
    msg = seen[-1]
    assert msg.window_outcomes == history.outcomes_considered > 0
    for vec3 in ('position', 'orientation'):
        estimate = expected[vec3]
        assert getattr(msg, f'{vec3}_k_hat') == pytest.approx(estimate.k_hat)
        assert getattr(msg, f'{vec3}_k_low') == pytest.approx(estimate.low)
        assert getattr(msg, f'{vec3}_k_high') == pytest.approx(estimate.high)
    recorded = [m for _, m in _read_topic(bag, '/self_assessment/overconfidence')]
    assert recorded and recorded[-1].position_k_hat == pytest.approx(msg.position_k_hat)
    assert len(recorded) <= 6  # once per period, and only when a new output came


def _read_topic(bag, topic):
    """Yield (log time, decoded message) of ``topic`` with the mcap-ros2 decoder."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(next(bag.glob('*.mcap')), 'rb') as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        for _, _, record, message in reader.iter_decoded_messages(topics=[topic]):
            yield record.log_time, message


@pytest.mark.parametrize('entry, reason', [
    ('odometry/filtered:nav_msgs/msg/Odometry', "is not '/topic:pkg/msg/Type'"),
    ('/odometry/filtered', "is not '/topic:pkg/msg/Type'"),
    ('/odom:nav_msgs/Odometry', 'the type must read pkg/msg/Type'),
    ('/prediction_outcome:project_ghost_feedback_msgs/msg/PredictionOutcome',
     'is recorded already'),
])
def test_a_bad_record_topics_entry_is_refused_with_its_reason(entry, reason):
    """Each malformed entry names itself and what is wrong."""
    from project_ghost_feedback.telemetry.channels import recorded_topic

    with pytest.raises(ValueError, match=re.escape(reason)):
        recorded_topic(entry)


# --- ADR-0026a: a bag recorded before CalibrationHistory interface version 3 ------------------

LEGACY_BAG = (pathlib.Path(__file__).resolve().parents[1] / 'data'
              / 'bag_interface_v2_history_schema_1')
LEGACY_HASHES = {
    'project_ghost_feedback_msgs/msg/CalibrationHistory':
        'RIHS01_ae61737f39d0a83489b029fea0cfd1daee97b60364e802fcf99e8363e97ef1d5',
    'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment':
        'RIHS01_b15d46b43d8a0fa8a51bfcee2429e916e3308935893aa5d08a5d8f6571427d80',
}


def test_legacy_bag_is_recognised_by_its_recorded_definition():
    """The old definition (int64 stamp + has_ flag) is known by its type hash and schema text."""
    from project_ghost_feedback.telemetry import bag_info
    from project_ghost_feedback.telemetry.msgdefs import type_hash

    for msgtype, digest in LEGACY_HASHES.items():
        assert type_hash(msgtype, legacy=True) == digest
        assert type_hash(msgtype) != digest
    info = bag_info(LEGACY_BAG)
    topics = {t.name: t for t in info.topics}
    topic = topics[CHANNEL_CALIBRATED_SELF_ASSESSMENT]
    assert topic.definition == 'legacy'
    assert topic.type_description_hash == LEGACY_HASHES[
        'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment']
    assert topics[CHANNEL_RAW_SELF_ASSESSMENT].definition == 'same'


def test_legacy_bag_is_read_by_independent_readers_as_the_old_layout():
    """Independent readers (rosbags, mcap-ros2-support) decode the old layout from its schema."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with Reader(LEGACY_BAG) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
    assert counts[CHANNEL_CALIBRATED_SELF_ASSESSMENT] == len(scenario()) == 24
    with open(LEGACY_BAG / 'bag_interface_v2_history_schema_1.mcap', 'rb') as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        histories = [value.calibration_history for _, channel, _, value
                     in reader.iter_decoded_messages(topics=[CHANNEL_CALIBRATED_SELF_ASSESSMENT])]
    assert len(histories) == 24
    assert all(h.has_most_recent_observed_stamp and h.schema_version == 2 for h in histories)


def test_legacy_bag_decodes_to_schema_1_and_replays_exactly(tmp_path):
    """read_bag gives schema-1 histories; replay rebuilds schema 1 and matches every output."""
    contracts = [c.contract for c in read_bag(LEGACY_BAG)
                 if c.topic == CHANNEL_CALIBRATED_SELF_ASSESSMENT]
    assert len(contracts) == 24
    assert {c.calibration_history.schema_version for c in contracts} == {1}
    assert [c.calibration_history.outcomes_considered for c in contracts] == list(range(1, 25))
    report = replay_bag(LEGACY_BAG)
    assert report.identical is True, report.to_dict()
    assert report.compared == 24
    # Recorded before vec3_scale became the default (issue 28): its configuration names its
    # policy, which replay uses, not today's default.
    assert report.config_source == 'recorded'
    assert report.recorded_config.policy == report.replay_config.policy == 'overconfidence_scale'
    assert {c.adjustment_policy_id for c in contracts} == {'overconfidence_scale'}
    assert report.to_dict()['recomputed']['final_overconfidence'] is None  # schema 1
    result = subprocess.run(CLI + ['replay', str(LEGACY_BAG), '--json'], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)['identical'] is True


def test_new_bag_carries_schema_2_and_the_overconfidence_estimate(node_bag):
    """A bag recorded now holds schema-2 histories; replay --json reports k_hat per vec3."""
    bag, published, _ = node_bag
    contracts = [c.contract for c in read_bag(bag)
                 if c.topic == CHANNEL_CALIBRATED_SELF_ASSESSMENT]
    assert {c.calibration_history.schema_version for c in contracts} == {2}
    assert contracts == published
    result = subprocess.run(CLI + ['replay', str(bag), '--json'], capture_output=True,
                            text=True, timeout=120)
    data = json.loads(result.stdout)
    estimate = data['recomputed']['final_overconfidence']
    assert set(estimate) == {'position', 'orientation'}
    last = published[-1].calibration_history
    assert estimate['position']['outcomes'] == last.outcomes_considered
    squares = last.position_squared_distances
    if all(math.isfinite(v) for v in squares):
        assert estimate['position']['k_hat'] == pytest.approx(
            math.sqrt(sum(squares) / (3 * len(squares))))
    assert data['recorded']['final_overconfidence'] == estimate
    result = subprocess.run(CLI + ['replay', str(bag)], capture_output=True, text=True,
                            timeout=120)
    text = format_overconfidence(last)
    assert (f'overconfidence (recomputed, last window, k_hat [95%]): position {text["position"]}, '
            f'orientation {text["orientation"]}') in result.stdout
