# SPDX-License-Identifier: Apache-2.0
"""ADR-0026 section 5: build_calibration_history and assess_with_feedback (pure functions)."""

from collections import deque
from collections.abc import Callable, Iterable, Sequence
import sys

from ..validation import require_instance, type_error, value_error
from ..contracts import BeliefSelfAssessment, PredictionOutcome
from .protocols import CalibrationAdjustmentPolicy
from .types import (
    CalibratedSelfAssessment,
    CalibrationHistory,
    HISTORY_SCHEMA_COUNTS,
    HISTORY_SCHEMA_SQUARED_DISTANCES,
    HISTORY_SCHEMA_VERSIONS,
)

DEFAULT_MAX_HISTORY = 32

_AdjustFollowing = Callable[
    [BeliefSelfAssessment, CalibrationHistory, CalibratedSelfAssessment | None], object]
"""``adjust_following`` of a :class:`~.protocols.HysteresisPolicy`, as looked up by name."""


def _require_max_n(name: str, value: object) -> None:
    if type(value) is not int:
        raise type_error('build_calibration_history', name, 'an int >= 1', value)
    if value < 1:
        raise value_error(
            'build_calibration_history', name, 'out_of_range', f'must be >= 1, got {value!r}')


def _window(
        outcomes: Iterable[PredictionOutcome], max_n: int) -> Sequence[PredictionOutcome]:
    """Return the last ``max_n`` items of ``outcomes`` as a sequence (no copy when possible)."""
    if isinstance(outcomes, (list, tuple)):
        return outcomes[-max_n:] if len(outcomes) > max_n else outcomes
    if isinstance(outcomes, Sequence) and not isinstance(outcomes, (str, bytes)):
        # Not every Sequence slices (collections.deque does not): index the tail instead.
        length = len(outcomes)
        if length <= max_n:
            return outcomes
        return [outcomes[i] for i in range(length - max_n, length)]
    if isinstance(outcomes, (str, bytes)) or not hasattr(outcomes, '__iter__'):
        raise type_error(
            'build_calibration_history', 'outcomes', 'an iterable of PredictionOutcome', outcomes)
    # deque's maxlen must fit a Py_ssize_t: a larger window keeps every item (no iterable held in
    # memory can have more than sys.maxsize of them).
    return deque(outcomes, maxlen=max_n if max_n <= sys.maxsize else None)


def _reject_item(window: Iterable[object], item: object) -> None:
    """Raise TypeError for a window item that is not a PredictionOutcome (subclasses are fine)."""
    if isinstance(item, PredictionOutcome):
        return
    index = next(i for i, candidate in enumerate(window) if candidate is item)
    require_instance(
        'build_calibration_history', f'outcomes (window item {index})', item, PredictionOutcome)


def _require_schema_version(value: object) -> None:
    if type(value) is not int:
        raise type_error('build_calibration_history', 'schema_version', 'an int (1 or 2)', value)
    if value not in HISTORY_SCHEMA_VERSIONS:
        raise value_error(
            'build_calibration_history', 'schema_version', 'unsupported_schema_version',
            f'must be one of {HISTORY_SCHEMA_VERSIONS}, got {value!r}')


def build_calibration_history(
        outcomes: Iterable[PredictionOutcome], max_n: int, *,
        schema_version: int = HISTORY_SCHEMA_SQUARED_DISTANCES) -> CalibrationHistory:
    """Fold the last ``max_n`` outcomes into a CalibrationHistory (schema 2 by default).

    ``outcomes`` is any iterable of PredictionOutcome, assumed in chronological order (the caller's
    responsibility, ADR-0026); the window is its last ``max_n`` items in iteration order.
    Every item of the window must be a PredictionOutcome (TypeError otherwise); items before the
    window are not inspected.

    ``most_recent_observed_stamp_sim_ns`` is the largest observed stamp in the window: for an
    ordered input that is the last outcome's stamp, and a misordered input cannot make it go back.

    ``max_n`` must be an ``int >= 1`` (``bool`` is not an int), however large, with any iterable:
    TypeError for another type, ValueError below 1. An empty window gives
    :meth:`CalibrationHistory.empty` (of the requested schema).

    ``schema_version`` 2 (ADR-0026a) also carries the window's squared distances per vec3, oldest
    first (``d * d`` of each outcome's distances); 1 gives the schema-1 history of the same window
    (the same counts, worsts and stamp), which is what replay rebuilds for a bag recorded with
    schema-1 histories.
    """
    _require_max_n('max_n', max_n)
    if schema_version != HISTORY_SCHEMA_SQUARED_DISTANCES or type(schema_version) is not int:
        _require_schema_version(schema_version)
    window = _window(outcomes, max_n)
    counts = [0, 0, 0, 0]
    worst_position = 0.0
    worst_orientation = 0.0
    most_recent: int | None = None
    position_squared: list[float] = []
    orientation_squared: list[float] = []
    add_position = position_squared.append
    add_orientation = orientation_squared.append
    outcome_type = PredictionOutcome
    for outcome in window:
        if type(outcome) is not outcome_type:
            _reject_item(window, outcome)
        counts[outcome.bucket] += 1
        position = outcome.position_mahalanobis
        orientation = outcome.orientation_mahalanobis
        add_position(position * position)
        add_orientation(orientation * orientation)
        if position > worst_position:
            worst_position = position
        if orientation > worst_orientation:
            worst_orientation = orientation
        stamp = outcome.observed_stamp_sim_ns
        if most_recent is None or stamp > most_recent:
            most_recent = stamp
    if schema_version == HISTORY_SCHEMA_COUNTS or most_recent is None:
        return CalibrationHistory(
            outcomes_considered=counts[0] + counts[1] + counts[2] + counts[3],
            count_within_1_std=counts[0],
            count_beyond_1_std=counts[1],
            count_beyond_3_std=counts[2],
            count_beyond_5_std=counts[3],
            worst_position_mahalanobis=worst_position,
            worst_orientation_mahalanobis=worst_orientation,
            most_recent_observed_stamp_sim_ns=most_recent,
            schema_version=schema_version,
        )
    # Valid by construction (ADR-0026a): skips the O(n) re-check of the public constructor.
    return CalibrationHistory.from_fold(
        counts, worst_position, worst_orientation, most_recent,
        tuple(position_squared), tuple(orientation_squared))


