# SPDX-License-Identifier: Apache-2.0
"""Hypothesis property tests of the core contracts and of ADR-0026 sections 1-5.

Every expected value here is recomputed independently, straight from the drawn inputs, with the
rules written down in the ADR and docs/contracts.md; the code under test is never its own oracle.
"""

import math
import re

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
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
    MahalanobisDowngradePolicy,
)
import pytest

PROPERTY_SETTINGS = settings(
    deadline=None, max_examples=200, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

TAXONOMY = re.compile(r'[a-z][a-z0-9_]*')
LEVELS = [SelfAssessmentLevel.KNOWN, SelfAssessmentLevel.UNCERTAIN, SelfAssessmentLevel.UNKNOWN]

# Distances: 0, the exact bucket boundaries, the floats just around them, huge values and +inf.
_SPECIAL_DISTANCES = [
    0.0, 1.0, 3.0, 5.0,
    math.nextafter(1.0, 0.0), math.nextafter(1.0, math.inf),
    math.nextafter(3.0, 0.0), math.nextafter(3.0, math.inf),
    math.nextafter(5.0, 0.0), math.nextafter(5.0, math.inf),
    5e-324, 1e300, 1.7976931348623157e308, math.inf,
]
distances = st.one_of(
    st.sampled_from(_SPECIAL_DISTANCES),
    st.floats(min_value=0.0, max_value=8.0),
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=True),
    st.integers(min_value=0, max_value=10**6),
)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
vec3s = st.tuples(finite_floats, finite_floats, finite_floats)
# The errors do not enter the history: sequences use a few fixed vectors to keep the suite fast.
cheap_vec3s = st.sampled_from([(0.0, 0.0, 0.0), (0.1, -0.2, 0.3), (-1e3, 5e-324, 2.5)])


@st.composite
def outcome_specs(draw, vectors=cheap_vec3s):
    """Draw the constructor arguments of a valid PredictionOutcome, as a dict."""
    predicted = draw(st.integers(min_value=0, max_value=STAMP_MAX_NS))
    observed = draw(st.one_of(
        st.just(predicted), st.integers(min_value=predicted, max_value=STAMP_MAX_NS)))
    return {
        'prediction_stamp_sim_ns': predicted,
        'observed_stamp_sim_ns': observed,
        'position_error_m': draw(vectors),
        'orientation_error_rad': draw(vectors),
        'position_mahalanobis': draw(distances),
        'orientation_mahalanobis': draw(distances),
    }


_LOWER = 'abcdefghijklmnopqrstuvwxyz'
taxonomy_names = st.builds(
    lambda first, rest: first + rest, st.sampled_from(_LOWER),
    st.text(alphabet=_LOWER + '0123456789_', max_size=12))


@st.composite
def belief_specs(draw):
    """Draw the constructor arguments of a valid BeliefSelfAssessment, as a dict."""
    axis_names = draw(st.lists(taxonomy_names, max_size=4, unique=True))
    block_names = draw(st.lists(taxonomy_names, max_size=3, unique=True))
    return {
        'belief_stamp_sim_ns': draw(st.integers(min_value=0, max_value=STAMP_MAX_NS)),
        'overall_level': draw(st.sampled_from(LEVELS)),
        'axis_levels': [(n, draw(st.sampled_from(LEVELS))) for n in axis_names],
        'block_levels': [(n, draw(st.sampled_from(LEVELS))) for n in block_names],
    }


def _belief(spec):
    """Build a BeliefSelfAssessment from a spec drawn by belief_specs."""
    return BeliefSelfAssessment(
        spec['belief_stamp_sim_ns'], spec['overall_level'],
        [NamedLevel(n, lv) for n, lv in spec['axis_levels']],
        tuple(NamedLevel(n, lv) for n, lv in spec['block_levels']))


def _reference_bucket_of(worse):
    """Bucket index of an unsquared distance: <=1, <=3, <=5, else."""
    return 0 if worse <= 1.0 else 1 if worse <= 3.0 else 2 if worse <= 5.0 else 3


