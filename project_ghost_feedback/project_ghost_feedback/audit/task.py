# SPDX-License-Identifier: Apache-2.0
"""The per-bag task: replay one bag under N policies and return a small summary dict.

Pure in the sense that matters for dask: its only input is a path and plain values, its only
effect is reading that bag, and its result is a dict of a few kilobytes (counts, durations, the
level *change points*, a distance histogram), whatever the bag's length. The bag's inputs are
read and fed in recorded order by :mod:`..telemetry.loop_inputs`, the code ``ghost-feedback
replay`` reads them with, into one :class:`~..core.loop.FeedbackLoop` per policy (the node's own
loop), with the recorded resets (``/feedback_events``) applied where they happened; an input the
core's contracts refuse is skipped, as replay and the node skip it. The audited
configuration (policy, parameters, max_history) stays as given for the whole bag: recorded
parameter changes of the node are not applied. Without recorded changes the counts equal those
of ``replay_bag(path, policy=...)``'s recomputed summary.
"""

from collections.abc import Iterable, Iterator, Mapping, Sequence
import math
from typing import Any, cast

from ..core import BeliefSelfAssessment, PredictionOutcome, SelfAssessmentLevel
from ..core.feedback import (
    DEFAULT_MAX_HISTORY,
    EpisodeTracker,
    overconfidence_as_dict,
    PolicySpec,
    RunOverconfidence,
    time_origin,
)
from ..core.feedback.overconfidence import VEC3_COMPONENTS
from ..core.feedback import CalibratedSelfAssessment, CalibrationHistory
from ..core.loop import CONFIGURATION, FeedbackLoop, LoopConfig, LoopEvent, Step
from ..core.window import DEFAULT_OUTCOME_BUFFER_SIZE
from ..field_inputs import NavSatSource
from ..telemetry.bag_reader import BagInfo
from ..telemetry.config import recorded_components
from ..telemetry.loop_inputs import LoopFeeder
from .injection import Injection, scale_outcome
from ..core import NS_PER_S

TIMELINE_LIMIT = 2000
"""Level change points kept per policy and bag (the counts stay exact beyond it)."""
EPISODE_LIMIT = 50
"""Downgrade episodes kept per policy and bag: the longest (``episode_count`` counts them all)."""
HISTOGRAM_BIN = 0.1
HISTOGRAM_BINS = 80
"""Distances in [0, 8) in bins of 0.1; beyond in ``over``, +inf in ``inf``."""
LEVEL_NAMES = tuple(level.name for level in sorted(SelfAssessmentLevel))
Bridge = (tuple[str, str, Mapping[str, Any], Mapping[str, bool] | None]
          | tuple[tuple[str, ...], Mapping[str, Any]] | NavSatSource)
"""``(estimate_topic, reference_topic, bridge parameter values, tf topics)`` of an ordinary bag
(tf topics: each with True for static; None: /tf and /tf_static), ``(innovation topics,
innovation bridge parameter values)`` of a bag without ground truth, or a
:class:`~..field_inputs.NavSatSource` (an estimate against GNSS fixes)."""


class _Histogram:
    def __init__(self) -> None:
        self.bins = [0] * HISTOGRAM_BINS
        self.over = 0
        self.inf = 0

    def add(self, value: float) -> None:
        if value == math.inf:
            self.inf += 1
            return
        index = int(value / HISTOGRAM_BIN)
        if index < HISTOGRAM_BINS:
            self.bins[index] += 1
        else:
            self.over += 1

    def to_dict(self) -> dict[str, Any]:
        return {'bin_width': HISTOGRAM_BIN, 'bins': self.bins, 'over': self.over,
                'inf': self.inf}


