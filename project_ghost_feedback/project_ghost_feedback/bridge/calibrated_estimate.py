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

Factors never go below 1 (the covariance is never deflated) unless ``allow_deflation``; they are
capped at ``max_factor`` (a distance of ``+inf`` gives an infinite bound).

The more conservative the bound, the further below 3 the calibrated estimate's mean NEES per vec3
lands: about ``3 q(1 - c, 3 n) / (3 n - 2)``, 2.3 at the default for a window of 32 outcomes
(docs/bridge.md, measured in test/test_calibrated_estimate.py).
"""

from collections.abc import Iterable
import math

from ..core.feedback.chi_square import chi_square_quantile
from ..core.feedback.overconfidence import (
    DOF_PER_VEC3,
    estimate_overconfidence,
    OverconfidenceEstimate,
)
from ..core.feedback.types import CalibrationHistory

BLOCKS = ('position', 'orientation')

DEFAULT_CONFIDENCE = 0.975
"""Default one-sided confidence of the factor: the upper end of the node's 95% interval."""

CONFIDENCE_RANGE: tuple[float, float] = (0.5, 0.9999)
"""Accepted confidences: from the median-unbiased estimate to a very conservative bound."""


def upper_bound(estimate: OverconfidenceEstimate,
                confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Return the one-sided ``confidence`` upper bound of ``k`` for an OverconfidenceEstimate.

    ``S`` is recovered from the estimate (``k_hat^2 = S / (3 n)``); ``+inf`` stays ``+inf``.
    ValueError for a confidence outside :data:`CONFIDENCE_RANGE`.
    """
    if not CONFIDENCE_RANGE[0] <= confidence <= CONFIDENCE_RANGE[1]:
        raise ValueError(f'confidence must be in {list(CONFIDENCE_RANGE)}, got {confidence!r}')
    if math.isinf(estimate.k_hat):
        return math.inf
    degrees = DOF_PER_VEC3 * estimate.outcomes
    total = estimate.k_hat ** 2 * degrees
    return math.sqrt(total / chi_square_quantile(1.0 - confidence, degrees))


def inflation_factors(history: CalibrationHistory, allow_deflation: bool = False,
                      max_factor: float = 100.0,
                      confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Return ``(position_factor, orientation_factor)`` from a CalibrationHistory.

    Each is the one-sided ``confidence`` upper bound of that vec3's overconfidence factor
    (:func:`upper_bound`). A vec3 without an estimate (empty window, schema-1 history) gets 1.0.
    """
    estimates = estimate_overconfidence(history) or {}
    factors = []
    for block in BLOCKS:
        estimate = estimates.get(block)
        factor = 1.0 if estimate is None else upper_bound(estimate, confidence)
        if not allow_deflation:
            factor = max(factor, 1.0)
        factors.append(min(factor, max_factor))
    position, orientation = factors
    return position, orientation


def inflate_covariance(covariance: Iterable[float], position_factor: float,
                       orientation_factor: float) -> list[float]:
    """Return the 36 floats of ``D C D`` (see the module documentation) for 36 input floats."""
    scale = (position_factor,) * 3 + (orientation_factor,) * 3
    values = [float(v) for v in covariance]
    return [values[6 * i + j] * scale[i] * scale[j] for i in range(6) for j in range(6)]
