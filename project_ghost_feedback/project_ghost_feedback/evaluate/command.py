# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback evaluate BAG... --estimate TOPIC --reference TOPIC | --innovation TOPIC``.

Per bag: the bridge's engine over the two topics (:mod:`..bridge_inputs`), or the innovation
bridge's engine over innovation topics, a bag without ground truth (:mod:`..field_inputs`), its
outcomes and assessments
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
from typing import Any, cast, TYPE_CHECKING

from ..bridge_inputs import add_input_arguments, BagInputError
from ..core.feedback.overconfidence import VEC3_COMPONENTS

if TYPE_CHECKING:
    from ..bridge_inputs import BridgeRun
    from ..field_inputs import InnovationRun
    from ..core import BeliefSelfAssessment, PredictionOutcome
    from ..core.feedback import CalibratedSelfAssessment
    from ..core.loop import LoopConfig

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
evaluate.png. The summary's first line says what happened (the longest downgrade episode, its
level, reason and k = true error / claimed std with its 95% interval, and k over the run), the
second the pose error (RMSE and max: position in m, rotation in deg); every downgrade episode
follows, in seconds from the bag start. The picture: distances with their chi(3) quantiles,
raw vs calibrated level, k over time with its interval, episodes shaded.

A bag with GNSS and no ground truth: --navsat-fix TOPIC (sensor_msgs/NavSatFix) with --estimate
(Odometry in the ENU frame at the datum; --params-file: the navsat bridge's file, which names the
datum) runs the navsat bridge's data path, the live node's (docs/field.md, "GNSS reference").

