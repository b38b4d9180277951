# SPDX-License-Identifier: Apache-2.0
"""Read project_ghost_feedback_msgs v2 messages into the core contracts (no rclpy import).

One function per type. They read attributes only, so they take rclpy messages (the nodes) and
rosbags message objects (telemetry replay) alike: one decoding for the live path and for replay.
Each validates through the core constructors, so a bad message (NaN or negative distance, unknown
level, wrong ``schema_version``, inconsistent counts, a non-normalised stamp, ...) raises the
core's :class:`ContractViolation` naming the field and value.

Messages are interface version 2 (``MSG_SCHEMA_VERSION``) but CalibrationHistory, version 3
(``HISTORY_MSG_SCHEMA_VERSION``, ADR-0026a; version 2 is still read from old bags), and
PredictionOutcome, version 3 (``OUTCOME_MSG_SCHEMA_VERSION``: the bias evidence; version 2 is
still read from old bags, with the evidence 0); the contracts
are ADR-0026's (``schema_version`` 1), CalibrationHistory schema 1 or 2. Stamps map exactly:
``ns = sec * 10**9 + nanosec``.
"""

from typing import Any, cast

from .core import (
    BeliefSelfAssessment,
    NamedLevel,
    NS_PER_S,
    PredictionOutcome,
    SCHEMA_VERSION as CONTRACT_SCHEMA_VERSION,
    SelfAssessmentLevel,
)
from .core.validation import value_error
from .core.feedback import CalibratedSelfAssessment, CalibrationHistory, HISTORY_SCHEMA_COUNTS
from .core.loop import CONFIGURATION, LoopConfig, LoopEvent, RESET

MSG_SCHEMA_VERSION = 2
"""Interface version of the messages this build reads and writes, but CalibrationHistory and
PredictionOutcome."""

OUTCOME_MSG_SCHEMA_VERSION = 3
"""Interface version of PredictionOutcome (the bias evidence, docs/contracts.md)."""

LEGACY_OUTCOME_MSG_SCHEMA_VERSION = 2
"""The previous PredictionOutcome (no bias evidence), still read from bags (the evidence 0)."""

HISTORY_MSG_SCHEMA_VERSION = 3
"""Interface version of CalibrationHistory (ADR-0026a: squared distances, a Time stamp)."""

LEGACY_HISTORY_MSG_SCHEMA_VERSION = 2
"""The previous CalibrationHistory (int64 stamp + has_ flag, schema-1 histories), still read."""

EVENT_SCHEMA_VERSION = 1
"""Interface version of FeedbackEvent (new in this build)."""

EVENT_KIND_WIRE = {RESET: 1, CONFIGURATION: 2}
"""LoopEvent kind -> FeedbackEvent ``kind`` (KIND_RESET, KIND_CONFIGURATION)."""
_EVENT_KIND_BY_WIRE = {wire: kind for kind, wire in EVENT_KIND_WIRE.items()}


def stamp_to_ns(stamp: Any, owner: str, field: str) -> int:
    """Return ``sec * 10**9 + nanosec`` of a builtin_interfaces/Time, exactly.

    A ``nanosec`` of 10**9 or more is not a normalised ROS time and is refused (a
    ContractValueError naming ``owner.field``); a negative result is refused by the contract.
    """
    if stamp.nanosec >= NS_PER_S:
        raise value_error(
            owner, f'{field}.nanosec', 'out_of_range',
            f'must be < 1000000000 (a normalised builtin_interfaces/Time), got {stamp.nanosec!r}')
    return stamp.sec * NS_PER_S + stamp.nanosec


def check_msg_schema_version(owner: str, msg: Any) -> None:
    """Refuse a message whose ``schema_version`` is not this build's interface version."""
    if msg.schema_version != MSG_SCHEMA_VERSION:
        raise value_error(
            owner, 'schema_version', 'unsupported_schema_version',
            f'must be {MSG_SCHEMA_VERSION} (interface version of this build), '
            f'got {msg.schema_version!r}')


def level_from_msg(msg: Any) -> SelfAssessmentLevel:
    """Return the SelfAssessmentLevel for a SelfAssessmentLevel message (ValueError if unknown)."""
    return SelfAssessmentLevel.from_wire(msg.value)


