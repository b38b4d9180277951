# SPDX-License-Identifier: Apache-2.0
"""Whitening in time of a vector series: an AR(p) model fitted on past data only (stdlib only).

:class:`SerialWhitener` is the engine the bridge's prewhitening (``bridge/whitening.py``) runs on
each vec3 of its outcomes, and the one ``analysis/whitening_sim.py`` simulates: ``v_t = (z_t -
sum_j phi_j z_{t-j}) / s`` with ``phi`` from the Yule-Walker equations of the autocorrelations of
``z`` (pooled over its components, exponential forgetting ``alpha``), estimated *before* ``z_t``
updates them; a warm-up, chain breaks on gaps and non-finite samples, a reset. The rules are
stated in ``docs/bridge.md`` ("Prewhitening").
"""

import math
from collections.abc import Sequence

DEFAULT_ORDER = 2
"""AR order of the default whitening (``docs/bridge.md``: AR(1) leaves a two-time-constant error
correlated)."""
DEFAULT_ALPHA = 0.0005
"""Forgetting factor of the autocovariance estimates (horizon ~2000 samples)."""
DEFAULT_WARMUP_SAMPLES = 30
"""Consecutive pairs that feed the estimate before the first outcome is emitted."""
DEFAULT_MAX_GAP_FACTOR = 1.5
"""A spacing above this many times the usual one breaks the chain."""
MAX_ORDER = 2
MAX_PHI = 0.995
"""Largest autocorrelation used (a random-walk error would divide by ~0)."""
MIN_INNOVATION_RATIO = 1e-4
"""Smallest innovation variance relative to the series' (a near-deterministic fit)."""


def yule_walker(rho: Sequence[float], order: int) -> tuple[tuple[float, ...], float]:
    """Return ``(phi, s2)`` of an AR(``order``) from autocorrelations ``rho[0..order-1]``.

    ``rho[j]`` is the lag ``j + 1`` autocorrelation. Falls back to a lower order when the fit is
    not stationary or leaves less than ``MIN_INNOVATION_RATIO`` of the variance; ``s2`` is the
    innovation variance relative to the process variance.
    """
    r1 = min(max(rho[0], -MAX_PHI), MAX_PHI) if rho else 0.0
    if order >= 2 and len(rho) >= 2:
        r2 = min(max(rho[1], -MAX_PHI), MAX_PHI)
        den = 1.0 - r1 * r1
        phi1 = r1 * (1.0 - r2) / den
        phi2 = (r2 - r1 * r1) / den
        s2 = 1.0 - phi1 * r1 - phi2 * r2
        stationary = abs(phi2) < 1.0 and phi1 + phi2 < 1.0 and phi2 - phi1 < 1.0
        if stationary and s2 >= MIN_INNOVATION_RATIO and abs(phi2) <= MAX_PHI:
            return (phi1, phi2), s2
    if order >= 1:
        return (r1,), 1.0 - r1 * r1
    return (), 1.0


