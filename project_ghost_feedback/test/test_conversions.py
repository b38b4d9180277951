# SPDX-License-Identifier: Apache-2.0
"""ros/conversions.py: every contract survives dataclass -> msg -> (CDR ->) msg -> dataclass.

Round trips are property tests over generated contracts (+inf distances, empty and non-empty
level lists, extreme stamps) and go through rclpy's CDR serialization too. A bad message raises
the core's ContractViolation naming the field, never a silently wrong object.
"""

import math

from hypothesis import given, settings, strategies as st
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    ContractViolation,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    assess_with_feedback,
    build_calibration_history,
    CalibratedSelfAssessment,
    CalibrationHistory,
    make_policy,
    policy_names,
)
from project_ghost_feedback.ros import conversions
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    CalibrationHistory as CalibrationHistoryMsg,
    NamedLevel as NamedLevelMsg,

)
import pytest
from rclpy.serialization import deserialize_message, serialize_message

INT64_MAX = 2**63 - 1
SETTINGS = settings(max_examples=150, deadline=None, database=None)

levels = st.sampled_from(list(SelfAssessmentLevel))
stamps = st.one_of(st.integers(0, INT64_MAX), st.sampled_from([0, 1, INT64_MAX]))
names = st.from_regex(r'[a-z][a-z0-9_]{0,20}', fullmatch=True)
distances = st.one_of(
    st.floats(min_value=0.0, allow_nan=False), st.just(math.inf), st.sampled_from([1.0, 3.0, 5.0]))
finite = st.floats(allow_nan=False, allow_infinity=False)
vec3 = st.tuples(finite, finite, finite)


@st.composite
def named_levels(draw):
    """Draw a tuple of NamedLevel with unique names."""
    chosen = draw(st.lists(names, unique=True, max_size=6))
    return tuple(NamedLevel(name, draw(levels)) for name in chosen)


@st.composite
def beliefs(draw):
    """Draw a valid BeliefSelfAssessment."""
    return BeliefSelfAssessment(draw(stamps), draw(levels), draw(named_levels()),
                                draw(named_levels()))


@st.composite
def outcomes(draw):
    """Draw a valid PredictionOutcome."""
    predicted = draw(st.integers(0, INT64_MAX))
    observed = draw(st.integers(predicted, INT64_MAX))
    return PredictionOutcome(predicted, observed, draw(vec3), draw(vec3), draw(distances),
                             draw(distances))


@st.composite
def calibrated_assessments(draw):
    """Draw a valid CalibratedSelfAssessment produced by a registered policy."""
    raw = draw(beliefs())
    window = draw(st.lists(outcomes(), max_size=40))
    policy = make_policy(draw(st.sampled_from(policy_names())))
    return assess_with_feedback(raw, window, policy, draw(st.integers(1, 64)))


def _through_cdr(msg):
    return deserialize_message(serialize_message(msg), type(msg))


@SETTINGS
@given(beliefs())
def test_belief_roundtrip(belief):
    """BeliefSelfAssessment -> msg -> CDR -> msg -> BeliefSelfAssessment is the identity."""
    msg = conversions.belief_to_msg(belief)
    assert conversions.belief_from_msg(msg) == belief
    assert conversions.belief_from_msg(_through_cdr(msg)) == belief


@SETTINGS
@given(outcomes())
def test_outcome_roundtrip(outcome):
    """PredictionOutcome round-trips, +inf distances and extreme stamps included."""
    msg = conversions.outcome_to_msg(outcome)
    assert conversions.outcome_from_msg(msg) == outcome
    back = conversions.outcome_from_msg(_through_cdr(msg))
    assert back == outcome
    assert back.bucket == outcome.bucket


@SETTINGS
@given(st.lists(outcomes(), max_size=40), st.integers(1, 64))
def test_history_roundtrip(window, max_n):
    """CalibrationHistory round-trips; None stamp <-> has_most_recent_observed_stamp False."""
    history = build_calibration_history(window, max_n)
    msg = conversions.history_to_msg(history)
    assert msg.has_most_recent_observed_stamp is (history.outcomes_considered > 0)
    assert conversions.history_from_msg(msg) == history
    assert conversions.history_from_msg(_through_cdr(msg)) == history


@SETTINGS
@given(calibrated_assessments())
def test_calibrated_roundtrip(calibrated):
    """CalibratedSelfAssessment round-trips, nested raw assessment and history included."""
    msg = conversions.calibrated_to_msg(calibrated)
    assert conversions.calibrated_from_msg(msg) == calibrated
    back = conversions.calibrated_from_msg(_through_cdr(msg))
    assert back == calibrated
    assert repr(back) == repr(calibrated)


def test_infinite_worsts_roundtrip():
    """A history whose worst distances are +inf keeps them through CDR."""
    history = CalibrationHistory(1, 0, 0, 0, 1, math.inf, math.inf, 7)
    back = conversions.history_from_msg(_through_cdr(conversions.history_to_msg(history)))
    assert back.worst_position_mahalanobis == math.inf
    assert back.worst_orientation_mahalanobis == math.inf
    assert back == history