A bag without ground truth (field mode, docs/field.md): --innovation TOPIC (repeatable) instead
of --estimate/--reference reads a filter's innovations (project_ghost_feedback_msgs/Innovation,
or PX4's px4_msgs/EstimatorAidSource1d/2d/3d, decoded from the definitions kept in the
repository) through the innovation bridge's engine, the live node's; --params-file is then the
innovation bridge's parameter file (source, claimed_level). Same loop, summary and picture.
"""

LEVEL_NAMES = ('UNKNOWN', 'UNCERTAIN', 'KNOWN')


class EvaluateError(BagInputError):
    """``evaluate`` cannot go on (an output that exists, a recording that failed): one line."""


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def evaluate_bag(path: str | os.PathLike[str], estimate_topic: str, reference_topic: str,
                 values: Mapping[str, Any], loop_config: LoopConfig,
                 output_dir: str | os.PathLike[str], plot: bool = True,
                 tf_topics: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """Evaluate one bag into ``output_dir`` (must not exist); return the summary dict.

    EvaluateError (one line) for a missing topic, a wrong type, inputs that do not overlap in
    time, no estimate paired at all (naming the drop reasons), or a bag that cannot be read.
    ``tf_topics``: the bag's tf topics (default /tf and /tf_static).
    """
    from ..bridge_inputs import bridge_outputs

    run = bridge_outputs(path, estimate_topic, reference_topic, values, tf_topics)
    return _evaluate_run(run, loop_config, output_dir, values, plot,
                         f'{pathlib.Path(path).name}: {estimate_topic} vs {reference_topic} '
                         f'({loop_config.policy})')


def evaluate_innovation_bag(path: str | os.PathLike[str], topics: Sequence[str],
                            values: Mapping[str, Any], loop_config: LoopConfig,
                            output_dir: str | os.PathLike[str],
                            plot: bool = True) -> dict[str, Any]:
    """Evaluate the innovation topics of one bag into ``output_dir`` (must not exist).

    The innovation bridge's engine (``values``: its parameters, :mod:`..field_inputs`) over
    ``topics`` (Innovation or PX4 EstimatorAidSource1d/2d/3d), then the same loop, telemetry,
    summary and picture as :func:`evaluate_bag`. EvaluateError (one line) for a missing topic, a
    wrong type, no outcome at all (naming the refusals), or a bag that cannot be read.
    """
    from ..field_inputs import innovation_outputs

    run = innovation_outputs(path, topics, values)
    return _evaluate_run(run, loop_config, output_dir, values, plot,
                         f'{pathlib.Path(path).name}: innovations {", ".join(topics)} '
                         f'({loop_config.policy})')


def evaluate_navsat_bag(path: str | os.PathLike[str], estimate_topic: str, fix_topic: str,
                        values: Mapping[str, Any], loop_config: LoopConfig,
                        output_dir: str | os.PathLike[str], plot: bool = True) -> dict[str, Any]:
    """Evaluate an estimate against GNSS fixes (NavSatFix) of one bag into ``output_dir``.

    The navsat bridge's data path (``values``: its parameters, the datum among them,
    :mod:`..field_inputs`) over the two topics, then the same loop, telemetry, summary and
    picture as :func:`evaluate_bag`. EvaluateError (one line) as for the innovation path.
    """
    from ..field_inputs import navsat_outputs

    run = navsat_outputs(path, estimate_topic, fix_topic, values)
    return _evaluate_run(run, loop_config, output_dir, values, plot,
                         f'{pathlib.Path(path).name}: {estimate_topic} vs GNSS {fix_topic} '
                         f'({loop_config.policy})')


def _evaluate_run(run: Any, loop_config: LoopConfig, output_dir: str | os.PathLike[str],
                  values: Mapping[str, Any], plot: bool, title: str) -> dict[str, Any]:
    """Record a run (BridgeRun or InnovationRun) through the loop; write the summary, picture."""
    path = run.path
    output_dir = pathlib.Path(output_dir)
    if output_dir.exists():
        raise EvaluateError(f'{output_dir}: exists (choose a new --output-dir)')
    output_dir.mkdir(parents=True)
    try:
        recorded = _record(run, loop_config, output_dir, values)
    except BaseException as error:
        # The inputs are read lazily: a missing topic, no overlap or a storage that breaks
        # half-way shows only now. Leave no half-written output behind (a cut-short telemetry
        # bag would verify), so the same command works once the input is corrected.
        shutil.rmtree(output_dir, ignore_errors=True)
        if isinstance(error, BagInputError) or not isinstance(error, Exception):
            raise
        text = ' '.join(str(error).split()) or type(error).__name__
        raise EvaluateError(f'{path}: cannot read the bag: {type(error).__name__}: '
                            f'{text}'[:500]) from None
    distances, levels, bag_dir = recorded.distances, recorded.levels, recorded.bag_dir
    origin = _origin(run, recorded)  # where every second of the summary and picture counts from
    summary = _summary(run, loop_config, distances, levels, bag_dir)
    summary = (_verdict(run, recorded, origin[0]) | summary
               | _episodes_summary(run, recorded, origin))
    (output_dir / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n',
                                             encoding='utf-8')
    (output_dir / 'summary.txt').write_text(summary_text(summary) + '\n', encoding='utf-8')
    if plot and distances:
        picture = output_dir / 'evaluate.png'
        _picture(picture, recorded, title, origin)
        summary['picture'] = str(picture)
    return summary


class _Trace:
    """What one evaluation saw: distances and levels by stamp, episodes, k, NEES."""

    def __init__(self, bag_dir: pathlib.Path,
                 calibrated_estimate: tuple[bool, float, float] | None,
                 pose_errors: bool = True,
                 components: tuple[int, int] = VEC3_COMPONENTS) -> None:
        from ..bridge.calibrated_estimate import inflation_factors
        from ..core.feedback import EpisodeTracker, RunOverconfidence
        from ..core.feedback.overconfidence import estimate_from_sum, unmapped_squared_distances

        self._inflation_factors, self._estimate_from_sum = inflation_factors, estimate_from_sum
        self._unmapped = unmapped_squared_distances
        # The (position, orientation) error components of the outcomes (the loop's
        # vec3_components): every k below is read from the distances mapped back onto them.
        self.components = components
        self.bag_dir = bag_dir
        # Episodes carry the outcomes' pose error only when there is a reference: an
        # innovation's components are not an error in m and deg (field mode).
        self.pose_errors = pose_errors
        self.distances: dict[int, tuple[float, float]] = {}
        self.levels: dict[int, tuple[int, int]] = {}
        self.tracker = EpisodeTracker(components=components)
        self.pooled = RunOverconfidence(components)
        self.k_series: list[tuple[int, tuple[float, float, float] | None,
                                  tuple[float, float, float] | None]]
        self.k_series = []  # (stamp, position (k, low, high) or None, orientation ...)
        self._k_cache: dict[tuple[int, float], tuple[float, float, float]] = {}
        # The bridge's calibrated estimate (calibrated_estimate.* parameters), or None: its
        # factors come from the latest calibrated assessment, as the live bridge takes them.
        self.calibrated_estimate = calibrated_estimate
        self.factors = (1.0, 1.0)
        self.nees: list[tuple[int, float, float]]
        self.nees = []  # (stamp, raw position NEES, calibrated position NEES)

    def outcome(self, outcome: PredictionOutcome) -> None:
        stamp = outcome.observed_stamp_sim_ns
        position = outcome.position_mahalanobis
        self.distances[stamp] = (position, outcome.orientation_mahalanobis)
        self.pooled.add(outcome)
        if self.pose_errors:
            self.tracker.outcome(outcome)  # each episode's error in m and deg
        if self.calibrated_estimate is not None:
            self.nees.append((stamp, position * position,
                              (position / self.factors[0]) ** 2))

    def assessment(self, raw: BeliefSelfAssessment, calibrated: CalibratedSelfAssessment) -> None:
        stamp = raw.belief_stamp_sim_ns
        self.levels[stamp] = (raw.overall_level.value, calibrated.adjusted_overall_level.value)
        self.tracker.add(calibrated)
        history = calibrated.calibration_history
        self.k_series.append((
            stamp, self._k(history.position_squared_distances, self.components[0]),
            self._k(history.orientation_squared_distances, self.components[1])))
        if self.calibrated_estimate is not None:
            self.factors = self._inflation_factors(history, *self.calibrated_estimate,
                                                   self.components)

    def _k(self, squares: Sequence[float], dof: int) -> tuple[float, float, float] | None:
        """Return ``(k_hat, low, high)`` of a window's squared distances (None when empty)."""
        if not squares:
            return None
        squares = self._unmapped(squares, dof)
        key = (len(squares), math.fsum(squares))  # consecutive windows often are the same
        found = self._k_cache.get(key)
        if found is None:
            if len(self._k_cache) > 4096:
                self._k_cache.clear()
            estimate = self._estimate_from_sum(key[1], key[0], dof)
            found = self._k_cache[key] = (estimate.k_hat, estimate.low, estimate.high)
        return found


