# SPDX-License-Identifier: Apache-2.0
"""The chi-square distribution, defined once for the policies and estimates (pure, stdlib only).

Everything is the regularized incomplete gamma pair ``P(a, x)``, ``Q(a, x) = 1 - P(a, x)`` at
``a = dof / 2``, ``x = X / 2`` (:func:`regularized_gammas`): the power series gives ``P`` for
``x < a + 1`` and the continued fraction (modified Lentz) ``Q`` otherwise, the other one being
the complement, so the smaller of the two is always computed directly and keeps its relative
precision in the tails. On top of it:

- :func:`chi_square_cdf` / :func:`chi_square_survival`: ``P(X <= x)`` / ``P(X > x)``;
- :func:`chi_survival`: ``P(sqrt(X) > t)`` for an unsquared distance ``t`` (a Mahalanobis
  distance; the chi distribution), i.e. ``chi_square_survival(t**2, dof)``;
- :func:`chi_square_quantile`: the inverse of the CDF (Wilson-Hilferty or small-``x`` start,
  safeguarded Newton steps on ``log X``), about 1e-12 relative or better.

No numpy or scipy (the core is stdlib only); ``test_chi_square.py`` compares with scipy.
"""

import functools
import math

from ..validation import value_error

_EPSILON = 1e-15
_TINY = 1e-300
_MAX_ITERATIONS = 10_000


def regularized_gammas(a: float, x: float) -> tuple[float, float]:
    """Return ``(P(a, x), Q(a, x))``, the regularized incomplete gammas (a > 0, x >= 0).

    The series gives P for ``x < a + 1``, the continued fraction Q otherwise; the other one is
    its complement, so the small one of the two is always computed directly (no cancellation).
    """
    if x <= 0.0:
        return 0.0, 1.0
    if math.isinf(x):
        return 1.0, 0.0
    log_prefactor = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        # Series: P = x^a e^-x / Gamma(a + 1) * sum x^n / ((a + 1) ... (a + n)).
        term = total = 1.0 / a
        denominator = a
        for _ in range(_MAX_ITERATIONS):
            denominator += 1.0
            term *= x / denominator
            total += term
            if abs(term) < abs(total) * _EPSILON:
                break
        lower = min(1.0, total * math.exp(log_prefactor))
        return lower, 1.0 - lower
    # Continued fraction for Q (modified Lentz).
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITERATIONS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _TINY:
            d = _TINY
        c = b + an / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPSILON:
            break
    upper = max(0.0, min(1.0, math.exp(log_prefactor) * h))
    return 1.0 - upper, upper


def chi_square_cdf(x: float, dof: float) -> float:
    """Return ``P(X <= x)`` for ``X`` chi-square with ``dof > 0`` degrees of freedom."""
    return regularized_gammas(dof / 2.0, x / 2.0)[0]


def chi_square_survival(x: float, dof: float) -> float:
    """Return ``P(X > x)`` for ``X`` chi-square with ``dof > 0`` degrees of freedom."""
    return regularized_gammas(dof / 2.0, x / 2.0)[1]


def chi_survival(t: float, dof: float) -> float:
    """Return ``P(d > t)`` for ``d = sqrt(X)``, ``X`` chi-square with ``dof`` degrees of freedom.

    ``t`` is an unsquared distance (``+inf`` gives 0, ``t <= 0`` gives 1, NaN gives NaN): the
    chi-square survival at ``t**2``. For ``dof = 3`` it is
    ``erfc(t / sqrt(2)) + sqrt(2 / pi) * t * exp(-t**2 / 2)`` (Abramowitz & Stegun 26.4.5).
    """
    if t != t:
        return math.nan
    if t <= 0.0:
        return 1.0
    return chi_square_survival(t * t, dof)


