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

A vec3 whose source keeps ``m < 3`` error components (a planar estimator's position, ``m = 2``;
its yaw, ``m = 1``) publishes its ``chi(m)`` distance mapped onto ``chi(3)``
(:func:`.chi_square.chi_to_chi3`: the policies then see the law they assume). That map is not
scale-equivariant, so an estimate read from the mapped values is biased (a true 3 reads about
2.6 for ``m = 2``). Given the vec3's ``components`` (``VEC3_COMPONENTS``, default 3 each), every
function here maps the distances back (:func:`.chi_square.chi3_to_chi`) and estimates with ``m``
degrees per outcome: unbiased, with the exact interval of ``chi2(m n)``.

Pure and stdlib only: the chi-square quantile is :func:`.chi_square.chi_square_quantile`
(regularized incomplete gamma by series / continued fraction, Wilson-Hilferty start, safeguarded
Newton steps), accurate to about 1e-12 relative. The interval assumes i.i.d. Gaussian errors:
correlated or heavy-tailed errors make it too narrow (the estimate itself stays a consistent
moment estimate).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
import functools
import math

from ..validation import require_instance, value_error
from .chi_square import chi3_to_chi, chi_square_cdf, chi_square_quantile
from .types import CalibrationHistory, HISTORY_SCHEMA_SQUARED_DISTANCES

DOF_PER_VEC3 = 3
"""Degrees of freedom of one vec3 distance (a 3-vector error)."""

VEC3_COMPONENTS = (DOF_PER_VEC3, DOF_PER_VEC3)
"""Error components of (position, orientation) when the source keeps every axis."""

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


def check_components(owner: str, components: object) -> tuple[int, int]:
    """Return ``components`` as ``(position, orientation)``, each an int in 1..3 (ValueError)."""
    if (not isinstance(components, Sequence) or len(components) != 2
            or any(type(m) is not int or not 1 <= m <= DOF_PER_VEC3 for m in components)):
        raise ValueError(f'{owner}: vec3_components must be two ints in 1..{DOF_PER_VEC3} '
                         f'(position, orientation), got {components!r}')
    return (components[0], components[1])


def unmapped_square(square: float, components: int = DOF_PER_VEC3) -> float:
    """Return one squared distance mapped back from ``chi(3)`` onto ``chi(components)``.

    The identity for ``components`` 3; for fewer, the published (mapped) distance is undone with
    :func:`.chi_square.chi3_to_chi`, so a ``k``-times overconfident source's value is ``k^2``
    times a ``chi2(components)`` again. ValueError for NaN or a negative value.
    """
    if components == DOF_PER_VEC3:
        return square
    return _unmapped_square(square, components)


@functools.lru_cache(maxsize=65536)
def _unmapped_square(square: float, components: int) -> float:
    if square != square or square < 0.0:
        raise value_error('estimate_overconfidence', 'squared_distances', 'invalid',
                          'must be >= 0 and not NaN')
    return chi3_to_chi(math.sqrt(square), components) ** 2


def unmapped_squared_distances(squared_distances: Iterable[float],
                               components: int = DOF_PER_VEC3) -> tuple[float, ...]:
    """Return a vec3's squared distances, each through :func:`unmapped_square`."""
    values = tuple(squared_distances)
    if components == DOF_PER_VEC3:
        return values
    return tuple(_unmapped_square(value, components) for value in values)


def estimate_from_squared_distances(
        squared_distances: Iterable[float], dof: int = DOF_PER_VEC3,
) -> OverconfidenceEstimate | None:
    """Return the OverconfidenceEstimate of one vec3 from its squared distances, None if empty.

    The values are ``k^2 chi2(dof)``: mapped values of a vec3 with fewer than 3 components go
    through :func:`unmapped_squared_distances` first (:func:`estimate_overconfidence` does).
    """
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
        history: CalibrationHistory, components: Sequence[int] = VEC3_COMPONENTS,
) -> dict[str, OverconfidenceEstimate | None] | None:
    """Return ``{'position': estimate, 'orientation': estimate}`` for a schema-2 history.

    Each value is an :class:`OverconfidenceEstimate`, or None for an empty window. A schema-1
    history carries no squared distances: the result is None (not an estimate of zero outcomes).
    ``components``: the (position, orientation) error components the source keeps (module
    docstring). TypeError when ``history`` is not a CalibrationHistory.
    """
    require_instance('estimate_overconfidence', 'history', history, CalibrationHistory)
    position_m, orientation_m = check_components('estimate_overconfidence', components)
    if history.schema_version != HISTORY_SCHEMA_SQUARED_DISTANCES:
        return None
    return {
        'position': estimate_from_squared_distances(unmapped_squared_distances(
            history.position_squared_distances, position_m), position_m),
        'orientation': estimate_from_squared_distances(unmapped_squared_distances(
            history.orientation_squared_distances, orientation_m), orientation_m),
    }


def format_overconfidence(history: object,
                          components: Sequence[int] = VEC3_COMPONENTS) -> dict[str, str]:
    """Return ``{'position': '1.02 [0.85, 1.25]', ...}`` for diagnostics ('' when no estimate)."""
    estimates = None
    if isinstance(history, CalibrationHistory):
        estimates = estimate_overconfidence(history, components)
    if estimates is None:
        return {'position': '', 'orientation': ''}
    return {name: '' if value is None else str(value) for name, value in estimates.items()}


def overconfidence_as_dict(
        history: CalibrationHistory, components: Sequence[int] = VEC3_COMPONENTS,
) -> dict[str, dict[str, float | str | int] | None] | None:
    """Return a JSON-ready dict of :func:`estimate_overconfidence` (None for schema 1)."""
    estimates = estimate_overconfidence(history, components)
    if estimates is None:
        return None
    return {name: None if value is None else value.as_dict() for name, value in estimates.items()}


__all__ = [
    'chi2_cdf',
    'chi2_quantile',
    'check_components',
    'CONFIDENCE',
    'DOF_PER_VEC3',
    'estimate_from_squared_distances',
    'estimate_from_sum',
    'estimate_overconfidence',
    'format_overconfidence',
    'OverconfidenceEstimate',
    'overconfidence_as_dict',
    'unmapped_square',
    'unmapped_squared_distances',
    'VEC3_COMPONENTS',
]
