# SPDX-License-Identifier: Apache-2.0
"""The one feedback loop: window, stamp rules, held assessments, resets, configuration (pure).

:class:`FeedbackLoop` is the only code that adds outcomes to the window and judges assessments on
it. The feedback node drives it with live messages, ``ghost-feedback replay`` and the fleet audit
with recorded ones, the demo analysis with the outcomes it played: the same events through the
same object give the same outputs, so replay is exact by construction, not by convention.

Events in, results out:

- :meth:`FeedbackLoop.outcome` / :meth:`FeedbackLoop.assessment`: an input, with the node clock
  ``now_ns`` when it is known (live). A stamp further than ``time_jump_tolerance_ns`` ahead of
  ``now_ns`` is refused (``future_stamp``) and changes nothing; a stamp that goes back by more than
  the tolerance behind the newest of its kind resets the window first (cause
  ``input_stamp_jump``: a restarted producer). Replay passes no clock: the recorded inputs are the
  ones the node accepted.
- :meth:`FeedbackLoop.reset` (``~/reset``: cause ``service``), :meth:`FeedbackLoop.clock_jumped`
  (a backward jump of the node clock that leaves state in the future: ``clock_jump``) and
  :meth:`FeedbackLoop.configure` (a parameter change): each returns the :class:`LoopEvent` to
  record, and :meth:`FeedbackLoop.apply` replays a recorded one.
- :meth:`FeedbackLoop.hold` / :meth:`FeedbackLoop.release`: assessments wait ``hold_ns`` (steady
  time, a node setting that does not change any output: the recorded order is the judging order).

Every reset clears the window, the held assessments, the newest stamps and the previous output
(the state a :class:`~.feedback.protocols.HysteresisPolicy` follows).

**Unverified** (:func:`unverified_reason`, the one time rule of "nothing checks the claim"): an
assessment whose belief stamp lies more than ``unverified_after_ns`` after the newest outcome
stamp (``unverified_no_recent_outcomes``), or, with no outcome since the start or the last reset,
after the first assessment (``unverified_no_outcomes``), is published with that reason and at
most ``unverified_max_level``. Stamps only, no clock: replay derives it again from the inputs.
``unverified_after_ns`` 0 turns it off (how a bag recorded before the rule replays).
"""

import collections
from collections.abc import Mapping, Sequence
import dataclasses
import json
from typing import Self

from .feedback import (
    assess_with_feedback,
    CalibratedSelfAssessment,
    CalibrationAdjustmentPolicy,
    DEFAULT_MAX_HISTORY,
    DEFAULT_POLICY,
    HISTORY_SCHEMA_SQUARED_DISTANCES,
    make_policy,
    policy_parameters,
)
from .feedback.overconfidence import check_components, VEC3_COMPONENTS
from .contracts import BeliefSelfAssessment, NS_PER_S, PredictionOutcome, SelfAssessmentLevel
from .window import ADDED, DEFAULT_OUTCOME_BUFFER_SIZE, OutcomeWindow

DEFAULT_TIME_JUMP_TOLERANCE_NS = 5 * NS_PER_S
"""Default of the node's ``time_jump_tolerance_s`` (5 s), in nanoseconds."""

RESET = 'reset'
CONFIGURATION = 'configuration'
EVENT_KINDS = (RESET, CONFIGURATION)

CAUSE_SERVICE = 'service'
CAUSE_CLOCK_JUMP = 'clock_jump'
CAUSE_INPUT_STAMP_JUMP = 'input_stamp_jump'
CAUSE_START = 'start'
CAUSE_PARAMETERS = 'parameters'
DERIVED_CAUSES = frozenset((CAUSE_INPUT_STAMP_JUMP,))
"""Causes the loop derives from its inputs: replay re-derives them and checks the record."""

FUTURE_STAMP = 'future_stamp'