def named_level_from_msg(msg: Any) -> NamedLevel:
    """Return a NamedLevel for a NamedLevel message."""
    return NamedLevel(msg.name, level_from_msg(msg.level))


def belief_from_msg(msg: Any) -> BeliefSelfAssessment:
    """Return a BeliefSelfAssessment for a BeliefSelfAssessment message."""
    owner = 'BeliefSelfAssessment'
    check_msg_schema_version(owner, msg)
    return BeliefSelfAssessment(
        belief_stamp_sim_ns=stamp_to_ns(msg.header.stamp, owner, 'header.stamp'),
        overall_level=level_from_msg(msg.overall_level),
        axis_levels=tuple(named_level_from_msg(m) for m in msg.axis_levels),
        block_levels=tuple(named_level_from_msg(m) for m in msg.block_levels),
        schema_version=CONTRACT_SCHEMA_VERSION,
        frame_id=msg.header.frame_id,
    )


def _floats(values: Any) -> tuple[float, ...]:
    """Return a float64[3] field (a numpy array in rclpy) as a tuple of Python floats."""
    tolist = getattr(values, 'tolist', None)
    return tuple(tolist()) if tolist is not None else tuple(float(v) for v in values)


def _vec3(values: Any) -> tuple[float, float, float]:
    """Return a float[3] field as floats; its length is the contract's to check (and refuse)."""
    return cast('tuple[float, float, float]', _floats(values))


def outcome_from_msg(msg: Any) -> PredictionOutcome:
    """Return a PredictionOutcome for a PredictionOutcome message."""
    owner = 'PredictionOutcome'
    legacy = not hasattr(msg, 'bias_evidence_nats')
    _check_version(owner, msg, LEGACY_OUTCOME_MSG_SCHEMA_VERSION if legacy
                   else OUTCOME_MSG_SCHEMA_VERSION)
    return PredictionOutcome(
        prediction_stamp_sim_ns=stamp_to_ns(msg.prediction_stamp, owner, 'prediction_stamp'),
        observed_stamp_sim_ns=stamp_to_ns(msg.header.stamp, owner, 'header.stamp'),
        position_error_m=_vec3(msg.position_error_m),
        orientation_error_rad=_vec3(msg.orientation_error_rad),
        position_mahalanobis=msg.position_mahalanobis,
        orientation_mahalanobis=msg.orientation_mahalanobis,
        schema_version=CONTRACT_SCHEMA_VERSION,
        frame_id=msg.header.frame_id,
        bias_evidence_nats=0.0 if legacy else msg.bias_evidence_nats,
        bias_position_share=0.0 if legacy else msg.bias_position_share,
    )


def _check_version(owner: str, msg: Any, expected: int) -> None:
    if msg.schema_version != expected:
        raise value_error(
            owner, 'schema_version', 'unsupported_schema_version',
            f'must be {expected} (interface version of this layout), got {msg.schema_version!r}')


def history_from_msg(msg: Any) -> CalibrationHistory:
    """Return a CalibrationHistory for a CalibrationHistory message, of either layout.

    Interface version 3 (ADR-0026a): there is no stamp exactly when ``outcomes_considered == 0``
    (the contract's ``None``), and the stamp must then be zero; ``history_schema_version`` is the
    contract schema (1 or 2) and the squared distances are passed to the contract, which checks
    them. Interface version 2 (a bag recorded before ADR-0026a, recognised by its
    ``has_most_recent_observed_stamp`` field): ``has_most_recent_observed_stamp == False`` is the
    contract's ``None`` and the stamp must then be 0; the history is schema 1.
    """
    owner = 'CalibrationHistory'
    if hasattr(msg, 'has_most_recent_observed_stamp'):
        return _history_from_v2_msg(msg)
    _check_version(owner, msg, HISTORY_MSG_SCHEMA_VERSION)
    stamp_msg = msg.most_recent_observed_stamp
    if msg.outcomes_considered:
        stamp = stamp_to_ns(stamp_msg, owner, 'most_recent_observed_stamp')
    elif stamp_msg.sec or stamp_msg.nanosec:
        raise value_error(
            owner, 'most_recent_observed_stamp', 'inconsistent_empty',
            f'must be zero when outcomes_considered == 0, got sec={stamp_msg.sec!r} '
            f'nanosec={stamp_msg.nanosec!r}')
    else:
        stamp = None
    return _history(
        msg, stamp, msg.history_schema_version, _floats(msg.position_squared_distances),
        _floats(msg.orientation_squared_distances))


