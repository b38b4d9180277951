# SPDX-License-Identifier: Apache-2.0
"""CalibrationHistory schema 2 (ADR-0026a): squared distances per vec3, invariants, equivalence.

Expected values are recomputed independently from the drawn distances; the schema-2 history
built by ``build_calibration_history`` is rebuilt through the validating constructor.
"""

import dataclasses
import math

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    ContractViolation,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.contracts import bucket_of_distance
from project_ghost_feedback.core.feedback import (
    build_calibration_history,
    CalibrationHistory,
    make_policy,
    POLICIES,
    policy_names,
)
from support.contracts import zero_error_outcomes
import pytest

SETTINGS = settings(deadline=None, max_examples=150, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

_BOUNDARIES = [1.0, 3.0, 5.0]
_SPECIAL = [0.0, 5e-324, 1e-160, 1e154, 1.4e154, 1e300, math.inf] + [
    v for b in _BOUNDARIES for v in (math.nextafter(b, 0.0), b, math.nextafter(b, math.inf))]
distances = st.one_of(
    st.sampled_from(_SPECIAL), st.floats(min_value=0.0, max_value=8.0),
    st.floats(min_value=0.0, max_value=40.0),
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=True))
pairs = st.lists(st.tuples(distances, distances), max_size=40)


def _outcomes(pairs_):
    return zero_error_outcomes(pairs_, observed_lag_ns=1)


def _fields(history):
    return {f.name: getattr(history, f.name) for f in dataclasses.fields(history)}


def _raw(level):
    return BeliefSelfAssessment(1, level, (), ())


@pytest.mark.parametrize('distance', _SPECIAL)
def test_squared_buckets_equal_unsquared_buckets_at_every_boundary(distance):
    """For any float d >= 0, d <= t iff d * d <= t * t for t in (1, 3, 5): same bucket."""
    squared = distance * distance
    by_square = 0 if squared <= 1.0 else 1 if squared <= 9.0 else 2 if squared <= 25.0 else 3
    assert by_square == bucket_of_distance(distance)


@SETTINGS
@given(distance=st.floats(min_value=0.0, allow_nan=False, allow_infinity=True))
def test_squared_buckets_equal_unsquared_buckets(distance):
    """The squared-scale bucket equals the ADR bucket for every float distance."""
    squared = distance * distance
    by_square = 0 if squared <= 1.0 else 1 if squared <= 9.0 else 2 if squared <= 25.0 else 3
    assert by_square == bucket_of_distance(distance)


@SETTINGS
@given(pairs_=pairs, max_n=st.integers(min_value=1, max_value=50))
def test_build_gives_schema_2_that_the_constructor_accepts(pairs_, max_n):
    """The built schema-2 history carries d*d oldest first and passes the full validation."""
    history = build_calibration_history(_outcomes(pairs_), max_n)
    window = pairs_[-max_n:] if pairs_ else []
    assert history.schema_version == 2
    assert history.position_squared_distances == tuple(float(p) * float(p) for p, _ in window)
    assert history.orientation_squared_distances == tuple(float(o) * float(o) for _, o in window)
    assert len(history.position_squared_distances) == history.outcomes_considered
    for squares, worst in ((history.position_squared_distances,
                            history.worst_position_mahalanobis),
                           (history.orientation_squared_distances,
                            history.worst_orientation_mahalanobis)):
        assert max(squares, default=0.0) == worst * worst
        assert all(not math.isnan(v) and v >= 0.0 for v in squares)
    implied = [0, 0, 0, 0]
    for p, o in window:
        implied[bucket_of_distance(max(float(p), float(o)))] += 1
    assert implied == [history.count_within_1_std, history.count_beyond_1_std,
                       history.count_beyond_3_std, history.count_beyond_5_std]
    assert CalibrationHistory(**_fields(history)) == history


@SETTINGS
@given(pairs_=pairs, max_n=st.integers(min_value=1, max_value=50))
def test_schema_1_and_2_of_a_window_share_every_schema_1_field(pairs_, max_n):
    """Schema 1 (the option) is schema 2 without the squared distances."""
    outcomes = _outcomes(pairs_)
    two = build_calibration_history(outcomes, max_n)
    one = build_calibration_history(outcomes, max_n, schema_version=1)
    assert one.schema_version == 1
    assert (one.position_squared_distances, one.orientation_squared_distances) == ((), ())
    assert dataclasses.replace(
        two, schema_version=1, position_squared_distances=(),
        orientation_squared_distances=()) == one


@SETTINGS
@given(pairs_=pairs, max_n=st.integers(min_value=1, max_value=40),
       level=st.sampled_from(list(SelfAssessmentLevel)),
       name=st.sampled_from([n for n in policy_names()
                             if getattr(POLICIES[n], 'HISTORY_SCHEMA', 1) == 1]))