def chi_square_quantile(p: float, dof: float) -> float:
    """Return ``x`` with ``chi_square_cdf(x, dof) == p`` (0 < p < 1, dof > 0), ~1e-12 relative.

    Starts from Wilson-Hilferty (or the small-``x`` asymptote ``P ~ (x/2)^a / Gamma(a + 1)``,
    whichever is closer), then takes Newton steps on the regularized gamma (on ``P - p`` below
    the median, on ``(1 - p) - Q`` above it, so neither tail cancels), kept inside a bisection
    bracket so that they cannot diverge. ContractValueError for ``p`` or ``dof`` out of range
    (or not an int or float). Cached (the thresholds of a policy ask for the same few).
    """
    if type(p) not in (float, int) or not 0.0 < p < 1.0:
        raise value_error('chi2_quantile', 'p', 'out_of_range', f'must be in (0, 1), got {p!r}')
    if type(dof) not in (float, int) or not 0.0 < dof < math.inf:
        raise value_error('chi2_quantile', 'dof', 'out_of_range', f'must be > 0, got {dof!r}')
    return _quantile(p, dof)


@functools.lru_cache(maxsize=8192, typed=True)
def _quantile(p: float, dof: float) -> float:
    """Return :func:`chi_square_quantile` for arguments already checked."""
    a = dof / 2.0
    lower_tail = p <= 0.5
    target = p if lower_tail else 1.0 - p  # 1 - p is exact for p in [0.5, 1)

    def miss(x: float) -> float:
        """Return the signed error: > 0 when x is above the quantile."""
        lower, upper = regularized_gammas(a, x / 2.0)
        return lower - target if lower_tail else target - upper

    # Work on u = log(x): the quantile of a small dof and a small p can be as small as 1e-300.
    z = _normal_quantile(p)
    h = 2.0 / (9.0 * dof)
    starts = [math.log(2.0) + (math.log(p) + math.lgamma(a + 1.0)) / a]
    wilson_hilferty = dof * (1.0 - h + z * math.sqrt(h)) ** 3
    if wilson_hilferty > 0.0:
        starts.append(math.log(wilson_hilferty))
    u = min((abs(miss(math.exp(v))), v) for v in starts if -700.0 < v < 700.0)[1]
    low, high = -745.0, 709.0
    log_norm = -a * math.log(2.0) - math.lgamma(a)
    for _ in range(400):
        x = math.exp(u)
        error = miss(x)
        if error == 0.0:
            return x
        if error > 0.0:
            high = u
        else:
            low = u
        # d miss / d u = density(x) * x.
        slope = math.exp(log_norm + a * u - x / 2.0)
        candidate = u - error / slope if slope > 0.0 else math.nan
        if not low < candidate < high:
            candidate = (low + high) / 2.0
        if abs(candidate - u) <= 1e-15 * max(1.0, abs(u)):
            return math.exp(candidate)
        u = candidate
    return math.exp(u)


def _normal_quantile(p: float) -> float:
    """Return the standard normal quantile (Acklam's rational approximation, ~1e-9)."""
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
         1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549671010139365e+00, 4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
         3.754408661907416e+00)
    if p < 0.02425:
        q = math.sqrt(-2.0 * math.log(p))
        return ((((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
                / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0))
    if p > 1.0 - 0.02425:
        return -_normal_quantile(1.0 - p)
    q = p - 0.5
    r = q * q
    return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0))


__all__ = [
    'chi_square_cdf',
    'chi_square_quantile',
    'chi_square_survival',
    'chi_survival',
    'regularized_gammas',
]


_THREE = 3
_MAX_MAPPED_DOF = 6
"""Largest number of components chi_to_chi3 maps (an innovation's 1..6)."""


def _log_chi_square_survival(x: float, dof: int) -> float:
    """Return ``log P(X > x)``, ``X`` chi-square(``dof``); asymptotic where it underflows."""
    q = chi_square_survival(x, dof)
    if q > 1e-280:
        return math.log(q)
    a = dof / 2.0
    y = x / 2.0
    # Q(a, y) ~ y^(a-1) e^-y / Gamma(a) * (1 + (a-1)/y + (a-1)(a-2)/y^2 + ...), y >= 140 here.
    series = 1.0 + (a - 1.0) / y + (a - 1.0) * (a - 2.0) / (y * y)
    return (a - 1.0) * math.log(y) - y - math.lgamma(a) + math.log(series)


