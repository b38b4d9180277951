# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback demo`` (default): simulator -> outcome bridge -> feedback node -> bag -> plot.

1. Starts the feedback node (telemetry bag, ``use_sim_time``) and the outcome bridge (inputs
   remapped to ``/odometry/filtered`` and ``/ground_truth/odom``, calibrated estimate on
   ``/odometry/calibrated``) as their own processes.
2. In this process, plays the simulated robot + Kalman filter (``sim/localization_stack.py``:
   tuned -> mistuned -> recovered) over DDS on loopback: ``/clock``, the estimate and the
   ground truth as nav_msgs/Odometry, at ``--speed`` sim seconds per wall second; listens to
   ``/prediction_outcome``, ``/self_assessment/calibrated`` and ``/odometry/calibrated``. With
   tf2 (after setup; ``--no-tf`` turns it off) its frames go through tf as a real stack's do:
   ground truth in ``map``, estimate in ``odom``, a moving ``map -> odom`` on /tf
   (sim/odom_drift.py), which the bridge looks up (``use_tf``).
3. Stops both nodes with SIGINT, checks the bag replays to the outputs, and writes
   ``summary.txt``, ``summary.json`` and ``stack_demo.png`` (distances, levels, and the NEES of
   the raw and the calibrated estimate in the mistuned phase: demo/nees.py).

``ghost-feedback demo --scenario synthetic`` runs the earlier synthetic-outcome demo instead.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TYPE_CHECKING

from ..bridge.calibrated_estimate import CONFIDENCE_RANGE, DEFAULT_CONFIDENCE
from ..core.feedback import DEFAULT_POLICY
from ..plots import distance_panel, figure, level_panel, nees_panel, save, shade_phases
from ..core import NS_PER_S
from ..ros.dds import ensure_loopback
from .connection import wait_for_nodes
from .nees import format_nees, nees_series, summarize_nees
from .run import _replay_check, _stop_node, check_positive

if TYPE_CHECKING:
    from ..ros.sim_stack_node import StackFrames
    from ..sim.localization_stack import StackPhase

_Spans = Sequence[tuple[str, int, int]]
_Calibrated = tuple[int, int, str, str]
"""A calibrated output as the player keeps it: raw and adjusted level values, reason, policy."""

ESTIMATE_TOPIC = '/odometry/filtered'
REFERENCE_TOPIC = '/ground_truth/odom'
CALIBRATED_TOPIC = '/odometry/calibrated'
FEEDBACK_NODE = 'ghost_feedback_demo_node'
MAX_IN_FLIGHT = 50  # estimates published whose calibrated output has not come back (5 sim s)
STALL_S = 60.0  # playback held this long with no output: a node hangs, the demo stops (exit 1)
FEEDBACK_STATUS = f'/{FEEDBACK_NODE}: calibration'
BRIDGE_NODE = 'outcome_bridge'
BRIDGE_STATUS = f'/{BRIDGE_NODE}: outcome_bridge'


def demo_phases() -> tuple[StackPhase, ...]:
    """Return the simulator's default phases with a mistuned phase of 240 s instead of 120 s.

    Outcomes come about 4 s apart while mistuned (their errors decorrelate slowly), so the node's
    window of 32 outcomes holds mistuned outcomes only after about 130 s: the calibrated
    estimate's NEES is judged after that (demo/nees.py).
    """
    from ..sim.localization_stack import DEFAULT_PHASES, StackPhase
    return tuple(StackPhase(p.name, 240.0, p.truth_accel_factor, p.filter_accel_factor)
                 if p.name == 'mistuned' else p for p in DEFAULT_PHASES)