MAX_HISTORY_RANGE = (1, 100_000)
"""The node's ``max_history`` range; :meth:`LoopConfig.make` refuses any other value."""
OUTCOME_BUFFER_SIZE_RANGE = (1, 1_000_000)
"""The node's ``outcome_buffer_size`` range."""
TIME_JUMP_TOLERANCE_S_RANGE = (0.001, 3600.0)
"""The node's ``time_jump_tolerance_s`` range, in seconds (:meth:`LoopConfig.make` checks it
in nanoseconds)."""

UNVERIFIED_NO_OUTCOMES = 'unverified_no_outcomes'
"""Reason: assessments flow, no outcome arrived since the start (or the last reset)."""
UNVERIFIED_NO_RECENT_OUTCOMES = 'unverified_no_recent_outcomes'
"""Reason: assessments flow, the newest outcome is older than ``unverified_after_ns``."""
UNVERIFIED_REASONS = (UNVERIFIED_NO_OUTCOMES, UNVERIFIED_NO_RECENT_OUTCOMES)
DEFAULT_UNVERIFIED_AFTER_NS = 20 * NS_PER_S
"""Default of the node's ``unverified_after_s`` (20 s; docs/node.md says why)."""
UNVERIFIED_AFTER_S_RANGE = (0.0, 86_400.0)
"""The node's ``unverified_after_s`` range, in seconds (0: the rule is off)."""
UNVERIFIED_LEVELS = ('KNOWN', 'UNCERTAIN', 'UNKNOWN')
"""Choices of ``unverified_max_level`` (KNOWN: the level is left to the policy)."""
DEFAULT_UNVERIFIED_MAX_LEVEL = 'UNCERTAIN'
UNVERIFIED_OFF = {'unverified_after_ns': 0, 'unverified_max_level': DEFAULT_UNVERIFIED_MAX_LEVEL}
"""The values a configuration recorded before the rule existed is read with (the old outputs)."""


def unverified_reason(belief_stamp_ns: int, newest_outcome_ns: int | None,
                      first_belief_ns: int | None, after_ns: int) -> str | None:
    """Return why an assessment at ``belief_stamp_ns`` is unverified, or None.

    ``newest_outcome_ns``: the newest outcome stamp held (None: no outcome since the start or
    the last reset); ``first_belief_ns``: the first belief stamp since then. More than
    ``after_ns`` of belief-stamp time without an outcome is unverified; ``after_ns`` 0: never.
    """
    if after_ns <= 0:
        return None
    if newest_outcome_ns is None:
        since = belief_stamp_ns if first_belief_ns is None else first_belief_ns
        return UNVERIFIED_NO_OUTCOMES if belief_stamp_ns - since > after_ns else None
    if belief_stamp_ns - newest_outcome_ns > after_ns:
        return UNVERIFIED_NO_RECENT_OUTCOMES
    return None


def future_stamp_detail(kind: str, stamp: int, now_ns: int | None,
                        tolerance_ns: int) -> str | None:
    """Return why ``stamp`` is refused as ahead of the clock ``now_ns``, or None.

    The stamp rule of the feedback loop and of the outcome bridge: a stamp more than
    ``tolerance_ns`` ahead of the clock is refused (:data:`FUTURE_STAMP`), never the new newest.
    An unknown clock (None, or 0 before the first /clock) refuses nothing.
    """
    if not now_ns or now_ns < 0 or stamp <= now_ns + tolerance_ns:
        return None
    return (f'{kind} stamp {stamp} ns is {(stamp - now_ns) / NS_PER_S:.3f} s ahead of the node '
            f'clock (tolerance {tolerance_ns / NS_PER_S:g} s)')


RATE_MIN_OUTCOMES = 8
"""Outcomes a window needs before :func:`window_rate_hz` measures a rate."""