def _history_from_v2_msg(msg: Any) -> CalibrationHistory:
    """Return the schema-1 CalibrationHistory of an interface-version-2 message (old bags)."""
    owner = 'CalibrationHistory'
    _check_version(owner, msg, LEGACY_HISTORY_MSG_SCHEMA_VERSION)
    if msg.has_most_recent_observed_stamp:
        stamp = msg.most_recent_observed_stamp_sim_ns
    elif msg.most_recent_observed_stamp_sim_ns != 0:
        raise value_error(
            owner, 'most_recent_observed_stamp_sim_ns', 'inconsistent_empty',
            f'must be 0 when has_most_recent_observed_stamp is false, '
            f'got {msg.most_recent_observed_stamp_sim_ns!r}')
    else:
        stamp = None
    return _history(msg, stamp, HISTORY_SCHEMA_COUNTS, (), ())


def _history(msg: Any, stamp: int | None, schema_version: int,
             position_squared: tuple[float, ...],
             orientation_squared: tuple[float, ...]) -> CalibrationHistory:
    """Return the CalibrationHistory of the fields both layouts share, plus the given ones."""
    return CalibrationHistory(
        outcomes_considered=msg.outcomes_considered,
        count_within_1_std=msg.count_within_1_std,
        count_beyond_1_std=msg.count_beyond_1_std,
        count_beyond_3_std=msg.count_beyond_3_std,
        count_beyond_5_std=msg.count_beyond_5_std,
        worst_position_mahalanobis=msg.worst_position_mahalanobis,
        worst_orientation_mahalanobis=msg.worst_orientation_mahalanobis,
        most_recent_observed_stamp_sim_ns=stamp,
        schema_version=schema_version,
        position_squared_distances=position_squared,
        orientation_squared_distances=orientation_squared,
    )


def calibrated_from_msg(msg: Any) -> CalibratedSelfAssessment:
    """Return a CalibratedSelfAssessment for a CalibratedSelfAssessment message.

    ``header`` must equal ``raw_assessment.header`` (it is a copy of it); a difference is refused.
    """
    check_msg_schema_version('CalibratedSelfAssessment', msg)
    if msg.header != msg.raw_assessment.header:
        raise value_error(
            'CalibratedSelfAssessment', 'header', 'inconsistent_header',
            "must equal raw_assessment.header (the chain's instant is the belief's)")
    return CalibratedSelfAssessment(
        raw_assessment=belief_from_msg(msg.raw_assessment),
        calibration_history=history_from_msg(msg.calibration_history),
        adjusted_overall_level=level_from_msg(msg.adjusted_overall_level),
        adjustment_policy_id=msg.adjustment_policy_id,
        adjustment_reason=msg.adjustment_reason,
        schema_version=CONTRACT_SCHEMA_VERSION,
    )


def event_from_msg(msg: Any) -> LoopEvent:
    """Return the core LoopEvent of a FeedbackEvent message (ValueError for a bad one)."""
    if msg.schema_version != EVENT_SCHEMA_VERSION:
        raise value_error(
            'FeedbackEvent', 'schema_version', 'unsupported_schema_version',
            f'must be {EVENT_SCHEMA_VERSION}, got {msg.schema_version!r}')
    kind = _EVENT_KIND_BY_WIRE.get(msg.kind)
    if kind is None:
        raise value_error('FeedbackEvent', 'kind', 'unknown_kind',
                          f'must be one of {sorted(_EVENT_KIND_BY_WIRE)}, got {msg.kind!r}')
    config = LoopConfig.from_texts(
        msg.policy, tuple(msg.parameter_names), tuple(msg.parameter_values), msg.max_history,
        msg.outcome_buffer_size, msg.time_jump_tolerance_ns)
    return LoopEvent(stamp_to_ns(msg.header.stamp, 'FeedbackEvent', 'header.stamp'), kind,
                     msg.cause, msg.detail, config)
