# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback evaluate BAG... --estimate TOPIC --reference TOPIC``: offline bridge + loop.

Per bag: the bridge's engine over the two topics (:mod:`.inputs`), its outcomes and assessments
through the feedback loop (:class:`~..core.loop.FeedbackLoop`, the node's), recorded with the
node's :class:`~..telemetry.TelemetryRecorder` (``ghost-feedback replay`` verifies the bag), a
summary (``summary.txt``, ``summary.json``) and a picture (``evaluate.png``) in the output
directory. Exit status: 0 every bag evaluated; 2 usage error or a bag that cannot be evaluated
(one line on stderr).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
import json
import math
import os
import pathlib
import shutil
from typing import Any, TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.loop import LoopConfig
    from .inputs import BridgeRun

Fail = Callable[[object, int], int]
"""``fail(message, status)``: print one error line, return the exit status."""

DESCRIPTION = """\
Run the outcome bridge's pure path and the feedback loop over ordinary rosbag2 bags (MCAP or
sqlite3): an estimate topic (nav_msgs/Odometry or geometry_msgs/PoseWithCovarianceStamped) and a
reference topic (Odometry, PoseStamped or PoseWithCovarianceStamped). The bridge's parameters
(frames, fixed transform, ignored axes, decorrelation, thresholds) come from --params-file, the
YAML the bridge launch uses. Offline the bridge's clock is each message's header stamp.

Writes, per bag, into --output-dir (a sub-directory per bag when several are given):
telemetry/ (a telemetry bag: `ghost-feedback replay` verifies it), summary.txt, summary.json and
evaluate.png (distances with the 1/3/5 std lines; raw vs calibrated level).
"""

LEVEL_NAMES = ('UNKNOWN', 'UNCERTAIN', 'KNOWN')


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def evaluate_bag(path: str | os.PathLike[str], estimate_topic: str, reference_topic: str,
                 values: Mapping[str, Any], loop_config: LoopConfig,
                 output_dir: str | os.PathLike[str], plot: bool = True) -> dict[str, Any]:
    """Evaluate one bag into ``output_dir`` (must not exist); return the summary dict.

    EvaluateError (one line) for a missing topic, a wrong type, inputs that do not overlap in
    time, or a bag that cannot be read.
    """
    from .inputs import bridge_outputs, EvaluateError

    output_dir = pathlib.Path(output_dir)
    if output_dir.exists():
        raise EvaluateError(f'{output_dir}: exists (choose a new --output-dir)')
    run = bridge_outputs(path, estimate_topic, reference_topic, values)
    output_dir.mkdir(parents=True)
    try:
        recorded = _record(run, loop_config, output_dir)
    except EvaluateError:
        # The inputs are read lazily: a missing topic or no overlap shows only now. Leave no
        # half-written output behind, so the same command works once the input is corrected.
        shutil.rmtree(output_dir, ignore_errors=True)
        raise
    distances, levels, bag_dir = recorded
    summary = _summary(run, loop_config, distances, levels, bag_dir)
    (output_dir / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n',
                                             encoding='utf-8')
    (output_dir / 'summary.txt').write_text(summary_text(summary) + '\n', encoding='utf-8')
    if plot and distances:
        from ..demo.stack_demo import write_plot

        start = min(min(distances), min(levels)) if levels else min(distances)
        end = max(max(distances), max(levels) if levels else 0)
        picture = output_dir / 'evaluate.png'
        write_plot(str(picture), [(pathlib.Path(path).name, 0, end - start)],
                   {stamp - start: d for stamp, d in distances.items()},
                   {stamp - start: pair for stamp, pair in levels.items()},
                   f'{pathlib.Path(path).name}: {estimate_topic} vs {reference_topic} '
                   f'({loop_config.policy}); time from the first stamp')
        summary['picture'] = str(picture)
    return summary


def _record(run: BridgeRun, loop_config: LoopConfig, output_dir: pathlib.Path) -> tuple[
        dict[int, tuple[float, float]], dict[int, tuple[int, int]], pathlib.Path]:
    """Run the bridge's outputs through the loop into a telemetry bag; return what was seen."""
    from ..core.loop import FeedbackLoop
    from ..telemetry import TelemetryRecorder
    from .inputs import ASSESSMENT, EvaluateError

    loop = FeedbackLoop(loop_config)
    bag_dir = output_dir / 'telemetry'
    recorder = TelemetryRecorder(str(bag_dir), loop_config, recorder='evaluate')
    distances: dict[int, tuple[float, float]] = {}
    levels: dict[int, tuple[int, int]] = {}
    try:
        for kind, contract in run:
            if kind == ASSESSMENT:
                calibrated = loop.assessment(contract).calibrated
                assert calibrated is not None  # no now_ns: an assessment is never refused
                recorder.record_assessment(contract, calibrated)
                levels[contract.belief_stamp_sim_ns] = (contract.overall_level.value,
                                                        calibrated.adjusted_overall_level.value)
            else:
                loop.outcome(contract)
                recorder.record_outcome(contract)
                distances[contract.observed_stamp_sim_ns] = (
                    contract.position_mahalanobis, contract.orientation_mahalanobis)
    finally:
        recorder.close()
    if recorder.error is not None:
        raise EvaluateError(f'{bag_dir}: {recorder.error}')
    run.check_overlap()
    return distances, levels, bag_dir


def _summary(run: BridgeRun, loop_config: LoopConfig, distances: dict[int, tuple[float, float]],
             levels: dict[int, tuple[int, int]], bag_dir: pathlib.Path) -> dict[str, Any]:
    position = [d[0] for d in distances.values()]
    orientation = [d[1] for d in distances.values()]
    raw_counts = dict.fromkeys(LEVEL_NAMES, 0)
    calibrated_counts = dict.fromkeys(LEVEL_NAMES, 0)
    downgraded, first_downgrade = 0, None  # type: int, int | None
    for stamp in sorted(levels):
        raw, calibrated = levels[stamp]
        raw_counts[LEVEL_NAMES[raw]] += 1
        calibrated_counts[LEVEL_NAMES[calibrated]] += 1
        if calibrated < raw:
            downgraded += 1
            if first_downgrade is None:
                first_downgrade = stamp
    finite = [p for p in position if math.isfinite(p)]
    return {
        'bag': run.path,
        'estimate': {'topic': run.estimate_topic, 'type': run.estimate_type},
        'reference': {'topic': run.reference_topic, 'type': run.reference_type},
        'bridge': run.counts(),
        'policy': loop_config.policy,
        'parameters': dict(loop_config.parameters),
        'max_history': loop_config.max_history,
        'assessments': len(levels),
        'raw_levels': raw_counts,
        'calibrated_levels': calibrated_counts,
        'downgraded_assessments': downgraded,
        'first_downgrade_stamp_ns': first_downgrade,
        'position_d_median': _quantile(position, 0.5),
        'position_d_p95': _quantile(position, 0.95),
        'orientation_d_median': _quantile(orientation, 0.5),
        'orientation_d_p95': _quantile(orientation, 0.95),
        'position_beyond_3_std': sum(p > 3.0 for p in position),
        'position_d_infinite': len(position) - len(finite),
        'telemetry_bag': str(bag_dir),
    }


def summary_text(summary: Mapping[str, Any]) -> str:
    """Return the summary as a few lines of text."""
    bridge = summary['bridge']

    def fmt(value: float | None) -> str:
        return '-' if value is None else f'{value:.2f}'

    dropped = ', '.join(f'{k} {v}' for k, v in bridge['estimates_dropped'].items()) or 'none'
    lines = [
        f'bag {summary["bag"]}: estimate {summary["estimate"]["topic"]} '
        f'({summary["estimate"]["type"]}), reference {summary["reference"]["topic"]} '
        f'({summary["reference"]["type"]})',
        f'bridge: {bridge["estimates"]} estimates, {bridge["references"]} references, '
        f'{bridge["paired"]} paired, {bridge["outcomes"]} outcomes emitted '
        f'({bridge["outcomes_paced_out"]} paced out), {bridge["assessments"]} assessments; '
        f'estimates dropped: {dropped}',
        f'distances (unsquared Mahalanobis): position median {fmt(summary["position_d_median"])}'
        f', p95 {fmt(summary["position_d_p95"])}; orientation median '
        f'{fmt(summary["orientation_d_median"])}, p95 {fmt(summary["orientation_d_p95"])}; '
        f'position beyond 3 std: {summary["position_beyond_3_std"]}',
        f'loop ({summary["policy"]}, max_history {summary["max_history"]}): raw levels '
        f'{summary["raw_levels"]}, calibrated {summary["calibrated_levels"]}, downgraded '
        f'{summary["downgraded_assessments"]} of {summary["assessments"]}',
        f'telemetry bag: {summary["telemetry_bag"]} (check it: ghost-feedback replay '
        f'{summary["telemetry_bag"]})',
    ]
    return '\n'.join(lines)


def add_input_arguments(parser: argparse.ArgumentParser, note: str = '') -> None:
    """Add --estimate, --reference and --params-file (evaluate and audit share them)."""
    parser.add_argument('--estimate', metavar='TOPIC',
                        help='estimate topic (nav_msgs/Odometry or PoseWithCovarianceStamped)'
                        + note)
    parser.add_argument('--reference', metavar='TOPIC',
                        help='reference topic (Odometry, PoseStamped or PoseWithCovarianceStamped)')
    parser.add_argument('--params-file', metavar='YAML',
                        help="the bridge's parameter file (default: the bridge's defaults), e.g. "
                        'config/outcome_bridge.yaml')


def run(args: argparse.Namespace, fail: Fail) -> int:
    """Run ``evaluate`` for parsed ``args``; ``fail(message, status)`` prints one line."""
    from ..core.feedback import parse_policy
    from ..core.feedback import DEFAULT_MAX_HISTORY, DEFAULT_POLICY
    from ..core.loop import LoopConfig
    from ..core.window import DEFAULT_OUTCOME_BUFFER_SIZE
    from .inputs import bridge_parameters, EvaluateError

    try:
        spec = parse_policy(args.policy or DEFAULT_POLICY)
        max_history = args.max_history or DEFAULT_MAX_HISTORY
        loop_config = LoopConfig.make(spec.name, dict(spec.parameters), max_history,
                                      max(DEFAULT_OUTCOME_BUFFER_SIZE, max_history))
        values = bridge_parameters(args.params_file)
    except (TypeError, ValueError, EvaluateError) as error:
        return fail(error, 2)
    output_dir = pathlib.Path(args.output_dir)
    several = len(args.bags) > 1
    for bag in args.bags:
        target = output_dir / pathlib.Path(bag).resolve().name if several else output_dir
        try:
            summary = evaluate_bag(bag, args.estimate, args.reference, values, loop_config,
                                   target, plot=not args.no_plot)
        except EvaluateError as error:
            return fail(error, 2)
        print(summary_text(summary))
        if 'picture' in summary:
            print(f'picture: {summary["picture"]}')
    return 0


def build(commands: Any, positive_int: Callable[[str], int],
          fail: Fail) -> argparse.ArgumentParser:
    """Register the ``evaluate`` subcommand on ``commands`` (argparse subparsers)."""
    from ..core.feedback import DEFAULT_POLICY

    parser = commands.add_parser(
        'evaluate', help='the bridge and the feedback loop over ordinary bags (odometry + truth)',
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('bags', metavar='BAG', nargs='+', help='rosbag2 bag directories')
    add_input_arguments(parser)
    parser.add_argument('--policy', metavar='NAME[:k=v,...]',
                        help=f'feedback policy and parameters (default {DEFAULT_POLICY})')
    parser.add_argument('--max-history', metavar='N', type=positive_int,
                        help='outcomes per calibration window (default 32)')
    parser.add_argument('--output-dir', metavar='DIR', default='evaluate_out',
                        help='where to write (must not exist; default evaluate_out)')
    parser.add_argument('--no-plot', action='store_true', help='write no picture')

    def handler(args: argparse.Namespace) -> int:
        if not args.estimate or not args.reference:
            return fail('evaluate needs --estimate TOPIC and --reference TOPIC', 2)
        if args.estimate == args.reference:
            return fail(f'--estimate and --reference are the same topic {args.estimate}', 2)
        return run(args, fail)

    parser.set_defaults(handler=handler)
    return parser
