# SPDX-License-Identifier: Apache-2.0
"""The per-bag task: replay one bag under N policies and return a small summary dict.

Pure in the sense that matters for dask: its only input is a path and plain values, its only
effect is reading that bag, and its result is a dict of a few kilobytes (counts, durations, the
level *change points*, a distance histogram), whatever the bag's length. The bag is streamed
through :func:`project_ghost_feedback.telemetry.read_bag` in recorded order, as ``ghost-feedback
replay`` does, into one :class:`~..core.loop.FeedbackLoop` per policy (the node's own loop), with
the recorded resets (``/feedback_events``) applied where they happened. The audited
configuration (policy, parameters, max_history) stays as given for the whole bag: recorded
parameter changes of the node are not applied. Without recorded changes the counts equal those
of ``replay_bag(path, policy=...)``'s recomputed summary.
"""

import dataclasses
import math

from ..core import BeliefSelfAssessment, PredictionOutcome, SelfAssessmentLevel
from ..core.feedback import (
    coerce_parameters,
    DEFAULT_MAX_HISTORY,
    make_policy,
    overconfidence_as_dict,
    parse_setting,
    policy_names,
)
from ..core.loop import CONFIGURATION, FeedbackLoop, LoopConfig, LoopEvent
from .injection import scale_outcome
from ..core import NS_PER_S

DEFAULT_OUTCOME_BUFFER_SIZE = 1024
TIMELINE_LIMIT = 2000
"""Level change points kept per policy and bag (the counts stay exact beyond it)."""
HISTOGRAM_BIN = 0.1
HISTOGRAM_BINS = 80
"""Distances in [0, 8) in bins of 0.1; beyond in ``over``, +inf in ``inf``."""
LEVEL_NAMES = tuple(level.name for level in sorted(SelfAssessmentLevel))


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """A policy and its parameters as given on the command line (``NAME[:k=v,...]``)."""

    name: str
    parameters: tuple = ()

    @property
    def label(self):
        """Return ``name`` or ``name(k=v,...)``: the key of this policy in the results."""
        if not self.parameters:
            return self.name
        return f'{self.name}({",".join(f"{k}={v!r}" for k, v in self.parameters)})'

    def make(self):
        """Return the policy object (ValueError/TypeError for an invalid parameter)."""
        return make_policy(self.name, dict(self.parameters))

    def loop(self, max_history, buffer_size):
        """Return a FeedbackLoop running this policy."""
        return FeedbackLoop(LoopConfig.make(self.name, dict(self.parameters), max_history,
                                            buffer_size))


def parse_policy(text):
    """Parse ``NAME`` or ``NAME:k=v,k=v`` into a validated :class:`PolicySpec`."""
    name, _, rest = text.partition(':')
    name = name.strip()
    if name not in policy_names():
        raise ValueError(f'unknown policy {name!r} (known: {", ".join(policy_names())})')
    settings = {}
    for item in filter(None, (part.strip() for part in rest.split(','))):
        try:
            key, value = parse_setting(item)
        except ValueError:
            raise ValueError(f'{text!r}: expected NAME:key=value,...; got {item!r}') from None
        settings[key] = value
    try:
        values = coerce_parameters(name, settings)
    except ValueError as error:
        message = str(error)
        raise ValueError(message if name in message else f'{name}: {message}') from None
    spec = PolicySpec(name, tuple(sorted(values.items())))
    spec.make()
    return spec


def _select_topics(info):
    """Return the input topics to audit: per input type, the default topic or the first by name.

    The recorded calibrated output is not read: the audit recomputes it under every policy.
    """
    from ..telemetry.channels import (
        CHANNEL_FEEDBACK_EVENTS,
        CHANNEL_PREDICTION_OUTCOME,
        CHANNEL_RAW_SELF_ASSESSMENT,
        TYPE_BELIEF_SELF_ASSESSMENT,
        TYPE_FEEDBACK_EVENT,
        TYPE_PREDICTION_OUTCOME,
    )

    chosen = []
    for msgtype, default in ((TYPE_PREDICTION_OUTCOME, CHANNEL_PREDICTION_OUTCOME),
                             (TYPE_BELIEF_SELF_ASSESSMENT, CHANNEL_RAW_SELF_ASSESSMENT),
                             (TYPE_FEEDBACK_EVENT, CHANNEL_FEEDBACK_EVENTS)):
        short = msgtype.replace('/msg/', '/')
        names = sorted(t.name for t in info.topics if t.msgtype in (msgtype, short))
        if names:
            chosen.append(default if default in names else names[0])
    return chosen