def test_every_schema_1_policy_answers_the_same_on_both_schemas(pairs_, max_n, level, name):
    """Every schema-1 policy gives the same level and reason on schema 1 and schema 2.

    A policy that reads the squared distances (``HISTORY_SCHEMA = 2``: vec3_scale) answers from
    them on schema 2 by design; on schema 1 it is tested against its fallback.
    """
    outcomes = _outcomes(pairs_)
    policy = make_policy(name)
    raw = _raw(level)
    one = build_calibration_history(outcomes, max_n, schema_version=1)
    two = build_calibration_history(outcomes, max_n)
    a, b = policy.adjust(raw, one), policy.adjust(raw, two)
    assert (a.adjusted_overall_level, a.adjustment_reason, a.adjustment_policy_id) == (
        b.adjusted_overall_level, b.adjustment_reason, b.adjustment_policy_id)
    assert b.calibration_history is two
    following = getattr(policy, 'adjust_following', None)
    if following is not None:
        c, d = following(raw, one, a), following(raw, two, b)
        assert (c.adjusted_overall_level, c.adjustment_reason) == (
            d.adjusted_overall_level, d.adjustment_reason)


def _valid():
    return build_calibration_history(_outcomes([(0.5, 0.2), (4.0, 1.0), (2.0, 6.0)]), 32)


@pytest.mark.parametrize('change, field, code', [
    ({'position_squared_distances': (0.25, 16.0)}, 'position_squared_distances',
     'wrong_length'),
    ({'orientation_squared_distances': (0.04, 1.0, math.nan)},
     'orientation_squared_distances[2]', 'nan'),
    ({'orientation_squared_distances': (0.04, -1.0, 36.0)},
     'orientation_squared_distances[1]', 'negative'),
    ({'position_squared_distances': (0.25, 16.0, 17.0)}, 'position_squared_distances',
     'inconsistent_worst'),
    ({'position_squared_distances': (4.0, 16.0, 4.0)}, 'position_squared_distances',
     'inconsistent_counts'),
    ({'schema_version': 1}, 'position_squared_distances', 'schema_mismatch'),
    ({'schema_version': 3}, 'schema_version', 'unsupported_schema_version'),
])
def test_schema_2_rejects_each_broken_invariant(change, field, code):
    """Each broken schema-2 invariant raises a ContractValueError naming the field and reason."""
    kwargs = dict(_fields(_valid()), **change)
    with pytest.raises(ContractViolation) as info:
        CalibrationHistory(**kwargs)
    assert info.value.field == f'CalibrationHistory.{field}'
    assert info.value.code == code


@pytest.mark.parametrize('junk', ['abc', b'abc', {0.25, 16.0, 4.0}, None, 4.0])
@pytest.mark.parametrize('version', [1, 2])
def test_squared_distances_must_be_a_tuple_or_list(junk, version):
    """A string, a set (no order) or a scalar is not a sequence of squared distances."""
    kwargs = dict(_fields(_valid()), position_squared_distances=junk, schema_version=version,
                  orientation_squared_distances=() if version == 1 else (0.04, 1.0, 36.0))
    with pytest.raises(TypeError) as info:
        CalibrationHistory(**kwargs)
    assert info.value.field == 'CalibrationHistory.position_squared_distances'


def test_schema_2_normalises_a_list_and_ints_to_a_tuple_of_floats():
    """The constructor stores tuples of floats whatever sequence of reals it is given."""
    history = CalibrationHistory(2, 1, 1, 0, 0, 2.0, 1.0, 5, 2, [1, 4], (1.0, 0.25))
    assert history.position_squared_distances == (1.0, 4.0)
    assert all(type(v) is float for v in history.position_squared_distances)


def test_schema_2_infinite_and_overflowing_distances():
    """+inf and a finite distance whose square overflows are both legal: max(d2) is +inf."""
    history = build_calibration_history(_outcomes([(math.inf, 0.0), (1e200, 2.0)]), 32)
    assert history.position_squared_distances == (math.inf, math.inf)
    assert history.worst_position_mahalanobis == math.inf
    assert CalibrationHistory(**_fields(history)) == history
    history = build_calibration_history(_outcomes([(1e200, 0.0)]), 32)
    assert history.worst_position_mahalanobis == 1e200
    assert CalibrationHistory(**_fields(history)) == history


def test_empty_schema_2_history():
    """An empty window gives the empty schema-2 history (no stamp, empty tuples)."""
    assert build_calibration_history([], 4) == CalibrationHistory.empty(2)
    assert CalibrationHistory.empty(2).most_recent_observed_stamp_sim_ns is None


@pytest.mark.parametrize('max_n', [2**31, 2**63 - 1, 2**63, 2**64, 10**30])
def test_build_accepts_any_max_n_with_any_iterable(max_n):
    """Issue 20 (5): a generator, an iterator or a map with a huge max_n is the whole input."""
    outcomes = _outcomes([(0.5, 0.5), (2.0, 0.1), (7.0, 0.0)])
    expected = build_calibration_history(outcomes, 3)
    for make in (list, tuple, lambda o: (x for x in o), iter, lambda o: map(lambda x: x, o)):
        assert build_calibration_history(make(outcomes), max_n) == expected
        assert build_calibration_history(
            make(outcomes), max_n, schema_version=1) == build_calibration_history(
                outcomes, 3, schema_version=1)


@pytest.mark.parametrize('version', [0, 3, True, 2.0, '2'])
def test_build_rejects_an_unknown_schema_version(version):
    """build_calibration_history refuses a schema version other than 1 or 2."""
    with pytest.raises(ContractViolation) as info:
        build_calibration_history([], 3, schema_version=version)
    assert info.value.field == 'build_calibration_history.schema_version'