def build_parser() -> argparse.ArgumentParser:
    """Return the stack demo's argument parser."""
    parser = argparse.ArgumentParser(
        prog='ghost-feedback demo',
        description='Play a simulated robot and its Kalman filter over DDS through the outcome '
                    'bridge and the feedback node (telemetry bag), then summarize and plot.')
    parser.add_argument('--scenario', choices=('stack', 'synthetic'), default='stack',
                        help='stack (default): simulator + bridge; synthetic: the synthetic '
                             'outcome demo (its own options follow)')
    parser.add_argument('--speed', type=float, default=15.0,
                        help='sim seconds per wall second, at most (default 15)')
    parser.add_argument('--policy', default=DEFAULT_POLICY,
                        help=f"the feedback node's policy (default {DEFAULT_POLICY})")
    parser.add_argument('--scale', type=float, default=1.0,
                        help='multiply the phase durations (default 1: 300 + 240 + 180 s)')
    parser.add_argument('--seed', type=int, default=1, help='simulation seed (default 1)')
    parser.add_argument('--output-dir', default='out/demo',
                        help='where summary.txt, summary.json, stack_demo.png, bag/ go')
    parser.add_argument('--quick', action='store_true', help='short run: --scale 0.5 --speed 30')
    parser.add_argument('--no-tf', dest='tf', action='store_false',
                        help='publish truth and estimate both in odom, no /tf (default: truth '
                             'in map, estimate in odom, a moving map -> odom on /tf when tf2 is '
                             'available)')
    parser.add_argument('--calibrated-confidence', type=float, default=DEFAULT_CONFIDENCE,
                        metavar='C',
                        help="the bridge's calibrated_estimate.confidence: one-sided confidence of "
                             f'the covariance factor (default {DEFAULT_CONFIDENCE}; 0.5: the '
                             'median-unbiased factor; docs/bridge.md)')
    return parser


def _process(module: str, *ros_args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, '-m', module, '--ros-args', *ros_args,
                             '--log-level', 'warn'])


