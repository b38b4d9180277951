# SPDX-License-Identifier: Apache-2.0
"""Frames named: distances that jump at the stamp of a /tf change (pure, no ROS).

A wrong ``map -> odom`` (a frame error) looks to the feedback exactly like an overconfident
filter: the distances jump and the level goes to UNKNOWN. What tells them apart is *when*: a
frame error starts (and ends) with a change of the transform the bridge applies to the
references. :class:`FrameStepMonitor` watches both, in the engine (:mod:`.pairing`), so the node
and ``ghost-feedback evaluate`` say the same:

- every reference mapped through tf gives the transform ``estimate frame <- reference frame`` at
  its stamp; a **step** is a change from the previous reference's transform (same frames) of at
  least :data:`MIN_STEP_M` or :data:`MIN_STEP_DEG` (a localization's correction, a frame error);
- every paired estimate (paced out or not) gives its two distances; a **jump** is a vec3's
  distance going beyond :data:`JUMP_DISTANCE` from within it at the previous paired estimate, a
  **fall** the reverse;
- a jump or a fall is reported as a :class:`~..core.feedback.episodes.TransformStep` (the
  frames, the step in metres and degrees, the distance before and after) when a step lies
  between the previous paired estimate's stamp and :data:`COINCIDENCE_NS` after this one's (the
  reference after an estimate's stamp is interpolated into it) **and** the step explains the
  change: the crossing vec3's error (position in metres; orientation, the rotation vector, in
  degrees) changed between the two paired estimates by at least :data:`EXPLAINED_FRACTION` of
  the step (for a position crossing under a rotation-only step, the rotation is compared). The
  largest such step is named.

An honest filter's distance exceeds 4.0 about once per 1,000 outcomes (chi with 3 degrees of
freedom: ``P(d > 4.0) = 1.1e-3``); a localization that corrects ``map -> odom`` every 2 s puts
a step within 1 s of every one of them, which is why the step must lie between the two paired
estimates and explain the change of the error (measured: a 0.29 m correction 0.1 s before a
chance crossing 3.6 -> 4.2 was named before this rule, not after). A note names a suspicion (a
frame error, or a correction of the reference's frame that the estimate did not follow), not a
proof.
"""

from __future__ import annotations

import collections
import math

from ..core import NS_PER_S
from ..core.feedback.episodes import FALL, JUMP, TransformStep

JUMP_DISTANCE = 4.0
"""A vec3 distance (unsquared Mahalanobis) beyond this is "beyond" (chi(3): P = 1.1e-3)."""
MIN_STEP_M = 0.05
"""A change of the reference's transform between two references of at least this: a step."""
MIN_STEP_DEG = 0.5
"""... or of at least this rotation, degrees."""
COINCIDENCE_NS = NS_PER_S // 2
"""A step up to this long after the crossing estimate's stamp still coincides with it (the
reference after the estimate's stamp, interpolated into it)."""
EXPLAINED_FRACTION = 0.5
"""The error must change by at least this fraction of the step to be explained by it."""
STEPS_KEPT = 64
"""Recent steps kept (the newest, within STEPS_KEPT_NS of the newest)."""
STEPS_KEPT_NS = 10 * NS_PER_S

Transform = tuple[tuple[float, float, float], tuple[float, float, float, float]]


def rotation_between_deg(a: tuple[float, float, float, float],
                         b: tuple[float, float, float, float]) -> float:
    """Return the angle of the rotation from unit quaternion ``a`` to ``b`` (xyzw), degrees."""
    dot = abs(sum(x * y for x, y in zip(a, b)))
    return math.degrees(2.0 * math.acos(min(1.0, dot)))


class FrameStepMonitor:
    """Steps of the reference's transform and jumps of the distances (module documentation)."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], Transform] = {}
        self._steps: collections.deque[tuple[int, str, str, float, float]] = collections.deque()
        # stamp, distances, position error (m) and orientation error (deg) of the last paired
        self._previous: tuple[int, float, float, tuple[float, ...], tuple[float, ...]] | None
        self._previous = None
        self.notes = 0

    def reset(self) -> None:
        """Forget everything time-ordered (a timeline reset)."""
        self._last.clear()
        self._steps.clear()
        self._previous = None

    def transform_used(self, stamp_ns: int, target: str, source: str,
                       translation_m: tuple[float, float, float],
                       rotation_xyzw: tuple[float, float, float, float]) -> None:
        """Note the transform ``target <- source`` a reference stamped ``stamp_ns`` was given."""
        key = (target, source)
        translation = tuple(float(v) for v in translation_m)
        rotation = tuple(float(v) for v in rotation_xyzw)
        previous = self._last.get(key)
        self._last[key] = (translation, rotation)  # type: ignore[assignment]
        if previous is None:
            return
        step_m = math.dist(previous[0], translation)
        step_deg = rotation_between_deg(previous[1], rotation)  # type: ignore[arg-type]
        if step_m < MIN_STEP_M and step_deg < MIN_STEP_DEG:
            return
        steps = self._steps
        steps.append((stamp_ns, target, source, step_m, step_deg))
        while steps and (len(steps) > STEPS_KEPT or steps[0][0] < stamp_ns - STEPS_KEPT_NS):
            steps.popleft()

    def distances(self, stamp_ns: int, position: float, orientation: float,
                  position_error_m: tuple[float, float, float],
                  orientation_error_rad: tuple[float, float, float]) -> TransformStep | None:
        """Take a paired estimate's distances and errors; return the note, or None.

        A note when a step explains a jump or a fall (module documentation).
        """
        errors = (tuple(float(v) for v in position_error_m),
                  tuple(math.degrees(float(v)) for v in orientation_error_rad))
        previous, self._previous = self._previous, (stamp_ns, position, orientation, *errors)
        if previous is None or not self._steps:
            return None
        crossing = None
        for vec3, before, after in (('position', previous[1], position),
                                    ('orientation', previous[2], orientation)):
            beyond_before, beyond_after = before > JUMP_DISTANCE, after > JUMP_DISTANCE
            if beyond_before != beyond_after:
                crossing = (vec3, before, after, JUMP if beyond_after else FALL)
                if beyond_after:
                    break  # a jump is named before a fall
        if crossing is None:
            return None
        moved_m = math.dist(previous[3], errors[0])
        turned_deg = math.dist(previous[4], errors[1])

        def explains(step: tuple[int, str, str, float, float]) -> bool:
            if not previous[0] < step[0] <= stamp_ns + COINCIDENCE_NS:
                return False
            if crossing[0] == 'position' and step[3] >= MIN_STEP_M:
                return moved_m >= EXPLAINED_FRACTION * step[3]
            return turned_deg >= EXPLAINED_FRACTION * step[4] >= EXPLAINED_FRACTION * MIN_STEP_DEG
        near = [step for step in self._steps if explains(step)]
        if not near:
            return None
        step_stamp, target, source, step_m, step_deg = max(
            near, key=lambda step: (step[3], step[4]))
        vec3, before, after, kind = crossing
        self.notes += 1
        return TransformStep(stamp_ns, kind, target, source, step_stamp, step_m, step_deg, vec3,
                             before, after)
