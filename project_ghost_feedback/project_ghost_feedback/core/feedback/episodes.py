# SPDX-License-Identifier: Apache-2.0
"""Downgrade episodes of a run, its pooled overconfidence and its pose error (pure, stdlib only).

Every offline summary of a verdict (``ghost-feedback evaluate``, ``replay --json``, the fleet
audit) says *when* and *why* the estimator was downgraded with the same code:

- an **episode** is a maximal run of consecutive calibrated assessments whose calibrated level
  is below the raw one (:attr:`~.types.CalibratedSelfAssessment.was_downgraded`). It starts at
  the belief stamp of its first downgraded assessment and ends at the belief stamp of the first
  assessment back at the raw level (``ongoing`` when the run ends while downgraded: it then ends
  at the last assessment). Its ``level`` is the least confident calibrated level reached, its
  ``reason`` the policy's reason where that level was first reached (``reasons``: every reason
  seen, in order), and its ``overconfidence`` the estimate ``k`` with its 95% interval
  (:mod:`.overconfidence`) of the window with the largest ``k_hat`` during the episode, per vec3
  (the peak; None with schema-1 histories);
- :class:`RunOverconfidence` pools every outcome of the run: ``k`` over the run with its 95%
  interval (the window estimate of one assessment says only what its last ``max_history``
  outcomes said);
- :class:`PoseErrorStatistics`: the estimate's error against the reference as evo's APE reports
  it, RMSE and maximum of the position error's norm in metres and of the rotation angle in
  degrees;
- :func:`time_origin`: where "seconds from the bag start" count from;
- :class:`TransformStep`: the outcome bridge's note that the distances jumped (or fell back) at
  the stamp of a /tf change of the reference's chain (bridge/frame_steps.py); an episode carries
  the notes stamped from :data:`TRANSFORM_STEP_LEAD_NS` before its start to its end
  (``transform_steps``), so a frame error is named as one. Old recordings have none: the field
  is empty.

:class:`EpisodeTracker` streams (bounded memory: at most ``limit`` episodes are kept, all are
counted); :func:`downgrade_episodes` is the same over a sequence.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
import math

from ..contracts import NS_PER_S, PredictionOutcome, SelfAssessmentLevel
from .overconfidence import (
    check_components,
    estimate_from_squared_distances,
    estimate_from_sum,
    OverconfidenceEstimate,
    unmapped_square,
    unmapped_squared_distances,
    VEC3_COMPONENTS,
)
from .types import CalibratedSelfAssessment, HISTORY_SCHEMA_SQUARED_DISTANCES

VEC3_NAMES = ('position', 'orientation')

TIME_ORIGIN_TOLERANCE_NS = 5 * NS_PER_S
"""How far before the bag's first log time (or after its last) a header stamp may lie and still
be taken to share the bag's clock (the node's default ``time_jump_tolerance_s``)."""

ORIGIN_BAG_START = 'bag_start'
ORIGIN_FIRST_STAMP = 'first_stamp'

REASON_WORDS = {
    'significant_overconfidence': 'overconfident',
    'gross_overconfidence': 'grossly overconfident',
    'overconfident_position': 'overconfident in position',
    'overconfident_orientation': 'overconfident in orientation',
    'grossly_overconfident_position': 'grossly overconfident in position',
    'grossly_overconfident_orientation': 'grossly overconfident in orientation',
    'biased_position': 'biased in position (a constant error the claim does not cover)',
    'biased_orientation': 'biased in orientation (a constant error the claim does not cover)',
    'significant_miscalibration': 'miscalibrated',
    'gross_miscalibration': 'grossly miscalibrated',
    'infinite_mahalanobis': 'contradicted (an infinite distance)',
    'downgrade_from_calibration': 'downgraded by the calibration',
    'no_outcomes_yet': 'no outcomes yet',
    'unverified_no_outcomes': 'unverified (no outcome since the start)',
    'unverified_no_recent_outcomes': 'unverified (no recent outcome)',
}
"""A policy's reason in words, for the first line of a summary (others: underscores as spaces)."""


