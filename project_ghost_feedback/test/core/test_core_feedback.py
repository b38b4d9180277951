# SPDX-License-Identifier: Apache-2.0
"""Tests of ADR-0026 sections 1-5: every core line of its "Invariants verified by test" list.

Each invariant of the ADR is its own test (named after it), followed by the choices the ADR leaves
open and this project made: the bucket rule, "most recent", the window, max_n, the registry.
"""

import collections
import collections.abc
import dataclasses
import inspect
import math

from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    ContractTypeError,
    ContractValueError,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    assess_with_feedback,
    build_calibration_history,
    CalibratedSelfAssessment,
    CalibrationAdjustmentPolicy,
    CalibrationHistory,
    DEFAULT_MAX_HISTORY,
    DEFAULT_POLICY,
    MahalanobisDowngradePolicy,
    make_policy,
    POLICIES,
    policy_names,
    policy_parameters,
    REASON_CALIBRATION_WITHIN_TOLERANCE,
    REASON_DOWNGRADE_FROM_CALIBRATION,
    REASON_NO_OUTCOMES_YET,
    Vec3ScalePolicy,
)
from support.contracts import build_raw
import pytest

KNOWN = SelfAssessmentLevel.KNOWN
UNCERTAIN = SelfAssessmentLevel.UNCERTAIN
UNKNOWN = SelfAssessmentLevel.UNKNOWN

COUNT_FIELDS = ('count_within_1_std', 'count_beyond_1_std', 'count_beyond_3_std',
                'count_beyond_5_std')

# One representative distance per bucket: within_1, beyond_1, beyond_3, beyond_5.
D_WITHIN_1 = 0.5
D_BEYOND_1 = 2.0
D_BEYOND_3 = 4.0
D_BEYOND_5 = 7.0
RAW_STAMP = 123
"""Belief stamp of the raw assessments built here (conftest.build_raw), unless given."""


def _outcome(position=0.5, orientation=0.5, observed=10, predicted=None):
    """Return a valid PredictionOutcome with the given distances and observed stamp."""
    return PredictionOutcome(
        prediction_stamp_sim_ns=observed if predicted is None else predicted,
        observed_stamp_sim_ns=observed,
        position_error_m=(0.1, 0.0, 0.0),
        orientation_error_rad=(0.0, 0.0, 0.01),
        position_mahalanobis=position,
        orientation_mahalanobis=orientation,
    )


def _outcomes(*distances, first_stamp=100):
    """Return outcomes with both distances equal to each of ``distances``, stamps increasing."""
    return [_outcome(d, d, observed=first_stamp + 10 * i) for i, d in enumerate(distances)]


def _history(**overrides):
    """Return CalibrationHistory keyword arguments of a valid 4-outcome history, overridden."""
    kwargs = {
        'outcomes_considered': 4,
        'count_within_1_std': 1,
        'count_beyond_1_std': 1,
        'count_beyond_3_std': 1,
        'count_beyond_5_std': 1,
        'worst_position_mahalanobis': 6.0,
        'worst_orientation_mahalanobis': 0.5,
        'most_recent_observed_stamp_sim_ns': 1000,
    }
    kwargs.update(overrides)
    return kwargs


def _counts(history):
    return tuple(getattr(history, name) for name in COUNT_FIELDS)


def _envelope(**overrides):
    kwargs = {
        'raw_assessment': build_raw(RAW_STAMP),
        'calibration_history': CalibrationHistory(**_history()),
        'adjusted_overall_level': UNCERTAIN,
        'adjustment_policy_id': 'mahalanobis_downgrade',
        'adjustment_reason': 'downgrade_from_calibration',
    }
    kwargs.update(overrides)
    return kwargs


def _rejected(exc_type, field, code, call, *args, **kwargs):
    """Assert ``call`` raises ``exc_type`` with ``field`` and ``code``; return the message."""
    with pytest.raises(exc_type) as info:
        call(*args, **kwargs)
    assert info.value.field == field
    assert info.value.code == code
    assert field in str(info.value)
    return str(info.value)


# === ADR invariant: CalibrationHistory.__post_init__ rejects ... ==============================


