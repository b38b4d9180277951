# SPDX-License-Identifier: Apache-2.0
"""The stack demo's consistency check: NEES of the raw and of the calibrated estimate.

NEES (normalized estimation error squared) of the position vec3 is the squared Mahalanobis
distance of the estimate's error under its covariance; for an honest covariance it is chi-square
with 3 degrees of freedom, so the mean of ``n`` independent values lies in
``[q(0.025, 3 n) / n, q(0.975, 3 n) / n]`` with 95% probability (the chi-square band).

It is computed at the stamps of the emitted outcomes (the bridge spaces them by the
decorrelation time of ``d^2``, so they are close to independent), for the raw estimate and for
the calibrated estimate the bridge republished at that stamp (``calibrated_estimate.enabled``),
with the same geometry as the bridge (bridge/geometry.py). The figure covers the mistuned phase;
the number is its mean over the phase's *settled* part: from the outcome after which the feedback
node's window (``max_history`` outcomes, at most half the phase) holds mistuned outcomes only.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..bridge.geometry import pose_error
from ..core.feedback import DEFAULT_MAX_HISTORY
from ..core.feedback.chi_square import chi_square_quantile
from ..core.feedback.overconfidence import DOF_PER_VEC3
from ..core import NS_PER_S

PHASE = 'mistuned'


def position_nees(sample: Any, covariance: ArrayLike) -> float:
    """Return the position NEES of a StackSample's estimate under a 6x6 ``covariance``."""
    error = pose_error(sample.estimate_position, sample.estimate_quaternion,
                       np.reshape(np.asarray(covariance, dtype=float), (6, 6)),
                       sample.truth_position, sample.truth_quaternion, None)
    return error.position_mahalanobis ** 2


def nees_series(spans: Iterable[tuple[str, int, int]], outcome_stamps: Iterable[int],
                samples: Mapping[int, Any], calibrated_covariances: Mapping[int, Sequence[float]],
                phase: str = PHASE) -> list[tuple[int, float, float]]:
    """Return ``[(stamp_ns, raw NEES, calibrated NEES), ...]`` for the outcomes of ``phase``.

    ``samples``: StackSample by stamp; ``calibrated_covariances``: the 36 floats of each
    calibrated estimate by stamp. Stamps without both are left out.
    """
    bounds = next(((start, end) for name, start, end in spans if name == phase), None)
    if bounds is None:
        return []
    series: list[tuple[int, float, float]] = []
    for stamp in sorted(outcome_stamps):
        if not bounds[0] <= stamp < bounds[1]:
            continue
        sample, calibrated = samples.get(stamp), calibrated_covariances.get(stamp)
        if sample is None or calibrated is None:
            continue
        series.append((stamp, position_nees(sample, sample.pose_covariance),
                       position_nees(sample, calibrated)))
    return series


def chi_square_band(n: int, dof: int = DOF_PER_VEC3) -> tuple[float, float]:
    """Return the 95% band ``(low, high)`` of the mean of ``n`` chi-square(dof) values."""
    return chi_square_quantile(0.025, dof * n) / n, chi_square_quantile(0.975, dof * n) / n


def summarize_nees(series: Sequence[tuple[int, float, float]],
                   max_history: int = DEFAULT_MAX_HISTORY) -> dict[str, Any] | None:
    """Return the settled part's means against the band, as a JSON-ready dict (None if empty)."""
    skip = min(max_history, len(series) // 2)
    settled = series[skip:]
    if not settled:
        return None
    n = len(settled)
    low, high = chi_square_band(n)
    raw = sum(value for _, value, _ in settled) / n
    calibrated = sum(value for _, _, value in settled) / n
    return {'phase': PHASE, 'from_s': settled[0][0] / NS_PER_S, 'outcomes': n,
            'window_settled': skip == max_history,
            'band': [low, high], 'raw_mean': raw, 'calibrated_mean': calibrated,
            'raw_within_band': low <= raw <= high,
            'calibrated_within_band': low <= calibrated <= high}


def format_nees(summary: Mapping[str, Any] | None, confidence: float) -> str:
    """Return one line: the settled means of the raw and calibrated NEES against the band.

    ``confidence``: the bridge's ``calibrated_estimate.confidence`` the run used.
    """
    if summary is None:
        return 'NEES (position, mistuned phase): no calibrated estimate at an outcome stamp'
    low, high = summary['band']
    caveat = '' if summary['window_settled'] else (
        ' (the phase is too short for the window to hold mistuned outcomes only)')
    return (f"NEES (position, mistuned phase from {summary['from_s']:.0f} s, "
            f"{summary['outcomes']} outcomes): raw {summary['raw_mean']:.2f}, calibrated "
            f"(confidence {confidence:g}) {summary['calibrated_mean']:.2f}; 95% chi-square band "
            f"[{low:.2f}, {high:.2f}]"
            + caveat)