def _reference_bucket(spec):
    """Bucket index by the larger of the two distances: <=1, <=3, <=5, else (ADR choice)."""
    position = float(spec['position_mahalanobis'])
    orientation = float(spec['orientation_mahalanobis'])
    worse = position if position >= orientation else orientation
    if worse <= 1.0:
        return 0
    if worse <= 3.0:
        return 1
    if worse <= 5.0:
        return 2
    return 3


def _reference_history(specs, max_n):
    """Recompute the expected history fields from the specs, straightforwardly."""
    window = specs[max(0, len(specs) - max_n):]
    counts = [0, 0, 0, 0]
    for spec in window:
        counts[_reference_bucket(spec)] += 1
    return (
        len(window),
        counts[0], counts[1], counts[2], counts[3],
        max([0.0] + [float(s['position_mahalanobis']) for s in window]),
        max([0.0] + [float(s['orientation_mahalanobis']) for s in window]),
        max([s['observed_stamp_sim_ns'] for s in window]) if window else None,
    )


def _history_fields(history):
    return (
        history.outcomes_considered,
        history.count_within_1_std, history.count_beyond_1_std,
        history.count_beyond_3_std, history.count_beyond_5_std,
        history.worst_position_mahalanobis, history.worst_orientation_mahalanobis,
        history.most_recent_observed_stamp_sim_ns,
    )


def _assert_history_invariants(history):
    """Assert every ADR-0026 section 1 invariant on an accepted CalibrationHistory."""
    counts = (history.count_within_1_std, history.count_beyond_1_std,
              history.count_beyond_3_std, history.count_beyond_5_std)
    assert type(history.outcomes_considered) is int and history.outcomes_considered >= 0
    assert all(type(c) is int and c >= 0 for c in counts)
    assert sum(counts) == history.outcomes_considered
    for worst in (history.worst_position_mahalanobis, history.worst_orientation_mahalanobis):
        assert type(worst) is float and not math.isnan(worst) and worst >= 0.0
    stamp = history.most_recent_observed_stamp_sim_ns
    if history.outcomes_considered == 0:
        assert history.worst_position_mahalanobis == 0.0
        assert history.worst_orientation_mahalanobis == 0.0
        assert stamp is None
    else:
        assert type(stamp) is int and stamp >= 0
    assert history.schema_version in (1, 2)
    squares = (history.position_squared_distances, history.orientation_squared_distances)
    if history.schema_version == 1:
        assert squares == ((), ())
        return
    worsts = (history.worst_position_mahalanobis, history.worst_orientation_mahalanobis)
    for values, worst in zip(squares, worsts):
        assert type(values) is tuple and len(values) == history.outcomes_considered
        assert all(type(v) is float and not math.isnan(v) and v >= 0.0 for v in values)
        assert max(values, default=0.0) == worst * worst
    implied = [0, 0, 0, 0]
    for p2, o2 in zip(*squares):
        implied[_reference_bucket_of(math.sqrt(max(p2, o2)))] += 1
    assert tuple(implied) == counts


def _reference_adjust(level, history, min_outcomes, threshold):
    """ADR-0026 section 4, rule by rule: return (adjusted level, reason)."""
    beyond_3 = history.count_beyond_3_std + history.count_beyond_5_std
    if beyond_3 >= threshold and history.outcomes_considered >= min_outcomes:
        return LEVELS[min(LEVELS.index(level) + 1, 2)], 'downgrade_from_calibration'
    if history.outcomes_considered == 0:
        return level, 'no_outcomes_yet'
    return level, 'calibration_within_tolerance'


# --- build_calibration_history ---------------------------------------------------------------


@PROPERTY_SETTINGS
@given(specs=st.lists(outcome_specs(), max_size=60), max_n=st.integers(min_value=1, max_value=80))
def test_build_matches_independent_recomputation(specs, max_n):
    """outcomes_considered == min(len, max_n); counts, worsts and stamp match a recomputation."""
    outcomes = [PredictionOutcome(**spec) for spec in specs]
    history = build_calibration_history(outcomes, max_n)
    assert history.outcomes_considered == min(len(specs), max_n)
    assert _history_fields(history) == _reference_history(specs, max_n)
    _assert_history_invariants(history)