def _chi_square_quantile_from_log_survival(log_q: float, dof: int) -> float:
    """Return ``x`` with ``log P(X > x) == log_q`` (``log_q < log 0.5``), Newton on ``log x``."""
    a = dof / 2.0
    # Start from the asymptote x/2 ~ -log_q + (a-1) log(x/2) - lgamma(a) (two fixed-point steps).
    y = max(1.0, -log_q)
    for _ in range(3):
        y = max(1.0, -log_q + (a - 1.0) * math.log(y) - math.lgamma(a))
    u = math.log(2.0 * y)
    for _ in range(200):
        x = math.exp(u)
        miss = _log_chi_square_survival(x, dof) - log_q  # decreasing in x
        # d log Q / d u = -density(x) x / Q; density x = exp(a log(x/2) - x/2 - lgamma(a)).
        log_slope = a * math.log(x / 2.0) - x / 2.0 - math.lgamma(a) - _log_chi_square_survival(
            x, dof)
        step = miss / math.exp(log_slope)
        u_next = u + step
        if abs(u_next - u) <= 1e-15 * max(1.0, abs(u)):
            return math.exp(u_next)
        u = u_next
    return math.exp(u)


def chi_to_chi(distance: float, from_dof: int, to_dof: int) -> float:
    """Return ``F_to^-1(F_from(distance))``: ``chi(from_dof)`` mapped onto ``chi(to_dof)``.

    The probability integral transform of an unsquared distance; increasing, so it can be
    undone. ``distance >= 0`` (``+inf`` maps to ``+inf``), both degrees in 1..6. Below the median of
    ``chi(from_dof)`` the quantile is taken from the cdf, above it from the survival function (in
    logs where it underflows), so the tail keeps its relative precision.
    """
    for name, dof in (('from_dof', from_dof), ('to_dof', to_dof)):
        if type(dof) is not int or not 1 <= dof <= _MAX_MAPPED_DOF:
            raise ValueError(f'{name} must be an int in 1..{_MAX_MAPPED_DOF}, got {dof!r}')
    if not distance >= 0.0:
        raise ValueError(f'distance must be >= 0, got {distance!r}')
    if from_dof == to_dof or distance == 0.0 or distance == math.inf:
        return distance
    x = distance * distance
    lower, upper = regularized_gammas(from_dof / 2.0, x / 2.0)
    if lower <= 0.5:
        if lower <= 0.0:  # underflow far in the lower tail: 0 stays the smallest value
            return 0.0
        return math.sqrt(chi_square_quantile(lower, to_dof))
    if upper > 1e-3:  # 1 - upper is exact to ~1e-13 relative of upper here
        return math.sqrt(chi_square_quantile(1.0 - upper, to_dof))
    log_q = math.log(upper) if upper >= 1e-280 else _log_chi_square_survival(x, from_dof)
    return math.sqrt(_chi_square_quantile_from_log_survival(log_q, to_dof))


def chi_to_chi3(distance: float, dof: int) -> float:
    """Return ``F3^-1(F_dof(distance))``: an unsquared ``chi(dof)`` distance mapped onto ``chi(3)``.

    :func:`chi_to_chi` onto 3 degrees: what an outcome source publishes for a vec3 that keeps
    ``dof`` components, so that an honest source's distances have the law the policies assume.
    """
    return chi_to_chi(distance, dof, _THREE)


def chi3_to_chi(distance: float, dof: int) -> float:
    """Return ``F_dof^-1(F3(distance))``: undo :func:`chi_to_chi3` (to rounding), exactly.

    A ``k``-times overconfident source's mapped distance, mapped back, is ``k`` times a
    ``chi(dof)`` again: what an unbiased estimate of ``k`` needs (the map itself is not
    scale-equivariant).
    """
    return chi_to_chi(distance, _THREE, dof)