def _calibrated_estimate(values: Mapping[str, Any]) -> tuple[bool, float, float] | None:
    """Return the bridge's ``(allow_deflation, max_factor, confidence)``, None when disabled."""
    if not values.get('calibrated_estimate.enabled'):
        return None
    return (values['calibrated_estimate.allow_deflation'],
            values['calibrated_estimate.max_factor'], values['calibrated_estimate.confidence'])


def _record(run: BridgeRun | InnovationRun, loop_config: LoopConfig, output_dir: pathlib.Path,
            values: Mapping[str, Any] | None = None) -> _Trace:
    """Run the bridge's outputs through the loop into a telemetry bag; return its _Trace."""
    from ..core.loop import FeedbackLoop, Step
    from ..telemetry import TelemetryRecorder
    from ..telemetry.loop_inputs import LoopFeeder
    from ..bridge_inputs import ASSESSMENT

    bag_dir = output_dir / 'telemetry'
    recorder = TelemetryRecorder(str(bag_dir), loop_config, recorder='evaluate')
    feeder = LoopFeeder(FeedbackLoop(loop_config), recorder=recorder)  # replay's and audit's rule
    trace = _Trace(bag_dir, _calibrated_estimate(values or {}),
                   pose_errors=getattr(run, 'has_reference', True),
                   components=loop_config.vec3_components)
    try:
        take_steps = getattr(run, 'take_transform_steps', list)  # innovations: no frames
        for kind, contract in run:
            for transform_step in take_steps():
                trace.tracker.transform_step(transform_step)  # frames named in the episodes
            step = cast(Step, feeder.feed(contract))
            if kind == ASSESSMENT:
                assert step.calibrated is not None  # offline: never refused (LoopFeeder)
                trace.assessment(contract, step.calibrated)
            else:
                trace.outcome(contract)
    finally:
        recorder.close()
    if recorder.error is not None:
        raise EvaluateError(f'{bag_dir}: {recorder.error}')
    run.check_overlap()
    nothing = run.why_nothing_paired()
    if nothing is not None:  # no verdict to give: "never downgraded" would be a lie
        raise EvaluateError(nothing)
    return trace