def assess_with_feedback(
        raw: BeliefSelfAssessment, outcomes: Iterable[PredictionOutcome],
        adjustment_policy: CalibrationAdjustmentPolicy, max_history: int = DEFAULT_MAX_HISTORY,
        previous: CalibratedSelfAssessment | None = None, *,
        history_schema_version: int = HISTORY_SCHEMA_SQUARED_DISTANCES,
) -> CalibratedSelfAssessment:
    """Return ``adjustment_policy.adjust(raw, build_calibration_history(outcomes, max_history))``.

    A policy with hysteresis also implements ``adjust_following(raw, history, previous)``
    (:class:`~.protocols.HysteresisPolicy`): it is then called instead, with ``previous``, the
    calibrated assessment the feedback loop published last since its last reset (None at the
    start, after a reset or a configuration change). The ADR Protocol is unchanged: ``adjust``
    of such a policy equals ``adjust_following(raw, history, None)``. ``previous`` is state of the
    one feedback loop (:mod:`project_ghost_feedback.core.loop`), derived from the recorded event
    stream, so replay reproduces it.

    The canonical orchestration of ADR-0026: pure (no clock, no randomness), so equal inputs give
    equal outputs. Raises TypeError when ``raw`` is not a BeliefSelfAssessment, the policy does
    not implement CalibrationAdjustmentPolicy, or the policy returns something that is not a
    CalibratedSelfAssessment; ValueError when the returned envelope is foreign: it does not carry
    this very ``raw`` and history, or its ``adjustment_policy_id`` is not the policy's own.
    ``history_schema_version`` is passed to :func:`build_calibration_history` (2 by default).
    """
    require_instance('assess_with_feedback', 'raw', raw, BeliefSelfAssessment)
    # The same structural check as isinstance(policy, CalibrationAdjustmentPolicy), which costs
    # ~8 us per call on CPython 3.11 (more than the whole fold of a 32-outcome window).
    if (not hasattr(adjustment_policy, 'policy_id')
            or not callable(getattr(adjustment_policy, 'adjust', None))):
        raise type_error(
            'assess_with_feedback', 'adjustment_policy',
            'a CalibrationAdjustmentPolicy (policy_id, adjust)', adjustment_policy)
    _require_max_n('max_history', max_history)
    history = build_calibration_history(
        outcomes, max_history, schema_version=history_schema_version)
    following: _AdjustFollowing | None = getattr(adjustment_policy, 'adjust_following', None)
    calibrated: object
    if following is None:
        calibrated = adjustment_policy.adjust(raw, history)
    else:
        if previous is not None:
            require_instance('assess_with_feedback', 'previous', previous,
                             CalibratedSelfAssessment)
        calibrated = following(raw, history, previous)
    calibrated = require_instance(
        'assess_with_feedback', 'adjustment_policy.adjust(...)', calibrated,
        CalibratedSelfAssessment)
    if ((calibrated.raw_assessment is not raw and calibrated.raw_assessment != raw)
            or (calibrated.calibration_history is not history
                and calibrated.calibration_history != history)
            or calibrated.adjustment_policy_id != adjustment_policy.policy_id):
        raise value_error(
            'assess_with_feedback', 'adjustment_policy', 'foreign_envelope',
            f'{adjustment_policy.policy_id!r} returned an envelope that does not carry the raw '
            'assessment, history and policy id it was given '
            f'(envelope policy id {calibrated.adjustment_policy_id!r})')
    return calibrated
