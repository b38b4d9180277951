# SPDX-License-Identifier: Apache-2.0
"""The one chi-square definition (core/feedback/chi_square.py) against scipy and table values.

scipy is a test oracle only (the core is stdlib only); without it the table values still run.
"""

import ast
import math
import pathlib

from project_ghost_feedback.core.feedback import calibration_math, overconfidence
from project_ghost_feedback.core.feedback import vec3_scale_policy
from project_ghost_feedback.core.feedback.chi_square import (
    chi_square_cdf,
    chi_square_quantile,
    chi_square_survival,
    chi_survival,
    regularized_gammas,
)
import pytest

CORE = pathlib.Path(__file__).resolve().parents[2] / 'project_ghost_feedback' / 'core'
DOFS = (0.5, 1, 2, 3, 4, 5, 6, 9, 12, 30, 96, 192, 384, 768)
XS = (1e-6, 1e-3, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0,
      1000.0)
PROBABILITIES = (1e-12, 1e-9, 1e-6, 1e-3, 0.025, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.975,
                 0.99, 0.999, 1 - 1e-6, 1 - 1e-9)

# (x, dof, P(X > x)) from chi-square tables (NIST/SEMATECH e-Handbook 1.3.6.7.4), and the
# closed forms of 2 dof (exp(-x/2)) and of the chi distribution with 3 dof at t = 3 and 5.
# (x, dof, P(X > x), relative tolerance)
_TABLE, _CLOSED = 2e-6, 1e-13
_SURVIVAL_TABLE = [
    (3.841459, 1, 0.05, _TABLE), (6.634897, 1, 0.01, _TABLE), (7.814728, 3, 0.05, _TABLE),
    (11.34487, 3, 0.01, _TABLE), (18.30704, 10, 0.05, _TABLE), (37.56623, 20, 0.01, _TABLE),
    (4.0, 2, math.exp(-2.0), _CLOSED), (50.0, 2, math.exp(-25.0), _CLOSED),
    (9.0, 3, math.erfc(3.0 / math.sqrt(2.0)) + math.sqrt(2.0 / math.pi) * 3.0 * math.exp(-4.5),
     _CLOSED),
    (25.0, 3, math.erfc(5.0 / math.sqrt(2.0)) + math.sqrt(2.0 / math.pi) * 5.0 * math.exp(-12.5),
     _CLOSED),
]


@pytest.mark.parametrize('x, dof, survival, rel', _SURVIVAL_TABLE)
def test_survival_matches_table_values(x, dof, survival, rel):
    """Survival and CDF equal the table values (7 digits; the closed forms to 1e-13)."""
    assert chi_square_survival(x, dof) == pytest.approx(survival, rel=rel)
    assert chi_square_cdf(x, dof) == pytest.approx(1.0 - survival, rel=rel)
    assert chi_survival(math.sqrt(x), dof) == pytest.approx(survival, rel=max(rel, 1e-12))


def test_cdf_and_survival_match_scipy_to_1e_12():
    """Relative agreement with scipy over a grid of dof and x, in both tails."""
    stats = pytest.importorskip('scipy.stats')
    for dof in DOFS:
        for x in XS:
            cdf, survival = stats.chi2.cdf(x, dof), stats.chi2.sf(x, dof)
            if cdf > 1e-290:
                assert chi_square_cdf(x, dof) == pytest.approx(cdf, rel=1e-12), (x, dof)
            if survival > 1e-290:
                assert chi_square_survival(x, dof) == pytest.approx(survival, rel=1e-12), (x, dof)


def test_chi_survival_matches_scipy_to_1e_12():
    """The unsquared (Mahalanobis distance) form is the survival at t**2."""
    stats = pytest.importorskip('scipy.stats')
    for dof in range(1, 12):
        for t in (0.01, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 20.0):
            assert chi_survival(t, dof) == pytest.approx(stats.chi2.sf(t * t, dof), rel=1e-12)


def test_quantile_matches_scipy_to_1e_11():
    """Quantiles over the grid of dof (small, fractional, up to 300000) and probabilities."""
    stats = pytest.importorskip('scipy.stats')
    for dof in DOFS + (0.1, 2.5, 3000, 300_000):
        for p in PROBABILITIES:
            assert chi_square_quantile(p, dof) == pytest.approx(
                stats.chi2.ppf(p, dof), rel=1e-11), (p, dof)


def test_quantile_inverts_cdf_and_survival():
    """The tail on the side of p is recovered to about 1e-12 relative."""
    for dof in DOFS:
        for p in PROBABILITIES:
            x = chi_square_quantile(p, dof)
            if p <= 0.5:
                assert chi_square_cdf(x, dof) == pytest.approx(p, rel=1e-11)
            else:
                assert chi_square_survival(x, dof) == pytest.approx(1.0 - p, rel=1e-9)


def test_edges():
    """Edges: x <= 0, x = +inf, t <= 0, t = +inf, a NaN distance."""
    assert regularized_gammas(1.5, 0.0) == (0.0, 1.0)
    assert regularized_gammas(1.5, math.inf) == (1.0, 0.0)
    assert chi_square_cdf(0.0, 3) == 0.0 and chi_square_survival(0.0, 3) == 1.0
    assert chi_square_cdf(math.inf, 3) == 1.0 and chi_square_survival(math.inf, 3) == 0.0
    assert chi_survival(0.0, 3) == 1.0 and chi_survival(-1.0, 3) == 1.0
    assert chi_survival(math.inf, 3) == 0.0
    assert math.isnan(chi_survival(math.nan, 3))


@pytest.mark.parametrize('p, dof', [(0.0, 3), (1.0, 3), (math.nan, 3), (0.5, 0), (0.5, -1),
                                    (0.5, math.inf), ('0.5', 3), (0.5, True), ([0.5], 3)])
def test_quantile_rejects_bad_arguments(p, dof):
    """ContractValueError (a ValueError) before the cache sees the arguments."""
    chi_square_quantile(0.5, 1)  # a cached int dof must not answer for dof=True
    with pytest.raises(ValueError):
        chi_square_quantile(p, dof)


def test_one_definition():
    """The policies and the estimate use these functions; no other core module defines one."""
    assert overconfidence.chi2_quantile is chi_square_quantile
    assert overconfidence.chi2_cdf is chi_square_cdf
    assert vec3_scale_policy.chi_square_quantile is chi_square_quantile
    assert vec3_scale_policy.chi_survival is chi_survival
    assert calibration_math.chi_survival is chi_survival
    defined = []
    for path in sorted(CORE.rglob('*.py')):
        if path.name == 'chi_square.py':
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.FunctionDef) and (
                    'chi' in node.name.lower() or 'gamma' in node.name.lower()):
                defined.append(f'{path.name}:{node.name}')
    assert defined == []
