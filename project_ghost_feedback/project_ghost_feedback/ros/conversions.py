# SPDX-License-Identifier: Apache-2.0
"""Convert project_ghost_feedback_msgs messages to and from the core contracts, in one place.

One function per type and direction. ``*_from_msg`` validates through the core constructors, so a
bad message (NaN or negative distance, unknown level, wrong schema_version, inconsistent counts, a
stamp present while empty, ...) raises the core's :class:`ContractViolation` (a TypeError or
ValueError naming the field and value). ``*_to_msg`` never fails for a valid contract object.

Messages are interface version 2 (``SCHEMA_VERSION = 2``: ``std_msgs/Header``, the
``SelfAssessmentLevel`` catalog message, bounded sequences), CalibrationHistory version 3
(ADR-0026a: squared distances, a ``builtin_interfaces/Time`` stamp); the core contracts are
ADR-0026's (``schema_version`` 1), CalibrationHistory schema 1 or 2. Stamps map exactly:
``ns = sec * 10**9 + nanosec``.
"""

from collections.abc import Sequence
import math
from typing import Any

from builtin_interfaces.msg import Time as TimeMsg
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    CalibrationHistory as CalibrationHistoryMsg,
    FeedbackEvent as FeedbackEventMsg,
    NamedLevel as NamedLevelMsg,
    OverconfidenceEstimate as OverconfidenceEstimateMsg,
    PredictionOutcome as PredictionOutcomeMsg,
    SelfAssessmentLevel as SelfAssessmentLevelMsg,
)

from ..core import BeliefSelfAssessment, NamedLevel, PredictionOutcome, SelfAssessmentLevel
from ..core.feedback import CalibratedSelfAssessment, CalibrationHistory
from ..core.feedback.overconfidence import estimate_overconfidence, VEC3_COMPONENTS
from ..core.loop import LoopEvent
from ..msg_encoding import (
    BELIEF, CALIBRATED, EVENT, fill, HISTORY, LEVEL, NAMED_LEVEL, OUTCOME)
from ..msg_decoding import (  # noqa: F401 - re-exported: the ROS layer's one conversion module
    belief_from_msg,
    calibrated_from_msg,
    EVENT_KIND_WIRE,
    EVENT_SCHEMA_VERSION,
    event_from_msg,
    history_from_msg,
    HISTORY_MSG_SCHEMA_VERSION,
    level_from_msg,
    MSG_SCHEMA_VERSION,
    named_level_from_msg,
    NS_PER_S,
    outcome_from_msg,
    stamp_to_ns,
)


CLASSES: dict[str, type] = {
    NAMED_LEVEL: NamedLevelMsg,  # the one sub-message the table builds per item (a sequence)
}
"""The rclpy classes :func:`~..msg_encoding.fill` builds; every other sub-message is filled."""


def fill_stamp(stamp: TimeMsg, ns: int) -> TimeMsg:
    """Set a builtin_interfaces/Time to ``ns`` nanoseconds (a contract stamp); return it."""
    stamp.sec, stamp.nanosec = divmod(ns, NS_PER_S)
    return stamp


def ns_to_stamp(ns: int) -> TimeMsg:
    """Return a builtin_interfaces/Time for ``ns`` nanoseconds (a contract stamp)."""
    return fill_stamp(TimeMsg(), ns)


def level_to_msg(level: SelfAssessmentLevel) -> SelfAssessmentLevelMsg:
    """Return a SelfAssessmentLevel message for a SelfAssessmentLevel."""
    return fill(SelfAssessmentLevelMsg(), LEVEL, level, CLASSES)


def named_level_to_msg(named: NamedLevel) -> NamedLevelMsg:
    """Return a NamedLevel message for a NamedLevel."""
    return fill(NamedLevelMsg(), NAMED_LEVEL, named, CLASSES)


def belief_to_msg(belief: BeliefSelfAssessment) -> BeliefSelfAssessmentMsg:
    """Return a BeliefSelfAssessment message for a BeliefSelfAssessment."""
    return fill_belief_msg(BeliefSelfAssessmentMsg(), belief)


def fill_belief_msg(msg: Any, belief: BeliefSelfAssessment) -> Any:
    """Set every field of the BeliefSelfAssessment message ``msg`` from ``belief``; return it."""
    return fill(msg, BELIEF, belief, CLASSES)


