# SPDX-License-Identifier: Apache-2.0
"""evaluate gives the live bridge's outcomes on the same inputs (real node, loopback DDS).

The simulated localization stack's stream (a real Kalman filter, tuned then mistuned) is
published to the real OutcomeBridge node, one message at a time in a fixed order, with its
default parameters (prewhitening on: the whitened distances and the warm-up are compared
too). What was published is
recorded with rosbags' Writer in the same order; evaluate's path over that bag must hand over the
same outcomes (stamps, errors, distances: exactly) and the same claims as the node published.
"""

import pathlib


from project_ghost_feedback.cli import main
from project_ghost_feedback.bridge_inputs import (
    bridge_outputs,
    bridge_parameters,
)
from project_ghost_feedback.sim.localization_stack import StackPhase
from project_ghost_feedback.telemetry.replay import verify_bag
from support.ordinary_bags import CONFIG, ESTIMATE, ODOMETRY, ordered, REFERENCE, stack_samples
from support.ordinary_bags import write_rosbags_bag
from support.bridge_node import harnesses
from support.evaluate_live import (
    outcome_key,
    odometry_msg,
    offline_outputs,
)

PHASES = (StackPhase('tuned', 8.0), StackPhase('mistuned', 8.0, truth_accel_factor=6.0))


def test_evaluate_gives_the_live_bridges_outcomes(tmp_path):
    """Live bridge over DDS vs evaluate's path over the recorded inputs: equal outputs."""
    samples = stack_samples(seed=5, phases=PHASES)
    with harnesses() as make:
        h = make()
        for kind, sample in ordered(samples):
            received = h.node.counts.received[kind]
            if kind == 'reference':
                h.reference_publisher.publish(odometry_msg(
                    sample.stamp_ns, sample.truth_position, sample.truth_quaternion))
            else:
                h.estimate_publisher.publish(odometry_msg(
                    sample.stamp_ns, sample.estimate_position, sample.estimate_quaternion,
                    sample.pose_covariance))
            # One at a time: the bridge takes the inputs in the order they are recorded below.
            h.spin_until(
                lambda kind=kind, received=received: h.node.counts.received[kind] > received,
                f'the {kind}')
        estimates = sum(sample.is_estimate for sample in samples)
        h.wait_assessments(estimates)
        h.spin_until(lambda: len(h.outcomes) >= h.node.counts.outcomes_published, 'the outcomes')
        live_outcomes = [outcome_key(
            msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec,
            msg.position_error_m, msg.orientation_error_rad, msg.position_mahalanobis,
            msg.orientation_mahalanobis) for msg in h.outcomes]
        live_levels = [(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec,
                        msg.overall_level.value) for msg in h.assessments]
        assert sum(h.node.engine.dropped.values()) == 0
        # the warm-up is part of what is compared (whitening.warmup_samples + 1 held)
        assert h.node.engine.paced_out == h.node.engine.warming_up == 31

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
