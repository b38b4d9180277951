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

Pure and stdlib only: the chi-square quantile is :func:`.chi_square.chi_square_quantile`
(regularized incomplete gamma by series / continued fraction, Wilson-Hilferty start, safeguarded
Newton steps), accurate to about 1e-12 relative. The interval assumes i.i.d. Gaussian errors:
correlated or heavy-tailed errors make it too narrow (the estimate itself stays a consistent
moment estimate).
"""

from collections.abc import Iterable
from dataclasses import dataclass
import math

from ..validation import require_instance, value_error
from .chi_square import chi_square_cdf, chi_square_quantile
from .types import CalibrationHistory, HISTORY_SCHEMA_SQUARED_DISTANCES

DOF_PER_VEC3 = 3
"""Degrees of freedom of one vec3 distance (a 3-vector error)."""

CONFIDENCE = 0.95
"""Coverage of :attr:`OverconfidenceEstimate.low` .. :attr:`OverconfidenceEstimate.high`."""


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

    def __str__(self) -> str:
        """Return ``'1.02 [0.85, 1.25]'`` (two decimals; two significant digits below 0.1)."""
        return f'{_text(self.k_hat)} [{_text(self.low)}, {_text(self.high)}]'

    def as_dict(self) -> dict[str, float | str | int]:
        """Return a JSON-ready dict (``+inf`` as the string ``'inf'``)."""
        return {name: _json_float(getattr(self, name)) for name in ('k_hat', 'low', 'high')} | {
            'outcomes': self.outcomes}


def _text(value: float) -> str:
    return f'{value:.2f}' if value >= 0.1 or value == 0.0 else f'{value:.2g}'


def _json_float(value: float) -> float | str:
    return value if math.isfinite(value) else 'inf'


chi2_cdf = chi_square_cdf
"""The chi-square distribution function (:func:`.chi_square.chi_square_cdf`)."""

chi2_quantile = chi_square_quantile
"""The chi-square quantile (:func:`.chi_square.chi_square_quantile`), ~1e-12 relative."""


def estimate_from_squared_distances(
        squared_distances: Iterable[float], dof: int = DOF_PER_VEC3,
) -> OverconfidenceEstimate | None:
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
    return estimate_from_sum(total, n, dof)


def estimate_from_sum(total: float, n: int, dof: int = DOF_PER_VEC3) -> OverconfidenceEstimate:
    """Return the OverconfidenceEstimate of ``n`` >= 1 squared distances summing to ``total``.

    ``total`` is ``>= 0`` (``+inf`` legal); a run's pooled estimate accumulates it outcome by
    outcome (:class:`~.episodes.RunOverconfidence`).
    """
    if math.isinf(total):
        return OverconfidenceEstimate(math.inf, math.inf, math.inf, n)
    degrees = n * dof
    tail = (1.0 - CONFIDENCE) / 2.0
    return OverconfidenceEstimate(
        k_hat=math.sqrt(total / degrees),
        low=math.sqrt(total / chi2_quantile(1.0 - tail, degrees)),
        high=math.sqrt(total / chi2_quantile(tail, degrees)),
        outcomes=n)


def estimate_overconfidence(
        history: CalibrationHistory,
) -> dict[str, OverconfidenceEstimate | None] | None:
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


def format_overconfidence(history: object) -> dict[str, str]:
    """Return ``{'position': '1.02 [0.85, 1.25]', ...}`` for diagnostics ('' when no estimate)."""
    estimates = None
    if isinstance(history, CalibrationHistory):
        estimates = estimate_overconfidence(history)
    if estimates is None:
        return {'position': '', 'orientation': ''}
    return {name: '' if value is None else str(value) for name, value in estimates.items()}


def overconfidence_as_dict(
        history: CalibrationHistory,
) -> dict[str, dict[str, float | str | int] | None] | None:
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
    'estimate_from_sum',
    'estimate_overconfidence',
    'format_overconfidence',
    'OverconfidenceEstimate',
    'overconfidence_as_dict',
]
