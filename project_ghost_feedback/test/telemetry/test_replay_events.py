# SPDX-License-Identifier: Apache-2.0
"""Replay reproduces the real node's run exactly, whatever reset or changed in between.

The real FeedbackNode, over DDS, records its telemetry bag while it is reset through ``~/reset``,
sees /clock go back (a sim reset), sees a producer restart (stamps go back), has its parameters
changed (policy, policy parameters, max_history) and refuses future-stamped inputs; one run mixes
all of them. ``replay_bag`` of each bag must recompute every published calibrated assessment
identically (0 differences), re-derive the same input resets, and say which events it applied.
"""

from project_ghost_feedback.ros.conversions import (
    belief_to_msg,
    calibrated_from_msg,
    outcome_to_msg,
)
from project_ghost_feedback.telemetry import read_bag, replay_bag
from project_ghost_feedback.telemetry.replay import NO_EVENTS_WARNING
from support.contracts import build_outcome
import pytest
from rclpy.parameter import Parameter
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from support.feedback_node import FeedbackNodeHarness, raw_assessment

S = 1_000_000_000
MS = 1_000_000
OVERCONFIDENT = 4.0  # distances of an estimator 4x overconfident (3 dof, so d ~ 4 * 1.6)


def _cycles(harness, start_s, count, distance=OVERCONFIDENT * 1.6, period_ms=100):
    """Send ``count`` (outcome, assessment) cycles from ``start_s``; return the last stamp."""
    stamp = start_s * S
    for i in range(count):
        stamp = start_s * S + i * period_ms * MS
        d = distance + (i % 3) * 0.3
        harness.send_outcome(outcome_to_msg(build_outcome(stamp - MS, d, d / 2)))
        harness.send_assessment(raw_assessment(stamp))
    return stamp


def _set(harness, **values):
    results = harness.node.set_parameters(
        [Parameter(name, value=value) for name, value in values.items()])
    assert all(r.successful for r in results), [r.reason for r in results]


def _service_reset(harness):
    _cycles(harness, 10, 40)
    harness.call_reset()
    _cycles(harness, 20, 40)
    return {'service': 1}


def _sim_reset(harness):
    harness.set_clock(30 * S)
    _cycles(harness, 25, 40)
    harness.set_clock(1 * S)  # the simulator restarted: /clock back to 1 s
    _cycles(harness, 1, 40)
    return {'clock_jump': 1}


def _restarted_producer(harness):
    _cycles(harness, 1000, 40)
    _cycles(harness, 3, 40)  # stamps back by ~1000 s: a restarted estimator
    return {'input_stamp_jump': 1}


def _parameter_changes(harness):
    _cycles(harness, 10, 30)
    _set(harness, policy='calibrated_exceedance')
    _cycles(harness, 20, 30)
    _set(harness, max_history=8)
    _cycles(harness, 30, 30)
    _set(harness, **{'mahalanobis_downgrade.downgrade_threshold': 3, 'policy':
                     'mahalanobis_downgrade'})
    _cycles(harness, 40, 30)
    return {}


def _future_stamps(harness):
    harness.set_clock(10 * S)
    _cycles(harness, 5, 20)
    harness.send_refused(outcome_to_msg(build_outcome(500 * S, 1.0, 0.5)), 'outcome')
    harness.send_refused(belief_to_msg(raw_assessment(600 * S)), 'assessment')
    _cycles(harness, 8, 20)
    assert harness.node.health.rejected['outcome:future_stamp'] == 1
    assert harness.node.health.rejected['assessment:future_stamp'] == 1
    return {}


def _everything(harness):
    harness.set_clock(50 * S)
    _cycles(harness, 20, 20)
    harness.send_refused(outcome_to_msg(build_outcome(900 * S, 1.0, 0.5)), 'outcome')
    harness.call_reset()
    _cycles(harness, 30, 20)
    _set(harness, policy='calibrated_exceedance', max_history=16)
    _cycles(harness, 40, 20)
    harness.set_clock(2 * S)  # sim reset
    _cycles(harness, 1, 20)
    harness.set_clock(100 * S)
    _cycles(harness, 60, 20)
    _cycles(harness, 5, 20)  # a restarted producer, the clock still at 100 s
    _set(harness, policy='overconfidence_scale', max_history=32)
    _cycles(harness, 10, 20, distance=0.8)
    return {'service': 1, 'clock_jump': 1, 'input_stamp_jump': 1}


SCENARIOS = {
    'service_reset': (_service_reset, False),
    'sim_reset': (_sim_reset, True),
    'restarted_producer': (_restarted_producer, False),
    'parameter_changes': (_parameter_changes, False),
    'future_stamps': (_future_stamps, True),
    'everything': (_everything, True),
}


def _run(tmp_path, name):
    scenario, sim_time = SCENARIOS[name]
    bag = tmp_path / name
    harness = FeedbackNodeHarness(bag, sim_time=sim_time)
    try:
        if sim_time:
            harness.set_clock(1 * S)
        harness.connect()
        resets = scenario(harness)
        assert dict(harness.node.counts.resets) == resets
        published = [calibrated_from_msg(m) for m in harness.received]
    finally:
        harness.close()
    return bag, published, resets


@pytest.mark.parametrize('name', sorted(SCENARIOS))
def test_replay_of_the_node_bag_has_zero_differences(tmp_path, name):
    bag, published, resets = _run(tmp_path, name)
    report = replay_bag(bag)
    assert report.mode == 'verify'
    assert report.assessments == report.compared == len(published)
    assert report.differences == 0 and report.identical is True, report.first_difference
    assert report.resets == resets
    assert not [w for w in report.warnings if 'differ' in w], report.warnings
    recorded = [item.contract for item in read_bag(bag)
                if item.topic == '/self_assessment/calibrated']
    assert recorded == published


def _without_events(bag, target):
    """Copy ``bag`` without its /feedback_events topic or custom data (a ros2 bag record)."""
    with Reader(bag) as reader, Writer(target, version=9,
                                       storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for connection in reader.connections:
            if connection.topic == '/feedback_events':
                continue
            connections[connection.id] = writer.add_connection(
                connection.topic, connection.msgtype, msgdef=connection.msgdef.data,
                rihs01=connection.digest, serialization_format='cdr',
                offered_qos_profiles=connection.ext.offered_qos_profiles)
        for connection, timestamp, data in reader.messages():
            if connection.id in connections:
                writer.write(connections[connection.id], timestamp, data)
    return target


def test_a_recorded_bag_without_the_event_topic_replays_with_a_warning(tmp_path):
    """A `ros2 bag record` of the node's topics without /feedback_events: resets unknown."""
    bag, _, _ = _run(tmp_path, 'service_reset')
    report = replay_bag(_without_events(bag, tmp_path / 'recorded'))
    assert NO_EVENTS_WARNING in report.warnings
    assert report.identical is False  # the reset cannot be known, so the run differs
    assert report.first_difference.field.startswith('calibration_history')


def test_outcomes_considered_restart_after_the_reset(tmp_path):
    """The issue's own case: after ~/reset the window starts again from one outcome."""
    _, published, _ = _run(tmp_path, 'service_reset')
    assert published[39].calibration_history.outcomes_considered == 32
    assert published[40].calibration_history.outcomes_considered == 1
