# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback demo``: the whole closed loop, for real, on one machine.

1. Starts the feedback node as its own process (``python -m
   project_ghost_feedback.ros.feedback_node``) with ``use_sim_time``, the chosen policy and a
   telemetry bag.
2. In this process, a synthetic estimator node plays the seeded scenario (calibrated,
   overconfident, recovery) over DDS on loopback: ``/clock``, PredictionOutcome and
   BeliefSelfAssessment messages, paced at ``--speed`` sim seconds per wall second, and listens to
   ``/self_assessment/calibrated``.
3. Stops the node with SIGINT (the bag is closed), checks the bag replays to the very outputs
   received, and writes ``summary.txt``, ``summary.json`` and ``demo.png`` to the output dir.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from typing import Any

from ..core.feedback import (
    CalibratedSelfAssessment,
    coerce_parameters,
    DEFAULT_POLICY,
    make_policy,
    parse_setting,
    policy_names,
)
from ..ros.dds import ensure_loopback
from ..sim import default_scenario, OutcomeModel
from .analysis import format_summary, summarize
from .connection import wait_for_nodes
from .plot import write_plot
from ..core import NS_PER_S


def _parse_set(policy: str, values: Iterable[str]) -> dict[str, Any]:
    """Return the ``--set key=value`` parameters of ``policy``, typed like their defaults."""
    return coerce_parameters(policy, dict(parse_setting(item) for item in values))


def build_parser() -> argparse.ArgumentParser:
    """Return the demo's argument parser."""
    parser = argparse.ArgumentParser(
        prog='ghost-feedback demo',
        description='Run a synthetic estimator, the feedback node and a telemetry bag on this '
                    'machine (DDS on loopback), then summarize and plot what the node did.')
    parser.add_argument('--duration', type=float, default=45.0,
                        help='scenario length in sim seconds, split in three equal phases '
                             '(default 45)')
    parser.add_argument('--rate', type=float, default=10.0,
                        help='assessments and outcomes per sim second (default 10)')
    parser.add_argument('--speed', type=float, default=5.0,
                        help='sim seconds played per wall second (default 5)')
    parser.add_argument('--seed', type=int, default=7, help='scenario seed (default 7)')
    parser.add_argument('--peak', type=float, default=50.0,
                        help='overconfidence at the end of the overconfident phase (default 50)')
    parser.add_argument('--policy', default=DEFAULT_POLICY, choices=policy_names(),
                        help=f'adjustment policy of the node (default {DEFAULT_POLICY})')
    parser.add_argument('--set', action='append', default=[], metavar='KEY=VALUE',
                        help='a parameter of the policy, e.g. --set min_outcomes=8 (repeatable)')
    parser.add_argument('--max-history', type=int, default=32,
                        help='outcomes per calibration window (default 32)')
    parser.add_argument('--output-dir', default='out/demo',
                        help='where summary.txt, summary.json, demo.png and bag/ go '
                             '(default out/demo)')
    parser.add_argument('--quick', action='store_true',
                        help='short run for tests: --duration 15 --speed 15')
    return parser


def _node_command(args: argparse.Namespace, policy_parameters: dict[str, Any],
                  bag_dir: pathlib.Path) -> list[str]:
    command = [
        sys.executable, '-m', 'project_ghost_feedback.ros.feedback_node', '--ros-args',
        '-r', '__node:=ghost_feedback_demo_node',
        '-p', 'use_sim_time:=true',
        '-p', f'policy:={args.policy}',
        '-p', f'max_history:={args.max_history}',
        '-p', f'telemetry_bag:={bag_dir}',
        '--log-level', 'warn',
    ]
    for key, value in policy_parameters.items():
        command += ['-p', f'{args.policy}.{key}:={json.dumps(value)}']
    return command


class _Estimator:
    """The synthetic estimator's ROS side: publishers, the output subscription, a context."""

    def __init__(self, calibrated_by_stamp: dict[int, CalibratedSelfAssessment]) -> None:
        import rclpy
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from rosgraph_msgs.msg import Clock
        from project_ghost_feedback_msgs.msg import (
            BeliefSelfAssessment, CalibratedSelfAssessment, PredictionOutcome)
        from ..ros.conversions import calibrated_from_msg

        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('synthetic_estimator', context=self.context)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.clock = self.node.create_publisher(Clock, '/clock', 10)
        self.outcomes = self.node.create_publisher(PredictionOutcome, '/prediction_outcome', qos)
        self.assessments = self.node.create_publisher(
            BeliefSelfAssessment, '/self_assessment/raw', qos)

        def on_calibrated(msg: Any) -> None:
            calibrated = calibrated_from_msg(msg)
            calibrated_by_stamp[calibrated.raw_assessment.belief_stamp_sim_ns] = calibrated

        self.subscription = self.node.create_subscription(
            CalibratedSelfAssessment, '/self_assessment/calibrated', on_calibrated, qos)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.executor.spin_once(timeout_sec=min(remaining, 0.01))

    def connected(self) -> bool:
        return (self.outcomes.get_subscription_count() > 0
                and self.assessments.get_subscription_count() > 0
                and self.subscription.get_publisher_count() > 0)

    def publish_clock(self, stamp_ns: int) -> None:
        from rosgraph_msgs.msg import Clock
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = divmod(stamp_ns, NS_PER_S)
        self.clock.publish(msg)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


def _stop_node(process: subprocess.Popen[Any], timeout: float = 15.0) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def _replay_check(bag_dir: str | os.PathLike[str]) -> tuple[bool, str]:
    """Return (ok, text) from ``ghost-feedback replay`` of the bag the node wrote."""
    try:
        from ..telemetry.replay import verify_bag
    except ImportError as error:  # telemetry not installed: say so, do not pretend
        return False, f'replay unavailable: {error}'
    return verify_bag(bag_dir)