class SerialWhitener:
    """AR(``order``) prewhitening of one vec3's spatially whitened errors (module documentation).

    :meth:`whiten` takes ``z_t`` (or None) and returns ``v_t`` (or None when ``z_t`` is None).
    """

    __slots__ = ('order', 'alpha', 'warmup_samples', 'max_gap_factor', 'samples', 'pairs',
                 '_mean', '_gamma', '_lags', '_dt_ns', '_last_stamp_ns', 'breaks')

    def __init__(self, order: int = DEFAULT_ORDER, alpha: float = DEFAULT_ALPHA,
                 warmup_samples: int = DEFAULT_WARMUP_SAMPLES,
                 max_gap_factor: float = DEFAULT_MAX_GAP_FACTOR) -> None:
        if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= MAX_ORDER:
            raise ValueError(f'order must be an int in 0..{MAX_ORDER}, got {order!r}')
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f'alpha must be in (0, 1], got {alpha!r}')
        if isinstance(warmup_samples, bool) or not isinstance(warmup_samples, int) or not (
                0 <= warmup_samples <= 1_000_000):
            raise ValueError(f'warmup_samples must be an int in [0, 1000000], got '
                             f'{warmup_samples!r}')
        if not 1.0 < max_gap_factor <= 1000.0:
            raise ValueError(f'max_gap_factor must be in (1, 1000], got {max_gap_factor!r}')
        self.order = order
        self.alpha = float(alpha)
        self.warmup_samples = warmup_samples
        self.max_gap_factor = float(max_gap_factor)
        self.reset()

    def reset(self) -> None:
        """Forget everything (a start, a reset, a configuration change)."""
        self.samples = 0      # samples that fed the mean and variance
        self.pairs = 0        # consecutive pairs that fed the lag-1 covariance
        self.breaks = 0       # chain breaks (gaps, unwhitenable samples)
        self._mean: list[float] | None = None
        self._gamma = [0.0] * (self.order + 1)   # autocovariances at lags 0..order
        self._lags: list[tuple[float, ...]] = []  # newest first, the current chain
        self._dt_ns = 0.0
        self._last_stamp_ns: int | None = None

    @property
    def warm(self) -> bool:
        """Return True once ``warmup_samples`` pairs fed the estimate (always, at order 0)."""
        return self.order == 0 or self.pairs >= self.warmup_samples

    def autocorrelations(self) -> tuple[float, ...]:
        """Return the estimated lag 1..order autocorrelations of ``z`` (zeros before data)."""
        g0 = self._gamma[0]
        if not g0 > 0.0:
            return tuple(0.0 for _ in range(self.order))
        return tuple(g / g0 for g in self._gamma[1:])

    def coefficients(self) -> tuple[tuple[float, ...], float]:
        """Return ``(phi, s2)`` in use now (Yule-Walker on :meth:`autocorrelations`)."""
        return yule_walker(self.autocorrelations(), self.order)

    def _break(self) -> None:
        self._lags = []
        self.breaks += 1

    def whiten(self, stamp_ns: int, z: tuple[float, ...] | None) -> tuple[float, ...] | None:
        """Return ``v_t`` for ``z_t`` at ``stamp_ns`` (None for None), then update the estimate."""
        last = self._last_stamp_ns
        if last is not None:
            dt = stamp_ns - last
            if dt <= 0 or (self._dt_ns > 0.0 and dt > self.max_gap_factor * self._dt_ns):
                if self._lags:
                    self._break()
            if dt > 0:
                a = max(self.alpha, 1.0 / (self.pairs + 2))
                self._dt_ns = dt if self._dt_ns == 0.0 else self._dt_ns + a * (dt - self._dt_ns)
        self._last_stamp_ns = stamp_ns
        if z is None:
            if self._lags:
                self._break()
            return None
        phi, s2 = self.coefficients()
        lags = self._lags
        used = min(len(phi), len(lags))
        if used:
            if used < len(phi):  # a young chain: the lower-order fit it can use
                phi, s2 = yule_walker(self.autocorrelations(), used)
            scale = 1.0 / math.sqrt(s2)
            v = tuple(
                (zc - sum(phi[j] * lags[j][c] for j in range(used))) * scale
                for c, zc in enumerate(z))
        else:
            v = z
        self._update(z)
        return v

    def _update(self, z: tuple[float, ...]) -> None:
        m = len(z)
        mean = self._mean
        if mean is None or len(mean) != m:
            mean = self._mean = [0.0] * m
        a = max(self.alpha, 1.0 / (self.samples + 1))
        for c in range(m):
            mean[c] += a * (z[c] - mean[c])
        centred = tuple(z[c] - mean[c] for c in range(m))
        gamma = self._gamma
        gamma[0] += a * (sum(x * x for x in centred) / m - gamma[0])
        lags = self._lags
        if lags and len(lags[0]) == m:
            b = max(self.alpha, 1.0 / (self.pairs + 1))
            for j in range(1, self.order + 1):
                if len(lags) >= j:
                    past = lags[j - 1]
                    cov = sum(centred[c] * (past[c] - mean[c]) for c in range(m)) / m
                    gamma[j] += b * (cov - gamma[j])
            self.pairs += 1
        elif lags:
            self._break()
        self.samples += 1
        lags.insert(0, z)
        del lags[self.order:]
