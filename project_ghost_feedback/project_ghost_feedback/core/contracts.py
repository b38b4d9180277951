# SPDX-License-Identifier: Apache-2.0
"""The contracts ADR-0026 builds on: SelfAssessmentLevel, BeliefSelfAssessment, PredictionOutcome.

ADR-0020 (self-assessment) and ADR-0025 (prediction outcome) are not available to this project;
these are minimal definitions consistent with what ADR-0026 says of them.
``docs/contracts.md`` records each choice. All are immutable and validated on construction.
"""

from collections.abc import Iterable
from dataclasses import dataclass
import enum
import functools
from typing import cast

from .validation import (
    ContractTypeError,
    ContractValueError,
    ContractViolation,
    MAX_NAMED_LEVELS,
    STAMP_MAX_NS,
    require_distance,
    require_finite,
    require_frame_id,
    require_instance,
    require_int,
    require_schema_version,
    require_taxonomy,
    require_vec3,
    type_error,
    value_error,
)

__all__ = [
    'BeliefSelfAssessment',
    'ContractTypeError',
    'ContractValueError',
    'ContractViolation',
    'NamedLevel',
    'PredictionOutcome',
    'SCHEMA_VERSION',
    'SelfAssessmentLevel',
]

NS_PER_S = 1_000_000_000
"""Nanoseconds per second: the one definition of the unit every stamp uses."""

SCHEMA_VERSION = 1
"""The schema version every contract of this build writes and accepts."""


@functools.total_ordering
class SelfAssessmentLevel(enum.Enum):
    """Closed catalog of self-assessment levels.

    The value is the wire value (the constants of the SelfAssessmentLevel message).
    Values and comparison operators order levels by *confidence*: ``UNKNOWN < UNCERTAIN < KNOWN``.
    Zero is the least confident claim, so a default-constructed message never claims KNOWN.
    """

    UNKNOWN = 0
    UNCERTAIN = 1
    KNOWN = 2

    @property
    def confidence_rank(self) -> int:
        """Return 2 for KNOWN, 1 for UNCERTAIN, 0 for UNKNOWN (higher is more confident)."""
        return self.value

    def downgraded(self, steps: int = 1) -> 'SelfAssessmentLevel':
        """Return the level ``steps`` steps less confident; UNKNOWN stays UNKNOWN."""
        steps = require_int('SelfAssessmentLevel', 'downgraded.steps', steps)
        return SelfAssessmentLevel(max(self.value - steps, SelfAssessmentLevel.UNKNOWN.value))

    @classmethod
    def from_wire(cls, value: object) -> 'SelfAssessmentLevel':
        """Return the level for a wire value, or raise ValueError naming the value."""
        if type(value) is int and 0 <= value <= 2:
            return _LEVELS_BY_WIRE_VALUE[value]
        value = require_int('SelfAssessmentLevel', 'value', value, maximum=255)
        try:
            return cls(value)
        except ValueError:
            raise value_error(
                'SelfAssessmentLevel', 'value', 'unknown_level',
                f'{value!r} is not a known level (known: {[m.value for m in cls]})') from None

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, SelfAssessmentLevel):
            return NotImplemented
        return self.value < other.value


_LEVELS_BY_WIRE_VALUE: tuple[SelfAssessmentLevel, ...] = tuple(
    SelfAssessmentLevel(v) for v in range(3))


@dataclass(frozen=True, slots=True)
class NamedLevel:
    """A level for one named axis (e.g. ``position_x``) or block (e.g. ``pose``) of a belief."""

    name: str
    level: SelfAssessmentLevel

    def __post_init__(self) -> None:
        require_taxonomy('NamedLevel', 'name', self.name)
        require_instance('NamedLevel', 'level', self.level, SelfAssessmentLevel)


def _named_levels(owner: str, field_name: str, value: object) -> tuple[NamedLevel, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, '__iter__'):
        raise type_error(owner, field_name, 'a sequence of NamedLevel', value)
    items = tuple(cast('Iterable[object]', value))
    if len(items) > MAX_NAMED_LEVELS:
        raise value_error(
            owner, field_name, 'too_long',
            f'has {len(items)} entries, at most {MAX_NAMED_LEVELS} are allowed')
    seen: set[str] = set()
    for i, item in enumerate(items):
        level = require_instance(owner, f'{field_name}[{i}]', item, NamedLevel)
        if level.name in seen:
            raise value_error(
                owner, field_name, 'duplicate_name', f'has duplicate name {level.name!r}')
        seen.add(level.name)
    return cast('tuple[NamedLevel, ...]', items)


@dataclass(frozen=True, slots=True)
class BeliefSelfAssessment:
    """The estimator's claim about what it knows at ``belief_stamp_sim_ns`` (raw, unadjusted).

    ``axis_levels`` and ``block_levels`` carry per-axis and per-block levels (names unique within
    each); ADR-0026 v1 adjusts only ``overall_level`` and leaves them untouched. Sequences are
    stored as tuples, at most ``MAX_NAMED_LEVELS`` (64) each. ``frame_id`` names the frame the
    belief is about (``''`` when unknown, at most ``FRAME_ID_MAX_LEN`` characters).
    """

    belief_stamp_sim_ns: int
    overall_level: SelfAssessmentLevel
    axis_levels: tuple[NamedLevel, ...] = ()
    block_levels: tuple[NamedLevel, ...] = ()
    schema_version: int = SCHEMA_VERSION
    frame_id: str = ''

    def __post_init__(self) -> None:
        owner = 'BeliefSelfAssessment'
        require_int(owner, 'belief_stamp_sim_ns', self.belief_stamp_sim_ns, maximum=STAMP_MAX_NS)
        require_frame_id(owner, 'frame_id', self.frame_id)
        require_instance(owner, 'overall_level', self.overall_level, SelfAssessmentLevel)
        object.__setattr__(
            self, 'axis_levels', _named_levels(owner, 'axis_levels', self.axis_levels))
        object.__setattr__(
            self, 'block_levels', _named_levels(owner, 'block_levels', self.block_levels))
        require_schema_version(owner, self.schema_version, SCHEMA_VERSION)


