# SPDX-License-Identifier: Apache-2.0
"""ADR-0026 sections 1-2: CalibrationHistory and CalibratedSelfAssessment (frozen, validated)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from ..validation import (
    is_known_taxonomy,
    require_distance,
    require_instance,
    require_int,
    require_schema_version,
    require_taxonomy,
    STAMP_MAX_NS,
    type_error,
    UINT32_MAX,
    value_error,
)
from ..contracts import BeliefSelfAssessment, SCHEMA_VERSION, SelfAssessmentLevel

HISTORY_SCHEMA_COUNTS = 1
"""Schema 1 of CalibrationHistory (ADR-0026): bucket counts, worst distances, stamp."""
HISTORY_SCHEMA_SQUARED_DISTANCES = 2
"""Schema 2 (ADR-0026a): schema 1 plus the window's squared distances per vec3."""
HISTORY_SCHEMA_VERSIONS = (HISTORY_SCHEMA_COUNTS, HISTORY_SCHEMA_SQUARED_DISTANCES)

# Bucket limits on the squared scale: for a float d >= 0, d <= t iff fl(d * d) <= t * t for
# t in (1, 3, 5) (t * t is exact and the rounding of d * d is monotone; see ADR-0026a).
_SQUARED_LIMITS = (1.0, 9.0, 25.0)

_COUNT_FIELDS = (
    'count_within_1_std',
    'count_beyond_1_std',
    'count_beyond_3_std',
    'count_beyond_5_std',
)
_SQUARED_FIELDS = ('position_squared_distances', 'orientation_squared_distances')


