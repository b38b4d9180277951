# SPDX-License-Identifier: Apache-2.0
"""Tests of the contracts ADR-0026 stands on: levels, BeliefSelfAssessment, PredictionOutcome.

Every rejection is checked for its exception class, the field it names (``exc.field``), its
reason code (``exc.code``) and a message that names the field and shows the bad value.
"""

import dataclasses
import math
import re

from project_ghost_feedback.core.validation import FRAME_ID_MAX_LEN, MAX_NAMED_LEVELS, STAMP_MAX_NS
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    BUCKET_BEYOND_1_STD,
    BUCKET_BEYOND_3_STD,
    BUCKET_BEYOND_5_STD,
    bucket_of_distance,
    BUCKET_WITHIN_1_STD,
    ContractTypeError,
    ContractValueError,
    ContractViolation,
    NamedLevel,
    PredictionOutcome,
    SCHEMA_VERSION,
    SelfAssessmentLevel,
)
import pytest

KNOWN = SelfAssessmentLevel.KNOWN
UNCERTAIN = SelfAssessmentLevel.UNCERTAIN
UNKNOWN = SelfAssessmentLevel.UNKNOWN


def _outcome_kwargs(**overrides):
    kwargs = {
        'prediction_stamp_sim_ns': 100,
        'observed_stamp_sim_ns': 200,
        'position_error_m': (0.1, -0.2, 0.3),
        'orientation_error_rad': (0.01, 0.02, -0.03),
        'position_mahalanobis': 0.5,
        'orientation_mahalanobis': 0.25,
    }
    kwargs.update(overrides)
    return kwargs


def _assert_rejected(exc_type, field, code, value_text, call, *args, **kwargs):
    """Assert ``call`` raises ``exc_type`` naming ``field`` and ``value_text``; return the error."""
    with pytest.raises(exc_type) as info:
        call(*args, **kwargs)
    error = info.value
    assert isinstance(error, ContractViolation)
    assert error.field == field
    assert error.code == code
    message = str(error)
    assert field in message
    assert value_text in message
    return error


# --- SelfAssessmentLevel ---------------------------------------------------------------------


def test_level_catalog_is_closed_with_wire_values():
    """The catalog is exactly UNKNOWN=0, UNCERTAIN=1, KNOWN=2 (zero is the least confident)."""
    assert [(m.name, m.value) for m in SelfAssessmentLevel] == [
        ('UNKNOWN', 0), ('UNCERTAIN', 1), ('KNOWN', 2)]


def test_level_order_is_by_confidence():
    """UNKNOWN < UNCERTAIN < KNOWN, and sorting orders levels from least to most confident."""
    assert UNKNOWN < UNCERTAIN < KNOWN
    assert KNOWN > UNCERTAIN > UNKNOWN
    assert KNOWN >= KNOWN and KNOWN <= KNOWN
    assert not (KNOWN < KNOWN)
    assert sorted([KNOWN, UNKNOWN, UNCERTAIN]) == [UNKNOWN, UNCERTAIN, KNOWN]
    assert max(UNKNOWN, KNOWN, UNCERTAIN) is KNOWN
    assert [m.confidence_rank for m in SelfAssessmentLevel] == [0, 1, 2]


def test_level_does_not_compare_with_ints():
    """Ordering a level against an int is a TypeError (no silent wire-value comparison)."""
    with pytest.raises(TypeError):
        KNOWN < 1
    assert KNOWN != 0


@pytest.mark.parametrize('level, expected', [
    (KNOWN, UNCERTAIN),
    (UNCERTAIN, UNKNOWN),
    (UNKNOWN, UNKNOWN),
])
def test_level_downgraded_one_step(level, expected):
    """downgraded() goes one step less confident and UNKNOWN stays UNKNOWN."""
    assert level.downgraded() is expected


@pytest.mark.parametrize('level, steps, expected', [
    (KNOWN, 0, KNOWN),
    (KNOWN, 2, UNKNOWN),
    (UNCERTAIN, 5, UNKNOWN),
    (KNOWN, STAMP_MAX_NS, UNKNOWN),
])
def test_level_downgraded_several_steps(level, steps, expected):
    """downgraded(steps) saturates at UNKNOWN; zero steps is the identity."""
    assert level.downgraded(steps) is expected


