# SPDX-License-Identifier: Apache-2.0
"""ADR-0026 sections 1-2: CalibrationHistory and CalibratedSelfAssessment (frozen, validated)."""

from dataclasses import dataclass

from .._validation import (
    INT64_MAX,
    is_known_taxonomy,
    require_distance,
    require_instance,
    require_int,
    require_schema_version,
    require_taxonomy,
    UINT32_MAX,
    value_error,
)
from ..contracts import BeliefSelfAssessment, SCHEMA_VERSION, SelfAssessmentLevel

_COUNT_FIELDS = (
    'count_within_1_std',
    'count_beyond_1_std',
    'count_beyond_3_std',
    'count_beyond_5_std',
)


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
    ``>= 0``; ``schema_version == 1``.
    """

    outcomes_considered: int
    count_within_1_std: int
    count_beyond_1_std: int
    count_beyond_3_std: int
    count_beyond_5_std: int
    worst_position_mahalanobis: float
    worst_orientation_mahalanobis: float
    most_recent_observed_stamp_sim_ns: int | None
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self):
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
                and type(stamp) is int and 0 <= stamp <= INT64_MAX
                and type(self.schema_version) is int and self.schema_version == SCHEMA_VERSION):
            return
        self._validate_slowly(counts)

    def _validate_slowly(self, counts):
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
            require_int(owner, 'most_recent_observed_stamp_sim_ns', stamp)
        require_schema_version(owner, self.schema_version, SCHEMA_VERSION)

    @classmethod
    def empty(cls):
        """Return the history of zero outcomes."""
        return cls(0, 0, 0, 0, 0, 0.0, 0.0, None)


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

    def __post_init__(self):
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
    def was_downgraded(self):
        """Return True when the adjusted level is less confident than the raw one."""
        return self.adjusted_overall_level < self.raw_assessment.overall_level