class _Levels:
    """Counts, time per level and change points of a stream of levels at belief stamps."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(LEVEL_NAMES, 0)
        self.time_ns = dict.fromkeys(LEVEL_NAMES, 0)
        self.timeline: list[list[Any]] = []
        self.transitions = 0
        self.truncated = False
        self._last: str | None = None
        self._last_stamp: int | None = None

    def add(self, stamp: int, level: SelfAssessmentLevel) -> None:
        name = level.name
        self.counts[name] += 1
        if self._last is not None and self._last_stamp is not None:  # set together
            self.time_ns[self._last] += max(stamp - self._last_stamp, 0)
        if name != self._last:
            if self._last is not None:
                self.transitions += 1
            if len(self.timeline) < TIMELINE_LIMIT:
                self.timeline.append([stamp, name])
            else:
                self.truncated = True
        self._last, self._last_stamp = name, stamp

    def to_dict(self, end_stamp: int | None) -> dict[str, Any]:
        timeline = list(self.timeline)
        if self._last is not None and (not timeline or timeline[-1][0] != self._last_stamp):
            timeline.append([self._last_stamp, self._last])  # where the last level ends
        return {'levels': self.counts, 'time_per_level_s': {
            k: v / NS_PER_S for k, v in self.time_ns.items()}, 'transitions': self.transitions,
            'timeline': timeline, 'timeline_truncated': self.truncated}


class _PolicyRun:
    def __init__(self, spec: PolicySpec, injection_ns: int | None, max_history: int,
                 buffer_size: int, components: tuple[int, int] = VEC3_COMPONENTS) -> None:
        self.spec = spec
        # The audited configuration stays as given: recorded configuration changes are skipped.
        self.feeder = LoopFeeder(FeedbackLoop(LoopConfig.make(
            spec.name, dict(spec.parameters), max_history, buffer_size,
            vec3_components=components)))
        self.last_history: CalibrationHistory | None = None
        self.levels = _Levels()
        self.downgrades = 0
        self.first_downgrade: int | None = None
        self.injection_ns = injection_ns
        self.detection: dict[str, Any] | None = None
        self.untouched = {'assessments': 0, 'downgrades': 0, 'full_windows': 0,
                          'full_window_downgrades': 0}
        self.down_at_injection = False
        self.episodes = EpisodeTracker(limit=EPISODE_LIMIT, components=components)

    def judge(self, raw: BeliefSelfAssessment, injected_outcomes: int, max_history: int) -> None:
        step = cast(Step, self.feeder.feed(raw))
        assert step.calibrated is not None  # no now_ns: an assessment is never refused
        self.last_history = step.calibrated.calibration_history
        self.add(raw, step.calibrated, len(step.judged) >= max_history, injected_outcomes)

    def add(self, raw: BeliefSelfAssessment, calibrated: CalibratedSelfAssessment, full: bool,
            injected_outcomes: int) -> None:
        stamp = raw.belief_stamp_sim_ns
        level = calibrated.adjusted_overall_level
        self.levels.add(stamp, level)
        self.episodes.add(calibrated)
        down = level < raw.overall_level
        if down:
            self.downgrades += 1
            if self.first_downgrade is None:
                self.first_downgrade = stamp
        if self.injection_ns is None or stamp < self.injection_ns:
            counts = self.untouched
            counts['assessments'] += 1
            counts['downgrades'] += down
            if full:
                counts['full_windows'] += 1
                counts['full_window_downgrades'] += down
            self.down_at_injection = down
        elif down and self.detection is None:
            delay_s = (stamp - self.injection_ns) / NS_PER_S
            self.detection = {'stamp_sim_ns': stamp, 'delay_s': delay_s,
                              'delay_outcomes': injected_outcomes, 'level': level.name}

    def to_dict(self, end_stamp: int | None, untouched_outcomes: int, max_history: int,
                origin_ns: int) -> dict[str, Any]:
        episodes = self.episodes
        result = {'policy': self.spec.name, 'parameters': dict(self.spec.parameters),
                  'assessments': sum(self.levels.counts.values()),
                  'downgrades': self.downgrades,
                  'first_downgrade_stamp_sim_ns': self.first_downgrade,
                  'episodes': [e.as_dict(origin_ns) for e in episodes.episodes()],
                  'episode_count': episodes.count, 'episodes_truncated': episodes.truncated,
                  'downgraded_s': episodes.downgraded_s}
        result.update(self.levels.to_dict(end_stamp))
        windows: dict[str, Any] = dict(self.untouched)
        windows['independent_windows'] = untouched_outcomes // max_history
        full = windows['full_windows']
        rate = windows['full_window_downgrades'] / full if full else None
        if self.injection_ns is None:
            # No injection: every downgrade may be a real one; nothing here is called false.
            windows['downgrade_rate'] = rate
            result['windows'] = windows
        else:
            windows['false_downgrade_rate'] = rate
            result['untouched'] = windows
        if self.injection_ns is not None:
            result['injected'] = {'detected': self.detection is not None,
                                  'downgraded_before_injection': self.down_at_injection,
                                  **(self.detection or {})}
        return result


BRIDGE_INPUT_TYPES = ('nav_msgs/msg/Odometry', 'geometry_msgs/msg/PoseWithCovarianceStamped',
                      'geometry_msgs/msg/PoseStamped')
"""Types of an ordinary bag's topics that ``--estimate`` / ``--reference`` can name."""
ESTIMATE_HINT = ('give --estimate TOPIC --reference TOPIC to run the outcome bridge over its '
                 'odometry and ground truth, as evaluate does')


