# SPDX-License-Identifier: Apache-2.0
"""The calibrated estimate: the pose covariance inflated by the measured overconfidence (no ROS).

The feedback node measures, per vec3, how much larger the true errors are than the covariance
claims: ``k`` (core/feedback/overconfidence.py, ADR-0026a). Over a window of ``n`` outcomes with
squared distances summing to ``S``, ``S / k^2`` is chi-square with ``3 n`` degrees of freedom, so
``k_c = sqrt(S / q(1 - c, 3 n))`` is a one-sided upper confidence bound of ``k`` at confidence
``c`` (``q``: the chi-square quantile). The default ``c = 0.975`` is the upper end of the 95%
interval the node reports on /diagnostics (the covariance is made honest with 97.5% confidence,
not merely on average); ``c = 0.5`` is the median-unbiased estimate (about ``k_hat``). The
calibrated estimate scales the 6x6 pose covariance ``C`` (ROS order x y z roll pitch yaw) as
``D C D`` with
``D = diag(f_p, f_p, f_p, f_o, f_o, f_o)``: each block's Mahalanobis distance is divided by its
factor and the result stays positive semi-definite (cross blocks scale by ``f_p f_o``).

Factors never go below 1 (the covariance is never deflated) unless ``allow_deflation``; they stay
within ``[1 / max_factor, max_factor]`` (a distance of ``+inf`` gives an infinite bound, capped). A
block without evidence gets 1: an empty window, a schema-1 history, or squared distances that are
all zero (every axis of the block ignored, or a message that claims it). The inflated covariance
is checked (:func:`calibrated_covariance`): every value finite, and every variance the estimator
states as positive still positive; otherwise it is not published and the reason is counted.

The more conservative the bound, the further below 3 the calibrated estimate's mean NEES per vec3
lands: about ``3 q(1 - c, 3 n) / (3 n - 2)``, 2.3 at the default for a window of 32 outcomes
(docs/bridge.md, measured in test/ros/test_calibrated_estimate.py).
"""

from collections.abc import Iterable, Sequence
import math

from ..core.feedback.chi_square import chi_square_quantile
from ..core.feedback.overconfidence import (
    DOF_PER_VEC3,
    estimate_overconfidence,
    OverconfidenceEstimate,
    VEC3_COMPONENTS,
)
from ..core.feedback.types import CalibrationHistory

BLOCKS = ('position', 'orientation')

DEFAULT_CONFIDENCE = 0.975
"""Default one-sided confidence of the factor: the upper end of the node's 95% interval."""

CONFIDENCE_RANGE: tuple[float, float] = (0.5, 0.9999)
"""Accepted confidences: from the median-unbiased estimate to a very conservative bound."""


def upper_bound(estimate: OverconfidenceEstimate,
                confidence: float = DEFAULT_CONFIDENCE, dof: int = DOF_PER_VEC3) -> float:
    """Return the one-sided ``confidence`` upper bound of ``k`` for an OverconfidenceEstimate.

    ``S`` is recovered from the estimate (``k_hat^2 = S / (dof n)``, ``dof`` the vec3's error
    components); ``+inf`` stays ``+inf``. ValueError for a confidence outside
    :data:`CONFIDENCE_RANGE`.
    """
    if not CONFIDENCE_RANGE[0] <= confidence <= CONFIDENCE_RANGE[1]:
        raise ValueError(f'confidence must be in {list(CONFIDENCE_RANGE)}, got {confidence!r}')
    if math.isinf(estimate.k_hat):
        return math.inf
    degrees = dof * estimate.outcomes
    total = estimate.k_hat ** 2 * degrees
    return math.sqrt(total / chi_square_quantile(1.0 - confidence, degrees))


NOT_FINITE = 'calibrated_covariance_not_finite'
"""Reason: a value of the inflated covariance is NaN or infinite (huge variances times a factor)."""
NOT_POSITIVE = 'calibrated_covariance_not_positive'
"""Reason: a variance the estimator states as positive would be published as zero or negative."""


def inflation_factors(history: CalibrationHistory, allow_deflation: bool = False,
                      max_factor: float = 100.0,
                      confidence: float = DEFAULT_CONFIDENCE,
                      components: Sequence[int] = VEC3_COMPONENTS) -> tuple[float, float]:
    """Return ``(position_factor, orientation_factor)`` from a CalibrationHistory.

    Each is the one-sided ``confidence`` upper bound of that vec3's overconfidence factor
    (:func:`upper_bound`), at least 1 unless ``allow_deflation``, within ``[1 / max_factor,
    max_factor]``. A vec3 without evidence (empty window, schema-1 history, all squared distances
    zero) gets 1.0. ``components``: the (position, orientation) error components the bridge
    keeps (``geometry.vec3_components`` of its ``ignored_axes``), so that a planar vec3's ``k``
    is unbiased. ValueError for a ``max_factor`` that is not a finite number >= 1.
    """
    if not 1.0 <= max_factor < math.inf:
        raise ValueError(f'max_factor must be a finite number >= 1, got {max_factor!r}')
    estimates = estimate_overconfidence(history, components) or {}
    factors = []
    for block, dof in zip(BLOCKS, components):
        estimate = estimates.get(block)
        if estimate is None or estimate.k_hat == 0.0:
            factor = 1.0  # no evidence: nothing to scale by (k = 0 would erase the block)
        else:
            factor = upper_bound(estimate, confidence, dof)
        if not allow_deflation:
            factor = max(factor, 1.0)
        factors.append(min(max(factor, 1.0 / max_factor), max_factor))
    position, orientation = factors
    return position, orientation


def inflate_covariance(covariance: Iterable[float], position_factor: float,
                       orientation_factor: float) -> list[float]:
    """Return the 36 floats of ``D C D`` (see the module documentation) for 36 input floats."""
    scale = (position_factor,) * 3 + (orientation_factor,) * 3
    values = [float(v) for v in covariance]
    return [values[6 * i + j] * scale[i] * scale[j] for i in range(6) for j in range(6)]


def calibrated_covariance(covariance: Iterable[float], position_factor: float,
                          orientation_factor: float) -> tuple[list[float] | None, str]:
    """Return ``(D C D, '')``, or ``(None, reason)`` when it must not be published.

    Refused: a value that is not finite (:data:`NOT_FINITE`: variances of 1e305 times a factor of
    100), or a diagonal that is not positive where the input's is (:data:`NOT_POSITIVE`). A
    variance the estimator itself states as 0 stays 0 (its own claim, republished).
    """
    values = [float(v) for v in covariance]
    inflated = inflate_covariance(values, position_factor, orientation_factor)
    if not all(math.isfinite(value) for value in inflated):
        return None, NOT_FINITE
    if any(inflated[7 * i] <= 0.0 < values[7 * i] for i in range(6)):
        return None, NOT_POSITIVE
    return inflated, ''