def window_rate_hz(window: Sequence[PredictionOutcome]) -> float | None:
    """Return the outcome rate of a judged window, ``(n - 1) / span`` of its observed stamps.

    None with fewer than :data:`RATE_MIN_OUTCOMES` outcomes or a zero span (the policy then
    assumes its most conservative rate). A function of the window only, so replay derives the
    same rate, and the threshold it gives, as the node.
    """
    n = len(window)
    if n < RATE_MIN_OUTCOMES:
        return None
    span = window[-1].observed_stamp_sim_ns - window[0].observed_stamp_sim_ns
    if span <= 0:
        return None
    return (n - 1) * NS_PER_S / span


def went_back(stamp: int, newest: int, tolerance_ns: int) -> bool:
    """Return True when ``stamp`` lies more than ``tolerance_ns`` before ``newest``.

    The other stamp rule of the loop and the bridge: such an input starts a new timeline (a
    restarted producer, a sim reset), so what is held of the old one is reset.
    """
    return stamp < newest - tolerance_ns


MAX_JSON_TEXT = 65_536
"""Longest JSON text of a configuration read back (a bag's custom data, a FeedbackEvent value)."""
MAX_JSON_DEPTH = 16
"""Deepest nesting of such a text (a policy's parameters are one flat object)."""


