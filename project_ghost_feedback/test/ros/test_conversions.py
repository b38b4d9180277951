# SPDX-License-Identifier: Apache-2.0
"""ros/conversions.py: every contract survives dataclass -> msg -> (CDR ->) msg -> dataclass.

Round trips are property tests over generated contracts (+inf distances, empty and non-empty
level lists, extreme stamps) and go through rclpy's CDR serialization too. A bad message raises
the core's ContractViolation naming the field, never a silently wrong object.
"""

from array import array
import math

from hypothesis import given, settings, strategies as st
from project_ghost_feedback.core.validation import STAMP_MAX_NS
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
from project_ghost_feedback.core.loop import LoopEvent
from project_ghost_feedback.ros import conversions
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    CalibrationHistory as CalibrationHistoryMsg,
    FeedbackEvent as FeedbackEventMsg,
    NamedLevel as NamedLevelMsg,
    PredictionOutcome as PredictionOutcomeMsg,
    SelfAssessmentLevel as SelfAssessmentLevelMsg,
)
import pytest
from rclpy.serialization import deserialize_message, serialize_message

SETTINGS = settings(max_examples=150, deadline=None, database=None)

levels = st.sampled_from(list(SelfAssessmentLevel))
stamps = st.one_of(st.integers(0, STAMP_MAX_NS), st.sampled_from([0, 1, STAMP_MAX_NS]))
names = st.from_regex(r'[a-z][a-z0-9_]{0,20}', fullmatch=True)
distances = st.one_of(
    st.floats(min_value=0.0, allow_nan=False), st.just(math.inf), st.sampled_from([1.0, 3.0, 5.0]))
finite = st.floats(allow_nan=False, allow_infinity=False)
vec3 = st.tuples(finite, finite, finite)
frame_ids = st.one_of(st.just(''), st.text(
    st.characters(min_codepoint=33, max_codepoint=126), max_size=40))


@st.composite
def named_levels(draw):
    """Draw a tuple of NamedLevel with unique names."""
    chosen = draw(st.lists(names, unique=True, max_size=6))
    return tuple(NamedLevel(name, draw(levels)) for name in chosen)


@st.composite
def beliefs(draw):
    """Draw a valid BeliefSelfAssessment."""
    return BeliefSelfAssessment(draw(stamps), draw(levels), draw(named_levels()),
                                draw(named_levels()), frame_id=draw(frame_ids))


@st.composite
def outcomes(draw):
    """Draw a valid PredictionOutcome."""
    predicted = draw(st.integers(0, STAMP_MAX_NS))
    observed = draw(st.integers(predicted, STAMP_MAX_NS))
    return PredictionOutcome(predicted, observed, draw(vec3), draw(vec3), draw(distances),
                             draw(distances), frame_id=draw(frame_ids))


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
    """CalibrationHistory of both schemas round-trips; None stamp <-> zero Time, no outcomes."""
    for schema in (1, 2):
        history = build_calibration_history(window, max_n, schema_version=schema)
        msg = conversions.history_to_msg(history)
        assert msg.history_schema_version == schema
        assert msg.schema_version == CalibrationHistoryMsg.SCHEMA_VERSION == 3
        assert len(msg.position_squared_distances) == (
            history.outcomes_considered if schema == 2 else 0)
        if history.outcomes_considered == 0:
            assert (msg.most_recent_observed_stamp.sec,
                    msg.most_recent_observed_stamp.nanosec) == (0, 0)
        assert conversions.history_from_msg(msg) == history
        back = conversions.history_from_msg(_through_cdr(msg))
        assert back == history
        assert back.position_squared_distances == history.position_squared_distances


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
    """Level wire values equal the constants of the one SelfAssessmentLevel message."""
    for level in SelfAssessmentLevel:
        assert conversions.level_to_msg(level).value == getattr(SelfAssessmentLevelMsg, level.name)
    assert conversions.level_from_msg(SelfAssessmentLevelMsg()) is SelfAssessmentLevel.UNKNOWN
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
    ('header.stamp.nanosec', 0, 'stamp_order:PredictionOutcome.observed_stamp_sim_ns'),
    ('prediction_stamp.sec', -5, 'negative:PredictionOutcome.prediction_stamp_sim_ns'),
    ('header.stamp.nanosec', 10**9,
     'out_of_range:PredictionOutcome.header.stamp.nanosec'),
    ('schema_version', 1,
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
    (lambda m: setattr(m.overall_level, 'value', 7), 'unknown_level:SelfAssessmentLevel.value'),
    (lambda m: setattr(m.header.stamp, 'sec', -1),
     'negative:BeliefSelfAssessment.belief_stamp_sim_ns'),
    (lambda m: setattr(m.header.stamp, 'nanosec', 2**32 - 1),
     'out_of_range:BeliefSelfAssessment.header.stamp.nanosec'),
    (lambda m: setattr(m, 'schema_version', 0),
     'unsupported_schema_version:BeliefSelfAssessment.schema_version'),
    (lambda m: setattr(m.axis_levels[0], 'name', 'Bad Name'), 'bad_taxonomy:NamedLevel.name'),
    (lambda m: setattr(m.axis_levels[0].level, 'value', 9),
     'unknown_level:SelfAssessmentLevel.value'),
    (lambda m: m.axis_levels.append(NamedLevelMsg(name='x')),
     'duplicate_name:BeliefSelfAssessment.axis_levels'),
])
def test_bad_belief_message_raises_core_error(mutate, reason):
    """A bad BeliefSelfAssessment message raises the core's error with field and code."""
    msg = _good_belief_msg()
    mutate(msg)
    with pytest.raises(ContractViolation) as info:
        conversions.belief_from_msg(msg)
    assert info.value.reason == reason


