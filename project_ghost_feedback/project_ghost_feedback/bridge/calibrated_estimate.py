# SPDX-License-Identifier: Apache-2.0
"""The calibrated estimate: the pose covariance inflated by the measured overconfidence (no ROS).

The feedback node measures, per vec3, how much larger the true errors are than the covariance
claims: ``k`` with a 95% interval (core/feedback/overconfidence.py, ADR-0026a). The calibrated
estimate takes the interval's *upper* bound ``k_high`` per vec3 (an upper confidence bound: the
covariance is made honest with 97.5% confidence, not merely on average) and scales the 6x6 pose
covariance ``C`` (ROS order x y z roll pitch yaw) as ``D C D`` with
``D = diag(f_p, f_p, f_p, f_o, f_o, f_o)``: each block's Mahalanobis distance is divided by its
factor and the result stays positive semi-definite (cross blocks scale by ``f_p f_o``).

Factors never go below 1 (the covariance is never deflated) unless ``allow_deflation``; they are
capped at ``max_factor`` (a distance of ``+inf`` gives ``k_high = +inf``).
"""

from collections.abc import Iterable

from ..core.feedback.overconfidence import estimate_overconfidence
from ..core.feedback.types import CalibrationHistory

BLOCKS = ('position', 'orientation')


def inflation_factors(history: CalibrationHistory, allow_deflation: bool = False,
                      max_factor: float = 100.0) -> tuple[float, float]:
    """Return ``(position_factor, orientation_factor)`` from a CalibrationHistory.

    A vec3 without an estimate (empty window, schema-1 history) gets 1.0.
    """
    estimates = estimate_overconfidence(history) or {}
    factors = []
    for block in BLOCKS:
        estimate = estimates.get(block)
        factor = 1.0 if estimate is None else estimate.high
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