def parse_json_text(text: str, what: str) -> object:
    """Return ``json.loads(text)`` once ``text`` is within :data:`MAX_JSON_TEXT` and depth.

    The bounds are checked before parsing (a text of 200,000 nested brackets made the parser
    raise RecursionError): ValueError naming ``what`` and the size, TypeError for a non-str.
    """
    if not isinstance(text, str):
        raise TypeError(f'{what} must be JSON text, got {type(text).__name__}')
    if len(text) > MAX_JSON_TEXT:
        raise ValueError(f'{what} is {len(text):,} characters long, more than {MAX_JSON_TEXT:,}')
    if '[' in text or '{' in text:
        depth = deepest = 0
        in_string = escaped = False
        for char in text:
            if in_string:
                if escaped:
                    escaped = False
                elif char == '\\':
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in '[{':
                depth += 1
                deepest = max(deepest, depth)
            elif char in ']}':
                depth -= 1
        if deepest > MAX_JSON_DEPTH:
            raise ValueError(f'{what} is nested {deepest} deep, more than {MAX_JSON_DEPTH}')
    return json.loads(text)


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """What the loop's outputs depend on: policy and parameters, window sizes, time tolerance.

    ``parameters`` is the full, sorted ``((name, value), ...)`` of the policy. Build it with
    :meth:`make`, which validates every value and names the bad one.
    """

    policy: str = DEFAULT_POLICY
    parameters: tuple[tuple[str, object], ...] = ()
    max_history: int = DEFAULT_MAX_HISTORY
    outcome_buffer_size: int = DEFAULT_OUTCOME_BUFFER_SIZE
    time_jump_tolerance_ns: int = DEFAULT_TIME_JUMP_TOLERANCE_NS
    unverified_after_ns: int = DEFAULT_UNVERIFIED_AFTER_NS
    unverified_max_level: str = DEFAULT_UNVERIFIED_MAX_LEVEL
    vec3_components: tuple[int, int] = VEC3_COMPONENTS
    """Error components the outcome source keeps per vec3 (position, orientation): 3 each, or
    fewer for a planar source (the bridge's ``ignored_axes``). The levels do not depend on it
    (the source maps its distances onto chi(3)); the estimates of ``k`` map them back
    (:mod:`.feedback.overconfidence`)."""

    @classmethod
    def make(cls, policy: str = DEFAULT_POLICY, parameters: Mapping[str, object] | None = None,
             max_history: int = DEFAULT_MAX_HISTORY,
             outcome_buffer_size: int = DEFAULT_OUTCOME_BUFFER_SIZE,
             time_jump_tolerance_ns: int = DEFAULT_TIME_JUMP_TOLERANCE_NS,
             unverified_after_ns: int = DEFAULT_UNVERIFIED_AFTER_NS,
             unverified_max_level: str = DEFAULT_UNVERIFIED_MAX_LEVEL,
             vec3_components: Sequence[int] = VEC3_COMPONENTS) -> Self:
        """Return a validated config (ValueError/TypeError naming the bad value).

        The node's own ranges (``MAX_HISTORY_RANGE``, ...) and the policy's ``MAX_HISTORY``
        when it has one: the node, replay (a recorded configuration), evaluate and the audit
        all build their configuration here, so all refuse the same values.
        """
        built = make_policy(policy, parameters)  # refuses an unknown policy/parameter, names it
        full = policy_parameters(policy)
        full.update(parameters or {})
        config = cls(policy, tuple(sorted(full.items())), max_history, outcome_buffer_size,
                     time_jump_tolerance_ns, unverified_after_ns, unverified_max_level,
                     check_components('LoopConfig', vec3_components))
        low_ns, high_ns = (round(bound * NS_PER_S) for bound in TIME_JUMP_TOLERANCE_S_RANGE)
        after_low, after_high = (round(bound * NS_PER_S) for bound in UNVERIFIED_AFTER_S_RANGE)
        for name, (low, high) in (('max_history', MAX_HISTORY_RANGE),
                                  ('outcome_buffer_size', OUTCOME_BUFFER_SIZE_RANGE),
                                  ('time_jump_tolerance_ns', (low_ns, high_ns)),
                                  ('unverified_after_ns', (after_low, after_high))):
            value = getattr(config, name)
            if type(value) is not int or not low <= value <= high:
                raise ValueError(f'{name} must be an int in [{low}, {high}], got {value!r}')
        if unverified_max_level not in UNVERIFIED_LEVELS:
            raise ValueError(f'unverified_max_level must be one of {", ".join(UNVERIFIED_LEVELS)}'
                             f', got {unverified_max_level!r}')
        limit = getattr(built, 'MAX_HISTORY', None)
        if limit is not None and max_history > limit:
            raise ValueError(f'max_history must be <= {limit} with policy {policy!r} (the '
                             f'largest window it judges), got {max_history}')
        return config

    @property
    def buffer_capacity(self) -> int:
        """Return the window's capacity: ``max(outcome_buffer_size, max_history)``."""
        return max(self.outcome_buffer_size, self.max_history)

    def make_policy(self) -> CalibrationAdjustmentPolicy:
        """Return the policy object."""
        return make_policy(self.policy, dict(self.parameters))

    def describe(self) -> str:
        """Return e.g. ``calibrated_exceedance(alpha=0.01), max_history 32, ...``."""
        parameters = ', '.join(f'{k}={v!r}' for k, v in self.parameters)
        unverified = (f'unverified after {self.unverified_after_ns / NS_PER_S:g} s at most '
                      f'{self.unverified_max_level}' if self.unverified_after_ns else
                      'unverified rule off')
        components = ('' if self.vec3_components == VEC3_COMPONENTS else
                      ', vec3 components {} position, {} orientation'.format(
                          *self.vec3_components))
        return (f'{self.policy}({parameters}), max_history {self.max_history}, '
                f'outcome_buffer_size {self.outcome_buffer_size}, time_jump_tolerance '
                f'{self.time_jump_tolerance_ns / NS_PER_S:g} s, {unverified}{components}')

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict."""
        return {
            'policy': self.policy, 'parameters': dict(self.parameters),
            'max_history': self.max_history, 'outcome_buffer_size': self.outcome_buffer_size,
            'time_jump_tolerance_ns': self.time_jump_tolerance_ns,
            'unverified_after_ns': self.unverified_after_ns,
            'unverified_max_level': self.unverified_max_level,
            'vec3_components': list(self.vec3_components),
        }

    def parameter_texts(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Return ``(names, values)``: the parameters with each value as exact JSON text.

        The policy's parameters, then the loop's own that have no field of their own in a
        FeedbackEvent, under :data:`LOOP_PARAMETER_PREFIX` (``loop.unverified_after_ns``, ...).
        """
        loop = tuple((LOOP_PARAMETER_PREFIX + name, getattr(self, name))
                     for name in LOOP_TEXT_FIELDS)
        every = self.parameters + loop
        return (tuple(name for name, _ in every), tuple(json.dumps(value) for _, value in every))

    @classmethod
    def from_texts(cls, policy: str, names: Sequence[str], values: Sequence[str],
                   max_history: int, outcome_buffer_size: int,
                   time_jump_tolerance_ns: int) -> Self:
        """Inverse of :meth:`parameter_texts` (ValueError for text that is not JSON).

        A text without the loop's own entries (recorded before they existed) gets
        :data:`UNVERIFIED_OFF`, the values that give its old outputs.
        """
        if len(names) != len(values):
            raise ValueError(f'{len(names)} parameter names for {len(values)} values')
        parsed = {n: parse_json_text(v, f'parameter {n!r}') for n, v in zip(names, values)}
        loop = dict(UNVERIFIED_OFF)
        for name in LOOP_TEXT_FIELDS:
            key = LOOP_PARAMETER_PREFIX + name
            if key in parsed:
                loop[name] = parsed.pop(key)
        return cls.make(policy, parsed, max_history, outcome_buffer_size, time_jump_tolerance_ns,
                        **loop)  # type: ignore[arg-type]


