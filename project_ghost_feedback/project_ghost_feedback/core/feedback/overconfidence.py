# SPDX-License-Identifier: Apache-2.0
"""How overconfident is each vec3: a continuous estimate from a schema-2 CalibrationHistory.

ADR-0026a. If the estimator's covariance is right up to a scale ``k`` (the true errors are ``k``
times larger than claimed), each squared unsquared Mahalanobis distance ``d^2`` of a 3-vector is
``k^2`` times a chi-square with 3 degrees of freedom, so over a window of ``n`` i.i.d. outcomes
``sum(d^2) ~ k^2 chi2(3 n)``. Hence:

- the estimate ``k_hat = sqrt(mean(d^2) / 3)`` (1.0 when calibrated, 2.0 when the errors are
  twice what the covariance claims, below 1 when underconfident);
- the exact 95% confidence interval ``[sqrt(S / q(0.975)), sqrt(S / q(0.025))]`` with
  ``S = sum(d^2)`` and ``q`` the chi-square quantile with ``3 n`` degrees of freedom.

Pure and stdlib only: the chi-square quantile is computed here (regularized incomplete gamma by
series / continued fraction, Wilson-Hilferty start, safeguarded Newton steps), accurate to about
1e-12 relative. The interval assumes i.i.d. Gaussian errors: correlated or heavy-tailed errors
make it too narrow (the estimate itself stays a consistent moment estimate).
"""

from dataclasses import dataclass
import math

from .._validation import require_instance, value_error
from .types import CalibrationHistory, HISTORY_SCHEMA_SQUARED_DISTANCES

DOF_PER_VEC3 = 3
"""Degrees of freedom of one vec3 distance (a 3-vector error)."""

CONFIDENCE = 0.95
"""Coverage of :attr:`OverconfidenceEstimate.low` .. :attr:`OverconfidenceEstimate.high`."""

_EPSILON = 1e-15
_TINY = 1e-300
_MAX_ITERATIONS = 10_000


@dataclass(frozen=True, slots=True)
class OverconfidenceEstimate:
    """How overconfident one vec3 is: ``k_hat`` and its 95% interval ``[low, high]``.

    ``k_hat = sqrt(mean(d^2) / 3)``; ``+inf`` (and the interval ``[+inf, +inf]``) when a distance
    of the window is ``+inf`` or the squares overflow. ``outcomes`` is the window size ``n``.
    """

    k_hat: float
    low: float
    high: float
    outcomes: int

    def __str__(self):
        """Return ``'1.02 [0.85, 1.25]'`` (two decimals; two significant digits below 0.1)."""
        return f'{_text(self.k_hat)} [{_text(self.low)}, {_text(self.high)}]'

    def as_dict(self):
        """Return a JSON-ready dict (``+inf`` as the string ``'inf'``)."""
        return {name: _json_float(getattr(self, name)) for name in ('k_hat', 'low', 'high')} | {
            'outcomes': self.outcomes}


def _text(value):
    return f'{value:.2f}' if value >= 0.1 or value == 0.0 else f'{value:.2g}'


def _json_float(value):
    return value if math.isfinite(value) else 'inf'


def _regularized_gammas(a, x):
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


def chi2_cdf(x, dof):
    """Return the chi-square distribution function with ``dof`` degrees of freedom at ``x``."""
    return _regularized_gammas(dof / 2.0, x / 2.0)[0]


def chi2_quantile(p, dof):
    """Return ``x`` with ``chi2_cdf(x, dof) == p`` (0 < p < 1, dof > 0), about 1e-12 relative.

    Starts from Wilson-Hilferty (or the small-``x`` asymptote ``P ~ (x/2)^a / Gamma(a + 1)``,
    whichever is closer), then takes Newton steps on the regularized gamma (on ``P - p`` below
    the median, on ``(1 - p) - Q`` above it, so neither tail cancels), kept inside a bisection
    bracket so that they cannot diverge.
    """
    if type(p) not in (float, int) or not 0.0 < p < 1.0:
        raise value_error('chi2_quantile', 'p', 'out_of_range', f'must be in (0, 1), got {p!r}')
    if type(dof) not in (float, int) or not 0.0 < dof < math.inf:
        raise value_error('chi2_quantile', 'dof', 'out_of_range', f'must be > 0, got {dof!r}')
    a = dof / 2.0
    lower_tail = p <= 0.5
    target = p if lower_tail else 1.0 - p  # 1 - p is exact for p in [0.5, 1)

    def miss(x):
        """Return the signed error: > 0 when x is above the quantile."""
        lower, upper = _regularized_gammas(a, x / 2.0)
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


def _normal_quantile(p):
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


def estimate_from_squared_distances(squared_distances, dof=DOF_PER_VEC3):
    """Return the OverconfidenceEstimate of one vec3 from its squared distances, None if empty."""
    values = tuple(squared_distances)
    n = len(values)
    if n == 0:
        return None
    try:
        total = math.fsum(values)  # exact; +inf if any value is +inf, NaN if any is NaN
    except (OverflowError, ValueError):  # a finite overflow; +inf together with -inf
        total = math.inf if min(values) >= 0.0 else math.nan
    if total != total or min(values) < 0.0:
        raise value_error('estimate_overconfidence', 'squared_distances', 'invalid',
                          'must be >= 0 and not NaN')
    if math.isinf(total):
        return OverconfidenceEstimate(math.inf, math.inf, math.inf, n)
    degrees = n * dof
    tail = (1.0 - CONFIDENCE) / 2.0
    return OverconfidenceEstimate(
        k_hat=math.sqrt(total / degrees),
        low=math.sqrt(total / chi2_quantile(1.0 - tail, degrees)),
        high=math.sqrt(total / chi2_quantile(tail, degrees)),
        outcomes=n)


def estimate_overconfidence(history):
    """Return ``{'position': estimate, 'orientation': estimate}`` for a schema-2 history.

    Each value is an :class:`OverconfidenceEstimate`, or None for an empty window. A schema-1
    history carries no squared distances: the result is None (not an estimate of zero outcomes).
    TypeError when ``history`` is not a CalibrationHistory.
    """
    require_instance('estimate_overconfidence', 'history', history, CalibrationHistory)
    if history.schema_version != HISTORY_SCHEMA_SQUARED_DISTANCES:
        return None
    return {
        'position': estimate_from_squared_distances(history.position_squared_distances),
        'orientation': estimate_from_squared_distances(history.orientation_squared_distances),
    }


def format_overconfidence(history):
    """Return ``{'position': '1.02 [0.85, 1.25]', ...}`` for diagnostics ('' when no estimate)."""
    estimates = None
    if isinstance(history, CalibrationHistory):
        estimates = estimate_overconfidence(history)
    if estimates is None:
        return {'position': '', 'orientation': ''}
    return {name: '' if value is None else str(value) for name, value in estimates.items()}


def overconfidence_as_dict(history):
    """Return a JSON-ready dict of :func:`estimate_overconfidence` (None for schema 1)."""
    estimates = estimate_overconfidence(history)
    if estimates is None:
        return None
    return {name: None if value is None else value.as_dict() for name, value in estimates.items()}


__all__ = [
    'chi2_cdf',
    'chi2_quantile',
    'CONFIDENCE',
    'DOF_PER_VEC3',
    'estimate_from_squared_distances',
    'estimate_overconfidence',
    'format_overconfidence',
    'OverconfidenceEstimate',
    'overconfidence_as_dict',
]
