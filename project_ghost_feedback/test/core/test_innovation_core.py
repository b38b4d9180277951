# SPDX-License-Identifier: Apache-2.0
"""Innovations -> chi(3) distances (core/innovation.py): the map, the blocks, the refusals."""

import math
import random

import pytest

from project_ghost_feedback.core.feedback.chi_square import chi_survival
from project_ghost_feedback.core.innovation import (
    block_distances,
    chi_to_chi3,
    InnovationOutcome,
    InnovationPairing,
    KIND_ORIENTATION,
    KIND_POSITION,
    whitened_distance,
)

P, OR = KIND_POSITION, KIND_ORIENTATION


@pytest.mark.parametrize('dof', [1, 2, 4, 5, 6])
@pytest.mark.parametrize('distance', [0.01, 0.5, 1.0, 2.0, 5.0, 8.0, 12.0, 20.0])
def test_map_keeps_the_probability(dof, distance):
    """P(chi(m) > d) == P(chi(3) > d3), also far in the tail (relative 1e-12)."""
    d3 = chi_to_chi3(distance, dof)
    assert chi_survival(d3, 3) == pytest.approx(chi_survival(distance, dof), rel=1e-12)


def test_map_is_increasing_identity_at_3_and_finite_far_out():
    assert chi_to_chi3(2.5, 3) == 2.5
    assert chi_to_chi3(math.inf, 1) == math.inf
    values = [chi_to_chi3(d, 1) for d in (30.0, 50.0, 100.0, 1000.0)]
    assert values == sorted(values) and all(math.isfinite(v) for v in values)
    assert values[-1] == pytest.approx(1000.0, rel=1e-4)


def test_honest_innovations_map_onto_chi3():
    """An honest 2-D block: mean d3^2 is 3 and P(d3 > 3) is 0.02929 (Monte Carlo, 4 sigma)."""
    rng = random.Random(7)
    n = 4000
    squares = []
    for _ in range(n):
        d = math.hypot(rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0))
        squares.append(chi_to_chi3(d, 2) ** 2)
    mean = sum(squares) / n
    assert abs(mean - 3.0) < 4.0 * math.sqrt(6.0 / n)
    beyond = sum(x > 9.0 for x in squares) / n
    assert abs(beyond - 0.02929) < 4.0 * math.sqrt(0.02929 * 0.97 / n)


def test_whitening_uses_the_full_covariance():
    s = [4.0, 1.0, 1.0, 2.0]
    e = [1.0, -1.0]
    # e^T S^-1 e with S^-1 = [[2, -1], [-1, 4]] / 7
    assert whitened_distance(e, s) == pytest.approx(math.sqrt((2 + 2 + 4) / 7.0))


def test_blocks_are_judged_apart_and_missing_ones_stay_missing():
    cov = [0.0] * 36
    for i in range(6):
        cov[i * 7] = 4.0
    pos, ori = block_distances([2.0, 0, 0, 0, 0, 2.0], cov, [P, P, P, OR, OR, OR])
    assert pos == pytest.approx(1.0) and ori == pytest.approx(1.0)
    pos, ori = block_distances([3.0], [9.0], [OR])
    assert pos is None and ori == pytest.approx(chi_to_chi3(1.0, 1))


@pytest.mark.parametrize('args, reason', [
    (([], [], []), 'no_components'),
    (([0.0] * 7, [1.0] * 49, [P] * 7), 'too_many_components'),
    (([0.0, 0.0], [1.0, 0.0, 0.0], [P, P]), 'covariance_size'),
    (([0.0, 0.0], [1.0, 0.0, 0.0, 1.0], [P]), 'kinds_size'),
    (([0.0], [1.0], [0]), 'unknown_kind'),
    (([math.nan], [1.0], [P]), 'not_finite'),
    (([0.0], [math.inf], [P]), 'not_finite'),
    (([0.0, 0.0], [1.0, 0.5, 0.4, 1.0], [P, P]), 'not_symmetric'),
    (([0.0, 0.0], [1.0, 2.0, 2.0, 1.0], [P, P]), 'not_positive_definite'),
    (([0.0], [0.0], [P]), 'not_positive_definite'),
])
def test_bad_input_is_refused_by_reason_and_counted(args, reason):
    pairing = InnovationPairing()
    assert pairing.push('gnss', 1, *args) == reason
    assert pairing.refused == {reason: 1} and pairing.accepted == 0