def test_history_stamp_must_be_zero_without_outcomes():
    """A stamp without outcomes is rejected, not dropped; a zero message is refused."""
    msg = conversions.history_to_msg(CalibrationHistory.empty(2))
    msg.most_recent_observed_stamp.nanosec = 42
    with pytest.raises(ContractViolation) as info:
        conversions.history_from_msg(msg)
    assert info.value.reason == (
        'inconsistent_empty:CalibrationHistory.most_recent_observed_stamp')
    with pytest.raises(ContractViolation) as info:
        conversions.history_from_msg(CalibrationHistoryMsg())
    assert info.value.reason == 'unsupported_schema_version:CalibrationHistory.schema_version'
    with pytest.raises(ContractViolation) as info:
        conversions.history_from_msg(CalibrationHistoryMsg(schema_version=3))
    assert info.value.reason == 'unsupported_schema_version:CalibrationHistory.schema_version'


def test_history_squared_distances_are_checked_by_the_contract():
    """Squared distances inconsistent with the worst distance are refused with a reason."""
    history = CalibrationHistory(2, 1, 1, 0, 0, 2.0, 0.5, 9, 2, (1.0, 4.0), (0.25, 0.0))
    msg = conversions.history_to_msg(history)
    assert conversions.history_from_msg(_through_cdr(msg)) == history
    msg.position_squared_distances = array('d', (1.0, 4.5))
    with pytest.raises(ContractViolation) as info:
        conversions.history_from_msg(msg)
    assert info.value.reason == 'inconsistent_worst:CalibrationHistory.position_squared_distances'
    msg.history_schema_version = 1
    with pytest.raises(ContractViolation) as info:
        conversions.history_from_msg(msg)
    assert info.value.code == 'schema_mismatch'


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


def test_stamps_map_exactly_and_the_calibrated_header_is_the_raw_one():
    """header.stamp is sec * 1e9 + nanosec both ways; the calibrated header copies the raw one."""
    belief = BeliefSelfAssessment(
        12_345_678_901_234_567, SelfAssessmentLevel.UNCERTAIN, frame_id='map')
    msg = conversions.belief_to_msg(belief)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (
        12_345_678, 901_234_567, 'map')
    calibrated = assess_with_feedback(belief, [], make_policy('mahalanobis_downgrade'), 32)
    out = conversions.calibrated_to_msg(calibrated)
    assert out.header == msg.header
    out.header.frame_id = 'odom'
    out.raw_assessment = conversions.belief_to_msg(belief)
    with pytest.raises(ContractViolation) as info:
        conversions.calibrated_from_msg(out)
    assert info.value.reason == 'inconsistent_header:CalibratedSelfAssessment.header'


def test_default_messages_claim_the_least_confidence():
    """A default-constructed message (every field left unset) says UNKNOWN, never KNOWN."""
    assert BeliefSelfAssessmentMsg().overall_level.value == SelfAssessmentLevelMsg.UNKNOWN
    assert CalibratedSelfAssessmentMsg().adjusted_overall_level.value == 0
    assert NamedLevelMsg().level.value == 0
    belief = BeliefSelfAssessmentMsg(schema_version=conversions.MSG_SCHEMA_VERSION)
    assert conversions.belief_from_msg(belief).overall_level is SelfAssessmentLevel.UNKNOWN


def test_the_tables_bytes_are_the_message_rclpy_fills():
    """msg_encoding's CDR (what the nodes publish and record) is, read by rclpy, its rclpy message.

    Compared as messages, not bytes: rclpy (Fast CDR) leaves its alignment padding unset and
    wrote 8 bytes more than the table for one of these calibrated messages; both read the same.
    """
    from project_ghost_feedback import msg_encoding
    from support.random_contracts import events, streams

    to_msg = {PredictionOutcome: (conversions.outcome_to_msg, PredictionOutcomeMsg),
              BeliefSelfAssessment: (conversions.belief_to_msg, BeliefSelfAssessmentMsg),
              CalibratedSelfAssessment: (conversions.calibrated_to_msg,
                                         CalibratedSelfAssessmentMsg),
              LoopEvent: (conversions.event_to_msg, FeedbackEventMsg)}
    contracts = []
    for outcomes, belief, calibrated in streams(21, 80):
        contracts += [*outcomes, belief] + ([calibrated] if calibrated is not None else [])
    contracts += list(events(22, 40))
    seen = set()
    for contract in contracts:
        convert, msg_class = to_msg[type(contract)]
        payload = msg_encoding.encode(contract)
        assert deserialize_message(payload, msg_class) == convert(contract)
        seen.add(type(contract))
    assert seen == set(to_msg)