# Bucket indices, by the worse of an outcome's two unsquared Mahalanobis distances d.
BUCKET_WITHIN_1_STD = 0   # d <= 1
BUCKET_BEYOND_1_STD = 1   # 1 < d <= 3
BUCKET_BEYOND_3_STD = 2   # 3 < d <= 5
BUCKET_BEYOND_5_STD = 3   # d > 5, +inf included


def bucket_of_distance(distance: float) -> int:
    """Return the bucket index of an unsquared Mahalanobis distance (already validated)."""
    if distance <= 1.0:
        return BUCKET_WITHIN_1_STD
    if distance <= 3.0:
        return BUCKET_BEYOND_1_STD
    if distance <= 5.0:
        return BUCKET_BEYOND_3_STD
    return BUCKET_BEYOND_5_STD


class _OutcomeCache:
    """Instance attributes a PredictionOutcome caches in ``__post_init__`` (not fields)."""

    _bucket: int


@dataclass(frozen=True)
class PredictionOutcome(_OutcomeCache):
    """A prediction held against what was observed later.

    Distances are **unsquared** Mahalanobis distances ``d = sqrt(e^T S^-1 e)`` of the position and
    orientation 3-vector errors: ``>= 0``, NaN rejected, ``+inf`` legal. Errors are finite
    3-vectors (metres, radians as a rotation vector). ``observed_stamp_sim_ns >=
    prediction_stamp_sim_ns``.

    ``bucket`` (derived, not a dataclass field) is the calibration bucket of the outcome, decided
    by the worse (larger) of its two distances; see :func:`bucket_of_distance`. ``frame_id`` names
    the frame the error vectors are expressed in (``''`` when unknown).

    ``bias_evidence_nats`` (finite, ``>= 0``; 0 when the producer does not compute it) is the
    evidence of a constant bias in the producer's prewhitened errors up to this outcome
    (``core/bias_evidence.py``), ``bias_position_share`` (in ``[0, 1]``) the part of it the
    position vec3 carries. Not part of ADR-0026: added with interface version 3 of the message
    (docs/contracts.md).
    """

    prediction_stamp_sim_ns: int
    observed_stamp_sim_ns: int
    position_error_m: tuple[float, float, float]
    orientation_error_rad: tuple[float, float, float]
    position_mahalanobis: float
    orientation_mahalanobis: float
    schema_version: int = SCHEMA_VERSION
    frame_id: str = ''
    bias_evidence_nats: float = 0.0
    bias_position_share: float = 0.0

    def __post_init__(self) -> None:
        owner = 'PredictionOutcome'
        require_frame_id(owner, 'frame_id', self.frame_id)
        evidence = require_finite(owner, 'bias_evidence_nats', self.bias_evidence_nats)
        if evidence < 0.0:
            raise value_error(owner, 'bias_evidence_nats', 'negative',
                              f'must be >= 0, got {evidence!r}')
        share = require_finite(owner, 'bias_position_share', self.bias_position_share)
        if not 0.0 <= share <= 1.0:
            raise value_error(owner, 'bias_position_share', 'out_of_range',
                              f'must be in [0, 1], got {share!r}')
        require_int(
            owner, 'prediction_stamp_sim_ns', self.prediction_stamp_sim_ns, maximum=STAMP_MAX_NS)
        require_int(
            owner, 'observed_stamp_sim_ns', self.observed_stamp_sim_ns, maximum=STAMP_MAX_NS)
        if self.observed_stamp_sim_ns < self.prediction_stamp_sim_ns:
            raise value_error(
                owner, 'observed_stamp_sim_ns', 'stamp_order',
                f'({self.observed_stamp_sim_ns}) must be >= prediction_stamp_sim_ns '
                f'({self.prediction_stamp_sim_ns})')
        setattr_ = object.__setattr__
        setattr_(self, 'position_error_m',
                 require_vec3(owner, 'position_error_m', self.position_error_m))
        setattr_(self, 'orientation_error_rad',
                 require_vec3(owner, 'orientation_error_rad', self.orientation_error_rad))
        position = require_distance(owner, 'position_mahalanobis', self.position_mahalanobis)
        orientation = require_distance(
            owner, 'orientation_mahalanobis', self.orientation_mahalanobis)
        setattr_(self, 'position_mahalanobis', position)
        setattr_(self, 'orientation_mahalanobis', orientation)
        setattr_(self, 'bias_evidence_nats', evidence)
        setattr_(self, 'bias_position_share', share)
        require_schema_version(owner, self.schema_version, SCHEMA_VERSION)
        # Cached derived value (not a field: absent from repr, eq, hash and fields()).
        setattr_(self, '_bucket', bucket_of_distance(max(position, orientation)))

    @property
    def bucket(self) -> int:
        """Return the calibration bucket index (one of the ``BUCKET_*`` constants)."""
        return self._bucket

    @property
    def worst_mahalanobis(self) -> float:
        """Return the larger of the two unsquared distances (the one that decides the bucket)."""
        return max(self.position_mahalanobis, self.orientation_mahalanobis)