@PROPERTY_SETTINGS
@given(specs=st.lists(outcome_specs(), max_size=40), max_n=st.integers(min_value=1, max_value=50))
def test_build_is_the_same_for_any_iterable(specs, max_n):
    """A list, a tuple and a generator of the same outcomes give equal histories."""
    outcomes = [PredictionOutcome(**spec) for spec in specs]
    from_list = build_calibration_history(outcomes, max_n)
    assert build_calibration_history(tuple(outcomes), max_n) == from_list
    assert build_calibration_history((o for o in outcomes), max_n) == from_list
    assert repr(build_calibration_history(iter(outcomes), max_n)) == repr(from_list)


@PROPERTY_SETTINGS
@given(max_n=st.one_of(
    st.integers(max_value=0), st.floats(), st.booleans(), st.text(max_size=3), st.none(),
    st.decimals(allow_nan=False, allow_infinity=False)))
def test_build_rejects_any_invalid_max_n(max_n):
    """Every max_n that is not an int >= 1 is rejected with TypeError or ValueError."""
    with pytest.raises((TypeError, ValueError)) as info:
        build_calibration_history([], max_n)
    assert isinstance(info.value, ContractViolation)
    assert info.value.field == 'build_calibration_history.max_n'


# --- accepted objects keep the invariants; invalid ones are rejected -------------------------


counts_or_junk = st.one_of(
    st.integers(min_value=0, max_value=20), st.integers(min_value=-3, max_value=2**33),
    st.booleans(), st.floats(allow_nan=True), st.none(), st.just('1'))
distance_or_junk = st.one_of(
    distances, st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.integers(min_value=-5, max_value=10**400), st.just('0.5'))
stamp_or_junk = st.one_of(
    st.none(), st.integers(min_value=-5, max_value=2**64), st.booleans(), st.floats(),
    st.just('7'))


@PROPERTY_SETTINGS
@given(counts=st.lists(counts_or_junk, min_size=4, max_size=4), consistent=st.booleans(),
       total=counts_or_junk, worsts=st.tuples(distance_or_junk, distance_or_junk),
       stamp=stamp_or_junk, empty_shape=st.booleans(),
       schema_version=st.sampled_from([1, 1, 1, 0, 2, True, 1.0]))
def test_history_accepts_only_invariant_keeping_values(
        counts, consistent, total, worsts, stamp, empty_shape, schema_version):
    """Any CalibrationHistory the constructor accepts keeps every section 1 invariant."""
    if empty_shape:
        counts, total, worsts, stamp = [0, 0, 0, 0], 0, (0.0, 0.0), None
    elif consistent and all(type(c) is int for c in counts):
        total = sum(counts)
    try:
        history = CalibrationHistory(total, *counts, *worsts, stamp, schema_version)
    except ContractViolation as error:
        assert isinstance(error, (TypeError, ValueError))
        return
    _assert_history_invariants(history)
    assert history.outcomes_considered == total
    assert (history.count_within_1_std, history.count_beyond_1_std, history.count_beyond_3_std,
            history.count_beyond_5_std) == tuple(counts)


_HISTORY_BREAKERS = {
    'negative_count': {'count_beyond_1_std': -1},
    'bool_count': {'count_within_1_std': True},
    'float_count': {'count_beyond_5_std': 1.0},
    'inconsistent_sum': {'outcomes_considered': 999},
    'nan_position': {'worst_position_mahalanobis': math.nan},
    'nan_orientation': {'worst_orientation_mahalanobis': math.nan},
    'negative_worst': {'worst_orientation_mahalanobis': -1e-9},
    'minus_inf_worst': {'worst_position_mahalanobis': -math.inf},
    'negative_stamp': {'most_recent_observed_stamp_sim_ns': -1},
    'bool_stamp': {'most_recent_observed_stamp_sim_ns': True},
    'missing_stamp': {'most_recent_observed_stamp_sim_ns': None},
    'schema_version': {'schema_version': 3},
    'schema_1_with_squares': {'schema_version': 1},
    'short_squares': {'position_squared_distances': ()},
    'nan_square': {'orientation_squared_distances': (math.nan,)},
}


@PROPERTY_SETTINGS
@given(specs=st.lists(outcome_specs(), min_size=1, max_size=20),
       breaker=st.sampled_from(sorted(_HISTORY_BREAKERS)))