class _Player:
    """The simulator's ROS side plus the listeners, in a private context."""

    def __init__(self, frames: StackFrames) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import Odometry
        from project_ghost_feedback_msgs.msg import CalibratedSelfAssessment, PredictionOutcome
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

        from ..ros.sim_stack_node import StackPublishers

        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('sim_stack', context=self.context)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.stack = StackPublishers(self.node, frames, ESTIMATE_TOPIC, REFERENCE_TOPIC)
        self.outcomes: dict[int, tuple[float, float]] = {}
        self.calibrated: dict[int, _Calibrated] = {}
        self.samples: dict[int, Any] = {}  # the estimates published, by stamp (for the NEES)
        self.calibrated_covariances: dict[int, tuple[float, ...]] = {}
        self._subscriptions = [
            self.node.create_subscription(PredictionOutcome, '/prediction_outcome',
                                          self._on_outcome, qos),
            self.node.create_subscription(CalibratedSelfAssessment,
                                          '/self_assessment/calibrated', self._on_calibrated,
                                          qos),
            self.node.create_subscription(Odometry, CALIBRATED_TOPIC,
                                          self._on_calibrated_estimate, qos)]
        self.feedback_status: dict[str, str] = {}
        self.bridge_status: dict[str, str] = {}
        self._diagnostics = self.node.create_subscription(
            DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def _on_outcome(self, msg: Any) -> None:
        stamp = msg.header.stamp.sec * NS_PER_S + msg.header.stamp.nanosec
        self.outcomes[stamp] = (msg.position_mahalanobis, msg.orientation_mahalanobis)

    def _on_calibrated(self, msg: Any) -> None:
        stamp = msg.header.stamp.sec * NS_PER_S + msg.header.stamp.nanosec
        self.calibrated[stamp] = (msg.raw_assessment.overall_level.value,
                                  msg.adjusted_overall_level.value, msg.adjustment_reason,
                                  msg.adjustment_policy_id)

    def _on_calibrated_estimate(self, msg: Any) -> None:
        stamp = msg.header.stamp.sec * NS_PER_S + msg.header.stamp.nanosec
        self.calibrated_covariances[stamp] = tuple(msg.pose.covariance)

    def _on_diagnostics(self, msg: Any) -> None:
        for status in msg.status:
            if status.name == FEEDBACK_STATUS:
                self.feedback_status = {kv.key: kv.value for kv in status.values}
            elif status.name == BRIDGE_STATUS:
                self.bridge_status = {kv.key: kv.value for kv in status.values}

    def connected(self) -> bool:
        """Return True once every link of the chain is matched, from both ends.

        The player sees its own links matched from its side; the two nodes' /diagnostics say how
        many publishers their inputs have matched, which the player cannot see: the bridge's
        best-effort inputs drop what arrives before they matched the player (under load, one
        side of a link can match seconds before the other), the feedback node's the bridge's.
        """
        feedback = ('outcome_publishers', 'assessment_publishers')
        bridge = ('estimate_publishers', 'reference_publishers')
        stack = self.stack
        return (stack.estimate.get_subscription_count() > 0
                and stack.truth.get_subscription_count() > 0
                and (stack.tf is None or stack.tf.get_subscription_count() > 0)
                and all(s.get_publisher_count() > 0 for s in self._subscriptions)
                and all(int(self.feedback_status.get(key, 0)) > 0 for key in feedback)
                and all(int(self.bridge_status.get(key, 0)) > 0 for key in bridge))

    def spin_for(self, seconds: float) -> None:
        """Handle what arrived for ``seconds``; at least one pass, even when behind schedule."""
        deadline = time.monotonic() + seconds
        self.executor.spin_once(timeout_sec=0.0)
        while (remaining := deadline - time.monotonic()) > 0:
            self.executor.spin_once(timeout_sec=min(remaining, 0.005))

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


def summarize(spans: _Spans, calibrated: Mapping[int, Sequence[Any]],
              outcomes: Iterable[int] = ()) -> dict[str, Any]:
    """Return per-phase downgrade counts, detection delay and time back to raw (sim s).

    Per phase also the assessments published UNKNOWN; with ``outcomes`` (stamps), the number of
    mistuned-phase outcomes observed up to the first downgrade (``detection_outcomes``). And the
    policy ids the calibrated outputs carried (``policies``).
    """
    summary: dict[str, Any] = {
        'phases': {}, 'detection_delay_s': None, 'back_to_raw_s': None,
        'detection_outcomes': None,
        'policies': sorted({value[3] for value in calibrated.values() if len(value) > 3})}
    starts = {name: start for name, start, _ in spans}
    for name, start, end in spans:
        stamps = [s for s in sorted(calibrated) if start <= s < end]
        downgraded = [s for s in stamps if calibrated[s][1] < calibrated[s][0]]
        summary['phases'][name] = {'assessments': len(stamps), 'downgraded': len(downgraded),
                                   'unknown': sum(calibrated[s][1] == 0 for s in stamps)}
        if name == 'mistuned' and downgraded:
            summary['detection_delay_s'] = (downgraded[0] - start) / NS_PER_S
            summary['detection_outcomes'] = sum(start <= o <= downgraded[0] for o in outcomes)
        if name == 'recovered':
            back = [s for s in stamps if calibrated[s][1] >= calibrated[s][0]]
            if back:
                summary['back_to_raw_s'] = (back[0] - starts['recovered']) / NS_PER_S
    return summary


def format_summary(summary: Mapping[str, Any]) -> str:
    """Return the summary as a markdown table plus two lines."""
    lines = ['| phase | assessments | downgraded | of which UNKNOWN |', '|---|---|---|---|']
    for name, row in summary['phases'].items():
        lines.append(f'| {name} | {row["assessments"]} | {row["downgraded"]} '
                     f'| {row.get("unknown", "-")} |')
    delay, back = summary['detection_delay_s'], summary['back_to_raw_s']
    lines.append('')
    outcomes = summary.get('detection_outcomes')
    lines.append('detection delay after mistuning: '
                 + ('never' if delay is None else f'{delay:.1f} s')
                 + ('' if outcomes is None else f' ({outcomes} mistuned outcomes)'))
    lines.append('back to the raw level after recovery: '
                 + ('never' if back is None else f'{back:.1f} s'))
    return '\n'.join(lines)


def write_plot(path: str | os.PathLike[str], spans: _Spans,
               outcomes: Mapping[int, tuple[float, float]], calibrated: Mapping[int, Sequence[Any]],
               title: str, summary: Mapping[str, Any] | None = None,
               nees: Sequence[tuple[int, float, float]] = ()) -> None:
    """Write distances, raw vs calibrated levels and NEES over sim time to ``path``.

    The panels are :mod:`..plots`'. With ``summary`` (:func:`summarize`), the detection delay
    after mistuning and the time back to the raw level after recovery are marked on the level
    panel, and the settled NEES means (``summary['nees']``) on the NEES panel; ``nees`` is
    :func:`.nees.nees_series`.
    """
    summary = summary or {}
    result, (top, bottom, consistency) = figure(3, (3, 2, 2), 9.5)
    shade_phases((top, bottom, consistency),
                 [(name, start / NS_PER_S, end / NS_PER_S) for name, start, end in spans])
    distance_panel(top, [(s / NS_PER_S, *outcomes[s]) for s in sorted(outcomes)])
    level_panel(bottom, [(s / NS_PER_S, *calibrated[s][:2]) for s in sorted(calibrated)])
    starts = {name: start for name, start, _ in spans}
    marks = (('detection_delay_s', 'mistuned', 'detected after {:.1f} s', '#c0392b'),
             ('back_to_raw_s', 'recovered', 'back to raw after {:.1f} s', '#1e8449'))
    for key, phase, label, color in marks:
        value = summary.get(key)
        if value is None or phase not in starts:
            continue
        at = starts[phase] / NS_PER_S + value
        bottom.axvline(at, color=color, linewidth=1.2, linestyle='--')
        bottom.annotate(label.format(value), (at, 1.5), xytext=(4, 0), textcoords='offset points',
                        color=color, fontsize=8)
    confidence = summary.get('calibrated_confidence', DEFAULT_CONFIDENCE)
    if nees:
        nees_panel(consistency, [(stamp / NS_PER_S, raw, value) for stamp, raw, value in nees],
                   confidence)
        _settled_nees(consistency, summary.get('nees'), nees[-1][0] / NS_PER_S)
    else:
        consistency.text(0.5, 0.5, 'no calibrated estimate at an outcome stamp', ha='center',
                         transform=consistency.transAxes, fontsize=9)
    consistency.set_xlabel('sim time (s)')
    result.suptitle(title, fontsize=10, parse_math=False)
    result.tight_layout()
    save(result, path)


def _settled_nees(axis: Any, settled: Mapping[str, Any] | None, end: float) -> None:
    """Mark the settled NEES means against the 95% band of such a mean (``summary['nees']``)."""
    if settled is None:
        return
    start = settled['from_s']
    low, high = settled['band']
    axis.fill_between([start, end], low, high, color='#999999', alpha=0.3,
                      label=f"95% band of a mean of {settled['outcomes']}")
    axis.hlines([settled['raw_mean']], start, end, color='#c0392b', linewidth=1.5)
    axis.hlines([settled['calibrated_mean']], start, end, color='#1f77b4', linewidth=1.5)
    axis.annotate(f"mean raw {settled['raw_mean']:.1f}, calibrated "
                  f"{settled['calibrated_mean']:.1f}", (start, settled['raw_mean']),
                  xytext=(0, 4), textcoords='offset points', fontsize=8)
    axis.legend(loc='upper left', fontsize=7)


def _wait_for_chain(player: _Player, estimates: int,
                    processes: Iterable[subprocess.Popen[Any]]) -> str | None:
    """Hold the playback while more than MAX_IN_FLIGHT estimates await their output.

    ``--speed`` is then a maximum: on a loaded machine the demo slows down instead of running
    ahead of the bridge and the node until their queues overflow, so its figures do not depend
    on the machine. Returns None to go on, or why the demo must stop: a node exited, or no
    output came for STALL_S (a node that hangs without exiting).
    """
    seen, since = len(player.calibrated), time.monotonic()
    while estimates - len(player.calibrated) > MAX_IN_FLIGHT:
        if any(process.poll() is not None for process in processes):
            return 'a node exited while playing'
        if len(player.calibrated) != seen:
            seen, since = len(player.calibrated), time.monotonic()
        elif time.monotonic() - since > STALL_S:
            return (f'no calibrated output for {STALL_S:g} s with '
                    f'{estimates - seen} estimates awaiting it')
        player.spin_for(0.01)
    return None


class _Progress:
    """Print sim time, phase and an estimate of the time left, every PROGRESS_S and per phase."""

    def __init__(self, spans: _Spans, every_s: float = 5.0) -> None:
        self.spans = spans
        self.end_ns = spans[-1][2] if spans else 0
        self.every_s = every_s
        self.start = time.monotonic()
        self.next = self.start + every_s
        self.phase: str | None = None

    def phase_at(self, stamp_ns: int) -> str:
        return next((name for name, start, end in self.spans if start <= stamp_ns < end),
                    self.spans[-1][0] if self.spans else '-')

    def note(self, stamp_ns: int, calibrated: int) -> None:
        phase = self.phase_at(stamp_ns)
        now = time.monotonic()
        if phase == self.phase and now < self.next:
            return
        self.phase, self.next = phase, now + self.every_s
        done = stamp_ns / self.end_ns if self.end_ns else 1.0
        left = (now - self.start) * (1 - done) / done if done > 0.02 else None
        print(f'[demo] t={stamp_ns / NS_PER_S:6.1f} of {self.end_ns / NS_PER_S:.0f} s sim, '
              f'phase {phase}, {calibrated} calibrated'
              + ('' if left is None else f', about {left:.0f} s left'), flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the stack demo with parsed ``args``; return the exit code."""
    from ..ros.sim_stack_node import scaled_phases, StackFrames
    from ..sim.localization_stack import LocalizationStack

    ensure_loopback()
    if args.quick:
        args.scale, args.speed = 0.5, 30.0
    output = pathlib.Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    bag_dir = output / 'bag'
    if bag_dir.exists():
        shutil.rmtree(bag_dir)
    stack = LocalizationStack(phases=scaled_phases(args.scale, demo_phases()), seed=args.seed)
    spans = stack.phase_spans_ns()
    frames = StackFrames()
    if args.tf:
        from ..bridge.tf2_transforms import tf2_missing
        from ..sim.odom_drift import OdomDrift

        missing = tf2_missing()
        if missing is None:
            frames = StackFrames(OdomDrift(seed=args.seed))
            print('[demo] frames through tf: ground truth in map, estimate in odom, map -> odom '
                  'moving on /tf (corrected every 2 s)')
        else:
            print(f'[demo] frames without tf (both in odom): {missing}')
    print('[demo] simulator stack: ' + ', '.join(
        f'{name} {(end - start) / NS_PER_S:g} s' for name, start, end in spans))
    feedback = _process('project_ghost_feedback.ros.feedback_node', '-r',
                        f'__node:={FEEDBACK_NODE}', '-p', 'use_sim_time:=true',
                        '-p', f'policy:={args.policy}', '-p', f'telemetry_bag:={bag_dir}')
    bridge = _process('project_ghost_feedback.ros.outcome_bridge_node',
                      '-r', f'__node:={BRIDGE_NODE}', '-r', f'estimate:={ESTIMATE_TOPIC}',
                      '-r', f'reference:={REFERENCE_TOPIC}',
                      '-r', f'estimate/calibrated:={CALIBRATED_TOPIC}',
                      '-p', 'calibrated_estimate.enabled:=true',
                      '-p', f'calibrated_estimate.confidence:={args.calibrated_confidence!r}',
                      # /tf and the inputs come on separate subscriptions: at --speed sim seconds
                      # per wall second, tf may trail the references by a moment of wall time;
                      # let a reference wait one wall second (tf.max_wait_s is input time).
                      '-p', f'tf.max_wait_s:={max(1.0, float(args.speed)):.1f}',
                      '-p', 'use_sim_time:=true')
    player = _Player(frames)
    estimates = 0
    try:
        if not wait_for_nodes(player, {'feedback node': feedback, 'outcome bridge': bridge}):
            return 1
        print('[demo] bridge and feedback node connected; playing')
        wall_start = time.monotonic()
        progress = _Progress(spans)
        for sample in stack.run():
            progress.note(sample.stamp_ns, len(player.calibrated))
            if player.stack.publish(sample):
                # For the NEES: the estimate, its covariance and the truth in the frame the
                # bridge compares them in (odom with tf).
                player.samples[sample.stamp_ns] = frames.as_published(sample)
                estimates += 1
            due = wall_start + sample.stamp_ns / NS_PER_S / args.speed
            player.spin_for(max(0.0, due - time.monotonic()))
            stopped = _wait_for_chain(player, estimates, (feedback, bridge))
            if stopped:
                print(f'[demo] {stopped}', file=sys.stderr)
                break
        deadline = time.monotonic() + 60.0
        while len(player.calibrated) < estimates and time.monotonic() < deadline:
            player.spin_for(0.05)
        player.spin_for(1.2)  # one more /diagnostics period: the node's final counters
    finally:
        player.close()
        codes = (_stop_node(bridge), _stop_node(feedback))
    summary = summarize(spans, player.calibrated, player.outcomes)
    summary['policy'] = args.policy
    nees = nees_series(spans, player.outcomes, player.samples, player.calibrated_covariances)
    summary['nees'] = summarize_nees(nees)
    summary['calibrated_confidence'] = args.calibrated_confidence
    replay_ok, replay_text = _replay_check(bag_dir)
    summary.update({'estimates': estimates, 'calibrated_received': len(player.calibrated),
                    'outcomes_received': len(player.outcomes), 'seed': args.seed,
                    'bag': str(bag_dir), 'replay_matches': replay_ok,
                    'replay_report': replay_text, 'exit_codes': codes,
                    'frames': 'tf (map -> odom)' if frames.drift is not None else 'odom',
                    'feedback_diagnostics': player.feedback_status,
                    'bridge_diagnostics': player.bridge_status})
    text = (format_summary(summary) + '\n'
            + format_nees(summary['nees'], args.calibrated_confidence))
    (output / 'summary.txt').write_text(text + '\n')
    (output / 'summary.json').write_text(json.dumps(summary, indent=2, sort_keys=True) + '\n')
    write_plot(output / 'stack_demo.png', spans, player.outcomes, player.calibrated,
               f'ghost-feedback demo: simulator stack, policy {args.policy}, seed {args.seed}',
               summary, nees)
    print(text)
    print(f'[demo] {estimates} estimates, {len(player.outcomes)} outcomes, '
          f'{len(player.calibrated)} calibrated; replay {"matches" if replay_ok else "MISMATCH"}')
    print(f'[demo] wrote {output}/summary.txt, summary.json, stack_demo.png, bag/')
    ok = codes == (0, 0) and replay_ok and len(player.calibrated) == estimates
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point: the stack demo, or ``--scenario synthetic`` for the synthetic one."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if '--scenario' in argv:
        index = argv.index('--scenario')
        if index + 1 < len(argv) and argv[index + 1] == 'synthetic':
            from .run import main as synthetic_main
            return synthetic_main(argv[:index] + argv[index + 2:])
    if '--scenario=synthetic' in argv:
        from .run import main as synthetic_main
        return synthetic_main([a for a in argv if a != '--scenario=synthetic'])
    args = build_parser().parse_args(argv)
    from ..safe_io import check_output_dir, print_error

    try:  # before the run starts, not after it
        check_positive(args, '--speed', '--scale')
        check_output_dir(args.output_dir, '--output-dir')
        low, high = CONFIDENCE_RANGE
        if not low <= args.calibrated_confidence <= high:
            raise ValueError(f'--calibrated-confidence must be in [{low}, {high}], got '
                             f'{args.calibrated_confidence:g}')
    except ValueError as error:
        print_error('ghost-feedback demo', error)
        return 2
    try:
        return run(args)
    except KeyboardInterrupt:
        print('ghost-feedback demo: interrupted', file=sys.stderr)
        return 130