def test_level_downgraded_rejects_negative_steps():
    """downgraded(-1) is a ValueError naming the steps argument."""
    _assert_rejected(
        ContractValueError, 'SelfAssessmentLevel.downgraded.steps', 'negative', '-1',
        KNOWN.downgraded, -1)


@pytest.mark.parametrize('steps', [True, 1.0, '1', None])
def test_level_downgraded_rejects_non_int_steps(steps):
    """downgraded() with a bool, float, str or None is a TypeError naming the argument."""
    _assert_rejected(
        ContractTypeError, 'SelfAssessmentLevel.downgraded.steps', 'wrong_type', repr(steps),
        KNOWN.downgraded, steps)


@pytest.mark.parametrize('wire, expected', [(0, UNKNOWN), (1, UNCERTAIN), (2, KNOWN)])
def test_level_from_wire_known_values(wire, expected):
    """from_wire maps the three wire values to their members."""
    assert SelfAssessmentLevel.from_wire(wire) is expected


@pytest.mark.parametrize('wire, code', [(3, 'unknown_level'), (255, 'unknown_level'),
                                        (256, 'out_of_range'), (-1, 'negative')])
def test_level_from_wire_rejects_unknown_values(wire, code):
    """from_wire of a value outside the catalog is a ValueError showing the value."""
    _assert_rejected(
        ContractValueError, 'SelfAssessmentLevel.value', code, repr(wire),
        SelfAssessmentLevel.from_wire, wire)


@pytest.mark.parametrize('wire', [True, False, 1.0, '1', None, KNOWN])
def test_level_from_wire_rejects_non_ints(wire):
    """from_wire of a bool, float, str, None or a member is a TypeError (bool is not an int)."""
    _assert_rejected(
        ContractTypeError, 'SelfAssessmentLevel.value', 'wrong_type', repr(wire),
        SelfAssessmentLevel.from_wire, wire)


# --- NamedLevel ------------------------------------------------------------------------------