class NotTelemetryBag(ValueError):
    """A bag without BeliefSelfAssessment to replay (an ordinary bag, given no --estimate)."""


def _require_telemetry(path: str, info: BagInfo) -> None:
    """Raise NotTelemetryBag, with the hint, when the bag holds no BeliefSelfAssessment."""
    from ..telemetry.channels import TYPE_BELIEF_SELF_ASSESSMENT

    types = {t.msgtype.replace('/msg/', '/') for t in info.topics}
    if TYPE_BELIEF_SELF_ASSESSMENT.replace('/msg/', '/') in types:
        return
    poses = sorted(t.name for t in info.topics if t.msgtype in BRIDGE_INPUT_TYPES)
    found = f' (pose topics: {", ".join(poses)})' if poses else ''
    raise NotTelemetryBag(f'{path}: no BeliefSelfAssessment to replay, not a telemetry bag'
                          f'{found}; {ESTIMATE_HINT}')


def audit_bag(path: str, policies: Sequence[PolicySpec], *,
              max_history: int = DEFAULT_MAX_HISTORY,
              outcome_buffer_size: int = DEFAULT_OUTCOME_BUFFER_SIZE,
              injection: Injection | None = None,
              bridge: Bridge | None = None) -> dict[str, Any]:
    """Replay the bag ``path`` under every :class:`PolicySpec` of ``policies``; return a dict.

    Never raises for a bad bag: the result is then ``{'bag': path, 'ok': False, 'error': one
    line}``. ``injection`` is an :class:`~.injection.Injection` or None. ``bridge`` is None (a
    telemetry bag: its recorded outcomes and assessments) or ``(estimate_topic,
    reference_topic, bridge parameter values, tf topics)``: an ordinary bag, whose outcomes and
    assessments come from the bridge's engine over those two topics, as ``ghost-feedback
    evaluate`` makes them (:mod:`..bridge_inputs`); or ``(innovation topics, innovation bridge
    parameter values)``: a bag without ground truth, through the innovation bridge's engine
    (:mod:`..field_inputs`).
    """
    from ..telemetry import bag_info

    path = str(path)
    try:
        info = bag_info(path)
        if bridge is None:
            _require_telemetry(path, info)
            contracts = _recorded_inputs(path)
        elif isinstance(bridge, NavSatSource):  # GNSS: the navsat bridge's data path
            from ..field_inputs import navsat_outputs

            contracts = (contract for _, contract in navsat_outputs(
                path, bridge.estimate_topic, bridge.fix_topic, bridge.values))
        elif len(bridge) == 2:  # innovations (field mode): the innovation bridge's engine
            from ..field_inputs import innovation_outputs

            topics, values = bridge
            contracts = (contract for _, contract in innovation_outputs(path, topics, values))
        else:
            from ..bridge_inputs import bridge_outputs

            contracts = (contract for _, contract in bridge_outputs(path, *bridge))
        return _audit(path, info, contracts, policies, max_history,
                      max(outcome_buffer_size, max_history), injection)
    except NotTelemetryBag as error:
        return {'bag': path, 'ok': False, 'error': ' '.join(str(error).split())[:500],
                'not_telemetry': True}
    except Exception as error:  # noqa: BLE001 - one line per failing bag, the audit goes on
        text = ' '.join(str(error).split()) or type(error).__name__
        return {'bag': path, 'ok': False, 'error': f'{type(error).__name__}: {text}'[:500]}