@dataclass(frozen=True, slots=True)
class CalibrationHistory:
    """Aggregated evidence from recent PredictionOutcomes (ADR-0026 section 1).

    Each outcome is counted in exactly one bucket, by the worse (larger) of its two unsquared
    Mahalanobis distances ``d``: ``d <= 1`` within_1, ``1 < d <= 3`` beyond_1, ``3 < d <= 5``
    beyond_3, ``d > 5`` (``+inf`` included) beyond_5. So the buckets are disjoint and
    ``count_beyond_3_std`` does not include ``count_beyond_5_std``.

    Invariants (``__post_init__``): counts are ints ``>= 0`` (and fit uint32); their sum equals
    ``outcomes_considered``; worst distances are ``>= 0``, not NaN, ``+inf`` legal; with zero
    outcomes both worsts are ``0.0`` and the stamp is ``None``; otherwise the stamp is an int
    in ``[0, STAMP_MAX_NS]`` (an observed stamp of an outcome: it fits a builtin_interfaces/Time,
    ADR-0026a).

    Schema 2 (ADR-0026a, ``schema_version == 2``) adds ``position_squared_distances`` and
    ``orientation_squared_distances``: the squares ``d * d`` (float products) of the window's
    unsquared distances per vec3, oldest first, ``+inf`` legal. Invariants: both are tuples of
    floats of length ``outcomes_considered``, ``>= 0``, not NaN; ``max(position_squared_distances)
    == worst_position_mahalanobis * worst_position_mahalanobis`` (float product, so rounding cannot
    break it: squaring is monotone), likewise for orientation; the bucket counts are those implied,
    outcome by outcome, by ``max(p2, o2)`` against ``1, 9, 25`` (the squares of the limits, the
    same buckets as ``max(dp, do)`` against ``1, 3, 5``). Schema 1 (``schema_version == 1``, the
    default) has both tuples empty.
    """

    outcomes_considered: int
    count_within_1_std: int
    count_beyond_1_std: int
    count_beyond_3_std: int
    count_beyond_5_std: int
    worst_position_mahalanobis: float
    worst_orientation_mahalanobis: float
    most_recent_observed_stamp_sim_ns: int | None
    schema_version: int = HISTORY_SCHEMA_COUNTS
    position_squared_distances: tuple[float, ...] = ()
    orientation_squared_distances: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        total = self.outcomes_considered
        c0, c1, c2, c3 = counts = (
            self.count_within_1_std, self.count_beyond_1_std, self.count_beyond_3_std,
            self.count_beyond_5_std)
        worst_position = self.worst_position_mahalanobis
        worst_orientation = self.worst_orientation_mahalanobis
        stamp = self.most_recent_observed_stamp_sim_ns
        # Fast path: the common valid case in one expression (the hot path of the node);
        # anything else takes the checks below, which name the offending field.
        if (type(total) is int and type(c0) is int and type(c1) is int and type(c2) is int
                and type(c3) is int and 0 < total <= UINT32_MAX and c0 >= 0 and c1 >= 0
                and c2 >= 0 and c3 >= 0 and c0 + c1 + c2 + c3 == total
                and type(worst_position) is float and worst_position >= 0.0
                and type(worst_orientation) is float and worst_orientation >= 0.0
                and type(stamp) is int and 0 <= stamp <= STAMP_MAX_NS
                and type(self.schema_version) is int
                and self.schema_version == HISTORY_SCHEMA_COUNTS
                and self.position_squared_distances == ()
                and self.orientation_squared_distances == ()):
            return
        self._validate_slowly(counts)

    def _validate_slowly(self, counts: tuple[int, int, int, int]) -> None:
        owner = 'CalibrationHistory'
        total = require_int(
            owner, 'outcomes_considered', self.outcomes_considered, maximum=UINT32_MAX)
        for name, count in zip(_COUNT_FIELDS, counts):
            require_int(owner, name, count, maximum=UINT32_MAX)
        counted = counts[0] + counts[1] + counts[2] + counts[3]
        if counted != total:
            raise value_error(
                owner, 'outcomes_considered', 'inconsistent_counts',
                f'({total}) must equal the sum of the counts ({counted})')
        worst_position = require_distance(
            owner, 'worst_position_mahalanobis', self.worst_position_mahalanobis)
        worst_orientation = require_distance(
            owner, 'worst_orientation_mahalanobis', self.worst_orientation_mahalanobis)
        object.__setattr__(self, 'worst_position_mahalanobis', worst_position)
        object.__setattr__(self, 'worst_orientation_mahalanobis', worst_orientation)
        stamp = self.most_recent_observed_stamp_sim_ns
        if total == 0:
            if worst_position != 0.0 or worst_orientation != 0.0:
                raise value_error(
                    owner, 'worst_position_mahalanobis', 'inconsistent_empty',
                    'and worst_orientation_mahalanobis must be 0.0 with outcomes_considered == 0, '
                    f'got {worst_position!r} and {worst_orientation!r}')
            if stamp is not None:
                raise value_error(
                    owner, 'most_recent_observed_stamp_sim_ns', 'inconsistent_empty',
                    f'must be None when outcomes_considered == 0, got {stamp!r}')
        elif stamp is None:
            raise value_error(
                owner, 'most_recent_observed_stamp_sim_ns', 'missing_stamp',
                f'must be an int >= 0 when outcomes_considered == {total}, got None')
        else:
            require_int(owner, 'most_recent_observed_stamp_sim_ns', stamp, maximum=STAMP_MAX_NS)
        version = self.schema_version
        if type(version) is not int:
            raise type_error(owner, 'schema_version', 'an int', version)
        if version not in HISTORY_SCHEMA_VERSIONS:
            raise value_error(
                owner, 'schema_version', 'unsupported_schema_version',
                f'{version!r} is not supported (this build reads {HISTORY_SCHEMA_VERSIONS})')
        if version == HISTORY_SCHEMA_COUNTS:
            for name in _SQUARED_FIELDS:
                value = getattr(self, name)
                if not isinstance(value, (tuple, list)):
                    raise type_error(owner, name, 'an empty tuple (schema 1)', value)
                if len(value):
                    raise value_error(
                        owner, name, 'schema_mismatch',
                        f'must be empty with schema_version 1, got {len(value)} values')
                object.__setattr__(self, name, ())
            return
        self._validate_squared(total, counts, worst_position, worst_orientation)

    def _validate_squared(self, total: int, counts: tuple[int, int, int, int],
                          worst_position: float, worst_orientation: float) -> None:
        """Check the schema-2 fields (slow path: one loop, naming the first bad value)."""
        owner = 'CalibrationHistory'
        squared: list[tuple[float, ...]] = []
        for name, worst in zip(_SQUARED_FIELDS, (worst_position, worst_orientation)):
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)):
                raise type_error(owner, name, 'a tuple of floats', value)
            if len(value) != total:
                raise value_error(
                    owner, name, 'wrong_length',
                    f'must have outcomes_considered ({total}) values, got {len(value)}')
            values = tuple(
                require_distance(owner, f'{name}[{i}]', v) for i, v in enumerate(value))
            largest = max(values, default=0.0)
            if largest != worst * worst:
                raise value_error(
                    owner, name, 'inconsistent_worst',
                    f'max ({largest!r}) must equal the square of its worst distance '
                    f'({worst!r} * {worst!r} = {worst * worst!r})')
            object.__setattr__(self, name, values)
            squared.append(values)
        implied = [0, 0, 0, 0]
        one, nine, twenty_five = _SQUARED_LIMITS
        for p2, o2 in zip(*squared):
            m = p2 if p2 > o2 else o2
            implied[0 if m <= one else 1 if m <= nine else 2 if m <= twenty_five else 3] += 1
        if implied != list(counts):
            raise value_error(
                owner, 'position_squared_distances', 'inconsistent_counts',
                f'and orientation_squared_distances imply the bucket counts {tuple(implied)}, '
                f'the history says {tuple(counts)}')

    @classmethod
    def empty(cls, schema_version: int = HISTORY_SCHEMA_COUNTS) -> Self:
        """Return the history of zero outcomes (schema 1 unless ``schema_version`` says 2)."""
        return cls(0, 0, 0, 0, 0, 0.0, 0.0, None, schema_version)

    @classmethod
    def from_fold(cls, counts: Sequence[int], worst_position: float, worst_orientation: float,
                  stamp: int, position_squared: tuple[float, ...],
                  orientation_squared: tuple[float, ...]) -> Self:
        """Return a schema-2 history of a non-empty window folded from valid outcomes.

        For :func:`~.orchestration.build_calibration_history` only, the node's hot path: every
        value derives from validated PredictionOutcomes in one pass (the squares are ``d * d``,
        the worsts the maxima of ``d``, the counts the outcomes' buckets), so the invariants hold
        by construction and the O(n) re-check of ``__post_init__`` is skipped (anything else
        uses the validating constructor). Tests rebuild the result through the validating
        constructor and assert equality.
        """
        self = object.__new__(cls)
        setattr_ = object.__setattr__
        setattr_(self, 'outcomes_considered', counts[0] + counts[1] + counts[2] + counts[3])
        setattr_(self, 'count_within_1_std', counts[0])
        setattr_(self, 'count_beyond_1_std', counts[1])
        setattr_(self, 'count_beyond_3_std', counts[2])
        setattr_(self, 'count_beyond_5_std', counts[3])
        setattr_(self, 'worst_position_mahalanobis', worst_position)
        setattr_(self, 'worst_orientation_mahalanobis', worst_orientation)
        setattr_(self, 'most_recent_observed_stamp_sim_ns', stamp)
        setattr_(self, 'schema_version', HISTORY_SCHEMA_SQUARED_DISTANCES)
        setattr_(self, 'position_squared_distances', position_squared)
        setattr_(self, 'orientation_squared_distances', orientation_squared)
        return self


