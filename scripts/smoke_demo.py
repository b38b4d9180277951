# SPDX-License-Identifier: Apache-2.0
"""Smoke run used by `make demo` until the `ghost-feedback demo` command exists.

Starts the feedback node in a child process, publishes a few prediction outcomes and raw
self-assessments on loopback, and echoes each calibrated self-assessment the node publishes.
Run it inside the project environment: scripts/run_in_env.sh python scripts/smoke_demo.py
"""

import math
import shutil
import signal
import subprocess
import sys
import time

from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment,
    CalibratedSelfAssessment,
    NamedLevel,
    PredictionOutcome,
)
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

LEVEL_NAMES = {0: 'KNOWN', 1: 'UNCERTAIN', 2: 'UNKNOWN'}
# (position, orientation) unsquared Mahalanobis distances of the outcomes, one batch per step.
STEPS = [
    [(0.4, 0.3), (0.8, 0.5), (0.2, 0.9)],
    [(2.5, 0.7), (4.0, 1.5), (6.5, 0.4)],
    [(math.inf, 8.0), (7.0, 9.5), (5.5, 12.0)],
]
TIMEOUT_S = 30.0


def _start_node():
    executable = shutil.which('feedback_node')
    command = [executable] if executable else [
        sys.executable, '-m', 'project_ghost_feedback.ros.feedback_node']
    return subprocess.Popen(command)


def _spin_until(executors, condition, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        for executor in executors:
            executor.spin_once(timeout_sec=0.02)
    return True


def main():
    """Publish three steps of evidence and print what the feedback node makes of them."""
    node_process = _start_node()
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('ghost_feedback_smoke_demo', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                     reliability=ReliabilityPolicy.RELIABLE)
    received = []
    exit_code = 0
    try:
        outcome_pub = node.create_publisher(PredictionOutcome, '/prediction_outcome', qos)
        belief_pub = node.create_publisher(BeliefSelfAssessment, '/self_assessment/raw', qos)
        node.create_subscription(
            CalibratedSelfAssessment, '/self_assessment/calibrated', received.append, qos)
        matched = _spin_until([executor], lambda: (
            outcome_pub.get_subscription_count() > 0 and belief_pub.get_subscription_count() > 0
            and node.count_publishers('/self_assessment/calibrated') > 0), TIMEOUT_S)
        if not matched:
            raise RuntimeError('the feedback node did not come up')
        stamp_ns = 1_000_000_000
        for step, distances in enumerate(STEPS):
            for position_d, orientation_d in distances:
                stamp_ns += 100_000_000
                outcome_pub.publish(PredictionOutcome(
                    prediction_stamp_sim_ns=stamp_ns - 50_000_000,
                    observed_stamp_sim_ns=stamp_ns,
                    position_error_m=[0.1, 0.0, 0.0],
                    orientation_error_rad=[0.0, 0.0, 0.01],
                    position_mahalanobis=position_d,
                    orientation_mahalanobis=orientation_d,
                    schema_version=PredictionOutcome.SCHEMA_VERSION))
            stamp_ns += 100_000_000
            belief_pub.publish(BeliefSelfAssessment(
                belief_stamp_sim_ns=stamp_ns,
                overall_level=BeliefSelfAssessment.LEVEL_KNOWN,
                axis_levels=[NamedLevel(name='position_x', level=NamedLevel.LEVEL_KNOWN)],
                block_levels=[NamedLevel(name='pose', level=NamedLevel.LEVEL_KNOWN)],
                schema_version=BeliefSelfAssessment.SCHEMA_VERSION))
            if not _spin_until([executor], lambda: len(received) > step, TIMEOUT_S):
                raise RuntimeError(f'no calibrated self-assessment for step {step + 1}')
            message = received[step]
            history = message.calibration_history
            print(f'step {step + 1}: raw {LEVEL_NAMES[message.raw_assessment.overall_level]}'
                  f' -> adjusted {LEVEL_NAMES[message.adjusted_overall_level]}'
                  f' ({message.adjustment_policy_id}: {message.adjustment_reason});'
                  f' outcomes {history.outcomes_considered}, beyond 3 std'
                  f' {history.count_beyond_3_std + history.count_beyond_5_std},'
                  f' worst position d {history.worst_position_mahalanobis}')
        print(f'smoke demo OK: {len(received)} calibrated self-assessments')
    except RuntimeError as error:
        print(f'smoke demo FAILED: {error}', file=sys.stderr)
        exit_code = 1
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
        node_process.send_signal(signal.SIGINT)
        try:
            node_process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            node_process.kill()
            node_process.wait()
    return exit_code


if __name__ == '__main__':
    sys.exit(main())