def outcome_to_msg(outcome: PredictionOutcome) -> PredictionOutcomeMsg:
    """Return a PredictionOutcome message for a PredictionOutcome."""
    return fill_outcome_msg(PredictionOutcomeMsg(), outcome)


def fill_outcome_msg(msg: PredictionOutcomeMsg, outcome: PredictionOutcome) -> PredictionOutcomeMsg:
    """Set every field of the PredictionOutcome message ``msg`` from ``outcome``; return it."""
    return fill(msg, OUTCOME, outcome, CLASSES)


def history_to_msg(history: CalibrationHistory) -> CalibrationHistoryMsg:
    """Return a CalibrationHistory message for a CalibrationHistory."""
    return fill_history_msg(CalibrationHistoryMsg(), history)


def fill_history_msg(msg: CalibrationHistoryMsg, history: CalibrationHistory,
                     ) -> CalibrationHistoryMsg:
    """Set every field of the CalibrationHistory message ``msg`` from ``history``; return it.

    Interface version 3 (ADR-0026a): no stamp (``None``, zero outcomes) is a zero Time; the
    squared distances go in as ``array('d')`` (rclpy's fast path). A schema-2 history of more
    than ``MAX_SQUARED_DISTANCES`` (100000, the node's largest max_history) outcomes does not fit
    the message (rclpy raises AssertionError).
    """
    return fill(msg, HISTORY, history, CLASSES)


def calibrated_to_msg(calibrated: CalibratedSelfAssessment) -> CalibratedSelfAssessmentMsg:
    """Return a CalibratedSelfAssessment message for a CalibratedSelfAssessment."""
    return fill_calibrated_msg(CalibratedSelfAssessmentMsg(), calibrated)


def fill_calibrated_msg(msg: CalibratedSelfAssessmentMsg, calibrated: CalibratedSelfAssessment,
                        raw_msg: BeliefSelfAssessmentMsg | None = None,
                        ) -> CalibratedSelfAssessmentMsg:
    """Set every field of the CalibratedSelfAssessment message ``msg`` from ``calibrated``.

    Returns ``msg``. The node reuses one output message this way (rclpy serializes on publish),
    instead of building a message and its default sub-messages per assessment. ``raw_msg``, when
    given, must be the BeliefSelfAssessment message that ``calibrated.raw_assessment`` was
    converted from (:func:`belief_from_msg`): it is used as is instead of being rebuilt (the
    conversion is lossless, so both are equal), and its header is the output's.
    """
    if raw_msg is None:
        return fill(msg, CALIBRATED, calibrated, CLASSES)
    msg.raw_assessment = raw_msg
    msg.header = raw_msg.header
    return fill(msg, CALIBRATED, calibrated, CLASSES, skip=('header', 'raw_assessment'))


def event_to_msg(event: LoopEvent) -> FeedbackEventMsg:
    """Return a FeedbackEvent message for a core LoopEvent (detail cut to the message bound)."""
    return fill(FeedbackEventMsg(), EVENT, event, CLASSES)


def overconfidence_to_msg(calibrated: CalibratedSelfAssessment,
                          components: Sequence[int] = VEC3_COMPONENTS,
                          ) -> OverconfidenceEstimateMsg:
    """Return the OverconfidenceEstimate of a core CalibratedSelfAssessment's window.

    NaN where there is no estimate (empty window, schema-1 history), as the message documents.
    ``components``: the (position, orientation) error components of the source (the node's
    ``LoopConfig.vec3_components``), so that ``k`` is unbiased for a planar source.
    """
    history = calibrated.calibration_history
    estimates = estimate_overconfidence(history, components) or {}
    msg = OverconfidenceEstimateMsg(window_outcomes=history.outcomes_considered)
    for vec3 in ('position', 'orientation'):
        estimate = estimates.get(vec3)
        values = ((math.nan,) * 3 if estimate is None
                  else (estimate.k_hat, estimate.low, estimate.high))
        for name, value in zip(('k_hat', 'k_low', 'k_high'), values):
            setattr(msg, f'{vec3}_{name}', value)
    fill_stamp(msg.header.stamp, calibrated.raw_assessment.belief_stamp_sim_ns)
    msg.header.frame_id = calibrated.raw_assessment.frame_id
    return msg