def _origin(run: BridgeRun, trace: _Trace) -> tuple[int, str]:
    """Return ``(origin_ns, kind)``: where the summary's and the picture's seconds count from."""
    from ..core.feedback import time_origin

    stamps = [min(d) for d in (trace.distances, trace.levels) if d]
    return time_origin(run.bag_start_ns, run.bag_end_ns, min(stamps) if stamps else None)


def _verdict(run: BridgeRun, trace: _Trace, origin: int) -> dict[str, Any]:
    """Return the summary's leading keys: the verdict in words and the pose error."""
    from ..core.feedback import verdict_line

    return {'verdict': verdict_line(trace.tracker, trace.pooled, origin),
            'error_text': run.errors.text()}


def _episodes_summary(run: BridgeRun, trace: _Trace,
                      time_origin: tuple[int, str]) -> dict[str, Any]:
    """Return the episodes, k over the run, the pose error and the time origin (JSON-ready)."""
    origin, kind = time_origin
    tracker = trace.tracker
    result = {
        'time_origin': {'stamp_ns': origin, 'kind': kind},
        'episodes': [episode.as_dict(origin) for episode in tracker.episodes()],
        'downgraded_s': tracker.downgraded_s,
        'overconfidence_over_run': {'outcomes': trace.pooled.outcomes, **trace.pooled.as_dict()},
        'error': run.errors.as_dict(),
    }
    if trace.nees:
        assert trace.calibrated_estimate is not None  # NEES is computed only with it
        raw = [r for _, r, _ in trace.nees]
        calibrated = [c for _, _, c in trace.nees]
        result['nees'] = {'outcomes': len(raw), 'raw_mean': _finite_or_text(sum(raw) / len(raw)),
                          'calibrated_mean': _finite_or_text(sum(calibrated) / len(calibrated)),
                          'confidence': trace.calibrated_estimate[2]}
    return result


def _finite_or_text(value: float) -> float | str:
    """Return ``value``, or ``'inf'`` when it is not finite (strict JSON, as the k estimates)."""
    return value if math.isfinite(value) else 'inf'


def _picture(path: pathlib.Path, trace: _Trace, title: str,
             time_origin: tuple[int, str]) -> None:
    """Write evaluate.png (:mod:`..plots`) of a _Trace, in seconds from ``time_origin``."""
    from ..core import NS_PER_S
    from ..core.feedback.episodes import ORIGIN_BAG_START
    from ..plots import write_picture

    origin, kind = time_origin

    def s(stamp: int) -> float:
        return (stamp - origin) / NS_PER_S

    write_picture(
        str(path), title=title,
        distances=[(s(t), p, o) for t, (p, o) in sorted(trace.distances.items())],
        levels=[(s(t), raw, cal) for t, (raw, cal) in sorted(trace.levels.items())],
        k_series=[(s(t), p, o) for t, p, o in trace.k_series],
        episodes=[(s(e.start_ns), s(e.end_ns), e.level.name)
                  for e in trace.tracker.episodes()],
        nees=[(s(t), raw, cal) for t, raw, cal in trace.nees] or None,
        nees_confidence=(trace.calibrated_estimate or (0, 0, 0.975))[2],
        time_label='s from the bag start' if kind == ORIGIN_BAG_START
        else 's from the first header stamp')