def test_history_rejects_every_broken_variant(specs, breaker):
    """A valid non-empty history with one invariant broken is always rejected."""
    valid = build_calibration_history([PredictionOutcome(**s) for s in specs], 64)
    kwargs = {name: getattr(valid, name) for name in CalibrationHistory.__dataclass_fields__}
    kwargs.update(_HISTORY_BREAKERS[breaker])
    with pytest.raises((TypeError, ValueError)):
        CalibrationHistory(**kwargs)


@PROPERTY_SETTINGS
@given(worsts=st.tuples(distances, distances).filter(lambda w: w != (0, 0)),
       stamp=st.one_of(st.none(), st.integers(min_value=0, max_value=STAMP_MAX_NS)))
def test_empty_history_rejects_any_evidence(worsts, stamp):
    """With zero outcomes, a non-zero worst is always rejected (stamp None or not)."""
    with pytest.raises(ValueError):
        CalibrationHistory(0, 0, 0, 0, 0, *worsts, stamp)


@PROPERTY_SETTINGS
@given(spec=outcome_specs(vec3s), field=st.sampled_from([
    'prediction_stamp_sim_ns', 'observed_stamp_sim_ns', 'position_error_m',
    'orientation_error_rad', 'position_mahalanobis', 'orientation_mahalanobis']),
    junk=st.one_of(distance_or_junk, stamp_or_junk, st.lists(st.floats(), max_size=4),
                   st.tuples(st.floats(), st.floats(), st.floats()), st.text(max_size=3)))
def test_outcome_accepts_only_invariant_keeping_values(spec, field, junk):
    """Any PredictionOutcome accepted (one field replaced by junk) keeps the invariants."""
    spec = dict(spec, **{field: junk})
    try:
        outcome = PredictionOutcome(**spec)
    except ContractViolation as error:
        assert isinstance(error, (TypeError, ValueError))
        return
    for name in ('prediction_stamp_sim_ns', 'observed_stamp_sim_ns'):
        value = getattr(outcome, name)
        assert type(value) is int and 0 <= value <= STAMP_MAX_NS
    assert outcome.observed_stamp_sim_ns >= outcome.prediction_stamp_sim_ns
    for name in ('position_error_m', 'orientation_error_rad'):
        vector = getattr(outcome, name)
        assert type(vector) is tuple and len(vector) == 3
        assert all(type(v) is float and math.isfinite(v) for v in vector)
    for name in ('position_mahalanobis', 'orientation_mahalanobis'):
        value = getattr(outcome, name)
        assert type(value) is float and not math.isnan(value) and value >= 0.0
    assert outcome.bucket == _reference_bucket(spec)
    assert outcome.schema_version == 1


_OUTCOME_BREAKERS = {
    'nan_position': {'position_mahalanobis': math.nan},
    'nan_orientation': {'orientation_mahalanobis': math.nan},
    'negative_distance': {'orientation_mahalanobis': -0.5},
    'bool_distance': {'position_mahalanobis': True},
    'inf_error': {'position_error_m': (0.0, math.inf, 0.0)},
    'nan_error': {'orientation_error_rad': (math.nan, 0.0, 0.0)},
    'short_error': {'position_error_m': (0.0, 0.0)},
    'bool_stamp': {'prediction_stamp_sim_ns': False},
    'negative_stamp': {'prediction_stamp_sim_ns': -1},
    'observed_before_predicted': {'observed_stamp_sim_ns': -1},
    'schema_version': {'schema_version': 0},
}


@PROPERTY_SETTINGS
@given(spec=outcome_specs(vec3s), breaker=st.sampled_from(sorted(_OUTCOME_BREAKERS)))
def test_outcome_rejects_every_broken_variant(spec, breaker):
    """A valid outcome with one invariant broken is always rejected."""
    spec = dict(spec, **_OUTCOME_BREAKERS[breaker])
    if breaker == 'observed_before_predicted':
        spec['prediction_stamp_sim_ns'] = max(1, spec['prediction_stamp_sim_ns'])
        spec['observed_stamp_sim_ns'] = spec['prediction_stamp_sim_ns'] - 1
    with pytest.raises((TypeError, ValueError)):
        PredictionOutcome(**spec)