def test_history_accepts_valid_and_stores_exact_values():
    """A consistent history keeps every field as given, with schema_version 1."""
    history = CalibrationHistory(**_history(worst_position_mahalanobis=math.inf))
    assert dataclasses.astuple(history) == (4, 1, 1, 1, 1, math.inf, 0.5, 1000, 1, (), ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        history.outcomes_considered = 5


@pytest.mark.parametrize('field', ('outcomes_considered',) + COUNT_FIELDS)
def test_history_rejects_negative_counts(field):
    """ADR: a negative count (or outcomes_considered) is a ValueError naming it and its value."""
    message = _rejected(ContractValueError, f'CalibrationHistory.{field}', 'negative',
                        CalibrationHistory, **_history(**{field: -1}))
    assert '-1' in message


@pytest.mark.parametrize('field', ('outcomes_considered',) + COUNT_FIELDS)
@pytest.mark.parametrize('value', [True, 1.0, '1', None])
def test_history_rejects_non_int_counts(field, value):
    """A bool, float, str or None count is a TypeError (bool is not an int)."""
    message = _rejected(ContractTypeError, f'CalibrationHistory.{field}', 'wrong_type',
                        CalibrationHistory, **_history(**{field: value}))
    assert repr(value) in message


@pytest.mark.parametrize('total', [3, 5, 0])
def test_history_rejects_inconsistent_sum(total):
    """ADR: sum(counts) != outcomes_considered is a ValueError showing both numbers."""
    overrides = {'outcomes_considered': total}
    if total == 0:
        overrides.update(worst_position_mahalanobis=0.0, worst_orientation_mahalanobis=0.0,
                         most_recent_observed_stamp_sim_ns=None)
    message = _rejected(ContractValueError, 'CalibrationHistory.outcomes_considered',
                        'inconsistent_counts', CalibrationHistory, **_history(**overrides))
    assert f'({total})' in message and '(4)' in message


@pytest.mark.parametrize('field', ['worst_position_mahalanobis', 'worst_orientation_mahalanobis'])
def test_history_rejects_nan(field):
    """ADR: a NaN worst distance is a ValueError with code nan."""
    message = _rejected(ContractValueError, f'CalibrationHistory.{field}', 'nan',
                        CalibrationHistory, **_history(**{field: math.nan}))
    assert 'NaN' in message


@pytest.mark.parametrize('field', ['worst_position_mahalanobis', 'worst_orientation_mahalanobis'])
@pytest.mark.parametrize('value', [-0.5, -math.inf])
def test_history_rejects_negative_worst(field, value):
    """ADR: a negative worst distance (including -inf) is a ValueError."""
    message = _rejected(ContractValueError, f'CalibrationHistory.{field}', 'negative',
                        CalibrationHistory, **_history(**{field: value}))
    assert repr(value) in message


@pytest.mark.parametrize('field', ['worst_position_mahalanobis', 'worst_orientation_mahalanobis'])
def test_history_accepts_plus_inf_worst(field):
    """ADR: +inf is a legitimate worst distance."""
    assert getattr(CalibrationHistory(**_history(**{field: math.inf})), field) == math.inf


@pytest.mark.parametrize('field', ['worst_position_mahalanobis', 'worst_orientation_mahalanobis'])
@pytest.mark.parametrize('value', [True, '1.0', None])
def test_history_rejects_non_real_worst(field, value):
    """A bool, str or None worst distance is a TypeError."""
    _rejected(ContractTypeError, f'CalibrationHistory.{field}', 'wrong_type',
              CalibrationHistory, **_history(**{field: value}))


def test_history_rejects_negative_stamp():
    """ADR: a negative most_recent_observed_stamp_sim_ns is a ValueError."""
    message = _rejected(ContractValueError, 'CalibrationHistory.most_recent_observed_stamp_sim_ns',
                        'negative', CalibrationHistory,
                        **_history(most_recent_observed_stamp_sim_ns=-1))
    assert '-1' in message


@pytest.mark.parametrize('stamp', [True, 1.5, '1000'])
def test_history_rejects_non_int_stamp(stamp):
    """A bool, float or str stamp is a TypeError."""
    _rejected(ContractTypeError, 'CalibrationHistory.most_recent_observed_stamp_sim_ns',
              'wrong_type', CalibrationHistory,
              **_history(most_recent_observed_stamp_sim_ns=stamp))


@pytest.mark.parametrize('stamp', [0, 1000])
def test_history_rejects_non_none_stamp_with_zero_outcomes(stamp):
    """ADR: a stamp that is not None when outcomes_considered == 0 is a ValueError."""
    message = _rejected(
        ContractValueError, 'CalibrationHistory.most_recent_observed_stamp_sim_ns',
        'inconsistent_empty', CalibrationHistory,
        0, 0, 0, 0, 0, 0.0, 0.0, stamp)
    assert repr(stamp) in message


def test_history_rejects_none_stamp_with_outcomes():
    """ADR (stamp None iff zero outcomes): None with outcomes_considered > 0 is a ValueError."""
    _rejected(ContractValueError, 'CalibrationHistory.most_recent_observed_stamp_sim_ns',
              'missing_stamp', CalibrationHistory,
              **_history(most_recent_observed_stamp_sim_ns=None))


@pytest.mark.parametrize('worsts', [(0.5, 0.0), (0.0, 0.5), (math.inf, 0.0)])
def test_history_rejects_non_zero_worst_with_zero_outcomes(worsts):
    """ADR: with zero outcomes both worsts must be 0.0."""
    _rejected(ContractValueError, 'CalibrationHistory.worst_position_mahalanobis',
              'inconsistent_empty', CalibrationHistory, 0, 0, 0, 0, 0, *worsts, None)


def test_history_empty_is_the_zero_snapshot():
    """CalibrationHistory.empty() has zero counts, 0.0 worsts and a None stamp."""
    assert dataclasses.astuple(CalibrationHistory.empty()) == (
        0, 0, 0, 0, 0, 0.0, 0.0, None, 1, (), ())
    assert CalibrationHistory.empty() == CalibrationHistory(0, 0, 0, 0, 0, 0, 0, None)
    assert dataclasses.astuple(CalibrationHistory.empty(2)) == (
        0, 0, 0, 0, 0, 0.0, 0.0, None, 2, (), ())


@pytest.mark.parametrize('version, exc_type, code', [
    (3, ContractValueError, 'unsupported_schema_version'),
    (0, ContractValueError, 'unsupported_schema_version'),
    (True, ContractTypeError, 'wrong_type'),
])
def test_history_rejects_wrong_schema_version(version, exc_type, code):
    """CalibrationHistory.schema_version must be the int 1 or 2 (ADR-0026a)."""
    _rejected(exc_type, 'CalibrationHistory.schema_version', code, CalibrationHistory,
              **_history(schema_version=version))


# === ADR invariant: CalibratedSelfAssessment.__post_init__ rejects ... ========================


def test_envelope_accepts_valid_and_stores_exact_values():
    """A valid envelope keeps every field as given, with schema_version 1, and is frozen."""
    kwargs = _envelope()
    envelope = CalibratedSelfAssessment(**kwargs)
    for name, value in kwargs.items():
        assert getattr(envelope, name) is value
    assert envelope.schema_version == 1
    assert envelope.was_downgraded is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        envelope.adjusted_overall_level = KNOWN


def test_envelope_allows_upgrade():
    """ADR: the contract does not forbid an adjusted level more confident than the raw one."""
    envelope = CalibratedSelfAssessment(**_envelope(
        raw_assessment=build_raw(RAW_STAMP, UNKNOWN), adjusted_overall_level=KNOWN))
    assert envelope.adjusted_overall_level is KNOWN
    assert envelope.was_downgraded is False


@pytest.mark.parametrize('field, value', [
    ('raw_assessment', {'belief_stamp_sim_ns': 1, 'overall_level': KNOWN}),
    ('raw_assessment', None),
    ('calibration_history', (4, 1, 1, 1, 1, 6.0, 0.5, 1000)),
    ('calibration_history', CalibratedSelfAssessment),
    ('adjusted_overall_level', 1),
    ('adjusted_overall_level', 'UNCERTAIN'),
    ('adjustment_policy_id', 7),
    ('adjustment_policy_id', None),
    ('adjustment_reason', b'no_outcomes_yet'),
    ('adjustment_reason', ['no_outcomes_yet']),
])
def test_envelope_rejects_bad_types(field, value):
    """ADR: a field of the wrong type is a TypeError naming the field."""
    _rejected(ContractTypeError, f'CalibratedSelfAssessment.{field}', 'wrong_type',
              CalibratedSelfAssessment, **_envelope(**{field: value}))


@pytest.mark.parametrize('field', ['adjustment_policy_id', 'adjustment_reason'])
@pytest.mark.parametrize('value', [
    'Mahalanobis', 'downgradeFrom', '1policy', '_policy', '', 'a' * 65, 'policy-id', 'policy id',
    'policy\n', 'política',
], ids=['uppercase_first', 'uppercase_inner', 'leading_digit', 'leading_underscore', 'empty',
        '65_chars', 'hyphen', 'space', 'trailing_newline', 'non_ascii'])
def test_envelope_rejects_malformed_taxonomy(field, value):
    """ADR: a taxonomy string not matching ^[a-z][a-z0-9_]*$ with 1-64 characters is rejected."""
    message = _rejected(ContractValueError, f'CalibratedSelfAssessment.{field}', 'bad_taxonomy',
                        CalibratedSelfAssessment, **_envelope(**{field: value}))
    assert repr(value) in message


@pytest.mark.parametrize('field', ['adjustment_policy_id', 'adjustment_reason'])
@pytest.mark.parametrize('value', ['a', 'a' * 64, 'x9_', 'a_1_b'])
def test_envelope_accepts_taxonomy_edges(field, value):
    """One character, 64 characters, digits and underscores after the first letter are legal."""
    assert getattr(CalibratedSelfAssessment(**_envelope(**{field: value})), field) == value


@pytest.mark.parametrize('version, exc_type, code', [
    (2, ContractValueError, 'unsupported_schema_version'),
    (0, ContractValueError, 'unsupported_schema_version'),
    (True, ContractTypeError, 'wrong_type'),
    ('1', ContractTypeError, 'wrong_type'),
])
def test_envelope_rejects_wrong_schema_version(version, exc_type, code):
    """ADR: a schema_version other than the int 1 is rejected."""
    _rejected(exc_type, 'CalibratedSelfAssessment.schema_version', code,
              CalibratedSelfAssessment, **_envelope(schema_version=version))


# === ADR invariant: build_calibration_history ... =============================================


@pytest.mark.parametrize('n, max_n', [
    (0, 1), (0, 32), (1, 1), (3, 5), (5, 3), (32, 32), (33, 32), (100, 7), (1, 1000)])
def test_build_outcomes_considered_is_min_of_len_and_max_n(n, max_n):
    """ADR: N outcomes give outcomes_considered == min(N, max_n)."""
    history = build_calibration_history(_outcomes(*[D_WITHIN_1] * n), max_n)
    assert history.outcomes_considered == min(n, max_n)
    assert sum(_counts(history)) == min(n, max_n)


def test_build_counts_are_correct():
    """ADR: each outcome lands in exactly one bucket and the counts are exact."""
    distances = ([D_WITHIN_1] * 5 + [D_BEYOND_1] * 3 + [D_BEYOND_3] * 2 + [D_BEYOND_5] * 1
                 + [D_WITHIN_1] * 2)
    history = build_calibration_history(_outcomes(*distances), 32)
    assert _counts(history) == (7, 3, 2, 1)
    assert history.outcomes_considered == 13


def test_build_worst_mahalanobis_are_correct():
    """ADR: worst position and orientation distances are the per-axis maxima of the window."""
    outcomes = [
        _outcome(position=2.5, orientation=0.1, observed=1),
        _outcome(position=0.2, orientation=4.25, observed=2),
        _outcome(position=3.75, orientation=0.3, observed=3),
        _outcome(position=0.0, orientation=0.0, observed=4),
    ]
    history = build_calibration_history(outcomes, 32)
    assert history.worst_position_mahalanobis == 3.75
    assert history.worst_orientation_mahalanobis == 4.25
    assert _counts(history) == (1, 1, 2, 0)


def test_build_worst_is_plus_inf_when_an_outcome_is_infinite():
    """An infinite distance makes the worst +inf and counts as beyond_5."""
    outcomes = [_outcome(math.inf, 0.5, observed=1), _outcome(1e300, 0.5, observed=2)]
    history = build_calibration_history(outcomes, 32)
    assert history.worst_position_mahalanobis == math.inf
    assert history.worst_orientation_mahalanobis == 0.5
    assert _counts(history) == (0, 0, 0, 2)


def test_build_empty_outcomes_is_the_empty_history():
    """ADR: zero outcomes give worsts 0.0 and stamp None."""
    for empty in ([], (), iter([]), (o for o in [])):
        assert build_calibration_history(empty, 32) == CalibrationHistory.empty(2)
        assert build_calibration_history(
            empty, 32, schema_version=1) == CalibrationHistory.empty()


def test_build_worsts_only_from_the_window():
    """Outcomes before the window do not count toward the worsts."""
    outcomes = [_outcome(100.0, 50.0, observed=1)] + _outcomes(0.5, 2.0, first_stamp=2)
    history = build_calibration_history(outcomes, 2)
    worst = (history.worst_position_mahalanobis, history.worst_orientation_mahalanobis)
    assert worst == (2.0, 2.0)
    assert _counts(history) == (1, 1, 0, 0)


# === ADR invariant: MahalanobisDowngradePolicy ... ===========================================


@pytest.mark.parametrize('level', list(SelfAssessmentLevel))
def test_policy_passthrough_with_zero_outcomes(level):
    """ADR: 0 outcomes pass the level through with reason no_outcomes_yet."""
    raw = build_raw(RAW_STAMP, level)
    history = CalibrationHistory.empty()
    calibrated = MahalanobisDowngradePolicy().adjust(raw, history)
    assert calibrated.adjusted_overall_level is level
    assert calibrated.adjustment_reason == 'no_outcomes_yet' == REASON_NO_OUTCOMES_YET
    assert calibrated.adjustment_policy_id == 'mahalanobis_downgrade'
    assert calibrated.raw_assessment is raw
    assert calibrated.calibration_history is history


@pytest.mark.parametrize('level', list(SelfAssessmentLevel))
def test_policy_passthrough_within_tolerance(level):
    """ADR: outcomes within tolerance pass through with reason calibration_within_tolerance."""
    history = build_calibration_history(
        _outcomes(*[D_WITHIN_1] * 20 + [D_BEYOND_1] * 10 + [D_BEYOND_3]), 32)
    calibrated = MahalanobisDowngradePolicy().adjust(build_raw(RAW_STAMP, level), history)
    assert calibrated.adjusted_overall_level is level
    assert calibrated.adjustment_reason == 'calibration_within_tolerance'
    assert REASON_CALIBRATION_WITHIN_TOLERANCE == 'calibration_within_tolerance'


def test_policy_downgrade_when_exceeding_threshold():
    """ADR: >= 2 outcomes beyond 3 std among >= 4 downgrade with downgrade_from_calibration."""
    history = build_calibration_history(_outcomes(D_WITHIN_1, D_WITHIN_1, D_BEYOND_3,
                                                  D_BEYOND_5), 32)
    calibrated = MahalanobisDowngradePolicy().adjust(build_raw(RAW_STAMP, KNOWN), history)
    assert calibrated.adjusted_overall_level is UNCERTAIN
    assert calibrated.adjustment_reason == 'downgrade_from_calibration'
    assert REASON_DOWNGRADE_FROM_CALIBRATION == 'downgrade_from_calibration'
    assert calibrated.was_downgraded is True


@pytest.mark.parametrize('level, expected', [
    (KNOWN, UNCERTAIN), (UNCERTAIN, UNKNOWN), (UNKNOWN, UNKNOWN)],
    ids=['known_to_uncertain', 'uncertain_to_unknown', 'unknown_stays'])
def test_policy_downgrade_one_level(level, expected):
    """ADR: KNOWN->UNCERTAIN, UNCERTAIN->UNKNOWN, UNKNOWN stays (still reported as a downgrade)."""
    history = CalibrationHistory(**_history(count_within_1_std=0, count_beyond_1_std=0,
                                            count_beyond_3_std=4, count_beyond_5_std=0))
    calibrated = MahalanobisDowngradePolicy().adjust(build_raw(RAW_STAMP, level), history)
    assert calibrated.adjusted_overall_level is expected
    assert calibrated.adjustment_reason == REASON_DOWNGRADE_FROM_CALIBRATION
    assert calibrated.raw_assessment.overall_level is level


def test_policy_one_below_min_outcomes_does_not_downgrade():
    """Boundary: min_outcomes - 1 = 3 outcomes, all beyond 3 std, pass through."""
    history = build_calibration_history(_outcomes(D_BEYOND_5, D_BEYOND_3, D_BEYOND_5), 32)
    calibrated = MahalanobisDowngradePolicy().adjust(build_raw(RAW_STAMP, KNOWN), history)
    assert history.outcomes_considered == 3
    assert calibrated.adjusted_overall_level is KNOWN
    assert calibrated.adjustment_reason == REASON_CALIBRATION_WITHIN_TOLERANCE


def test_policy_one_below_threshold_does_not_downgrade():
    """Boundary: downgrade_threshold - 1 = 1 outcome beyond 3 std among 32 passes through."""
    history = build_calibration_history(_outcomes(*[D_BEYOND_1] * 31 + [D_BEYOND_5]), 32)
    calibrated = MahalanobisDowngradePolicy().adjust(build_raw(RAW_STAMP, KNOWN), history)
    assert (history.count_beyond_3_std, history.count_beyond_5_std) == (0, 1)
    assert calibrated.adjusted_overall_level is KNOWN
    assert calibrated.adjustment_reason == REASON_CALIBRATION_WITHIN_TOLERANCE


def test_policy_exactly_at_min_outcomes_and_threshold_downgrades():
    """Boundary: exactly 4 outcomes with exactly 2 beyond 3 std downgrade (>= on both)."""
    history = build_calibration_history(_outcomes(D_WITHIN_1, D_BEYOND_1, D_BEYOND_3,
                                                  D_BEYOND_3), 32)
    calibrated = MahalanobisDowngradePolicy().adjust(build_raw(RAW_STAMP, UNCERTAIN), history)
    assert calibrated.adjusted_overall_level is UNKNOWN
    assert calibrated.adjustment_reason == REASON_DOWNGRADE_FROM_CALIBRATION


def test_policy_beyond_1_does_not_count_toward_threshold():
    """Only beyond_3 + beyond_5 count: 32 outcomes in (1, 3] pass through."""
    history = build_calibration_history(_outcomes(*[3.0] * 32), 32)
    calibrated = MahalanobisDowngradePolicy().adjust(build_raw(RAW_STAMP, KNOWN), history)
    assert _counts(history) == (0, 32, 0, 0)
    assert calibrated.adjustment_reason == REASON_CALIBRATION_WITHIN_TOLERANCE


def test_policy_custom_parameters():
    """min_outcomes and downgrade_threshold are honoured (1 and 1: one bad outcome downgrades)."""
    policy = MahalanobisDowngradePolicy(min_outcomes=1, downgrade_threshold=1)
    history = build_calibration_history(_outcomes(D_BEYOND_3), 32)
    assert policy.adjust(build_raw(RAW_STAMP, KNOWN), history).adjusted_overall_level is UNCERTAIN
    strict = MahalanobisDowngradePolicy(min_outcomes=10, downgrade_threshold=5)
    history = build_calibration_history(_outcomes(*[D_BEYOND_5] * 4 + [D_WITHIN_1] * 6), 32)
    assert strict.adjust(build_raw(RAW_STAMP, KNOWN), history).adjusted_overall_level is KNOWN


@pytest.mark.parametrize('field', ['min_outcomes', 'downgrade_threshold'])
@pytest.mark.parametrize('value, exc_type, code', [
    (0, ContractValueError, 'out_of_range'),
    (-1, ContractValueError, 'negative'),
    (True, ContractTypeError, 'wrong_type'),
    (2.0, ContractTypeError, 'wrong_type'),
    ('4', ContractTypeError, 'wrong_type'),
])
def test_policy_rejects_bad_parameters(field, value, exc_type, code):
    """Policy parameters are ints >= 1; anything else is rejected naming the parameter."""
    _rejected(exc_type, f'MahalanobisDowngradePolicy.{field}', code,
              MahalanobisDowngradePolicy, **{field: value})


def test_policy_defaults_and_id():
    """The reference defaults are the ADR's (4, 2) and its id is mahalanobis_downgrade."""
    policy = MahalanobisDowngradePolicy()
    assert (policy.min_outcomes, policy.downgrade_threshold) == (4, 2)
    assert policy.policy_id == 'mahalanobis_downgrade'


def test_policy_implements_protocol():
    """isinstance(MahalanobisDowngradePolicy(), CalibrationAdjustmentPolicy) is True."""
    assert isinstance(MahalanobisDowngradePolicy(), CalibrationAdjustmentPolicy) is True
    assert isinstance(object(), CalibrationAdjustmentPolicy) is False


def test_policy_adjust_rejects_bad_arguments():
    """adjust() with a non-belief or a non-history is a TypeError naming the argument."""
    policy = MahalanobisDowngradePolicy()
    _rejected(ContractTypeError, 'MahalanobisDowngradePolicy.adjust.raw', 'wrong_type',
              policy.adjust, KNOWN, CalibrationHistory.empty())
    _rejected(ContractTypeError, 'MahalanobisDowngradePolicy.adjust.history', 'wrong_type',
              policy.adjust, build_raw(RAW_STAMP), [])


# === ADR invariant: assess_with_feedback is pure ==============================================


def _fresh_inputs():
    """Build equal but separately constructed inputs for assess_with_feedback."""
    raw = BeliefSelfAssessment(
        987654321, KNOWN, [NamedLevel('position_x', KNOWN), NamedLevel('yaw', UNCERTAIN)],
        [NamedLevel('pose', KNOWN)])
    outcomes = [_outcome(0.5 * i, 0.25 * i, observed=1000 + i) for i in range(40)]
    outcomes.append(_outcome(math.inf, 0.0, observed=2000))
    return raw, outcomes, MahalanobisDowngradePolicy()


def test_assess_with_feedback_pure_same_input_same_output():
    """ADR: equal inputs give equal outputs with byte-equal repr, twice from the same objects."""
    raw, outcomes, policy = _fresh_inputs()
    first = assess_with_feedback(raw, outcomes, policy)
    second = assess_with_feedback(raw, outcomes, policy)
    assert first == second
    assert repr(first).encode() == repr(second).encode()


def test_assess_with_feedback_pure_across_separate_inputs():
    """ADR: separately constructed equal inputs (list or generator) give byte-equal repr."""
    raw_a, outcomes_a, policy_a = _fresh_inputs()
    raw_b, outcomes_b, policy_b = _fresh_inputs()
    assert raw_a is not raw_b and outcomes_a[0] is not outcomes_b[0]
    a = assess_with_feedback(raw_a, outcomes_a, policy_a)
    b = assess_with_feedback(raw_b, (o for o in outcomes_b), policy_b)
    assert a == b
    assert repr(a).encode() == repr(b).encode()
    assert a.adjusted_overall_level is UNCERTAIN
    assert a.adjustment_reason == REASON_DOWNGRADE_FROM_CALIBRATION
    assert a.calibration_history.outcomes_considered == 32


def test_assess_with_feedback_does_not_mutate_inputs():
    """The outcome list and the raw assessment are unchanged by the call."""
    raw, outcomes, policy = _fresh_inputs()
    before = (repr(raw), list(outcomes))
    calibrated = assess_with_feedback(raw, outcomes, policy)
    assert (repr(raw), outcomes) == before
    assert calibrated.raw_assessment is raw


def test_assess_with_feedback_equals_policy_of_history():
    """assess_with_feedback(raw, o, p, n) == p.adjust(raw, build_calibration_history(o, n))."""
    raw, outcomes, policy = _fresh_inputs()
    for n in (1, 4, 32, 100):
        expected = policy.adjust(raw, build_calibration_history(outcomes, n))
        assert assess_with_feedback(raw, outcomes, policy, n) == expected


def test_assess_with_feedback_default_max_history_is_32():
    """The default window is 32 (ADR section 5)."""
    assert DEFAULT_MAX_HISTORY == 32
    default = inspect.signature(assess_with_feedback).parameters['max_history'].default
    assert default == 32
    raw, outcomes, policy = _fresh_inputs()
    assert assess_with_feedback(raw, outcomes, policy).calibration_history.outcomes_considered \
        == 32


def test_assess_with_feedback_rejects_non_belief():
    """A raw that is not a BeliefSelfAssessment is a TypeError."""
    _rejected(ContractTypeError, 'assess_with_feedback.raw', 'wrong_type',
              assess_with_feedback, KNOWN, [], MahalanobisDowngradePolicy())


class _OnlyAdjust:
    def adjust(self, raw, history):
        return MahalanobisDowngradePolicy().adjust(raw, history)


class _OnlyId:
    policy_id = 'only_id'
    adjust = 'not callable'


@pytest.mark.parametrize('policy', [None, object(), _OnlyAdjust(), _OnlyId(),
                                    'mahalanobis_downgrade'])
def test_assess_with_feedback_rejects_non_protocol_policy(policy):
    """A policy not implementing CalibrationAdjustmentPolicy is a TypeError."""
    _rejected(ContractTypeError, 'assess_with_feedback.adjustment_policy', 'wrong_type',
              assess_with_feedback, build_raw(RAW_STAMP), [], policy)


class _ReturnsThis:
    """A policy returning a fixed object, whatever it is given."""

    def __init__(self, result, policy_id='mahalanobis_downgrade'):
        self.result = result
        self.policy_id = policy_id

    def adjust(self, raw, history):
        return self.result


def test_assess_with_feedback_rejects_non_envelope_result():
    """A policy returning something other than a CalibratedSelfAssessment is a TypeError."""
    _rejected(ContractTypeError, 'assess_with_feedback.adjustment_policy.adjust(...)',
              'wrong_type', assess_with_feedback, build_raw(RAW_STAMP), [], _ReturnsThis(KNOWN))


@pytest.mark.parametrize('what', ['raw', 'history', 'policy_id'])
def test_assess_with_feedback_rejects_foreign_envelope(what):
    """An envelope with another raw, another history or another policy id is a ValueError."""
    raw = build_raw(5, KNOWN)
    outcomes = _outcomes(D_WITHIN_1)
    history = build_calibration_history(outcomes, 32)
    kwargs = _envelope(raw_assessment=raw, calibration_history=history,
                       adjustment_policy_id='mahalanobis_downgrade')
    if what == 'raw':
        kwargs['raw_assessment'] = build_raw(6, KNOWN)
    elif what == 'history':
        kwargs['calibration_history'] = CalibrationHistory.empty()
    else:
        kwargs['adjustment_policy_id'] = 'some_other_policy'
    policy = _ReturnsThis(CalibratedSelfAssessment(**kwargs))
    _rejected(ContractValueError, 'assess_with_feedback.adjustment_policy', 'foreign_envelope',
              assess_with_feedback, raw, outcomes, policy)


def test_assess_with_feedback_accepts_equal_envelope_from_custom_policy():
    """A custom policy that rebuilds an equal raw/history and upgrades is accepted as is."""
    class Upgrade:
        policy_id = 'always_upgrade'

        def adjust(self, raw, history):
            copy = dataclasses.replace(raw)
            return CalibratedSelfAssessment(copy, dataclasses.replace(history), KNOWN,
                                            self.policy_id, 'consistently_good')

    result = assess_with_feedback(build_raw(RAW_STAMP, UNKNOWN), _outcomes(D_WITHIN_1), Upgrade())
    assert result.adjusted_overall_level is KNOWN
    assert result.adjustment_policy_id == 'always_upgrade'
    assert result.adjustment_reason == 'consistently_good'


# === Choices: bucket rule =====================================================================


@pytest.mark.parametrize('distance, counts', [
    (0.0, (1, 0, 0, 0)),
    (1.0, (1, 0, 0, 0)),
    (math.nextafter(1.0, math.inf), (0, 1, 0, 0)),
    (3.0, (0, 1, 0, 0)),
    (math.nextafter(3.0, math.inf), (0, 0, 1, 0)),
    (5.0, (0, 0, 1, 0)),
    (math.nextafter(5.0, math.inf), (0, 0, 0, 1)),
    (1e308, (0, 0, 0, 1)),
    (math.inf, (0, 0, 0, 1)),
], ids=['0', '1', 'above_1', '3', 'above_3', '5', 'above_5', 'huge', 'inf'])
@pytest.mark.parametrize('axis', ['position', 'orientation'])
def test_bucket_boundaries(distance, counts, axis):
    """Exactly 1, 3, 5 stay in the lower bucket; the next float up moves; +inf is beyond_5."""
    other = 0.0
    outcome = (_outcome(distance, other) if axis == 'position' else _outcome(other, distance))
    assert _counts(build_calibration_history([outcome], 1)) == counts


@pytest.mark.parametrize('position, orientation, counts', [
    (0.5, 4.0, (0, 0, 1, 0)),
    (4.0, 0.5, (0, 0, 1, 0)),
    (6.0, 2.0, (0, 0, 0, 1)),
    (2.0, math.inf, (0, 0, 0, 1)),
    (1.0, math.nextafter(1.0, math.inf), (0, 1, 0, 0)),
    (3.0, 3.0, (0, 1, 0, 0)),
])
def test_bucket_worse_of_two_distances_decides(position, orientation, counts):
    """One outcome falls in exactly one bucket, chosen by the larger of its two distances."""
    assert _counts(build_calibration_history([_outcome(position, orientation)], 1)) == counts


# === Choices: most recent stamp and the window ================================================


def test_most_recent_is_last_stamp_for_ordered_input():
    """For chronologically ordered outcomes the stamp is the last outcome's observed stamp."""
    history = build_calibration_history(_outcomes(0.5, 0.5, 0.5, first_stamp=100), 32)
    assert history.most_recent_observed_stamp_sim_ns == 120


def test_most_recent_is_max_observed_stamp_of_window():
    """For misordered input the stamp is the largest observed stamp in the window."""
    outcomes = [_outcome(observed=50), _outcome(observed=900), _outcome(observed=300)]
    assert build_calibration_history(outcomes, 32).most_recent_observed_stamp_sim_ns == 900


def test_most_recent_ignores_stamps_before_window():
    """A larger stamp before the window does not leak into the window's stamp."""
    outcomes = [_outcome(observed=10**12), _outcome(observed=5), _outcome(observed=7)]
    assert build_calibration_history(outcomes, 2).most_recent_observed_stamp_sim_ns == 7


def test_most_recent_uses_observed_not_prediction_stamp():
    """The stamp is the observed stamp, not the prediction stamp."""
    outcome = _outcome(observed=500, predicted=100)
    assert build_calibration_history([outcome], 1).most_recent_observed_stamp_sim_ns == 500


def _window_fixture():
    """Ten outcomes: the first seven beyond 5 std, the last three within 1 std."""
    return ([_outcome(9.0, 9.0, observed=i) for i in range(7)]
            + [_outcome(0.25 * (i + 1), 0.1, observed=7 + i) for i in range(3)])


class _IntIndexOnly(collections.abc.Sequence):
    """A Sequence that supports integer indexing only (no slicing), like collections.deque."""

    def __init__(self, items):
        self._items = list(items)

    def __len__(self):
        return len(self._items)

    def __getitem__(self, index):
        if not isinstance(index, int):
            raise TypeError('integer index only')
        return self._items[index]


@pytest.mark.parametrize('container', ['list', 'tuple', 'generator', 'iterator', 'deque',
                                       'bounded_deque', 'int_index_sequence', 'map'])
def test_window_is_last_max_n_in_iteration_order(container):
    """The window is the last max_n items in iteration order, for sequences and iterators."""
    outcomes = _window_fixture()
    wrapped = {
        'list': lambda: list(outcomes),
        'tuple': lambda: tuple(outcomes),
        'generator': lambda: (o for o in outcomes),
        'iterator': lambda: iter(outcomes),
        'deque': lambda: collections.deque(outcomes),
        'bounded_deque': lambda: collections.deque(outcomes, maxlen=len(outcomes)),
        'int_index_sequence': lambda: _IntIndexOnly(outcomes),
        'map': lambda: map(lambda o: o, outcomes),
    }[container]
    history = build_calibration_history(wrapped(), 3, schema_version=1)
    assert dataclasses.astuple(history) == (3, 3, 0, 0, 0, 0.75, 0.1, 9, 1, (), ())
    history = build_calibration_history(wrapped(), 4, schema_version=1)
    assert dataclasses.astuple(history) == (4, 3, 0, 0, 1, 9.0, 9.0, 9, 1, (), ())
    history = build_calibration_history(wrapped(), 1000, schema_version=1)
    assert dataclasses.astuple(history) == (10, 3, 0, 0, 7, 9.0, 9.0, 9, 1, (), ())
    history = build_calibration_history(wrapped(), 3)
    assert dataclasses.astuple(history)[:9] == (3, 3, 0, 0, 0, 0.75, 0.1, 9, 2)
    assert history.position_squared_distances == tuple(
        o.position_mahalanobis ** 2 for o in list(outcomes)[-3:])


def test_window_does_not_inspect_items_before_it():
    """Items before the window are not part of it, not even type-checked (documented choice)."""
    outcomes = ['not an outcome', None] + _outcomes(0.5, 0.5)
    assert build_calibration_history(outcomes, 2).outcomes_considered == 2
    assert build_calibration_history(iter(outcomes), 2).outcomes_considered == 2


@pytest.mark.parametrize('max_n', [0, -1, -(2**70)])
def test_max_n_below_one_is_value_error(max_n):
    """max_n < 1 is a ValueError showing the value."""
    message = _rejected(ContractValueError, 'build_calibration_history.max_n', 'out_of_range',
                        build_calibration_history, _outcomes(0.5), max_n)
    assert repr(max_n) in message


@pytest.mark.parametrize('max_n', [1.5, 3.0, '3', True, False, None])
def test_max_n_non_int_is_type_error(max_n):
    """max_n that is a float, str, bool or None is a TypeError (bool is not an int)."""
    message = _rejected(ContractTypeError, 'build_calibration_history.max_n', 'wrong_type',
                        build_calibration_history, _outcomes(0.5), max_n)
    assert repr(max_n) in message


@pytest.mark.parametrize('max_history, exc_type', [(0, ContractValueError),
                                                   (True, ContractTypeError),
                                                   (32.0, ContractTypeError)])
def test_assess_with_feedback_rejects_bad_max_history(max_history, exc_type):
    """assess_with_feedback validates max_history like max_n."""
    with pytest.raises(exc_type) as info:
        assess_with_feedback(build_raw(RAW_STAMP), [], MahalanobisDowngradePolicy(), max_history)
    assert info.value.field.endswith('max_history')


@pytest.mark.parametrize('container', ['list', 'generator'])
@pytest.mark.parametrize('bad', [None, 1.0, KNOWN, dataclasses.astuple(_outcome())])
def test_non_outcome_item_is_type_error(container, bad):
    """An item of the window that is not a PredictionOutcome is a TypeError naming its index."""
    items = _outcomes(0.5, 0.5) + [bad] + _outcomes(0.5)
    outcomes = items if container == 'list' else (o for o in items)
    message = _rejected(ContractTypeError,
                        'build_calibration_history.outcomes (window item 2)', 'wrong_type',
                        build_calibration_history, outcomes, 32)
    assert repr(bad) in message


@pytest.mark.parametrize('outcomes', [None, 5, 'outcomes', b'outcomes'])
def test_non_iterable_outcomes_is_type_error(outcomes):
    """Outcomes that are not an iterable of outcomes (None, int, str, bytes) are a TypeError."""
    _rejected(ContractTypeError, 'build_calibration_history.outcomes', 'wrong_type',
              build_calibration_history, outcomes, 32)


# === Registry ================================================================================


def test_registry_names_and_default():
    """The reference policy is registered; the default is v3 (issue 28); names are sorted."""
    assert 'mahalanobis_downgrade' in policy_names()
    assert POLICIES['mahalanobis_downgrade'] is MahalanobisDowngradePolicy
    assert policy_names() == sorted(POLICIES)
    assert DEFAULT_POLICY == 'vec3_scale'
    assert POLICIES[DEFAULT_POLICY] is Vec3ScalePolicy


@pytest.mark.parametrize('name', sorted(POLICIES))
def test_registry_every_policy_is_a_pure_protocol_policy(name):
    """Every registered policy: name == policy_id, implements the protocol, is pure."""
    policy = make_policy(name)
    assert policy.policy_id == name
    assert isinstance(policy, CalibrationAdjustmentPolicy)
    raw, outcomes, _ = _fresh_inputs()
    first = assess_with_feedback(raw, outcomes, make_policy(name))
    second = assess_with_feedback(*_fresh_inputs()[:2], make_policy(name))
    assert first == second and repr(first) == repr(second)
    assert first.adjustment_policy_id == name
    assert set(policy_parameters(name)) == {
        f.name for f in dataclasses.fields(POLICIES[name]) if f.init}


def test_registry_policy_parameters_defaults_are_the_adr():
    """policy_parameters gives the ADR defaults min_outcomes=4, downgrade_threshold=2."""
    assert policy_parameters('mahalanobis_downgrade') == {'min_outcomes': 4,
                                                          'downgrade_threshold': 2}


def test_registry_make_policy_defaults_and_overrides():
    """make_policy fills defaults and applies given parameters."""
    assert make_policy('mahalanobis_downgrade') == MahalanobisDowngradePolicy(4, 2)
    assert make_policy('mahalanobis_downgrade', {}) == MahalanobisDowngradePolicy()
    built = make_policy('mahalanobis_downgrade', {'downgrade_threshold': 3})
    assert (built.min_outcomes, built.downgrade_threshold) == (4, 3)


@pytest.mark.parametrize('name', ['nope', '', 'Mahalanobis_Downgrade', None, ['x']])
def test_registry_unknown_name_is_value_error(name):
    """make_policy and policy_parameters of an unknown name are ValueErrors naming it."""
    for call in (make_policy, policy_parameters):
        with pytest.raises(ValueError) as info:
            call(name)
        assert repr(name) in str(info.value)
        assert 'mahalanobis_downgrade' in str(info.value)


def test_registry_unknown_parameter_is_value_error():
    """An unknown parameter name is a ValueError naming it and the known ones."""
    with pytest.raises(ValueError) as info:
        make_policy('mahalanobis_downgrade', {'min_outcomes': 4, 'hysteresis': 2})
    message = str(info.value)
    assert 'hysteresis' in message
    assert 'downgrade_threshold' in message and 'min_outcomes' in message


def test_registry_bad_parameter_value_raises_policy_error():
    """An invalid value raises the policy's own error for that field."""
    _rejected(ContractValueError, 'MahalanobisDowngradePolicy.min_outcomes', 'out_of_range',
              make_policy, 'mahalanobis_downgrade', {'min_outcomes': 0})
    _rejected(ContractTypeError, 'MahalanobisDowngradePolicy.downgrade_threshold', 'wrong_type',
              make_policy, 'mahalanobis_downgrade', {'downgrade_threshold': True})


class _FollowingPolicy:
    """A policy with hysteresis: it keeps a downgrade while the window still holds an outlier."""

    policy_id = 'following_test'

    def adjust(self, raw, history):
        return self.adjust_following(raw, history, None)

    def adjust_following(self, raw, history, previous):
        down = history.count_beyond_5_std > 0 or (
            previous is not None and previous.was_downgraded
            and history.count_beyond_1_std + history.count_beyond_3_std > 0)
        return CalibratedSelfAssessment(
            raw, history, raw.overall_level.downgraded() if down else raw.overall_level,
            self.policy_id, 'test_hold' if down else 'test_ok')


def test_assess_with_feedback_gives_a_hysteresis_policy_the_previous_output():
    policy = _FollowingPolicy()
    raw = build_raw(RAW_STAMP)
    first = assess_with_feedback(raw, _outcomes(D_BEYOND_5), policy, 4)
    assert first.was_downgraded
    window = _outcomes(D_BEYOND_1)
    held = assess_with_feedback(raw, window, policy, 4, previous=first)
    fresh = assess_with_feedback(raw, window, policy, 4)
    assert held.was_downgraded and not fresh.was_downgraded
    assert fresh == policy.adjust(raw, build_calibration_history(window, 4))


def test_assess_with_feedback_ignores_previous_for_a_policy_without_hysteresis():
    policy = MahalanobisDowngradePolicy()
    raw = build_raw(RAW_STAMP)
    window = _outcomes(D_WITHIN_1)
    previous = assess_with_feedback(raw, _outcomes(D_BEYOND_5), policy, 4)
    assert (assess_with_feedback(raw, window, policy, 4, previous=previous)
            == assess_with_feedback(raw, window, policy, 4))
    with pytest.raises(TypeError):
        assess_with_feedback(raw, window, _FollowingPolicy(), 4, previous='not an assessment')
