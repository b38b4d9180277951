# SPDX-License-Identifier: Apache-2.0
"""Tests of the simulated robot + Kalman filter (``sim.localization_stack``)."""

import numpy as np

from project_ghost_feedback.bridge.geometry import pose_error
from project_ghost_feedback.sim.localization_stack import (
    DEFAULT_PHASES,
    LocalizationStack,
    StackPhase,
)


def _squared_distances(stack):
    by_phase = {}
    for sample in stack.run():
        if sample.is_estimate:
            error = pose_error(sample.estimate_position, sample.estimate_quaternion,
                               sample.pose_covariance, sample.truth_position,
                               sample.truth_quaternion)
            by_phase.setdefault(sample.phase, []).append(
                (error.position_mahalanobis ** 2, error.orientation_mahalanobis ** 2))
    return {phase: np.array(values) for phase, values in by_phase.items()}


def test_tuned_filter_is_consistent_and_autocorrelated():
    """Tuned: mean d^2 per vec3 ~ 3 (chi-square 3), lag-1 autocorrelation well above 0.4."""
    squares = _squared_distances(LocalizationStack(phases=(StackPhase('tuned', 400.0),), seed=5))
    tuned = squares['tuned'][50:]  # past the initial transient
    # Autocorrelated: ~10x fewer effective samples than 3950; 0.6 is > 4 standard errors.
    assert np.all(np.abs(tuned.mean(axis=0) - 3.0) < 0.6)
    x = tuned[:, 0]
    assert np.corrcoef(x[:-1], x[1:])[0, 1] > 0.4


def test_mistuned_filter_is_overconfident_and_recovers():
    """Process noise too small after the event: d^2 grows several-fold; retuned: ~3 again."""
    phases = tuple(StackPhase(p.name, p.duration_s / 2, p.truth_accel_factor,
                              p.filter_accel_factor) for p in DEFAULT_PHASES)
    squares = _squared_distances(LocalizationStack(phases=phases, seed=6))
    assert squares['mistuned'][:, 0].mean() > 3 * squares['tuned'][:, 0].mean()
    assert abs(squares['recovered'][100:, 0].mean() - 3.0) < 1.0


def test_runs_are_deterministic_for_a_seed_and_stamps_regular():
    """Same seed, same run; estimates every truth_rate_multiple-th truth stamp, 10 Hz."""
    phases = (StackPhase('tuned', 2.0),)
    a = list(LocalizationStack(phases=phases, seed=1).run())
    b = list(LocalizationStack(phases=phases, seed=1).run())
    assert [s.estimate_position for s in a] == [s.estimate_position for s in b]
    estimates = [s.stamp_ns for s in a if s.is_estimate]
    assert estimates == [i * 100_000_000 for i in range(20)]
    assert len(a) == 100
