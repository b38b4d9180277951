# SPDX-License-Identifier: Apache-2.0
"""evaluate gives the live bridge's outcomes on the same inputs (real node, loopback DDS).

The simulated localization stack's stream (a real Kalman filter, tuned then mistuned) is
published to the real OutcomeBridge node, one message at a time in a fixed order, with its
default parameters (adaptive decorrelation on: the pacing is compared too). What was published is
recorded with rosbags' Writer in the same order; evaluate's path over that bag must hand over the
same outcomes (stamps, errors, distances: exactly) and the same claims as the node published.
"""

import pathlib

from nav_msgs.msg import Odometry

from project_ghost_feedback.cli import main
from project_ghost_feedback.bridge_inputs import (
    ASSESSMENT,
    bridge_outputs,
    bridge_parameters,
)
from project_ghost_feedback.sim.localization_stack import StackPhase
from project_ghost_feedback.telemetry.replay import verify_bag
from test_evaluate import CONFIG, ESTIMATE, ODOMETRY, ordered, REFERENCE, stack_samples
from test_evaluate import write_rosbags_bag
from test_outcome_bridge_node import harnesses

PHASES = (StackPhase('tuned', 8.0), StackPhase('mistuned', 8.0, truth_accel_factor=6.0))


def odometry_msg(stamp_ns, position, quaternion, covariance=None, frame_id='odom'):
    """Return an Odometry in ``frame_id`` (child base_link) with a pose and its covariance."""
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    msg.header.frame_id = frame_id
    msg.child_frame_id = 'base_link'
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    q.x, q.y, q.z, q.w = (float(v) for v in quaternion)
    if covariance is not None:
        msg.pose.covariance = [float(v) for v in covariance.reshape(36)]
    return msg


def _outcome_key(stamp_ns, position_error, orientation_error, position_d, orientation_d):
    return (stamp_ns, tuple(float(v) for v in position_error),
            tuple(float(v) for v in orientation_error), float(position_d), float(orientation_d))


def offline_outputs(run):
    """Return ``(outcome keys, (stamp, overall level) of each assessment)`` of an offline run."""
    outcomes, levels = [], []
    for kind, contract in run:
        if kind == ASSESSMENT:
            levels.append((contract.belief_stamp_sim_ns, contract.overall_level.value))
        else:
            outcomes.append(_outcome_key(
                contract.observed_stamp_sim_ns, contract.position_error_m,
                contract.orientation_error_rad, contract.position_mahalanobis,
                contract.orientation_mahalanobis))
    return outcomes, levels


def test_evaluate_gives_the_live_bridges_outcomes(tmp_path):
    """Live bridge over DDS vs evaluate's path over the recorded inputs: equal outputs."""
    samples = stack_samples(seed=5, phases=PHASES)
    with harnesses() as make:
        h = make()
        for kind, sample in ordered(samples):
            received = h.node.received[kind]
            if kind == 'reference':
                h.reference_publisher.publish(odometry_msg(
                    sample.stamp_ns, sample.truth_position, sample.truth_quaternion))
            else:
                h.estimate_publisher.publish(odometry_msg(
                    sample.stamp_ns, sample.estimate_position, sample.estimate_quaternion,
                    sample.pose_covariance))
            # One at a time: the bridge takes the inputs in the order they are recorded below.
            h.spin_until(lambda kind=kind, received=received: h.node.received[kind] > received,
                         f'the {kind}')
        estimates = sum(sample.is_estimate for sample in samples)
        h.wait_assessments(estimates)
        h.spin_until(lambda: len(h.outcomes) >= h.node.outcomes_published, 'the outcomes')
        live_outcomes = [_outcome_key(
            msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec,
            msg.position_error_m, msg.orientation_error_rad, msg.position_mahalanobis,
            msg.orientation_mahalanobis) for msg in h.outcomes]
        live_levels = [(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec,
                        msg.overall_level.value) for msg in h.assessments]
        assert sum(h.node.engine.dropped.values()) == 0
        assert h.node.engine.paced_out > 0  # the pacing is part of what is compared
        assert h.node.engine.warming_up == 50  # and its warm-up (the first 5 s held)

    bag = write_rosbags_bag(tmp_path / 'inputs', samples, ODOMETRY)
    offline_outcomes, offline_levels = offline_outputs(
        bridge_outputs(bag, ESTIMATE, REFERENCE, bridge_parameters(CONFIG)))
    assert len(live_outcomes) >= 5
    assert offline_outcomes == live_outcomes
    assert offline_levels == live_levels and len(live_levels) == estimates

    out = pathlib.Path(tmp_path / 'out')
    assert main(['evaluate', str(bag), '--estimate', ESTIMATE, '--reference', REFERENCE,
                 '--output-dir', str(out), '--no-plot']) == 0
    ok, line = verify_bag(str(out / 'telemetry'))
    assert ok, line