@dataclass(frozen=True, slots=True)
class CalibratedSelfAssessment:
    """Envelope binding a raw assessment to its evidence and the adjusted level (ADR-0026 s. 2).

    ``adjusted_overall_level`` may be more or less confident than the raw level: the contract does
    not restrict the direction (the reference policy only passes through or downgrades).
    """

    raw_assessment: BeliefSelfAssessment
    calibration_history: CalibrationHistory
    adjusted_overall_level: SelfAssessmentLevel
    adjustment_policy_id: str
    adjustment_reason: str
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        # Fast path: the common valid case (taxonomy strings already seen are memoized).
        if (type(self.raw_assessment) is BeliefSelfAssessment
                and type(self.calibration_history) is CalibrationHistory
                and type(self.adjusted_overall_level) is SelfAssessmentLevel
                and is_known_taxonomy(self.adjustment_policy_id)
                and is_known_taxonomy(self.adjustment_reason)
                and type(self.schema_version) is int and self.schema_version == SCHEMA_VERSION):
            return
        owner = 'CalibratedSelfAssessment'
        require_instance(owner, 'raw_assessment', self.raw_assessment, BeliefSelfAssessment)
        require_instance(
            owner, 'calibration_history', self.calibration_history, CalibrationHistory)
        require_instance(
            owner, 'adjusted_overall_level', self.adjusted_overall_level, SelfAssessmentLevel)
        require_taxonomy(owner, 'adjustment_policy_id', self.adjustment_policy_id)
        require_taxonomy(owner, 'adjustment_reason', self.adjustment_reason)
        require_schema_version(owner, self.schema_version, SCHEMA_VERSION)

    @property
    def was_downgraded(self) -> bool:
        """Return True when the adjusted level is less confident than the raw one."""
        return self.adjusted_overall_level < self.raw_assessment.overall_level