LOOP_PARAMETER_PREFIX = 'loop.'
"""Prefix of the loop's own settings among a FeedbackEvent's parameter names."""
LOOP_TEXT_FIELDS = ('unverified_after_ns', 'unverified_max_level', 'vec3_components')
"""LoopConfig fields a FeedbackEvent carries as parameter texts (it has no field for them)."""


@dataclasses.dataclass(frozen=True)
class LoopEvent:
    """Something that changed the loop's state and is not an input: a reset or a new config.

    ``stamp_ns`` is the node clock at the event (the log time of its record); ``config`` is the
    configuration in effect after it (every event carries it, so any one event says it all).
    """

    stamp_ns: int
    kind: str
    cause: str
    detail: str
    config: LoopConfig

    def __post_init__(self) -> None:
        if self.kind not in EVENT_KINDS:
            raise ValueError(f'LoopEvent.kind must be one of {EVENT_KINDS}, got {self.kind!r}')
        if type(self.stamp_ns) is not int or self.stamp_ns < 0:
            raise ValueError(f'LoopEvent.stamp_ns must be an int >= 0, got {self.stamp_ns!r}')
        if not isinstance(self.config, LoopConfig):
            raise TypeError(f'LoopEvent.config must be a LoopConfig, got {self.config!r}')


class Step:
    """What one input did: the output to publish, a refusal, the events it caused.

    - ``calibrated``: the CalibratedSelfAssessment to publish (assessments), else None;
    - ``judged``: the outcomes it was judged on (assessments), else ();
    - ``refusal``: ``(reason, text)`` when the input was refused (nothing else changed), else None;
    - ``status``: the window's ``added`` / ``duplicate`` / ``too_old`` (outcomes), else None;
    - ``late``: an added outcome that would have counted for an assessment already published;
    - ``events``: the LoopEvents (resets) the input caused, to record before the input.
    """

    __slots__ = ('calibrated', 'events', 'judged', 'late', 'refusal', 'status')

    def __init__(self, calibrated: CalibratedSelfAssessment | None = None,
                 judged: Sequence[PredictionOutcome] = (),
                 refusal: tuple[str, str] | None = None, status: str | None = None,
                 late: bool = False, events: tuple[LoopEvent, ...] = ()) -> None:
        self.calibrated = calibrated
        self.judged = judged
        self.refusal = refusal
        self.status = status
        self.late = late
        self.events = events

    @property
    def accepted(self) -> bool:
        """Return True when the input was taken (so it is recorded), False when refused."""
        return self.refusal is None