def reason_words(reason: str) -> str:
    """Return a policy's ``adjustment_reason`` in words (``gross_overconfidence`` -> ...)."""
    return REASON_WORDS.get(reason, reason.replace('_', ' '))


def time_origin(bag_start_ns: int | None, bag_end_ns: int | None,
                first_stamp_ns: int | None) -> tuple[int, str]:
    """Return ``(origin_ns, kind)``: where "seconds from the bag start" count from.

    The bag's first log time (``kind`` :data:`ORIGIN_BAG_START`) when the run's first header
    stamp lies in the bag's log-time range (within :data:`TIME_ORIGIN_TOLERANCE_NS`): stamps and
    log times share a clock, so a second here is a second on the bag's timeline (rqt_bag,
    Foxglove). Otherwise (sim-time stamps in a bag recorded on wall time, or no bag times) the
    first header stamp (:data:`ORIGIN_FIRST_STAMP`); 0 when there is neither.
    """
    if first_stamp_ns is None:
        return (bag_start_ns or 0), ORIGIN_BAG_START
    if (bag_start_ns is not None and bag_end_ns is not None
            and bag_start_ns - TIME_ORIGIN_TOLERANCE_NS <= first_stamp_ns
            <= bag_end_ns + TIME_ORIGIN_TOLERANCE_NS):
        return bag_start_ns, ORIGIN_BAG_START
    return first_stamp_ns, ORIGIN_FIRST_STAMP


def seconds(stamp_ns: int, origin_ns: int) -> float:
    """Return ``stamp_ns`` in seconds from ``origin_ns``, rounded to the microsecond."""
    return round((stamp_ns - origin_ns) / NS_PER_S, 6)


def _estimates_text(estimates: dict[str, OverconfidenceEstimate | None] | None) -> str:
    if not estimates:
        return 'k not known (schema-1 history)'
    parts = [f'{name} k = {value}' for name, value in estimates.items() if value is not None]
    return ', '.join(parts) or 'k not known (empty window)'


def _error_text(error: Mapping[str, object] | None) -> str:
    """Return ``; error RMSE 0.123 m, 1.23 deg (n outcomes)``, or '' without outcomes."""
    if not error or not error.get('pairs'):
        return ''
    position, rotation = error['position_m'], error['rotation_deg']
    assert isinstance(position, dict) and isinstance(rotation, dict)
    return (f'; error RMSE {position["rmse"]:.3f} m, {rotation["rmse"]:.2f} deg (max '
            f'{position["max"]:.3f} m, {rotation["max"]:.2f} deg; {error["pairs"]} outcomes)')


def _estimates_dict(estimates: dict[str, OverconfidenceEstimate | None] | None,
                    ) -> dict[str, dict[str, float | str | int] | None] | None:
    if estimates is None:
        return None
    return {name: None if value is None else value.as_dict() for name, value in estimates.items()}


TRANSFORM_STEP_LEAD_NS = 10 * NS_PER_S
"""A transform step stamped up to this long before an episode starts belongs to it: the window
needs a few outcomes after the jump before the level drops (0.02-2.5 s measured)."""
TRANSFORM_STEPS_KEPT = 64
"""Transform steps an :class:`EpisodeTracker` keeps while no episode is open (the newest)."""
JUMP, FALL = 'jump', 'fall'