def test_level_wire_values_match_message_constants():
    """Level wire values equal the LEVEL_* constants of every message that declares them."""
    for msg_type in (NamedLevelMsg, BeliefSelfAssessmentMsg, CalibratedSelfAssessmentMsg):
        assert conversions.level_to_msg(SelfAssessmentLevel.KNOWN) == msg_type.LEVEL_KNOWN
        assert conversions.level_to_msg(SelfAssessmentLevel.UNCERTAIN) == msg_type.LEVEL_UNCERTAIN
        assert conversions.level_to_msg(SelfAssessmentLevel.UNKNOWN) == msg_type.LEVEL_UNKNOWN
    for level in SelfAssessmentLevel:
        assert conversions.level_from_msg(conversions.level_to_msg(level)) is level


def _good_outcome_msg():
    return conversions.outcome_to_msg(
        PredictionOutcome(1, 2, (0.1, 0.0, 0.0), (0.0, 0.0, 0.0), 0.5, 0.5))


def _good_belief_msg():
    return conversions.belief_to_msg(BeliefSelfAssessment(
        5, SelfAssessmentLevel.KNOWN, (NamedLevel('x', SelfAssessmentLevel.KNOWN),)))


def _set(msg, path, value):
    target = msg
    *parents, leaf = path.split('.')
    for parent in parents:
        target = getattr(target, parent)
    if '[' in leaf:
        name, index = leaf[:-1].split('[')
        getattr(target, name)[int(index)] = value
    else:
        setattr(target, leaf, value)
    return msg


@pytest.mark.parametrize('path, value, reason', [
    ('position_mahalanobis', math.nan, 'nan:PredictionOutcome.position_mahalanobis'),
    ('orientation_mahalanobis', -1.0, 'negative:PredictionOutcome.orientation_mahalanobis'),
    ('position_error_m[1]', math.inf, 'not_finite:PredictionOutcome.position_error_m[1]'),
    ('orientation_error_rad[2]', math.nan, 'nan:PredictionOutcome.orientation_error_rad[2]'),
    ('observed_stamp_sim_ns', 0, 'stamp_order:PredictionOutcome.observed_stamp_sim_ns'),
    ('prediction_stamp_sim_ns', -5, 'negative:PredictionOutcome.prediction_stamp_sim_ns'),
    ('schema_version', 2,
     'unsupported_schema_version:PredictionOutcome.schema_version'),
])
def test_bad_outcome_message_raises_core_error(path, value, reason):
    """A bad PredictionOutcome message raises the core's error with field and code."""
    msg = _set(_good_outcome_msg(), path, value)
    with pytest.raises(ContractViolation) as info:
        conversions.outcome_from_msg(msg)
    assert info.value.reason == reason
    assert info.value.field in str(info.value)


@pytest.mark.parametrize('mutate, reason', [
    (lambda m: setattr(m, 'overall_level', 7), 'unknown_level:SelfAssessmentLevel.value'),
    (lambda m: setattr(m, 'belief_stamp_sim_ns', -1),
     'negative:BeliefSelfAssessment.belief_stamp_sim_ns'),
    (lambda m: setattr(m, 'schema_version', 0),
     'unsupported_schema_version:BeliefSelfAssessment.schema_version'),
    (lambda m: setattr(m.axis_levels[0], 'name', 'Bad Name'), 'bad_taxonomy:NamedLevel.name'),
    (lambda m: setattr(m.axis_levels[0], 'level', 9), 'unknown_level:SelfAssessmentLevel.value'),
    (lambda m: m.axis_levels.append(NamedLevelMsg(name='x', level=0)),
     'duplicate_name:BeliefSelfAssessment.axis_levels'),
])
def test_bad_belief_message_raises_core_error(mutate, reason):
    """A bad BeliefSelfAssessment message raises the core's error with field and code."""
    msg = _good_belief_msg()
    mutate(msg)
    with pytest.raises(ContractViolation) as info:
        conversions.belief_from_msg(msg)
    assert info.value.reason == reason


def test_history_flag_and_stamp_must_agree():
    """A stamp with the flag false, or a flag without outcomes, is rejected, not dropped."""
    msg = conversions.history_to_msg(CalibrationHistory.empty())
    msg.most_recent_observed_stamp_sim_ns = 42
    with pytest.raises(ContractViolation) as info:
        conversions.history_from_msg(msg)
    assert info.value.reason == (
        'inconsistent_empty:CalibrationHistory.most_recent_observed_stamp_sim_ns')
    msg = CalibrationHistoryMsg(has_most_recent_observed_stamp=True,
                                most_recent_observed_stamp_sim_ns=3, schema_version=1)
    with pytest.raises(ContractViolation) as info:
        conversions.history_from_msg(msg)
    assert info.value.code == 'inconsistent_empty'


def test_bad_calibrated_message_raises_core_error():
    """A calibrated message with a malformed policy id or inconsistent counts is rejected."""
    raw = BeliefSelfAssessment(1, SelfAssessmentLevel.KNOWN)
    good = CalibratedSelfAssessment(raw, CalibrationHistory.empty(), SelfAssessmentLevel.KNOWN,
                                    'mahalanobis_downgrade', 'no_outcomes_yet')
    msg = conversions.calibrated_to_msg(good)
    msg.adjustment_policy_id = 'Mahalanobis'
    with pytest.raises(ContractViolation) as info:
        conversions.calibrated_from_msg(msg)
    assert info.value.reason == 'bad_taxonomy:CalibratedSelfAssessment.adjustment_policy_id'
    msg = conversions.calibrated_to_msg(good)
    msg.calibration_history.count_beyond_3_std = 2
    with pytest.raises(ContractViolation) as info:
        conversions.calibrated_from_msg(msg)
    assert info.value.reason == 'inconsistent_counts:CalibrationHistory.outcomes_considered'