class FeedbackLoop:
    """The feedback loop of one node (or one replay): see the module documentation."""

    __slots__ = ('_config', '_first_belief', '_held', '_history_schema', '_newest_belief',
                 '_policy', '_window', 'hold_ns', 'outcome_rate_hz', 'policy_in_use', 'previous')

    def __init__(self, config: LoopConfig, *, hold_ns: int = 0,
                 history_schema_version: int = HISTORY_SCHEMA_SQUARED_DISTANCES) -> None:
        if not isinstance(config, LoopConfig):
            raise TypeError(f'FeedbackLoop needs a LoopConfig, got {config!r}')
        self._config = config
        self._policy = config.make_policy()
        self._window = OutcomeWindow(config.buffer_capacity)
        self._held: collections.deque[tuple[int, BeliefSelfAssessment]] = collections.deque()
        self._newest_belief: int | None = None
        self._first_belief: int | None = None
        # The CalibrationHistory schema the loop builds: 2 (ADR-0026a), or 1 to replay a bag
        # recorded before it.
        self._history_schema = history_schema_version
        self.hold_ns = hold_ns
        self.previous: CalibratedSelfAssessment | None = None
        """The policy's CalibratedSelfAssessment of the last assessment since the last reset (or
        None): what a hysteresis policy follows (before the unverified rule, which is not the
        policy's state)."""
        self.outcome_rate_hz: float | None = None
        """The outcome rate measured on the last judged window (:func:`window_rate_hz`)."""
        self.policy_in_use: CalibrationAdjustmentPolicy = self._policy
        """The policy object the last assessment was judged by (its budget spent at the rate)."""

    @property
    def config(self) -> LoopConfig:
        """Return the LoopConfig in effect."""
        return self._config

    @property
    def policy(self) -> CalibrationAdjustmentPolicy:
        """Return the policy object in effect."""
        return self._policy

    def budget(self) -> dict[str, str]:
        """Return the false-alarm budget in use, as text for /diagnostics and echo ({} if none).

        ``false_alarm_budget_per_day``, the ``outcome_rate_hz`` measured on the last judged
        window (or ``not measured yet``), the rate the budget is spent at and the one-step
        threshold that follows (:meth:`Vec3ScalePolicy.at_rate`), the bias channel's share of
        the budget, the margin its threshold sits below ln(ARL0), and the threshold (``inf``:
        off).
        """
        policy = self.policy_in_use
        if not getattr(policy, 'budgeted', False):
            return {}
        rate = self.outcome_rate_hz
        return {
            'false_alarm_budget_per_day': f'{getattr(policy, "false_alarm_budget_per_day"):g}',
            'outcome_rate_hz': f'{rate:.2f}' if rate is not None else 'not measured yet',
            'budget_spent_at_rate_hz': f'{getattr(policy, "outcome_rate_hz"):.3g}',
            'one_step_threshold_nats': f'{getattr(policy, "threshold_in_use"):.2f}',
            'bias_budget_share': f'{getattr(policy, "bias_budget_share", 0.0):g}',
            'bias_threshold_margin': f'{getattr(policy, "bias_threshold_margin", 0.0):g}',
            'bias_threshold_nats': f'{getattr(policy, "bias_threshold", float("inf")):.2f}',
        }

    @property
    def buffer_fill(self) -> tuple[int, int]:
        """Return ``(outcomes held, capacity)`` of the window's buffer."""
        return len(self._window), self._window.capacity

    @property
    def newest_outcome_stamp(self) -> int | None:
        """Return the newest observed stamp in the window, or None."""
        return self._window.newest_stamp

    @property
    def newest_belief_stamp(self) -> int | None:
        """Return the newest belief stamp judged since the last reset, or None."""
        return self._newest_belief

    @property
    def held(self) -> int:
        """Return the number of assessments waiting for their hold time."""
        return len(self._held)

    # -- inputs ---------------------------------------------------------------------------------

    def _stamp_rule(
            self, kind: str, stamp: int, newest: int | None, now_ns: int | None,
    ) -> tuple[tuple[str, str] | None, tuple[LoopEvent, ...]]:
        """Return ``(refusal, events)`` for an input stamp: future refusal, or a reset."""
        tolerance = self._config.time_jump_tolerance_ns
        future = future_stamp_detail(kind, stamp, now_ns, tolerance)
        if future is not None:
            return (FUTURE_STAMP, future), ()
        if newest is not None and went_back(stamp, newest, tolerance):
            event = self.reset(CAUSE_INPUT_STAMP_JUMP, f'{kind} stamp went back by '
                               f'{(newest - stamp) / NS_PER_S:.3f} s (a restarted producer?)',
                               stamp if now_ns is None else max(now_ns, 0))
            return None, (event,)
        return None, ()

    def outcome(self, outcome: PredictionOutcome, now_ns: int | None = None) -> Step:
        """Take a PredictionOutcome; return its :class:`Step`."""
        stamp = outcome.observed_stamp_sim_ns
        refusal, events = self._stamp_rule('outcome', stamp, self._window.newest_stamp, now_ns)
        if refusal is not None:
            return Step(refusal=refusal)
        status = self._window.add(outcome)
        late = (status == ADDED and self._newest_belief is not None
                and stamp <= self._newest_belief)
        return Step(status=status, late=late, events=events)

    def assessment(self, raw: BeliefSelfAssessment, now_ns: int | None = None) -> Step:
        """Judge a BeliefSelfAssessment now; return its :class:`Step` (``calibrated`` set)."""
        stamp = raw.belief_stamp_sim_ns
        newest = self._newest_belief
        refusal, events = self._stamp_rule('assessment', stamp, newest, now_ns)
        if refusal is not None:
            return Step(refusal=refusal)
        config = self._config
        judged = self._window.causal_window(stamp, config.max_history)
        policy = self._policy
        at_rate = getattr(policy, 'at_rate', None)
        if at_rate is not None:
            self.outcome_rate_hz = window_rate_hz(judged)
            policy = at_rate(self.outcome_rate_hz)
        self.policy_in_use = policy
        calibrated = assess_with_feedback(
            raw, judged, policy, config.max_history, previous=self.previous,
            history_schema_version=self._history_schema)
        calibrated = self._bias_rule(policy, calibrated, judged)
        self.previous = calibrated
        if newest is None or stamp > newest:
            self._newest_belief = stamp
        if self._first_belief is None:
            self._first_belief = stamp
        unverified = unverified_reason(stamp, self._window.newest_stamp, self._first_belief,
                                       config.unverified_after_ns)
        if unverified is not None:
            cap = SelfAssessmentLevel[config.unverified_max_level]
            calibrated = dataclasses.replace(
                calibrated, adjustment_reason=unverified,
                adjusted_overall_level=min(calibrated.adjusted_overall_level, cap))
        return Step(calibrated=calibrated, judged=judged, events=events)

    def _bias_rule(self, policy: CalibrationAdjustmentPolicy, calibrated: CalibratedSelfAssessment,
                   judged: Sequence[PredictionOutcome]) -> CalibratedSelfAssessment:
        """Return ``calibrated`` one step down for a bias the policy's scale test left KNOWN.

        The policy's bias channel (``Vec3ScalePolicy.bias_step``) judges the newest judged
        outcome's ``bias_evidence_nats``; it decides only where the scale test took no step (a
        scale downgrade keeps its own reason).
        """
        bias_step = getattr(policy, 'bias_step', None)
        if bias_step is None or not judged or (
                calibrated.adjusted_overall_level != calibrated.raw_assessment.overall_level):
            return calibrated
        newest = judged[-1]
        reason = bias_step(newest.bias_evidence_nats, newest.bias_position_share, self.previous)
        if reason is None:
            return calibrated
        return dataclasses.replace(
            calibrated, adjustment_reason=reason,
            adjusted_overall_level=calibrated.raw_assessment.overall_level.downgraded(1))

    def hold(self, raw: BeliefSelfAssessment, arrival_ns: int) -> bool:
        """Queue ``raw`` (arrived at steady ``arrival_ns``) to be judged after ``hold_ns``.

        Return True when it was queued, False when it must be judged now (no hold: nothing
        waits, and ``hold_ns`` is 0).
        """
        if self.hold_ns <= 0 and not self._held:
            return False
        self._held.append((arrival_ns, raw))
        return True

    def release(self, steady_ns: int, now_ns: int | None = None) -> list[Step]:
        """Judge the held assessments whose hold is over at ``steady_ns``; return their Steps."""
        held = self._held
        due = steady_ns - self.hold_ns
        steps: list[Step] = []
        while held and held[0][0] <= due:
            steps.append(self.assessment(held.popleft()[1], now_ns))
        return steps

    # -- events ---------------------------------------------------------------------------------

    def _clear(self) -> None:
        self._window.clear()
        self._held.clear()
        self._newest_belief = None
        self._first_belief = None
        self.previous = None

    def reset(self, cause: str, detail: str, stamp_ns: int) -> LoopEvent:
        """Clear the window and every time-ordered state; return the event to record.

        The event's detail ends with how many outcomes the window dropped.
        """
        dropped = len(self._window)
        self._clear()
        return LoopEvent(stamp_ns, RESET, cause, f'{detail}; {dropped} outcomes dropped',
                         self._config)

    def clock_jumped(self, delta_ns: int, now_ns: int) -> LoopEvent | None:
        """Reset after a node clock jump of ``delta_ns`` when the state lies in the future.

        When the inputs' stamps went back first (their reset already happened), the state holds
        only stamps of the new timeline and nothing is reset twice. Return the event or None.
        """
        if delta_ns >= 0:
            return None
        horizon = now_ns + self._config.time_jump_tolerance_ns
        newest = (self._window.newest_stamp, self._newest_belief)
        if not any(stamp is not None and stamp > horizon for stamp in newest):
            return None
        return self.reset(CAUSE_CLOCK_JUMP, f'node clock went back by {-delta_ns / NS_PER_S:.3f} s',
                          max(now_ns, 0))

    def configure(
            self, config: LoopConfig, stamp_ns: int, cause: str = CAUSE_PARAMETERS,
    ) -> LoopEvent | None:
        """Apply a new configuration; return its event (None when nothing changed).

        The window keeps its outcomes (resized to the new capacity); a new policy or new
        parameters forget the previous output.
        """
        if not isinstance(config, LoopConfig):
            raise TypeError(f'configure needs a LoopConfig, got {config!r}')
        old = self._config
        if config == old:
            return None
        if (config.policy, config.parameters) != (old.policy, old.parameters):
            self._policy = config.make_policy()
            self.policy_in_use = self._policy
            self.outcome_rate_hz = None
            self.previous = None
        self._config = config
        if self._window.capacity != config.buffer_capacity:
            self._window.resize(config.buffer_capacity)
        return LoopEvent(stamp_ns, CONFIGURATION, cause, config.describe(), config)

    def apply(self, event: LoopEvent) -> bool:
        """Apply a recorded event (replay); return True when it changed the state.

        Derived resets (``input_stamp_jump``) are not applied: the loop derives them again from
        the inputs, and replay checks that it did.
        """
        if event.kind == CONFIGURATION:
            return self.configure(event.config, event.stamp_ns, event.cause) is not None
        if event.cause in DERIVED_CAUSES:
            return False
        self._clear()
        return True