def test_source_rules_layout_stamps_rejected_and_names():
    pairing = InnovationPairing()
    assert pairing.push('gnss', 10, [1.0], [1.0], [P]) is None
    assert pairing.push('gnss', 11, [1.0, 1.0], [1.0, 0, 0, 1.0], [P, P]) == 'layout_changed'
    assert pairing.push('gnss', 9, [1.0], [1.0], [P]) == 'stamp_backwards'
    assert pairing.push('gnss', 12, [1.0], [1.0], [P], rejected_by_filter=True) == \
        'rejected_by_filter'
    assert pairing.push('Bad Name', 12, [1.0], [1.0], [P]) == 'bad_source'
    assert pairing.refused == {'layout_changed': 1, 'stamp_backwards': 1,
                               'rejected_by_filter': 1, 'bad_source': 1}
    assert pairing.accepted == 1


def test_one_block_sources_pair_consecutive_innovations_and_never_mix():
    pairing = InnovationPairing()
    assert pairing.push('a', 1, [1.0, 0.0, 0.0], [1, 0, 0, 0, 1, 0, 0, 0, 1], [P] * 3) is None
    assert pairing.push('b', 2, [2.0, 0.0, 0.0], [1, 0, 0, 0, 1, 0, 0, 0, 1], [P] * 3) is None
    row = pairing.push('a', 3, [0.0, 3.0, 0.0], [1, 0, 0, 0, 1, 0, 0, 0, 1], [P] * 3)
    # A one-block position source's bias evidence (0 in its warm-up) is about position: share 1.
    assert row == InnovationOutcome('a', 1, 3, 1.0, 3.0, (1.0, 0.0, 0.0), (0.0, 3.0, 0.0),
                                    bias_position_share=1.0)
    both = pairing.push('c', 5, [1.0, 2.0], [1.0, 0.0, 0.0, 4.0], [P, OR])
    assert isinstance(both, InnovationOutcome)
    assert both.prediction_stamp_ns == both.observed_stamp_ns == 5
    assert both.position_error == (1.0, 0.0, 0.0) and both.orientation_error == (2.0, 0.0, 0.0)
    assert pairing.outcomes == 2 and pairing.accepted == 4


def test_one_block_outcomes_have_the_law_the_policies_rates_assume():
    """Honest 2-D innovations (correlated S) -> rows of two independent chi(3) distances.

    The policies' stated false-alarm rates are functions of that law: each slot's d^2 has mean 3,
    the slots are uncorrelated, and max(d_p, d_o) > 3 with probability 0.05772 (docs/policies.md).
    Monte Carlo, 4 standard errors.
    """
    rng = random.Random(11)
    s = [2.0, 0.6, 0.6, 0.5]
    chol = [[math.sqrt(2.0), 0.0], [0.6 / math.sqrt(2.0), 0.0]]
    chol[1][1] = math.sqrt(0.5 - chol[1][0] ** 2)
    pairing = InnovationPairing()
    rows = []
    for n in range(8000):
        g = (rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0))
        e = [chol[0][0] * g[0], chol[1][0] * g[0] + chol[1][1] * g[1]]
        row = pairing.push('gnss', n, e, s, [P, P])
        if isinstance(row, InnovationOutcome):
            rows.append((row.position_mahalanobis ** 2, row.orientation_mahalanobis ** 2))
    n = len(rows)
    assert n == 4000
    for slot in (0, 1):
        mean = sum(r[slot] for r in rows) / n
        assert abs(mean - 3.0) < 4.0 * math.sqrt(6.0 / n)
    mp = sum(r[0] for r in rows) / n
    mo = sum(r[1] for r in rows) / n
    cov = sum((r[0] - mp) * (r[1] - mo) for r in rows) / n
    assert abs(cov / 6.0) < 4.0 / math.sqrt(n)
    beyond = sum(max(r) > 9.0 for r in rows) / n
    assert abs(beyond - 0.05772) < 4.0 * math.sqrt(0.05772 * 0.94228 / n)


def test_a_source_whose_time_jumps_back_restarts_out_of_order_is_refused():
    pairing = InnovationPairing(jump_tolerance_ns=1000)
    assert pairing.push('gnss', 10_000, [1.0], [1.0], [P]) is None        # pending
    assert pairing.push('gnss', 9_500, [1.0], [1.0], [P]) == 'stamp_backwards'
    assert pairing.push('gnss', 100, [1.0, 0.0], [1.0, 0, 0, 1.0], [P, OR]) is not None
    assert pairing.source_resets == 1  # forgot the pending one and the old layout
    assert pairing.refused == {'stamp_backwards': 1}