def test_named_level_accepts_taxonomy_name():
    """A snake_case name and a real level make a frozen NamedLevel."""
    named = NamedLevel('position_x', UNCERTAIN)
    assert (named.name, named.level) == ('position_x', UNCERTAIN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        named.level = KNOWN


@pytest.mark.parametrize('name', ['Position', '1axis', '', 'a' * 65, 'pose-x', '_x', 'x\n'])
def test_named_level_rejects_malformed_name(name):
    """A name that is not ^[a-z][a-z0-9_]*$ with 1-64 characters is a ValueError."""
    _assert_rejected(
        ContractValueError, 'NamedLevel.name', 'bad_taxonomy', repr(name), NamedLevel, name, KNOWN)


@pytest.mark.parametrize('name', [None, 3, b'pose'])
def test_named_level_rejects_non_str_name(name):
    """A non-str name is a TypeError."""
    _assert_rejected(
        ContractTypeError, 'NamedLevel.name', 'wrong_type', repr(name), NamedLevel, name, KNOWN)


@pytest.mark.parametrize('level', [0, 'KNOWN', None])
def test_named_level_rejects_non_level(level):
    """A level that is not a SelfAssessmentLevel member (even its wire value) is a TypeError."""
    _assert_rejected(
        ContractTypeError, 'NamedLevel.level', 'wrong_type', repr(level), NamedLevel, 'pose', level)


# --- BeliefSelfAssessment --------------------------------------------------------------------


def test_belief_defaults_and_storage():
    """Defaults are empty level tuples and schema_version 1; sequences are stored as tuples."""
    bare = BeliefSelfAssessment(0, KNOWN)
    assert (bare.axis_levels, bare.block_levels, bare.schema_version, bare.frame_id) == (
        (), (), 1, '')
    assert SCHEMA_VERSION == 1
    axes = [NamedLevel('position_x', KNOWN), NamedLevel('position_y', UNKNOWN)]
    belief = BeliefSelfAssessment(
        STAMP_MAX_NS, UNCERTAIN, axes, (b for b in [NamedLevel('pose', UNCERTAIN)]))
    assert belief.axis_levels == tuple(axes)
    assert belief.block_levels == (NamedLevel('pose', UNCERTAIN),)
    assert belief.belief_stamp_sim_ns == STAMP_MAX_NS


def test_belief_is_frozen_and_hashable():
    """A BeliefSelfAssessment cannot be mutated and equal ones hash equal."""
    a = BeliefSelfAssessment(5, KNOWN, [NamedLevel('pose', KNOWN)])
    b = BeliefSelfAssessment(5, KNOWN, (NamedLevel('pose', KNOWN),))
    assert a == b and hash(a) == hash(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.overall_level = UNKNOWN


@pytest.mark.parametrize('stamp, code', [(-1, 'negative'), (STAMP_MAX_NS + 1, 'out_of_range')])
def test_belief_rejects_stamp_out_of_range(stamp, code):
    """A negative or beyond-int64 belief stamp is a ValueError naming the field."""
    _assert_rejected(
        ContractValueError, 'BeliefSelfAssessment.belief_stamp_sim_ns', code, repr(stamp),
        BeliefSelfAssessment, stamp, KNOWN)


@pytest.mark.parametrize('stamp', [True, False, 1.0, '1', None])
def test_belief_rejects_non_int_stamp(stamp):
    """A bool, float, str or None belief stamp is a TypeError (bool is not an int)."""
    _assert_rejected(
        ContractTypeError, 'BeliefSelfAssessment.belief_stamp_sim_ns', 'wrong_type', repr(stamp),
        BeliefSelfAssessment, stamp, KNOWN)


@pytest.mark.parametrize('level', [0, 'KNOWN', None])
def test_belief_rejects_non_level_overall(level):
    """overall_level must be a SelfAssessmentLevel member."""
    _assert_rejected(
        ContractTypeError, 'BeliefSelfAssessment.overall_level', 'wrong_type', repr(level),
        BeliefSelfAssessment, 0, level)


@pytest.mark.parametrize('field', ['axis_levels', 'block_levels'])
def test_belief_rejects_non_sequence_levels(field):
    """A str or an int in place of a NamedLevel sequence is a TypeError."""
    for bad in ('pose', 7):
        _assert_rejected(
            ContractTypeError, f'BeliefSelfAssessment.{field}', 'wrong_type', repr(bad),
            BeliefSelfAssessment, 0, KNOWN, **{field: bad})


@pytest.mark.parametrize('field', ['axis_levels', 'block_levels'])
def test_belief_rejects_non_named_level_item(field):
    """An item that is not a NamedLevel is a TypeError naming its index."""
    items = [NamedLevel('pose', KNOWN), ('twist', KNOWN)]
    _assert_rejected(
        ContractTypeError, f'BeliefSelfAssessment.{field}[1]', 'wrong_type', "('twist'",
        BeliefSelfAssessment, 0, KNOWN, **{field: items})


@pytest.mark.parametrize('field', ['axis_levels', 'block_levels'])
def test_belief_rejects_duplicate_names(field):
    """Two levels with the same name in one sequence is a ValueError naming the name."""
    items = [NamedLevel('pose', KNOWN), NamedLevel('pose', UNKNOWN)]
    _assert_rejected(
        ContractValueError, f'BeliefSelfAssessment.{field}', 'duplicate_name', "'pose'",
        BeliefSelfAssessment, 0, KNOWN, **{field: items})


def test_belief_same_name_in_axes_and_blocks_is_fine():
    """Names are unique within each sequence, not across the two."""
    belief = BeliefSelfAssessment(
        0, KNOWN, [NamedLevel('pose', KNOWN)], [NamedLevel('pose', UNKNOWN)])
    assert belief.axis_levels[0].name == belief.block_levels[0].name == 'pose'


@pytest.mark.parametrize('version', [0, 2])
def test_belief_rejects_wrong_schema_version(version):
    """A schema_version other than 1 is a ValueError showing the version."""
    _assert_rejected(
        ContractValueError, 'BeliefSelfAssessment.schema_version', 'unsupported_schema_version',
        repr(version), BeliefSelfAssessment, 0, KNOWN, schema_version=version)


@pytest.mark.parametrize('version', [True, 1.0, '1'])
def test_belief_rejects_non_int_schema_version(version):
    """A bool, float or str schema_version is a TypeError."""
    _assert_rejected(
        ContractTypeError, 'BeliefSelfAssessment.schema_version', 'wrong_type', repr(version),
        BeliefSelfAssessment, 0, KNOWN, schema_version=version)


# --- PredictionOutcome -----------------------------------------------------------------------


def test_outcome_valid_fields_are_normalised():
    """Ints become floats and vectors become tuples; the stored values are exact."""
    outcome = PredictionOutcome(**_outcome_kwargs(
        position_error_m=[1, 2, 3], orientation_error_rad=(0, 0, 0),
        position_mahalanobis=2, orientation_mahalanobis=0.5))
    assert outcome.position_error_m == (1.0, 2.0, 3.0)
    assert all(type(v) is float for v in outcome.position_error_m)
    assert outcome.orientation_error_rad == (0.0, 0.0, 0.0)
    assert type(outcome.position_mahalanobis) is float
    assert outcome.position_mahalanobis == 2.0
    assert outcome.schema_version == 1


def test_outcome_derived_bucket_is_not_a_field():
    """The bucket and worst_mahalanobis are derived: absent from fields() and repr."""
    outcome = PredictionOutcome(**_outcome_kwargs(
        position_mahalanobis=0.5, orientation_mahalanobis=3.5))
    assert outcome.bucket == BUCKET_BEYOND_3_STD
    assert outcome.worst_mahalanobis == 3.5
    assert [f.name for f in dataclasses.fields(outcome)] == [
        'prediction_stamp_sim_ns', 'observed_stamp_sim_ns', 'position_error_m',
        'orientation_error_rad', 'position_mahalanobis', 'orientation_mahalanobis',
        'schema_version', 'frame_id', 'bias_evidence_nats', 'bias_position_share']
    assert 'bucket' not in repr(outcome)


def test_outcome_is_frozen_and_hashable():
    """A PredictionOutcome cannot be mutated; equal ones are equal and hash equal."""
    a = PredictionOutcome(**_outcome_kwargs())
    b = PredictionOutcome(**_outcome_kwargs(position_error_m=[0.1, -0.2, 0.3]))
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.position_mahalanobis = 9.0


def test_outcome_observed_equal_to_predicted_is_legal():
    """observed_stamp_sim_ns == prediction_stamp_sim_ns is accepted."""
    outcome = PredictionOutcome(**_outcome_kwargs(
        prediction_stamp_sim_ns=7, observed_stamp_sim_ns=7))
    assert outcome.observed_stamp_sim_ns == outcome.prediction_stamp_sim_ns == 7


def test_outcome_rejects_observed_before_predicted():
    """An observed stamp before the predicted one is a ValueError naming both stamps."""
    error = _assert_rejected(
        ContractValueError, 'PredictionOutcome.observed_stamp_sim_ns', 'stamp_order', '(199)',
        PredictionOutcome, **_outcome_kwargs(
            prediction_stamp_sim_ns=200, observed_stamp_sim_ns=199))
    assert 'prediction_stamp_sim_ns (200)' in str(error)


@pytest.mark.parametrize('field', ['prediction_stamp_sim_ns', 'observed_stamp_sim_ns'])
@pytest.mark.parametrize('value, exc_type, code', [
    (-1, ContractValueError, 'negative'),
    (STAMP_MAX_NS + 1, ContractValueError, 'out_of_range'),
    (True, ContractTypeError, 'wrong_type'),
    (1.0, ContractTypeError, 'wrong_type'),
    (None, ContractTypeError, 'wrong_type'),
])
def test_outcome_rejects_bad_stamp(field, value, exc_type, code):
    """A negative, beyond-int64, bool, float or None stamp is rejected naming the field."""
    overrides = {field: value}
    if field == 'prediction_stamp_sim_ns' and value == -1:
        overrides['observed_stamp_sim_ns'] = 0
    _assert_rejected(exc_type, f'PredictionOutcome.{field}', code, repr(value),
                     PredictionOutcome, **_outcome_kwargs(**overrides))


@pytest.mark.parametrize('field', ['position_mahalanobis', 'orientation_mahalanobis'])
def test_outcome_distance_plus_inf_is_legal(field):
    """+inf is a legal distance and lands in beyond_5."""
    outcome = PredictionOutcome(**_outcome_kwargs(**{field: math.inf}))
    assert getattr(outcome, field) == math.inf
    assert outcome.bucket == BUCKET_BEYOND_5_STD


@pytest.mark.parametrize('field', ['position_mahalanobis', 'orientation_mahalanobis'])
def test_outcome_distance_zero_is_legal(field):
    """A zero distance is legal."""
    outcome = PredictionOutcome(**_outcome_kwargs(
        position_mahalanobis=0.0, orientation_mahalanobis=0))
    assert getattr(outcome, field) == 0.0
    assert outcome.bucket == BUCKET_WITHIN_1_STD


@pytest.mark.parametrize('field', ['position_mahalanobis', 'orientation_mahalanobis'])
def test_outcome_rejects_nan_distance(field):
    """A NaN distance is a ValueError with code nan."""
    _assert_rejected(ContractValueError, f'PredictionOutcome.{field}', 'nan', 'NaN',
                     PredictionOutcome, **_outcome_kwargs(**{field: math.nan}))


@pytest.mark.parametrize('field', ['position_mahalanobis', 'orientation_mahalanobis'])
@pytest.mark.parametrize('value', [-1e-300, -1.0, -math.inf, -3])
def test_outcome_rejects_negative_distance(field, value):
    """A negative distance (including -inf) is a ValueError showing the value."""
    _assert_rejected(ContractValueError, f'PredictionOutcome.{field}', 'negative',
                     repr(float(value)), PredictionOutcome, **_outcome_kwargs(**{field: value}))


@pytest.mark.parametrize('field', ['position_mahalanobis', 'orientation_mahalanobis'])
@pytest.mark.parametrize('value', [True, False, '1.0', None, [1.0], complex(1, 0)])
def test_outcome_rejects_non_real_distance(field, value):
    """A bool, str, None, list or complex distance is a TypeError (bool is not a number here)."""
    _assert_rejected(ContractTypeError, f'PredictionOutcome.{field}', 'wrong_type', repr(value),
                     PredictionOutcome, **_outcome_kwargs(**{field: value}))


@pytest.mark.parametrize('field', ['position_mahalanobis', 'orientation_mahalanobis'])
def test_outcome_rejects_int_too_large_for_float(field):
    """An int beyond the float range is a ValueError, not an OverflowError."""
    _assert_rejected(ContractValueError, f'PredictionOutcome.{field}', 'out_of_range',
                     'too large', PredictionOutcome, **_outcome_kwargs(**{field: 10**400}))


@pytest.mark.parametrize('field', ['position_error_m', 'orientation_error_rad'])
@pytest.mark.parametrize('value, code', [
    (math.nan, 'nan'), (math.inf, 'not_finite'), (-math.inf, 'not_finite')])
def test_outcome_rejects_non_finite_error_component(field, value, code):
    """Error vectors must be finite: NaN and +/-inf components are ValueErrors naming the index."""
    _assert_rejected(ContractValueError, f'PredictionOutcome.{field}[1]', code, repr(value),
                     PredictionOutcome, **_outcome_kwargs(**{field: (0.0, value, 0.0)}))


@pytest.mark.parametrize('field', ['position_error_m', 'orientation_error_rad'])
@pytest.mark.parametrize('value', [(), (1.0, 2.0), (1.0, 2.0, 3.0, 4.0)])
def test_outcome_rejects_wrong_length_error(field, value):
    """An error vector with other than 3 elements is a ValueError showing it."""
    _assert_rejected(ContractValueError, f'PredictionOutcome.{field}', 'wrong_length', repr(value),
                     PredictionOutcome, **_outcome_kwargs(**{field: value}))


@pytest.mark.parametrize('field', ['position_error_m', 'orientation_error_rad'])
@pytest.mark.parametrize('value', ['abc', 1.0, None])
def test_outcome_rejects_non_sequence_error(field, value):
    """A str, scalar or None error vector is a TypeError."""
    _assert_rejected(ContractTypeError, f'PredictionOutcome.{field}', 'wrong_type', repr(value),
                     PredictionOutcome, **_outcome_kwargs(**{field: value}))


@pytest.mark.parametrize('field', ['position_error_m', 'orientation_error_rad'])
def test_outcome_rejects_bool_error_component(field):
    """A bool error component is a TypeError naming the index."""
    _assert_rejected(ContractTypeError, f'PredictionOutcome.{field}[2]', 'wrong_type', 'True',
                     PredictionOutcome, **_outcome_kwargs(**{field: (0.0, 0.0, True)}))


@pytest.mark.parametrize('version, exc_type, code', [
    (0, ContractValueError, 'unsupported_schema_version'),
    (2, ContractValueError, 'unsupported_schema_version'),
    (True, ContractTypeError, 'wrong_type'),
    ('1', ContractTypeError, 'wrong_type'),
])
def test_outcome_rejects_bad_schema_version(version, exc_type, code):
    """schema_version must be the int 1."""
    _assert_rejected(exc_type, 'PredictionOutcome.schema_version', code, repr(version),
                     PredictionOutcome, **_outcome_kwargs(schema_version=version))


# --- bucket rule -----------------------------------------------------------------------------


@pytest.mark.parametrize('distance, bucket', [
    (0.0, BUCKET_WITHIN_1_STD),
    (1.0, BUCKET_WITHIN_1_STD),
    (math.nextafter(1.0, math.inf), BUCKET_BEYOND_1_STD),
    (3.0, BUCKET_BEYOND_1_STD),
    (math.nextafter(3.0, math.inf), BUCKET_BEYOND_3_STD),
    (5.0, BUCKET_BEYOND_3_STD),
    (math.nextafter(5.0, math.inf), BUCKET_BEYOND_5_STD),
    (1e308, BUCKET_BEYOND_5_STD),
    (math.inf, BUCKET_BEYOND_5_STD),
])
def test_bucket_of_distance_boundaries(distance, bucket):
    """Buckets: d <= 1 within, 1 < d <= 3 beyond_1, 3 < d <= 5 beyond_3, d > 5 beyond_5."""
    assert bucket_of_distance(distance) == bucket


def test_bucket_indices_are_distinct_and_ordered():
    """The four bucket indices are 0..3 in order of increasing distance."""
    assert (BUCKET_WITHIN_1_STD, BUCKET_BEYOND_1_STD, BUCKET_BEYOND_3_STD,
            BUCKET_BEYOND_5_STD) == (0, 1, 2, 3)


def test_violation_reason_key():
    """ContractViolation.reason is '<code>:<field>' and the classes are TypeError/ValueError."""
    with pytest.raises(ContractValueError) as info:
        PredictionOutcome(**_outcome_kwargs(position_mahalanobis=math.nan))
    assert info.value.reason == 'nan:PredictionOutcome.position_mahalanobis'
    assert issubclass(ContractTypeError, TypeError)
    assert issubclass(ContractValueError, ValueError)
    assert re.fullmatch(r'[a-z_]+:[A-Za-z_.\[\]0-9]+', info.value.reason)


def test_level_lists_are_bounded_as_the_v2_messages():
    """At most MAX_NAMED_LEVELS (64) axis or block levels; one more is a ContractValueError."""
    levels = [NamedLevel(f'axis_{i}', KNOWN) for i in range(MAX_NAMED_LEVELS + 1)]
    assert len(BeliefSelfAssessment(0, KNOWN, levels[:-1]).axis_levels) == MAX_NAMED_LEVELS
    for field in ('axis_levels', 'block_levels'):
        _assert_rejected(
            ContractValueError, f'BeliefSelfAssessment.{field}', 'too_long', '65 entries',
            lambda: BeliefSelfAssessment(0, KNOWN, **{field: levels}))


@pytest.mark.parametrize('cls, kwargs', [
    (BeliefSelfAssessment, {'belief_stamp_sim_ns': 0, 'overall_level': KNOWN}),
    (PredictionOutcome, None),
])
def test_frame_id_is_a_bounded_str(cls, kwargs):
    """frame_id defaults to '', keeps any str up to 256 characters, refuses longer or non-str."""
    kwargs = _outcome_kwargs() if kwargs is None else kwargs
    owner = cls.__name__
    assert cls(**kwargs).frame_id == ''
    assert cls(**kwargs, frame_id='robot1/odom').frame_id == 'robot1/odom'
    assert len(cls(**kwargs, frame_id='f' * FRAME_ID_MAX_LEN).frame_id) == FRAME_ID_MAX_LEN
    _assert_rejected(
        ContractValueError, f'{owner}.frame_id', 'too_long', '257 characters',
        lambda: cls(**kwargs, frame_id='f' * (FRAME_ID_MAX_LEN + 1)))
    _assert_rejected(
        ContractTypeError, f'{owner}.frame_id', 'wrong_type', 'None',
        lambda: cls(**kwargs, frame_id=None))