@dataclass(frozen=True, slots=True)
class TransformStep:
    """The distances jumped (``kind`` :data:`JUMP`) or fell back (:data:`FALL`) at a /tf change.

    ``stamp_ns``: the estimate whose distance crossed; ``step_stamp_ns``: the reference at
    which the transform ``target_frame <- source_frame`` (the estimate's frame from the
    reference's) changed by ``step_m`` metres and ``step_deg`` degrees from the reference before
    it; ``vec3`` (``position`` or ``orientation``) went from ``distance_before`` to
    ``distance_after`` (unsquared Mahalanobis).
    """

    stamp_ns: int
    kind: str
    target_frame: str
    source_frame: str
    step_stamp_ns: int
    step_m: float
    step_deg: float
    vec3: str
    distance_before: float
    distance_after: float

    def as_dict(self, origin_ns: int) -> dict[str, object]:
        """Return a JSON-ready dict; ``*_s`` count from ``origin_ns``."""
        after = self.distance_after
        return {'kind': self.kind, 'stamp_s': seconds(self.stamp_ns, origin_ns),
                'stamp_ns': self.stamp_ns, 'step_stamp_ns': self.step_stamp_ns,
                'target_frame': self.target_frame, 'source_frame': self.source_frame,
                'step_m': round(self.step_m, 6), 'step_deg': round(self.step_deg, 6),
                'vec3': self.vec3, 'distance_before': round(self.distance_before, 6),
                'distance_after': round(after, 6) if math.isfinite(after) else 'inf',
                'description': self.describe(origin_ns)}

    def describe(self, origin_ns: int | None = None) -> str:
        """Return e.g. ``position distance jumped 1.2 -> 19.8 at a /tf change: odom <- map...``.

        ``origin_ns`` None: the stamp in nanoseconds, else in seconds from it.
        """
        verb = 'jumped' if self.kind == JUMP else 'fell back'
        when = (f'stamp {self.step_stamp_ns} ns' if origin_ns is None
                else f'{seconds(self.step_stamp_ns, origin_ns):.2f} s')
        return (f'{self.vec3} distance {verb} {self.distance_before:.1f} -> '
                f'{self.distance_after:.1f} at a /tf change: {self.target_frame} <- '
                f'{self.source_frame} stepped {self.step_m:.3f} m, {self.step_deg:.2f} deg at '
                f"{when} (a frame error, or a correction of the reference's frame?)")


@dataclass(frozen=True, slots=True)
class Episode:
    """One downgrade episode (see the module documentation); stamps are belief stamps in ns."""

    start_ns: int
    end_ns: int
    level: SelfAssessmentLevel
    raw_level: SelfAssessmentLevel
    reason: str
    reasons: tuple[str, ...]
    assessments: int
    ongoing: bool
    overconfidence: dict[str, OverconfidenceEstimate | None] | None
    error: dict[str, object] | None = None
    """The outcomes' error during the episode (:meth:`PoseErrorStatistics.as_dict`: position in
    m, rotation in deg), when the tracker was given outcomes (:meth:`EpisodeTracker.outcome`)."""
    transform_steps: tuple[TransformStep, ...] = ()
    """The bridge's transform steps from :data:`TRANSFORM_STEP_LEAD_NS` before the start to the
    end (:meth:`EpisodeTracker.transform_step`); empty when none was given (old recordings)."""

    @property
    def duration_s(self) -> float:
        """Return ``end - start`` in seconds."""
        return round((self.end_ns - self.start_ns) / NS_PER_S, 6)

    def as_dict(self, origin_ns: int) -> dict[str, object]:
        """Return a JSON-ready dict; ``*_s`` count from ``origin_ns`` (:func:`time_origin`)."""
        return {
            'start_s': seconds(self.start_ns, origin_ns),
            'end_s': seconds(self.end_ns, origin_ns),
            'duration_s': self.duration_s,
            'start_stamp_ns': self.start_ns, 'end_stamp_ns': self.end_ns,
            'level': self.level.name, 'raw_level': self.raw_level.name,
            'reason': self.reason, 'reasons': list(self.reasons),
            'assessments': self.assessments, 'ongoing': self.ongoing,
            'overconfidence': _estimates_dict(self.overconfidence),
            'error': self.error,
            'transform_steps': [step.as_dict(origin_ns) for step in self.transform_steps],
            'description': self.describe(origin_ns),
        }

    def describe(self, origin_ns: int) -> str:
        """Return e.g. ``overconfident from 151.2 s to 170.3 s (19.1 s, UNCERTAIN): position k...``.

        ``k`` is the peak window estimate of the episode, per vec3, with its 95% interval.
        """
        start = seconds(self.start_ns, origin_ns)
        end = seconds(self.end_ns, origin_ns)
        until = f'to the end at {end:.1f} s' if self.ongoing else f'to {end:.1f} s'
        steps = ''.join(f'; {step.describe(origin_ns)}' for step in self.transform_steps[:3])
        return (f'{reason_words(self.reason)} from {start:.1f} s {until} '
                f'({self.duration_s:.1f} s, {self.level.name} below raw {self.raw_level.name}): '
                f'peak {_estimates_text(self.overconfidence)}{_error_text(self.error)}{steps}')


