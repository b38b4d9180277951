# SPDX-License-Identifier: Apache-2.0
"""Convert project_ghost_feedback_msgs messages to and from the core contracts, in one place.

One function per type and direction. ``*_from_msg`` validates through the core constructors, so a
bad message (NaN or negative distance, unknown level, wrong schema_version, inconsistent counts, a
stamp present while empty, ...) raises the core's :class:`ContractViolation` (a TypeError or
ValueError naming the field and value). ``*_to_msg`` never fails for a valid contract object.
"""

from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    CalibrationHistory as CalibrationHistoryMsg,
    NamedLevel as NamedLevelMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)

from ..core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from ..core._validation import value_error
from ..core.feedback import CalibratedSelfAssessment, CalibrationHistory


def level_from_msg(value):
    """Return the SelfAssessmentLevel for a ``LEVEL_*`` wire value (ValueError if unknown)."""
    return SelfAssessmentLevel.from_wire(value)


def level_to_msg(level):
    """Return the ``LEVEL_*`` wire value of a SelfAssessmentLevel."""
    return level.value


def named_level_from_msg(msg):
    """Return a NamedLevel for a NamedLevel message."""
    return NamedLevel(msg.name, level_from_msg(msg.level))


def named_level_to_msg(named):
    """Return a NamedLevel message for a NamedLevel."""
    return NamedLevelMsg(name=named.name, level=named.level.value)


def belief_from_msg(msg):
    """Return a BeliefSelfAssessment for a BeliefSelfAssessment message."""
    return BeliefSelfAssessment(
        belief_stamp_sim_ns=msg.belief_stamp_sim_ns,
        overall_level=level_from_msg(msg.overall_level),
        axis_levels=tuple(named_level_from_msg(m) for m in msg.axis_levels),
        block_levels=tuple(named_level_from_msg(m) for m in msg.block_levels),
        schema_version=msg.schema_version,
    )


def belief_to_msg(belief):
    """Return a BeliefSelfAssessment message for a BeliefSelfAssessment."""
    return BeliefSelfAssessmentMsg(
        belief_stamp_sim_ns=belief.belief_stamp_sim_ns,
        overall_level=belief.overall_level.value,
        axis_levels=[named_level_to_msg(n) for n in belief.axis_levels],
        block_levels=[named_level_to_msg(n) for n in belief.block_levels],
        schema_version=belief.schema_version,
    )


def _floats(values):
    """Return a float64[3] field (a numpy array in rclpy) as a tuple of Python floats."""
    tolist = getattr(values, 'tolist', None)
    return tuple(tolist()) if tolist is not None else tuple(float(v) for v in values)


def outcome_from_msg(msg):
    """Return a PredictionOutcome for a PredictionOutcome message."""
    return PredictionOutcome(
        prediction_stamp_sim_ns=msg.prediction_stamp_sim_ns,
        observed_stamp_sim_ns=msg.observed_stamp_sim_ns,
        position_error_m=_floats(msg.position_error_m),
        orientation_error_rad=_floats(msg.orientation_error_rad),
        position_mahalanobis=msg.position_mahalanobis,
        orientation_mahalanobis=msg.orientation_mahalanobis,
        schema_version=msg.schema_version,
    )


def outcome_to_msg(outcome):
    """Return a PredictionOutcome message for a PredictionOutcome."""
    return PredictionOutcomeMsg(
        prediction_stamp_sim_ns=outcome.prediction_stamp_sim_ns,
        observed_stamp_sim_ns=outcome.observed_stamp_sim_ns,
        position_error_m=list(outcome.position_error_m),
        orientation_error_rad=list(outcome.orientation_error_rad),
        position_mahalanobis=outcome.position_mahalanobis,
        orientation_mahalanobis=outcome.orientation_mahalanobis,
        schema_version=outcome.schema_version,
    )