def run(args: argparse.Namespace) -> int:
    """Run the demo with parsed ``args``; return the exit code."""
    ensure_loopback()
    if args.quick:
        args.duration, args.speed = 15.0, 15.0
    policy_parameters = _parse_set(args.policy, args.set)
    policy = make_policy(args.policy, policy_parameters)  # validate before starting anything
    scenario = default_scenario(args.duration, assessment_rate_hz=args.rate,
                                outcome_rate_hz=args.rate, peak_overconfidence=args.peak,
                                model=OutcomeModel())
    steps = list(scenario.steps(args.seed))
    output = pathlib.Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    bag_dir = output / 'bag'
    if bag_dir.exists():
        import shutil
        shutil.rmtree(bag_dir)

    print(f'[demo] scenario: {len(steps)} assessments, '
          f'{sum(len(s.outcomes) for s in steps)} outcomes over {scenario.duration_s:g} sim s '
          f'(seed {args.seed}); phases: '
          + ', '.join(f'{s.phase.name} {s.phase.duration_s:g} s' for s in scenario.spans))
    print(f'[demo] policy {policy.policy_id} {policy}; ROS_DOMAIN_ID='
          f'{os.environ.get("ROS_DOMAIN_ID", "0")}, discovery '
          f'{os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"]}')
    calibrated_by_stamp: dict[int, CalibratedSelfAssessment] = {}
    node = subprocess.Popen(_node_command(args, policy_parameters, bag_dir))
    estimator = _Estimator(calibrated_by_stamp)
    try:
        if not wait_for_nodes(estimator, {'feedback node': node}):
            return 1
        print('[demo] feedback node connected; playing the scenario')
        wall_start = time.monotonic()
        sim_start = steps[0].assessment.belief_stamp_sim_ns if steps else 0
        last_phase = None
        from ..ros.conversions import belief_to_msg, outcome_to_msg
        for index, step in enumerate(steps):
            stamp = step.assessment.belief_stamp_sim_ns
            phase = scenario.phase_at(stamp).name
            if phase != last_phase:
                print(f'[demo] t={stamp / NS_PER_S:6.1f} s  phase {phase} '
                      f'(overconfidence {scenario.overconfidence_at(stamp):g}x)')
                last_phase = phase
            estimator.publish_clock(stamp)
            for outcome in step.outcomes:
                estimator.outcomes.publish(outcome_to_msg(outcome))
            estimator.assessments.publish(belief_to_msg(step.assessment))
            due = wall_start + (stamp - sim_start) / NS_PER_S / args.speed
            estimator.spin_for(max(0.0, due - time.monotonic()))
            if (index + 1) % max(1, len(steps) // 10) == 0:
                latest = (calibrated_by_stamp[max(calibrated_by_stamp)] if calibrated_by_stamp
                          else None)
                level = latest.adjusted_overall_level.name if latest else '-'
                print(f'[demo] {100 * (index + 1) // len(steps):3d}%  t={stamp / NS_PER_S:6.1f} s  '
                      f'received {len(calibrated_by_stamp)}/{index + 1}  calibrated {level}')
        estimator.publish_clock(scenario.end_stamp_sim_ns)
        deadline = time.monotonic() + 20.0
        while len(calibrated_by_stamp) < len(steps) and time.monotonic() < deadline:
            estimator.spin_for(0.05)
    finally:
        estimator.close()
        code = _stop_node(node)
    if code != 0:
        print(f'[demo] feedback node exited with code {code}', file=sys.stderr)

    summary = summarize(scenario, steps, calibrated_by_stamp, args.max_history)
    replay_ok, replay_text = _replay_check(bag_dir)
    summary.update({
        'policy': policy.policy_id, 'policy_parameters': policy_parameters,
        'seed': args.seed, 'duration_s': args.duration, 'rate_hz': args.rate,
        'max_history': args.max_history, 'bag': str(bag_dir),
        'replay_matches': replay_ok, 'replay_report': replay_text, 'node_exit_code': code,
    })
    text = format_summary(summary, policy.policy_id)
    (output / 'summary.txt').write_text(text + '\n')
    (output / 'summary.json').write_text(json.dumps(summary, indent=2, sort_keys=True) + '\n')
    write_plot(output / 'demo.png', scenario, steps, calibrated_by_stamp,
               f'ghost-feedback demo: {policy.policy_id}, seed {args.seed}')
    print()
    print(text)
    print(f'[demo] replay of {bag_dir}: {"matches" if replay_ok else "MISMATCH"} '
          f'({replay_text})')
    print(f'[demo] wrote {output / "summary.txt"}, {output / "summary.json"}, '
          f'{output / "demo.png"}, {bag_dir}/')
    ok = code == 0 and replay_ok and summary['missing_outputs'] == 0
    return 0 if ok else 1


def check_positive(args: argparse.Namespace, *names: str) -> None:
    """Raise ValueError (one line naming the option) unless each option is finite and > 0."""
    for name in names:
        value = getattr(args, name.lstrip('-').replace('-', '_'))
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f'{name} must be a number > 0, got {value:g}')


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``ghost-feedback demo``."""
    args = build_parser().parse_args(argv)
    from ..safe_io import check_output_dir, print_error

    try:  # before the run starts, not after it
        check_positive(args, '--duration', '--rate', '--speed', '--peak', '--max-history')
        check_output_dir(args.output_dir, '--output-dir')
    except ValueError as error:
        print_error('ghost-feedback demo', error)
        return 2
    try:
        return run(args)
    except (TypeError, ValueError) as error:
        print(f'ghost-feedback demo: {error}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('ghost-feedback demo: interrupted', file=sys.stderr)
        return 130