class _Open:
    """The episode being built."""

    __slots__ = ('assessments', 'components', 'errors', 'level', 'peak', 'peak_k2', 'raw_level',
                 'reason', 'reasons', 'start_ns', 'steps')

    def __init__(self, calibrated: CalibratedSelfAssessment, components: tuple[int, int]) -> None:
        self.components = components
        self.start_ns = calibrated.raw_assessment.belief_stamp_sim_ns
        self.raw_level = calibrated.raw_assessment.overall_level
        self.level = calibrated.adjusted_overall_level
        self.reason = calibrated.adjustment_reason
        self.reasons = [self.reason]
        self.assessments = 0
        self.peak: list[tuple[float, ...] | None] = [None, None]
        self.peak_k2 = [-1.0, -1.0]
        self.errors: PoseErrorStatistics | None = None
        self.steps: list[TransformStep] = []

    def add(self, calibrated: CalibratedSelfAssessment) -> None:
        self.assessments += 1
        level = calibrated.adjusted_overall_level
        reason = calibrated.adjustment_reason
        if level < self.level:
            self.level, self.reason = level, reason
        if reason != self.reasons[-1] and reason not in self.reasons:
            self.reasons.append(reason)
        history = calibrated.calibration_history
        if history.schema_version != HISTORY_SCHEMA_SQUARED_DISTANCES:
            return
        squares = (history.position_squared_distances, history.orientation_squared_distances)
        for index, mapped in enumerate(squares):
            if not mapped:
                continue
            values = unmapped_squared_distances(mapped, self.components[index])
            k2 = sum(values) / len(values)  # orders windows by k_hat (exact: at close)
            if k2 > self.peak_k2[index]:
                self.peak_k2[index], self.peak[index] = k2, values

    def close(self, end_ns: int, ongoing: bool) -> Episode:
        estimates: dict[str, OverconfidenceEstimate | None] | None = None
        if any(values is not None for values in self.peak):
            estimates = {name: None if values is None
                         else estimate_from_squared_distances(values, dof)
                         for name, values, dof in zip(VEC3_NAMES, self.peak, self.components)}
        return Episode(self.start_ns, end_ns, self.level, self.raw_level, self.reason,
                       tuple(self.reasons), self.assessments, ongoing, estimates,
                       None if self.errors is None else self.errors.as_dict(),
                       tuple(self.steps))