def history_from_msg(msg):
    """Return a CalibrationHistory for a CalibrationHistory message.

    ``has_most_recent_observed_stamp == False`` is the contract's ``None``; the stamp field must
    then be 0 (anything else is a ContractValueError, so no stamp is silently dropped).
    """
    if msg.has_most_recent_observed_stamp:
        stamp = msg.most_recent_observed_stamp_sim_ns
    elif msg.most_recent_observed_stamp_sim_ns != 0:
        raise value_error(
            'CalibrationHistory', 'most_recent_observed_stamp_sim_ns', 'inconsistent_empty',
            f'must be 0 when has_most_recent_observed_stamp is false, '
            f'got {msg.most_recent_observed_stamp_sim_ns!r}')
    else:
        stamp = None
    return CalibrationHistory(
        outcomes_considered=msg.outcomes_considered,
        count_within_1_std=msg.count_within_1_std,
        count_beyond_1_std=msg.count_beyond_1_std,
        count_beyond_3_std=msg.count_beyond_3_std,
        count_beyond_5_std=msg.count_beyond_5_std,
        worst_position_mahalanobis=msg.worst_position_mahalanobis,
        worst_orientation_mahalanobis=msg.worst_orientation_mahalanobis,
        most_recent_observed_stamp_sim_ns=stamp,
        schema_version=msg.schema_version,
    )


def history_to_msg(history):
    """Return a CalibrationHistory message for a CalibrationHistory."""
    return fill_history_msg(CalibrationHistoryMsg(), history)


def fill_history_msg(msg, history):
    """Set every field of the CalibrationHistory message ``msg`` from ``history``; return it."""
    stamp = history.most_recent_observed_stamp_sim_ns
    msg.outcomes_considered = history.outcomes_considered
    msg.count_within_1_std = history.count_within_1_std
    msg.count_beyond_1_std = history.count_beyond_1_std
    msg.count_beyond_3_std = history.count_beyond_3_std
    msg.count_beyond_5_std = history.count_beyond_5_std
    msg.worst_position_mahalanobis = history.worst_position_mahalanobis
    msg.worst_orientation_mahalanobis = history.worst_orientation_mahalanobis
    msg.has_most_recent_observed_stamp = stamp is not None
    msg.most_recent_observed_stamp_sim_ns = 0 if stamp is None else stamp
    msg.schema_version = history.schema_version
    return msg


def calibrated_from_msg(msg):
    """Return a CalibratedSelfAssessment for a CalibratedSelfAssessment message."""
    return CalibratedSelfAssessment(
        raw_assessment=belief_from_msg(msg.raw_assessment),
        calibration_history=history_from_msg(msg.calibration_history),
        adjusted_overall_level=level_from_msg(msg.adjusted_overall_level),
        adjustment_policy_id=msg.adjustment_policy_id,
        adjustment_reason=msg.adjustment_reason,
        schema_version=msg.schema_version,
    )


def calibrated_to_msg(calibrated):
    """Return a CalibratedSelfAssessment message for a CalibratedSelfAssessment."""
    return fill_calibrated_msg(CalibratedSelfAssessmentMsg(), calibrated)


def fill_calibrated_msg(msg, calibrated, raw_msg=None):
    """Set every field of the CalibratedSelfAssessment message ``msg`` from ``calibrated``.

    Returns ``msg``. The node reuses one output message this way (rclpy serializes on publish),
    instead of building a message and its default sub-messages per assessment. ``raw_msg``, when
    given, must be the BeliefSelfAssessment message that ``calibrated.raw_assessment`` was
    converted from (:func:`belief_from_msg`): it is used as is instead of being rebuilt (the
    conversion is lossless, so both are equal).
    """
    msg.raw_assessment = belief_to_msg(calibrated.raw_assessment) if raw_msg is None else raw_msg
    fill_history_msg(msg.calibration_history, calibrated.calibration_history)
    msg.adjusted_overall_level = calibrated.adjusted_overall_level.value
    msg.adjustment_policy_id = calibrated.adjustment_policy_id
    msg.adjustment_reason = calibrated.adjustment_reason
    msg.schema_version = calibrated.schema_version
    return msg