class _Histogram:
    def __init__(self):
        self.bins = [0] * HISTOGRAM_BINS
        self.over = 0
        self.inf = 0

    def add(self, value):
        if value == math.inf:
            self.inf += 1
            return
        index = int(value / HISTOGRAM_BIN)
        if index < HISTOGRAM_BINS:
            self.bins[index] += 1
        else:
            self.over += 1

    def to_dict(self):
        return {'bin_width': HISTOGRAM_BIN, 'bins': self.bins, 'over': self.over,
                'inf': self.inf}


class _Levels:
    """Counts, time per level and change points of a stream of levels at belief stamps."""

    def __init__(self):
        self.counts = dict.fromkeys(LEVEL_NAMES, 0)
        self.time_ns = dict.fromkeys(LEVEL_NAMES, 0)
        self.timeline = []
        self.transitions = 0
        self.truncated = False
        self._last = None
        self._last_stamp = None

    def add(self, stamp, level):
        name = level.name
        self.counts[name] += 1
        if self._last is not None:
            self.time_ns[self._last] += max(stamp - self._last_stamp, 0)
        if name != self._last:
            if self._last is not None:
                self.transitions += 1
            if len(self.timeline) < TIMELINE_LIMIT:
                self.timeline.append([stamp, name])
            else:
                self.truncated = True
        self._last, self._last_stamp = name, stamp

    def to_dict(self, end_stamp):
        timeline = list(self.timeline)
        if self._last is not None and (not timeline or timeline[-1][0] != self._last_stamp):
            timeline.append([self._last_stamp, self._last])  # where the last level ends
        return {'levels': self.counts, 'time_per_level_s': {
            k: v / NS_PER_S for k, v in self.time_ns.items()}, 'transitions': self.transitions,
            'timeline': timeline, 'timeline_truncated': self.truncated}


class _PolicyRun:
    def __init__(self, spec, injection_ns, max_history, buffer_size):
        self.spec = spec
        self.loop = spec.loop(max_history, buffer_size)
        self.last_history = None
        self.levels = _Levels()
        self.downgrades = 0
        self.first_downgrade = None
        self.injection_ns = injection_ns
        self.detection = None
        self.untouched = {'assessments': 0, 'downgrades': 0, 'full_windows': 0,
                          'full_window_downgrades': 0}
        self.down_at_injection = False

    def judge(self, raw, injected_outcomes, max_history):
        step = self.loop.assessment(raw)
        self.last_history = step.calibrated.calibration_history
        self.add(raw, step.calibrated, len(step.judged) >= max_history, injected_outcomes)

    def add(self, raw, calibrated, full, injected_outcomes):
        stamp = raw.belief_stamp_sim_ns
        level = calibrated.adjusted_overall_level
        self.levels.add(stamp, level)
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

    def to_dict(self, end_stamp, untouched_outcomes, max_history):
        result = {'policy': self.spec.name, 'parameters': dict(self.spec.parameters),
                  'assessments': sum(self.levels.counts.values()),
                  'downgrades': self.downgrades,
                  'first_downgrade_stamp_sim_ns': self.first_downgrade}
        result.update(self.levels.to_dict(end_stamp))
        untouched = dict(self.untouched)
        untouched['independent_windows'] = untouched_outcomes // max_history
        full = untouched['full_windows']
        untouched['false_downgrade_rate'] = (
            untouched['full_window_downgrades'] / full if full else None)
        result['untouched'] = untouched
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


def _require_telemetry(path, info):
    """Raise NotTelemetryBag, with the hint, when the bag holds no BeliefSelfAssessment."""
    from ..telemetry.channels import TYPE_BELIEF_SELF_ASSESSMENT

    types = {t.msgtype.replace('/msg/', '/') for t in info.topics}
    if TYPE_BELIEF_SELF_ASSESSMENT.replace('/msg/', '/') in types:
        return
    poses = sorted(t.name for t in info.topics if t.msgtype in BRIDGE_INPUT_TYPES)
    found = f' (pose topics: {", ".join(poses)})' if poses else ''
    raise NotTelemetryBag(f'{path}: no BeliefSelfAssessment to replay, not a telemetry bag'
                          f'{found}; {ESTIMATE_HINT}')