def _summary(run: Any, loop_config: LoopConfig, distances: dict[int, tuple[float, float]],
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
    if hasattr(run, 'topics'):  # an InnovationRun: innovations, no reference
        inputs: dict[str, Any] = {'innovation': {
            'topics': dict(run.types),
            # What each source's outcomes hold, against what k was read with.
            'vec3_components': {source: list(components)
                                for source, components in sorted(run.engine.components.items())},
        }}
    else:
        inputs = {'estimate': {'topic': run.estimate_topic, 'type': run.estimate_type},
                  'reference': {'topic': run.reference_topic, 'type': run.reference_type}}
    return {
        'bag': run.path,
        **inputs,
        'bridge': run.counts(),
        'policy': loop_config.policy,
        'parameters': dict(loop_config.parameters),
        'max_history': loop_config.max_history,
        'vec3_components': list(loop_config.vec3_components),
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


def _input_lines(summary: Mapping[str, Any]) -> list[str]:
    """Return the summary lines that say what went in and what the bridge made of it."""
    bridge = summary['bridge']
    if 'innovation' in summary:
        topics = ', '.join(f'{t} ({k})' for t, k in summary['innovation']['topics'].items())
        refused = ', '.join(f'{k} {v}' for k, v in bridge['refused_by_reason'].items())
        if 'fixes_received' in bridge:  # a GNSS reference (the navsat bridge's path)
            fixes_refused = ', '.join(
                f'{k} {v}' for k, v in bridge['fixes_refused_by_reason'].items())
            return [
                'no ground truth: each GNSS fix minus the estimate, judged against '
                'P_est + P_fix (the navsat bridge)',
                f'bag {summary["bag"]}: {topics}',
                f'navsat bridge: {bridge["fixes_received"]} fixes, {bridge["estimates_received"]}'
                f' estimates; fixes refused: {fixes_refused or "none"}; '
                f'{bridge["outcomes_published"]} outcomes emitted; skipped: did not decode '
                f'{bridge["undecodable_skipped"]}, over 1 MiB {bridge["oversized_skipped"]}',
            ]
        return [
            "no reference: outcomes are the filter's innovations (measurement minus "
            'prediction), judged against their own covariance S',
            f'bag {summary["bag"]}: innovations {topics}'
            + (f', source {bridge["source"]}' if bridge['source'] else ', every source'),
            f'innovation bridge: {bridge["innovations_received"]} innovations, '
            f'{bridge["innovations_accepted"]} accepted, {bridge["outcomes_published"]} outcomes '
            f'emitted; refused {bridge["innovations_refused"]} ({refused or "none"}); other '
            f'source {bridge["innovations_other_source"]}, not fused '
            f'{bridge["innovations_not_fused"]}, source resets {bridge["source_resets"]}; '
            f'skipped: did not decode {bridge["undecodable_skipped"]}, over 1 MiB '
            f'{bridge["oversized_skipped"]}',
        ]
    dropped = ', '.join(f'{k} {v}' for k, v in bridge['estimates_dropped'].items()) or 'none'
    return [
        f'error of the estimate against the reference: {summary["error_text"]}',
        f'bag {summary["bag"]}: estimate {summary["estimate"]["topic"]} '
        f'({summary["estimate"]["type"]}), reference {summary["reference"]["topic"]} '
        f'({summary["reference"]["type"]})',
        f'bridge: {bridge["estimates"]} estimates, {bridge["references"]} references, '
        f'{bridge["paired"]} paired, {bridge["outcomes"]} outcomes emitted '
        f'({bridge["outcomes_paced_out"]} paced out), {bridge["assessments"]} assessments; '
        f'estimates dropped: {dropped}; skipped (did not decode): estimates '
        f'{bridge["undecodable_skipped"]["estimate"]}, references '
        f'{bridge["undecodable_skipped"]["reference"]}',
        f'frames: tf {bridge["tf"]}, {bridge["tf_messages"]} tf messages, '
        f'{bridge["tf_transforms_accepted"]} transforms taken, '
        f'{bridge["tf_transforms_refused"]} refused'
        + (' (' + ', '.join(f'{k} {v}' for k, v in
                            bridge['tf_transforms_refused_by_reason'].items()) + ')'
           if bridge['tf_transforms_refused'] else '')
        + '; references dropped: '
        + (', '.join(f'{k} {v}' for k, v in bridge['references_dropped'].items()) or 'none'),
        'skipped (over the 1 MiB message limit): '
        + ', '.join(f'{k} {v}' for k, v in bridge['oversized_skipped'].items()),
    ]


def _components_hint(summary: Mapping[str, Any]) -> list[str]:
    """Return a line when a source's outcomes hold other components than k was read with."""
    used = summary['vec3_components']
    reported = summary.get('innovation', {}).get('vec3_components', {})
    return [f'source {source}: its outcomes hold {a} and {b} components but k was read with '
            f'{used[0]} and {used[1]}; for an unbiased k re-run with --vec3-components {a} {b} '
            '(the levels do not depend on it)'
            for source, (a, b) in reported.items() if [a, b] != list(used)]


def summary_text(summary: Mapping[str, Any]) -> str:
    """Return the summary as a few lines of text."""
    def fmt(value: float | None) -> str:
        return '-' if value is None else f'{value:.2f}'

    lines = [
        summary['verdict'], *_input_lines(summary), *_components_hint(summary),
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
    from ..core.feedback.episodes import episode_lines

    return '\n'.join(lines + episode_lines(summary['episodes'], summary['time_origin']['kind'],
                                           where='summary.json'))


def run(args: argparse.Namespace, fail: Fail) -> int:
    """Run ``evaluate`` for parsed ``args``; ``fail(message, status)`` prints one line."""
    from ..core.feedback import parse_policy
    from ..core.feedback import DEFAULT_MAX_HISTORY, DEFAULT_POLICY
    from ..core.loop import LoopConfig
    from ..core.window import DEFAULT_OUTCOME_BUFFER_SIZE
    from ..bridge_inputs import bridge_parameters, tf_topics_option

    try:
        spec = parse_policy(args.policy or DEFAULT_POLICY)
        max_history = args.max_history or DEFAULT_MAX_HISTORY
        if args.navsat_fix:
            from ..field_inputs import navsat_parameters

            values = navsat_parameters(args.params_file)
            # Both slots of an outcome hold a fix's innovation: 3 components, or 2 (no altitude).
            planar = (2, 2) if not values['use_altitude'] else VEC3_COMPONENTS
            components = tuple(args.vec3_components or planar)
        elif args.innovation:
            from ..field_inputs import innovation_parameters

            values = innovation_parameters(args.params_file)
            components = tuple(args.vec3_components or VEC3_COMPONENTS)
        else:
            from ..bridge.geometry import vec3_components

            values = bridge_parameters(args.params_file)
            # The bridge's ignored_axes say how many components each vec3 keeps.
            components = (tuple(args.vec3_components) if args.vec3_components else
                          vec3_components(values['ignored_axes']))
        loop_config = LoopConfig.make(spec.name, dict(spec.parameters), max_history,
                                      max(DEFAULT_OUTCOME_BUFFER_SIZE, max_history),
                                      vec3_components=components)
        tf_topics = tf_topics_option(args.tf_topics) if args.tf_topics else None
    except (TypeError, ValueError, BagInputError) as error:
        return fail(error, 2)
    output_dir = pathlib.Path(args.output_dir)
    several = len(args.bags) > 1
    for bag in args.bags:
        target = output_dir / pathlib.Path(bag).resolve().name if several else output_dir
        try:
            if args.navsat_fix:
                summary = evaluate_navsat_bag(bag, args.estimate, args.navsat_fix, values,
                                              loop_config, target, plot=not args.no_plot)
            elif args.innovation:
                summary = evaluate_innovation_bag(bag, args.innovation, values, loop_config,
                                                  target, plot=not args.no_plot)
            else:
                summary = evaluate_bag(bag, args.estimate, args.reference, values, loop_config,
                                       target, plot=not args.no_plot, tf_topics=tf_topics)
        except BagInputError as error:
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
        'evaluate', help='the bridge and the feedback loop over ordinary bags (odometry and '
        'truth, or innovations)',
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('bags', metavar='BAG', nargs='+', help='rosbag2 bag directories')
    add_input_arguments(parser, ' (a bag with ground truth; or give --innovation)')
    parser.add_argument('--innovation', metavar='TOPIC', action='append', default=[],
                        help='a bag without ground truth: an innovation topic '
                        '(project_ghost_feedback_msgs/Innovation or px4_msgs/'
                        "EstimatorAidSource1d/2d/3d), repeatable; the innovation bridge's "
                        'engine makes the outcomes (--params-file: its parameter file, '
                        'source and claimed_level); instead of --estimate/--reference')
    parser.add_argument('--navsat-fix', metavar='TOPIC',
                        help='a bag without ground truth but with GNSS: a sensor_msgs/NavSatFix '
                        'topic held against --estimate (Odometry in the ENU frame at the datum) '
                        "by the navsat bridge's data path (--params-file: its parameter file, "
                        'the datum required); instead of --reference')
    parser.add_argument('--policy', metavar='NAME[:k=v,...]',
                        help=f'feedback policy and parameters (default {DEFAULT_POLICY})')
    parser.add_argument('--max-history', metavar='N', type=positive_int,
                        help='outcomes per calibration window (default 32)')
    parser.add_argument('--output-dir', metavar='DIR', default='evaluate_out',
                        help='where to write (must not exist; default evaluate_out)')
    parser.add_argument('--no-plot', action='store_true', help='write no picture')
    parser.add_argument('--vec3-components', metavar=('POSITION', 'ORIENTATION'), nargs=2,
                        type=int, choices=(1, 2, 3),
                        help='error components the outcomes keep per vec3 (1-3 each), for an '
                        "unbiased k: default the bridge's ignored_axes "
                        '(--params-file), or 3 3 for innovations (2 2 for a source reporting a '
                        'planar position only, whose two slots both hold 2-component distances)')

    def handler(args: argparse.Namespace) -> int:
        if args.navsat_fix:
            if args.reference or args.innovation:
                return fail('--navsat-fix goes with --estimate, without --reference and '
                            '--innovation', 2)
            if not args.estimate or args.estimate == args.navsat_fix:
                return fail('--navsat-fix TOPIC needs --estimate TOPIC (Odometry in the ENU '
                            'frame at the datum), another topic', 2)
            return run(args, fail)
        if args.innovation:
            if args.estimate or args.reference:
                return fail('--innovation goes without --estimate and --reference', 2)
            if not all(args.innovation) or len(set(args.innovation)) != len(args.innovation):
                return fail(f'--innovation topics must be given once each and not empty: '
                            f'{args.innovation}', 2)
            return run(args, fail)
        if not args.estimate or not args.reference:  # missing, or given but empty
            return fail('evaluate needs --estimate TOPIC and --reference TOPIC (a bag with '
                        'ground truth), or --innovation TOPIC (a bag without)', 2)
        if args.estimate == args.reference:
            return fail(f'--estimate and --reference are the same topic {args.estimate}', 2)
        return run(args, fail)

    parser.set_defaults(handler=handler)
    return parser