class EpisodeTracker:
    """Build the downgrade episodes of a stream of calibrated assessments (recorded order).

    :meth:`add` each CalibratedSelfAssessment; :meth:`episodes` returns those seen so far (an
    episode still open as ``ongoing``), oldest first. With ``limit``, only the ``limit`` longest
    are kept (a flapping start-up does not crowd out a long detection later; :attr:`count` and
    :attr:`downgraded_s` count them all). Streaming and bounded: the audit feeds it whole bags.
    """

    __slots__ = ('_closed', '_closed_ns', '_open', '_recent', '_steps', 'components', 'count',
                 'first_stamp_ns', 'last_stamp_ns', 'limit')

    def __init__(self, limit: int | None = None,
                 components: Sequence[int] = VEC3_COMPONENTS) -> None:
        if limit is not None and (type(limit) is not int or limit < 0):
            raise ValueError(f'EpisodeTracker.limit must be an int >= 0 or None, got {limit!r}')
        self.limit = limit
        self.components = check_components('EpisodeTracker', components)
        self._closed: list[Episode] = []
        self._open: _Open | None = None
        self._closed_ns = 0
        self.count = 0
        """Episodes seen (closed and open), also beyond ``limit``."""
        self.first_stamp_ns: int | None = None
        self.last_stamp_ns: int | None = None
        self._recent: list[PredictionOutcome] = []
        self._steps: list[TransformStep] = []   # while no episode is open

    def transform_step(self, step: TransformStep) -> None:
        """Take the bridge's note of a transform step (optional; see :class:`TransformStep`).

        It goes to the open episode, or waits (the newest :data:`TRANSFORM_STEPS_KEPT`) for one
        that starts within :data:`TRANSFORM_STEP_LEAD_NS` after it.
        """
        if self._open is not None:
            if len(self._open.steps) < TRANSFORM_STEPS_KEPT:
                self._open.steps.append(step)
            return
        self._steps.append(step)
        if len(self._steps) > TRANSFORM_STEPS_KEPT:
            del self._steps[0]

    def outcome(self, outcome: PredictionOutcome) -> None:
        """Take an outcome (optional): episodes then carry the error of their outcomes.

        An episode's outcomes are those handed over after the assessment before it opened (the
        evidence that opened it) until it closes.
        """
        if len(self._recent) < 100_000:  # bounded if no assessment ever comes
            self._recent.append(outcome)

    def add(self, calibrated: CalibratedSelfAssessment) -> None:
        """Take the next calibrated assessment."""
        recent, self._recent = self._recent, []
        stamp = calibrated.raw_assessment.belief_stamp_sim_ns
        if self.first_stamp_ns is None:
            self.first_stamp_ns = stamp
        self.last_stamp_ns = stamp
        current = self._open
        if calibrated.was_downgraded:
            if current is None:
                self.count += 1
                current = self._open = _Open(calibrated, self.components)
                current.steps = [step for step in self._steps
                                 if step.stamp_ns >= current.start_ns - TRANSFORM_STEP_LEAD_NS]
                self._steps = []
            current.add(calibrated)
            if recent:
                if current.errors is None:
                    current.errors = PoseErrorStatistics()
                for outcome in recent:
                    current.errors.add(outcome.position_error_m, outcome.orientation_error_rad)
        elif current is not None:
            self._closed_ns += stamp - current.start_ns
            self._keep(current.close(stamp, ongoing=False))
            self._open = None

    def _keep(self, episode: Episode) -> None:
        kept = self._closed
        if self.limit is None or len(kept) < self.limit:
            kept.append(episode)
            return
        if not kept:
            return
        shortest = min(range(len(kept)), key=lambda i: _length(kept[i]))
        if _length(episode) > _length(kept[shortest]):
            del kept[shortest]  # the rest stay in time order
            kept.append(episode)

    @property
    def truncated(self) -> bool:
        """Return True when more episodes happened than :meth:`episodes` returns."""
        return self.limit is not None and self.count > self.limit

    @property
    def downgraded_s(self) -> float:
        """Return the time spent in episodes (all of them, also beyond ``limit``), seconds."""
        total = self._closed_ns
        if self._open is not None and self.last_stamp_ns is not None:
            total += self.last_stamp_ns - self._open.start_ns
        return total / NS_PER_S

    def episodes(self) -> tuple[Episode, ...]:
        """Return the episodes so far, oldest first (an open one closed as ``ongoing``)."""
        result = list(self._closed)
        if self._open is not None:
            assert self.last_stamp_ns is not None  # set with the first assessment
            current = self._open.close(self.last_stamp_ns, ongoing=True)
            if self.limit is None or len(result) < self.limit:
                result.append(current)
            elif result and _length(current) > min(_length(e) for e in result):
                result.remove(min(result, key=_length))
                result.append(current)
        return tuple(result)