def audit_bag(path, policies, *, max_history=DEFAULT_MAX_HISTORY,
              outcome_buffer_size=DEFAULT_OUTCOME_BUFFER_SIZE, injection=None, bridge=None):
    """Replay the bag ``path`` under every :class:`PolicySpec` of ``policies``; return a dict.

    Never raises for a bad bag: the result is then ``{'bag': path, 'ok': False, 'error': one
    line}``. ``injection`` is an :class:`~.injection.Injection` or None. ``bridge`` is None (a
    telemetry bag: its recorded outcomes and assessments) or ``(estimate_topic,
    reference_topic, bridge parameter values)``: an ordinary bag, whose outcomes and
    assessments come from the bridge's engine over those two topics, as ``ghost-feedback
    evaluate`` makes them (:mod:`..evaluate.inputs`).
    """
    from ..telemetry import bag_info, read_bag

    path = str(path)
    try:
        info = bag_info(path)
        if bridge is None:
            _require_telemetry(path, info)
            contracts = (item[3] for item in read_bag(path, topics=_select_topics(info)))
        else:
            from ..evaluate.inputs import bridge_outputs

            contracts = (contract for _, contract in bridge_outputs(path, *bridge))
        return _audit(path, info, contracts, policies, max_history,
                      max(outcome_buffer_size, max_history), injection)
    except NotTelemetryBag as error:
        return {'bag': path, 'ok': False, 'error': ' '.join(str(error).split())[:500],
                'not_telemetry': True}
    except Exception as error:  # noqa: BLE001 - one line per failing bag, the audit goes on
        text = ' '.join(str(error).split()) or type(error).__name__
        return {'bag': path, 'ok': False, 'error': f'{type(error).__name__}: {text}'[:500]}


def _audit(path, info, contracts, policies, max_history, buffer_size, injection):
    injection_ns = None
    if injection is not None:
        injection_ns = injection.start_ns(path, info.start_time_ns, info.end_time_ns)
    runs = [_PolicyRun(spec, injection_ns, max_history, buffer_size) for spec in policies]
    raw_levels = _Levels()
    position, orientation = _Histogram(), _Histogram()
    outcomes = untouched_outcomes = injected_outcomes = assessments = resets = 0
    last_stamp = None
    for contract in contracts:
        if isinstance(contract, PredictionOutcome):
            outcomes += 1
            position.add(contract.position_mahalanobis)
            orientation.add(contract.orientation_mahalanobis)
            if injection_ns is not None and contract.observed_stamp_sim_ns >= injection_ns:
                contract = scale_outcome(contract, injection.factor)
                injected_outcomes += 1
            else:
                untouched_outcomes += 1
            for run in runs:
                run.loop.outcome(contract)
        elif isinstance(contract, BeliefSelfAssessment):
            assessments += 1
            stamp = last_stamp = contract.belief_stamp_sim_ns
            raw_levels.add(stamp, contract.overall_level)
            for run in runs:
                run.judge(contract, injected_outcomes, max_history)
        elif isinstance(contract, LoopEvent) and contract.kind != CONFIGURATION:
            resets += 1
            for run in runs:
                run.loop.apply(contract)
    if assessments == 0:
        raise ValueError(f'{path}: no BeliefSelfAssessment to replay')
    return {
        'bag': path, 'ok': True, 'robot': _robot_name(path),
        'start_time_ns': info.start_time_ns, 'end_time_ns': info.end_time_ns,
        'outcomes': outcomes, 'assessments': assessments, 'recorded_resets': resets,
        'injection_stamp_sim_ns': injection_ns, 'injected_outcomes': injected_outcomes,
        'raw': raw_levels.to_dict(last_stamp),
        'distances': {'position': position.to_dict(), 'orientation': orientation.to_dict()},
        'policies': {run.spec.label: run.to_dict(last_stamp, untouched_outcomes, max_history)
                     for run in runs},
        # ADR-0026a: k_hat and its 95% interval per vec3, from the last assessment's window.
        'overconfidence': overconfidence_as_dict(runs[0].last_history)
        if runs and runs[0].last_history is not None else None,
    }


def _robot_name(path):
    return path.rstrip('/').rsplit('/', 1)[-1]