def _recorded_inputs(path: str) -> Iterator[object]:
    """Yield a telemetry bag's loop inputs (contracts and recorded events) in recorded order.

    The recorded calibrated output is not read: the audit recomputes it under every policy. An
    input the core's contracts refuse is skipped, as replay and the live node skip it.
    """
    from ..telemetry.bag_reader import OpenBag
    from ..telemetry.loop_inputs import loop_inputs, select_loop_topics

    with OpenBag(path) as bag:
        topics = select_loop_topics(bag.info)
        bag.check_definitions(set(topics))
        for _, _, _, item in loop_inputs(bag, topics, 'recorded', {}):
            yield item


def _audit(path: str, info: BagInfo, contracts: Iterable[object], policies: Sequence[PolicySpec],
           max_history: int, buffer_size: int, injection: Injection | None) -> dict[str, Any]:
    injection_ns = None
    if injection is not None:
        injection_ns = injection.start_ns(path, info.start_time_ns, info.end_time_ns)
    # k is read with the vec3 components the recording node was configured with (3, 3 when
    # the bag does not say): a planar source's k is then unbiased.
    components = recorded_components(info)
    runs = [_PolicyRun(spec, injection_ns, max_history, buffer_size, components)
            for spec in policies]
    raw_levels = _Levels()
    position, orientation = _Histogram(), _Histogram()
    outcomes = untouched_outcomes = injected_outcomes = assessments = resets = 0
    last_stamp = first_stamp = None
    pooled = RunOverconfidence(components)
    for contract in contracts:
        if isinstance(contract, PredictionOutcome):
            outcomes += 1
            if first_stamp is None:
                first_stamp = contract.observed_stamp_sim_ns
            position.add(contract.position_mahalanobis)
            orientation.add(contract.orientation_mahalanobis)
            if injection is not None and injection_ns is not None \
                    and contract.observed_stamp_sim_ns >= injection_ns:
                contract = scale_outcome(contract, injection.factor)
                injected_outcomes += 1
            else:
                untouched_outcomes += 1
            pooled.add(contract)
            for run in runs:
                run.feeder.feed(contract)
        elif isinstance(contract, BeliefSelfAssessment):
            assessments += 1
            stamp = last_stamp = contract.belief_stamp_sim_ns
            if first_stamp is None:
                first_stamp = stamp
            raw_levels.add(stamp, contract.overall_level)
            for run in runs:
                run.judge(contract, injected_outcomes, max_history)
        elif isinstance(contract, LoopEvent) and contract.kind != CONFIGURATION:
            resets += 1
            for run in runs:
                run.feeder.feed(contract)
    if assessments == 0:
        raise ValueError(f'{path}: no BeliefSelfAssessment to replay')
    origin, origin_kind = time_origin(info.start_time_ns, info.end_time_ns, first_stamp)
    # Without --inject no key speaks of an injection.
    injected = {} if injection_ns is None else {
        'injection_stamp_sim_ns': injection_ns, 'injected_outcomes': injected_outcomes}
    return injected | {
        'bag': path, 'ok': True, 'robot': _robot_name(path),
        'start_time_ns': info.start_time_ns, 'end_time_ns': info.end_time_ns,
        'time_origin': {'stamp_ns': origin, 'kind': origin_kind},
        'outcomes': outcomes, 'assessments': assessments, 'recorded_resets': resets,
        'raw': raw_levels.to_dict(last_stamp),
        'distances': {'position': position.to_dict(), 'orientation': orientation.to_dict()},
        'policies': {run.spec.label: run.to_dict(last_stamp, untouched_outcomes, max_history,
                                                 origin) for run in runs},
        # ADR-0026a: k_hat and its 95% interval per vec3 over every outcome of the run (as the
        # policies saw them: injected ones scaled), and of the last assessment's window.
        'overconfidence_over_run': {'outcomes': pooled.outcomes, **pooled.as_dict()},
        'overconfidence_last_window': overconfidence_as_dict(runs[0].last_history, components)
        if runs and runs[0].last_history is not None else None,
    }


def _robot_name(path: str) -> str:
    return path.rstrip('/').rsplit('/', 1)[-1]
