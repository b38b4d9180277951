# SPDX-License-Identifier: Apache-2.0
"""The continuous overconfidence estimate (ADR-0026a): chi-square quantiles and k_hat intervals.

Quantiles are checked against published table values (hard-coded, 6+ significant digits) and,
when scipy is installed, against ``scipy.stats.chi2.ppf`` as an independent oracle.
"""

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from project_ghost_feedback.core.feedback import (
    build_calibration_history,
    chi2_quantile,
    CalibrationHistory,
    estimate_overconfidence,
    format_overconfidence,
    overconfidence_as_dict,
)
from project_ghost_feedback.core.feedback.overconfidence import (
    chi2_cdf,
    estimate_from_squared_distances,
)
from support.contracts import zero_error_outcomes
import pytest

# (p, dof, quantile): chi-square table values (NIST/SEMATECH e-Handbook 1.3.6.7.4, 7 digits);
# dof 96 (a full window of 32 x 3) from scipy.stats.chi2.ppf, written down once.
_TABLE = [
    (0.95, 1, 3.841459), (0.975, 1, 5.023886), (0.025, 1, 0.000982069),
    (0.95, 3, 7.814728), (0.975, 3, 9.348404), (0.025, 3, 0.2157953), (0.05, 3, 0.3518463),
    (0.975, 10, 20.48318), (0.025, 10, 3.246973), (0.99, 20, 37.56623),
    (0.975, 96, 125.0001), (0.025, 96, 70.78282), (0.5, 2, 1.386294),
]


@pytest.mark.parametrize('p, dof, expected', _TABLE)
def test_chi2_quantile_matches_table_values(p, dof, expected):
    """Quantiles equal the table values to the table's precision."""
    assert chi2_quantile(p, dof) == pytest.approx(expected, rel=2e-6)


def test_chi2_quantile_matches_scipy_to_1e_9():
    """Against scipy (test oracle only) over tails, the median and small and large dof."""
    stats = pytest.importorskip('scipy.stats')
    for p in (1e-12, 1e-6, 0.001, 0.025, 0.05, 0.3, 0.5, 0.7, 0.95, 0.975, 0.999, 1 - 1e-10):
        for dof in (0.1, 0.5, 1, 2, 3, 6, 9, 96, 3000, 300_000):
            assert chi2_quantile(p, dof) == pytest.approx(stats.chi2.ppf(p, dof), rel=1e-9)


@settings(deadline=None, max_examples=200, database=None)
@given(p=st.floats(min_value=1e-9, max_value=1 - 1e-9),
       dof=st.integers(min_value=1, max_value=3000))
def test_chi2_quantile_inverts_the_cdf(p, dof):
    """The CDF at chi2_quantile(p) is p (round trip through an independent direction)."""
    assert chi2_cdf(chi2_quantile(p, dof), dof) == pytest.approx(p, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize('p, dof', [(0.0, 3), (1.0, 3), (-0.1, 3), (math.nan, 3), (0.5, 0),
                                    (0.5, math.inf), ('0.5', 3)])
def test_chi2_quantile_rejects_bad_arguments(p, dof):
    """The probability must be in (0, 1) and the degrees of freedom > 0."""
    with pytest.raises(ValueError):
        chi2_quantile(p, dof)


def _history(position, orientation):
    outcomes = zero_error_outcomes(zip(position, orientation))
    return build_calibration_history(outcomes, max(1, len(outcomes)))


def test_estimate_is_sqrt_mean_square_over_3_with_the_chi2_interval():
    """k_hat = sqrt(sum d2 / 3n); the interval is sqrt(S / q(0.975)) .. sqrt(S / q(0.025))."""
    position = [1.0, 2.0, 3.0, 0.5]
    history = _history(position, [0.0] * 4)
    estimates = estimate_overconfidence(history)
    total = sum(d * d for d in position)
    k_hat = math.sqrt(total / 12)
    assert estimates['position'].k_hat == pytest.approx(k_hat, rel=1e-15)
    # Table: chi2(12) 2.5% = 4.403789, 97.5% = 23.33666.
    assert estimates['position'].low == pytest.approx(math.sqrt(total / 23.33666), rel=1e-6)
    assert estimates['position'].high == pytest.approx(math.sqrt(total / 4.403789), rel=1e-6)
    assert estimates['position'].outcomes == 4
    assert estimates['orientation'].k_hat == 0.0
    assert estimates['orientation'].low == estimates['orientation'].high == 0.0


def test_estimate_covers_the_true_scale_about_95_percent():
    """With Gaussian errors scaled by k, the interval covers k in about 95% of windows."""
    rng = random.Random(20)
    for k in (0.5, 1.0, 3.0):
        covered = 0
        trials = 2000
        for _ in range(trials):
            squares = [sum((k * rng.gauss(0.0, 1.0)) ** 2 for _ in range(3)) for _ in range(32)]
            estimate = estimate_from_squared_distances(squares)
            covered += estimate.low <= k <= estimate.high
        assert abs(covered / trials - 0.95) < 0.02  # binomial s.e. ~0.005


def test_infinite_distance_gives_infinite_estimate_and_empty_gives_none():
    """+inf (or an overflowing square) => +inf; an empty window => None; schema 1 => None."""
    estimates = estimate_overconfidence(_history([0.5, math.inf], [1e200, 0.1]))
    for name in ('position', 'orientation'):
        value = estimates[name]
        assert (value.k_hat, value.low, value.high) == (math.inf, math.inf, math.inf)
    assert estimate_overconfidence(CalibrationHistory.empty(2)) == {
        'position': None, 'orientation': None}
    assert estimate_overconfidence(CalibrationHistory.empty()) is None
    assert format_overconfidence(CalibrationHistory.empty()) == {
        'position': '', 'orientation': ''}
    assert overconfidence_as_dict(_history([math.inf], [1.0]))['position'] == {
        'k_hat': 'inf', 'low': 'inf', 'high': 'inf', 'outcomes': 1}


def test_format_is_short_and_readable():
    """The diagnostics text reads 'k [low, high]' with three significant places."""
    text = format_overconfidence(_history([math.sqrt(3.0)] * 32, [math.sqrt(12.0)] * 32))
    assert text['position'] == '1.00 [0.88, 1.16]'
    assert text['orientation'] == '2.00 [1.75, 2.33]'
    estimate = estimate_from_squared_distances([3e-4] * 32)
    assert str(estimate) == '0.01 [0.0088, 0.012]'


def test_estimate_rejects_a_non_history():
    """estimate_overconfidence takes a CalibrationHistory only."""
    with pytest.raises(TypeError):
        estimate_overconfidence({'position_squared_distances': (1.0,)})