@PROPERTY_SETTINGS
@given(spec=belief_specs(), stamp=stamp_or_junk, duplicate=st.booleans())
def test_belief_accepts_only_invariant_keeping_values(spec, stamp, duplicate):
    """A BeliefSelfAssessment is accepted iff its stamp is an int in [0, int64] and names unique."""
    spec['belief_stamp_sim_ns'] = stamp
    if duplicate and spec['axis_levels']:
        spec['axis_levels'].append(spec['axis_levels'][0])
    valid_stamp = type(stamp) is int and 0 <= stamp <= STAMP_MAX_NS
    expected_ok = valid_stamp and not (duplicate and spec['axis_levels'])
    try:
        belief = _belief(spec)
    except ContractViolation as error:
        assert isinstance(error, (TypeError, ValueError))
        assert not expected_ok
        return
    assert expected_ok
    assert belief.belief_stamp_sim_ns == stamp
    assert type(belief.axis_levels) is tuple and type(belief.block_levels) is tuple
    for levels in (belief.axis_levels, belief.block_levels):
        names = [item.name for item in levels]
        assert len(names) == len(set(names))
        assert all(isinstance(item, NamedLevel) for item in levels)


@PROPERTY_SETTINGS
@given(text=st.one_of(st.text(max_size=70),
                      st.from_regex(r'[a-z][a-z0-9_]{0,70}', fullmatch=True)),
       field=st.sampled_from(['adjustment_policy_id', 'adjustment_reason']))
def test_envelope_taxonomy_accepted_iff_well_formed(text, field):
    """A taxonomy string is accepted exactly when it matches ^[a-z][a-z0-9_]*$ with 1-64 chars."""
    well_formed = TAXONOMY.fullmatch(text) is not None and 1 <= len(text) <= 64
    kwargs = {
        'raw_assessment': BeliefSelfAssessment(0, SelfAssessmentLevel.KNOWN),
        'calibration_history': CalibrationHistory.empty(),
        'adjusted_overall_level': SelfAssessmentLevel.KNOWN,
        'adjustment_policy_id': 'p',
        'adjustment_reason': 'r',
        field: text,
    }
    try:
        envelope = CalibratedSelfAssessment(**kwargs)
    except ValueError as error:
        assert isinstance(error, ContractViolation)
        assert error.field == f'CalibratedSelfAssessment.{field}'
        assert not well_formed
        return
    assert well_formed
    assert getattr(envelope, field) == text


@PROPERTY_SETTINGS
@given(wire=st.integers(min_value=-10, max_value=300))
def test_level_from_wire_accepts_exactly_the_catalog(wire):
    """from_wire accepts exactly 0, 1, 2 and rejects every other int with ValueError."""
    if wire in (0, 1, 2):
        assert SelfAssessmentLevel.from_wire(wire).value == wire
    else:
        with pytest.raises(ValueError):
            SelfAssessmentLevel.from_wire(wire)


# --- assess_with_feedback ---------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(raw_spec=belief_specs(), specs=st.lists(outcome_specs(), max_size=40),
       max_history=st.integers(min_value=1, max_value=64),
       min_outcomes=st.integers(min_value=1, max_value=8),
       threshold=st.integers(min_value=1, max_value=8))
def test_assess_with_feedback_is_pure_and_follows_the_adr(
        raw_spec, specs, max_history, min_outcomes, threshold):
    """Equal, separately built inputs give equal outputs with identical repr and the ADR rules."""
    def run():
        raw = _belief(raw_spec)
        outcomes = [PredictionOutcome(**dict(spec)) for spec in specs]
        policy = MahalanobisDowngradePolicy(min_outcomes, threshold)
        return assess_with_feedback(raw, outcomes, policy, max_history)

    first = run()
    second = run()
    assert first == second
    assert repr(first) == repr(second)
    history = first.calibration_history
    assert _history_fields(history) == _reference_history(specs, max_history)
    level, reason = _reference_adjust(raw_spec['overall_level'], history, min_outcomes, threshold)
    assert first.adjusted_overall_level is level
    assert first.adjustment_reason == reason
    assert first.adjustment_policy_id == 'mahalanobis_downgrade'
    assert first.raw_assessment == _belief(raw_spec)