def _length(episode: Episode) -> int:
    return episode.end_ns - episode.start_ns


def downgrade_episodes(
        assessments: Iterable[CalibratedSelfAssessment]) -> tuple[Episode, ...]:
    """Return the downgrade episodes of ``assessments`` (see :class:`EpisodeTracker`)."""
    tracker = EpisodeTracker()
    for calibrated in assessments:
        tracker.add(calibrated)
    return tracker.episodes()


def longest(episodes: Sequence[Episode]) -> Episode | None:
    """Return the longest episode (the first of equal ones), None when there is none."""
    best: Episode | None = None
    for episode in episodes:
        if best is None or episode.end_ns - episode.start_ns > best.end_ns - best.start_ns:
            best = episode
    return best


class RunOverconfidence:
    """``k`` over a whole run: every outcome's squared distances pooled, per vec3.

    The same estimate and 95% interval as a window's (:mod:`.overconfidence`) over ``n`` = all
    the outcomes, each distance mapped back onto the ``components`` of its vec3. The interval
    assumes independent outcomes (the bridge prewhitens them) and one ``k`` for the whole run: a
    run that is honest, then 3x overconfident, pools to a ``k`` in between, which is why the
    episodes carry their own.
    """

    __slots__ = ('components', 'outcomes', 'position_total', 'orientation_total')

    def __init__(self, components: Sequence[int] = VEC3_COMPONENTS) -> None:
        self.components = check_components('RunOverconfidence', components)
        self.outcomes = 0
        self.position_total = 0.0
        self.orientation_total = 0.0

    def add(self, outcome: PredictionOutcome) -> None:
        """Pool one outcome."""
        self.outcomes += 1
        position, orientation = outcome.position_mahalanobis, outcome.orientation_mahalanobis
        position_m, orientation_m = self.components
        self.position_total += unmapped_square(position * position, position_m)
        self.orientation_total += unmapped_square(orientation * orientation, orientation_m)

    def estimates(self) -> dict[str, OverconfidenceEstimate | None]:
        """Return ``{'position': estimate, 'orientation': estimate}`` (None without outcomes)."""
        n = self.outcomes
        if n == 0:
            return dict.fromkeys(VEC3_NAMES)
        position_m, orientation_m = self.components
        return {'position': estimate_from_sum(self.position_total, n, position_m),
                'orientation': estimate_from_sum(self.orientation_total, n, orientation_m)}

    def as_dict(self) -> dict[str, dict[str, float | str | int] | None]:
        """Return a JSON-ready dict of :meth:`estimates`."""
        return _estimates_dict(self.estimates()) or {}

    def text(self) -> str:
        """Return ``position k = 1.02 [0.95, 1.09], orientation k = ...`` over the run."""
        return _estimates_text(self.estimates())


