# SPDX-License-Identifier: Apache-2.0
"""A bounded buffer of reference poses, interpolated to an estimate's stamp (numpy, no ROS).

Interpolation between the two samples that bracket the stamp: linear for the position, slerp
for the orientation, linear for the covariance (a convex combination of positive semi-definite
matrices is positive semi-definite; when only one of the two samples has a covariance, none is
used). A stamp equal to a sample's stamp returns that sample unchanged.

A lookup fails with a reason (never a stale pairing): ``empty``, ``before_buffer`` (older than
the oldest sample), ``after_buffer`` (newer than the newest sample: the caller may wait for a
newer reference), ``gap`` (the bracketing samples are more than ``max_gap_ns`` apart).
"""

import bisect
import math

import numpy as np
from numpy.typing import ArrayLike

from .geometry import FloatArray, unit_quaternion

EMPTY = 'empty'
BEFORE_BUFFER = 'before_buffer'
AFTER_BUFFER = 'after_buffer'
GAP = 'gap'


def slerp(q0: ArrayLike, q1: ArrayLike, fraction: float) -> FloatArray:
    """Return the spherical linear interpolation of unit quaternions (x, y, z, w), shortest arc."""
    u0 = unit_quaternion(q0)
    u1 = unit_quaternion(q1)
    dot = float(np.dot(u0, u1))
    if dot < 0.0:
        u1, dot = -u1, -dot
    if dot > 0.9995:
        return unit_quaternion(u0 + fraction * (u1 - u0))
    theta = math.acos(min(dot, 1.0))
    sin_theta = math.sin(theta)
    return (math.sin((1.0 - fraction) * theta) * u0 + math.sin(fraction * theta) * u1) / sin_theta


class ReferenceSample:
    """One reference pose: stamp (ns), position (3,), unit quaternion (4,), covariance or None."""

    __slots__ = ('stamp_ns', 'position', 'quaternion', 'covariance')

    def __init__(self, stamp_ns: int, position: ArrayLike, quaternion: ArrayLike,
                 covariance: ArrayLike | None = None) -> None:
        self.stamp_ns = int(stamp_ns)
        self.position = np.asarray(position, dtype=float).reshape(3)
        self.quaternion = unit_quaternion(quaternion)
        self.covariance: FloatArray | None = (
            None if covariance is None else np.asarray(covariance, dtype=float))


class ReferenceBuffer:
    """Reference samples in stamp order, at most ``capacity`` of them (oldest dropped first)."""

    def __init__(self, capacity: int, max_gap_ns: int) -> None:
        if capacity < 2:
            raise ValueError(f'capacity must be >= 2, got {capacity!r}')
        if max_gap_ns <= 0:
            raise ValueError(f'max_gap_ns must be > 0, got {max_gap_ns!r}')
        self.capacity = int(capacity)
        self.max_gap_ns = int(max_gap_ns)
        self._stamps: list[int] = []
        self._samples: list[ReferenceSample] = []

    def __len__(self) -> int:
        return len(self._samples)

    @property
    def newest_stamp_ns(self) -> int | None:
        """Stamp of the newest sample, or None when empty."""
        return self._stamps[-1] if self._stamps else None

    @property
    def oldest_stamp_ns(self) -> int | None:
        """Stamp of the oldest sample, or None when empty."""
        return self._stamps[0] if self._stamps else None

    def clear(self) -> None:
        """Drop every sample (e.g. after a backward clock jump)."""
        self._stamps.clear()
        self._samples.clear()

    def drop_newer_than(self, stamp_ns: int) -> int:
        """Drop every sample stamped after ``stamp_ns`` (a timeline reset); return how many."""
        index = bisect.bisect_right(self._stamps, stamp_ns)
        dropped = len(self._stamps) - index
        del self._stamps[index:]
        del self._samples[index:]
        return dropped

    def add(self, sample: ReferenceSample) -> bool:
        """Insert ``sample`` in stamp order; a sample with an existing stamp replaces it.

        Return False (and keep nothing) when the buffer is full and ``sample`` is older than all.
        """
        index = bisect.bisect_left(self._stamps, sample.stamp_ns)
        if index < len(self._stamps) and self._stamps[index] == sample.stamp_ns:
            self._samples[index] = sample
            return True
        if len(self._samples) >= self.capacity:
            if index == 0:
                return False
            del self._stamps[0]
            del self._samples[0]
            index -= 1
        self._stamps.insert(index, sample.stamp_ns)
        self._samples.insert(index, sample)
        return True

    def lookup(self, stamp_ns: int) -> ReferenceSample | str:
        """Return the reference interpolated to ``stamp_ns`` as a ReferenceSample, or a reason."""
        if not self._stamps:
            return EMPTY
        index = bisect.bisect_left(self._stamps, stamp_ns)
        if index < len(self._stamps) and self._stamps[index] == stamp_ns:
            return self._samples[index]
        if index == 0:
            return BEFORE_BUFFER
        if index == len(self._stamps):
            return AFTER_BUFFER
        before, after = self._samples[index - 1], self._samples[index]
        span = after.stamp_ns - before.stamp_ns
        if span > self.max_gap_ns:
            return GAP
        fraction = (stamp_ns - before.stamp_ns) / span
        covariance = None
        if before.covariance is not None and after.covariance is not None:
            covariance = (1.0 - fraction) * before.covariance + fraction * after.covariance
        return ReferenceSample(
            stamp_ns, (1.0 - fraction) * before.position + fraction * after.position,
            slerp(before.quaternion, after.quaternion, fraction), covariance)
