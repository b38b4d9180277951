# SPDX-License-Identifier: Apache-2.0
"""A small Kalman filter for field-mode tests and benches: its innovations and its estimate.

``m`` independent scalar filters track a random walk (per axis ``x' = x + w``, ``w ~ N(0, q)``)
from direct measurements (``z = x + v``, ``v ~ N(0, r_true)``); the filter believes the
measurement noise variance is ``claimed_r``. :meth:`RandomWalkFilter.step` advances one step and
returns the innovation ``e = z - x_pred`` and its predicted variance ``S = P_pred + claimed_r``
per axis, as a filter publishes them; ``truth``, ``estimate`` and ``variance`` (the posterior
``P``) are public, so a test can also publish the estimate with its covariance (a GNSS-like
reference is then drawn around ``truth`` by the caller).

Honest when ``claimed_r`` is the true variance: its innovations are white and
``e^2 / S ~ chi-square(1)`` per axis. ``noise_factor`` multiplies the true measurement noise's
standard deviation (a fault injected mid-run: the filter then claims ``noise_factor`` times too
small a standard deviation). Stdlib only; one ``random.Random`` drives it (two draws per axis per
step, truth then measurement), so a seed gives the same stream on every machine.
"""

import math
import random

DEFAULT_Q = 1e-4
DEFAULT_R = 1.0


class RandomWalkFilter:
    """``m`` independent scalar Kalman filters of a random walk (see the module docstring)."""

    def __init__(self, rng: random.Random | int, m: int = 3, q: float = DEFAULT_Q,
                 r: float = DEFAULT_R, claimed_r: float | None = None) -> None:
        if m < 1:
            raise ValueError(f'm must be >= 1, got {m!r}')
        self.rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        self.q, self.r = q, r
        self.claimed_r = r if claimed_r is None else claimed_r
        self.noise_factor = 1.0
        self.truth = [0.0] * m
        self.estimate = [0.0] * m
        self.variance = [1.0] * m

    def step(self) -> tuple[list[float], list[float]]:
        """Advance one step; return ``(innovation, S)`` per axis (S: the diagonal)."""
        innovation, s = [], []
        for i in range(len(self.truth)):
            self.truth[i] += self.rng.gauss(0.0, math.sqrt(self.q))
            z = self.truth[i] + self.rng.gauss(0.0, self.noise_factor * math.sqrt(self.r))
            predicted = self.variance[i] + self.q
            s_i = predicted + self.claimed_r
            e = z - self.estimate[i]
            gain = predicted / s_i
            self.estimate[i] += gain * e
            self.variance[i] = (1.0 - gain) * predicted
            innovation.append(e)
            s.append(s_i)
        return innovation, s


__all__ = ['DEFAULT_Q', 'DEFAULT_R', 'RandomWalkFilter']