class PoseErrorStatistics:
    """RMSE and maximum of the estimate's error, as evo's APE: position in m, rotation in deg.

    Per paired estimate: the position error's Euclidean norm (metres) and the rotation angle of
    the orientation error (the norm of its rotation vector, in degrees).
    """

    __slots__ = ('count', 'position_max', 'position_sum2', 'rotation_max', 'rotation_sum2')

    def __init__(self) -> None:
        self.count = 0
        self.position_sum2 = self.rotation_sum2 = 0.0
        self.position_max = self.rotation_max = 0.0

    def add(self, position_error_m: Sequence[float], orientation_error_rad: Sequence[float],
            ) -> None:
        """Take one pair's errors (finite 3-vectors: metres, rotation vector in radians)."""
        position = math.hypot(*position_error_m)
        rotation = math.degrees(math.hypot(*orientation_error_rad))
        self.count += 1
        self.position_sum2 += position * position
        self.rotation_sum2 += rotation * rotation
        self.position_max = max(self.position_max, position)
        self.rotation_max = max(self.rotation_max, rotation)

    def as_dict(self) -> dict[str, object]:
        """Return ``{'pairs', 'position_m': {'rmse', 'max'}, 'rotation_deg': {...}}``."""
        if not self.count:
            return {'pairs': 0, 'position_m': None, 'rotation_deg': None}
        return {
            'pairs': self.count,
            'position_m': {'rmse': math.sqrt(self.position_sum2 / self.count),
                           'max': self.position_max},
            'rotation_deg': {'rmse': math.sqrt(self.rotation_sum2 / self.count),
                             'max': self.rotation_max},
        }

    def text(self) -> str:
        """Return ``position RMSE 0.123 m, max 0.456 m; rotation RMSE 1.23 deg, max 4.56 deg``."""
        if not self.count:
            return 'no paired estimate'
        return (f'position RMSE {math.sqrt(self.position_sum2 / self.count):.3f} m, max '
                f'{self.position_max:.3f} m; rotation RMSE '
                f'{math.sqrt(self.rotation_sum2 / self.count):.2f} deg, max '
                f'{self.rotation_max:.2f} deg ({self.count} pairs)')


EPISODE_LINES = 20
"""Episodes a text summary lists (the JSON has them all)."""


def episode_lines(episodes: Sequence[Mapping[str, object]], origin_kind: str,
                  limit: int = EPISODE_LINES, where: str = 'the JSON') -> list[str]:
    """Return text lines listing downgrade ``episodes`` (dicts of :meth:`Episode.as_dict`)."""
    if not episodes:
        return ['downgrade episodes: none']
    origin = 'the bag start' if origin_kind == ORIGIN_BAG_START else 'the first header stamp'
    lines = [f'downgrade episodes ({len(episodes)}; seconds from {origin}):']
    lines += [f'  {i}. {e["description"]}' for i, e in enumerate(episodes[:limit], start=1)]
    if len(episodes) > limit:
        lines.append(f'  ... and {len(episodes) - limit} more ({where})')
    return lines


def verdict_line(tracker: EpisodeTracker, run: RunOverconfidence, origin_ns: int) -> str:
    """Return the first line of a summary: what happened, in words.

    With episodes: the longest one (:meth:`Episode.describe`), how many there were and the time
    downgraded in all; without: that the level was never lowered, and ``k`` over the run.
    """
    episodes = tracker.episodes()
    if tracker.first_stamp_ns is None or tracker.last_stamp_ns is None:
        return 'no assessment: nothing was judged'
    span = (tracker.last_stamp_ns - tracker.first_stamp_ns) / NS_PER_S
    if not episodes:
        return (f'never downgraded over {span:.1f} s of assessments; over the run '
                f'{run.text()}')
    main = longest(episodes)
    assert main is not None
    total = tracker.downgraded_s
    more = tracker.count - 1
    others = ('the only downgrade episode' if not more else
              f'{more} other episode{"s" if more > 1 else ""}, the first from '
              f'{seconds(episodes[0].start_ns, origin_ns):.1f} s')
    return (f'{main.describe(origin_ns)}; {others}; downgraded {total:.1f} s of {span:.1f} s; '
            f'over the run {run.text()}')


__all__ = [
    'downgrade_episodes',
    'Episode',
    'FALL',
    'JUMP',
    'TRANSFORM_STEP_LEAD_NS',
    'TransformStep',
    'episode_lines',
    'EPISODE_LINES',
    'EpisodeTracker',
    'longest',
    'ORIGIN_BAG_START',
    'ORIGIN_FIRST_STAMP',
    'PoseErrorStatistics',
    'reason_words',
    'REASON_WORDS',
    'RunOverconfidence',
    'seconds',
    'time_origin',
    'TIME_ORIGIN_TOLERANCE_NS',
    'verdict_line',
    'VEC3_NAMES',
]
