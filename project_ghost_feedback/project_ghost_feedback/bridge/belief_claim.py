# SPDX-License-Identifier: Apache-2.0
"""The estimator's own claim, read from its covariance as levels (numpy, no ROS).

Per axis (x, y, z, roll, pitch, yaw): the standard deviation ``sqrt(S_ii)`` against two
thresholds of its block: ``std <= known_max`` -> KNOWN, ``<= uncertain_max`` -> UNCERTAIN, else
UNKNOWN. Per block (position, orientation): the same thresholds on the semi-major axis of the
1-sigma ellipsoid, ``sqrt(largest eigenvalue)`` of the 3x3 block over the axes kept (as
Autoware's localization_error_monitor does with its ellipse long radius), which is never below
the largest axis std. Overall: the worst block. Ignored axes are left out of their block and
get no axis level.
"""

from collections.abc import Collection, Iterable, Sequence
import math

import numpy as np
from numpy.typing import NDArray

from ..core import SelfAssessmentLevel
from .geometry import AXES

POSITION = 'position'
ORIENTATION = 'orientation'

Levels = tuple[SelfAssessmentLevel, dict[str, SelfAssessmentLevel], dict[str, SelfAssessmentLevel]]
"""``(overall, {axis: level}, {block: level})``."""


class ClaimThresholds:
    """Standard-deviation thresholds: metres for the position block, radians for orientation."""

    def __init__(self, position_known_max_std_m: float = 0.2,
                 position_uncertain_max_std_m: float = 1.0,
                 orientation_known_max_std_rad: float = 0.05,
                 orientation_uncertain_max_std_rad: float = 0.2) -> None:
        for name, known, uncertain in (
                ('position', position_known_max_std_m, position_uncertain_max_std_m),
                ('orientation', orientation_known_max_std_rad,
                 orientation_uncertain_max_std_rad)):
            if not (math.isfinite(known) and math.isfinite(uncertain) and 0.0 < known
                    <= uncertain):
                raise ValueError(
                    f'{name} thresholds must be finite with 0 < known_max ({known!r}) <= '
                    f'uncertain_max ({uncertain!r})')
        self.by_block: dict[str, tuple[float, float]] = {
            POSITION: (float(position_known_max_std_m), float(position_uncertain_max_std_m)),
            ORIENTATION: (float(orientation_known_max_std_rad),
                          float(orientation_uncertain_max_std_rad)),
        }


def level_of_std(std: float, known_max: float, uncertain_max: float) -> SelfAssessmentLevel:
    """Return KNOWN, UNCERTAIN or UNKNOWN for a standard deviation (NaN -> UNKNOWN)."""
    if std <= known_max:
        return SelfAssessmentLevel.KNOWN
    if std <= uncertain_max:
        return SelfAssessmentLevel.UNCERTAIN
    return SelfAssessmentLevel.UNKNOWN


def worst(levels: Iterable[SelfAssessmentLevel]) -> SelfAssessmentLevel:
    """Return the least confident of ``levels`` (UNKNOWN for none)."""
    return min(levels, default=SelfAssessmentLevel.UNKNOWN)  # levels order by confidence


def largest_eigenvalue3(m: Sequence[Sequence[float]]) -> float:
    """Return the largest eigenvalue of a symmetric 3x3 matrix (lists), in closed form.

    The trigonometric solution of the characteristic cubic (Smith 1961), as numpy's eigvalsh
    would give it to rounding; plain floats, no decomposition.
    """
    a, b, c = m[0][0], m[0][1], m[0][2]
    d, f, g = m[1][1], m[1][2], m[2][2]
    off = b * b + c * c + f * f
    if off == 0.0:
        return max(a, d, g)
    q = (a + d + g) / 3.0
    p = math.sqrt(((a - q) ** 2 + (d - q) ** 2 + (g - q) ** 2 + 2.0 * off) / 6.0)
    ba, bd, bg = (a - q) / p, (d - q) / p, (g - q) / p
    bb, bc, bf = b / p, c / p, f / p
    r = 0.5 * (ba * (bd * bg - bf * bf) - bb * (bb * bg - bf * bc) + bc * (bb * bf - bd * bc))
    phi = math.acos(min(max(r, -1.0), 1.0)) / 3.0
    return q + 2.0 * p * math.cos(phi)


def claim_levels(covariance: NDArray[np.float64] | Sequence[Sequence[float]],
                 thresholds: ClaimThresholds, ignored_axes: Collection[str] = ()) -> Levels:
    """Return ``(overall, {axis: level}, {block: level})`` for a 6x6 covariance."""
    if not ignored_axes:
        return _claim_levels_all_axes(
            covariance.tolist() if hasattr(covariance, 'tolist') else covariance, thresholds)
    matrix = np.asarray(covariance, dtype=float).reshape(6, 6)
    axis_levels: dict[str, SelfAssessmentLevel] = {}
    block_levels: dict[str, SelfAssessmentLevel] = {}
    for block, offset in ((POSITION, 0), (ORIENTATION, 3)):
        known_max, uncertain_max = thresholds.by_block[block]
        kept = [i for i in range(offset, offset + 3) if AXES[i] not in ignored_axes]
        for i in kept:
            std = math.sqrt(max(float(matrix[i, i]), 0.0))
            axis_levels[AXES[i]] = level_of_std(std, known_max, uncertain_max)
        if kept:
            largest = float(np.linalg.eigvalsh(matrix[np.ix_(kept, kept)])[-1])
            block_levels[block] = level_of_std(
                math.sqrt(max(largest, 0.0)), known_max, uncertain_max)
    return worst(block_levels.values()), axis_levels, block_levels


def _claim_levels_all_axes(rows: Sequence[Sequence[float]], thresholds: ClaimThresholds) -> Levels:
    """:func:`claim_levels` with no ignored axis, in plain floats (the bridge's hot path)."""
    axis_levels: dict[str, SelfAssessmentLevel] = {}
    block_levels: dict[str, SelfAssessmentLevel] = {}
    for block, offset in ((POSITION, 0), (ORIENTATION, 3)):
        known_max, uncertain_max = thresholds.by_block[block]
        for i in range(offset, offset + 3):
            std = math.sqrt(max(float(rows[i][i]), 0.0))
            axis_levels[AXES[i]] = level_of_std(std, known_max, uncertain_max)
        sub = [row[offset:offset + 3] for row in rows[offset:offset + 3]]
        largest = largest_eigenvalue3(sub)
        block_levels[block] = level_of_std(math.sqrt(max(largest, 0.0)), known_max, uncertain_max)
    return worst(block_levels.values()), axis_levels, block_levels
