# SPDX-License-Identifier: Apache-2.0
"""A moving ``map -> odom``: odometry drift that a localization corrects in steps (numpy, no ROS).

A real stack publishes its estimate in ``odom`` (continuous, drifting) and the correction as the
transform ``map -> odom`` on /tf, which jumps whenever the localization corrects the drift; ground
truth is in ``map``. :class:`OdomDrift` plays that over the simulator (sim/localization_stack.py,
whose poses are in ``map``): ``map -> odom`` is constant for ``step_period_s`` and then moves by a
seeded random step (translation in the plane, yaw), deterministic for a seed.

:meth:`OdomDrift.map_to_odom` is the transform published (the pose of ``odom`` in ``map``:
``p_map = R p_odom + t``); :meth:`OdomDrift.to_odom` expresses a pose (and its 6x6 covariance,
``J S J^T``) in ``odom``, i.e. applies ``odom <- map``, what tf2 looks up for the bridge.
"""

import math

import numpy as np
from numpy.typing import ArrayLike

from ..bridge.geometry import FixedTransform, FloatArray, quaternion_conjugate
from ..core.contracts import NS_PER_S

MAP_FRAME = 'map'
ODOM_FRAME = 'odom'


class OdomDrift:
    """``map -> odom`` constant over ``step_period_s``, then corrected by a random step."""

    def __init__(self, step_period_s: float = 2.0, step_translation_m: float = 0.3,
                 step_yaw_rad: float = 0.05, seed: int | None = 0) -> None:
        if not step_period_s > 0:
            raise ValueError(f'step_period_s must be > 0, got {step_period_s!r}')
        self.step_period_ns = int(step_period_s * NS_PER_S)
        self.step_translation_m = float(step_translation_m)
        self.step_yaw_rad = float(step_yaw_rad)
        self._rng = np.random.default_rng(seed)
        # (x, y, yaw) of odom in map after each correction; the first is already off the origin.
        self._steps: list[tuple[float, float, float]] = [(1.0, -0.5, 0.2)]

    def _state(self, stamp_ns: int) -> tuple[float, float, float]:
        index = max(int(stamp_ns), 0) // self.step_period_ns
        while len(self._steps) <= index:
            x, y, yaw = self._steps[-1]
            dx, dy = self._rng.normal(0.0, self.step_translation_m, 2)
            self._steps.append((x + dx, y + dy,
                                yaw + self._rng.normal(0.0, self.step_yaw_rad)))
        return self._steps[index]

    def map_to_odom(self, stamp_ns: int
                    ) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
        """Return ``(translation (3,), quaternion xyzw (4,))``: the pose of odom in map."""
        x, y, yaw = self._state(stamp_ns)
        return (x, y, 0.0), (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))

    def odom_from_map(self, stamp_ns: int) -> FixedTransform:
        """Return the FixedTransform ``odom <- map`` at ``stamp_ns`` (``p_odom = R p_map + t``)."""
        translation, rotation = self.map_to_odom(stamp_ns)
        inverse = quaternion_conjugate(rotation)
        r_inverse = FixedTransform((0.0, 0.0, 0.0), inverse).matrix
        return FixedTransform(-(r_inverse @ np.asarray(translation)), inverse)

    def to_odom(self, stamp_ns: int, position: ArrayLike, quaternion: ArrayLike,
                covariance: FloatArray | None = None
                ) -> tuple[FloatArray, FloatArray, FloatArray | None]:
        """Return ``(position, quaternion, covariance)`` of a map-frame pose expressed in odom."""
        return self.odom_from_map(stamp_ns).apply(position, quaternion, covariance)
