# SPDX-License-Identifier: Apache-2.0
"""Whitening in time of a vector series: an AR(p) model fitted on past data only (stdlib only).

:class:`SerialWhitener` is the engine the bridge's prewhitening (``bridge/whitening.py``) runs on
each vec3 of its outcomes, and the one ``verification/whitening_sim.py`` simulates: ``v_t = (z_t -
sum_j phi_j z_{t-j}) / s`` with ``phi`` from the Yule-Walker equations of the autocorrelations of
``z`` (pooled over its components, exponential forgetting ``alpha``), estimated *before* ``z_t``
updates them; a warm-up, chain breaks on gaps and non-finite samples, a reset. The rules are
stated in ``docs/bridge.md`` ("Prewhitening").

The guard: a second, fast estimate (``guard_alpha``, horizon ~50 samples) runs beside the slow
one, and whichever leaves the larger innovation variance whitens. A slow estimate whitens with
the correlation the errors *had*: when an honest filter's error becomes less correlated (a
retuned filter, a robot that stops), it over-whitens and inflates ``v`` (AR(1) 0.9 -> 0.6 reads
as 2x overconfident); the fast estimate follows within seconds. Choosing the less correlated
model never inflates ``v`` beyond what the fast estimate supports; its cost is some power (the
fast estimate's noise under-whitens a little), measured in ``bench/whitening_bench.py``.

Gross samples: ``z`` is whitened by the *claimed* covariance, so an honest error has ``|z|^2 ~
chi2(m)`` whatever its correlation in time. A sample beyond the ``1 - GROSS_PROBABILITY``
quantile of chi2(m) is whitened and returned, but it neither feeds the estimates nor chains: the
next sample starts a new chain (and passes as ``z``). Learning a gross error (a 2 m /tf error, a
filter that diverged) as serial correlation would whiten away the honest error after it (a 10 s
frame error read as 30 s more of overconfidence) and attenuate the very inconsistency reported;
an honest stream loses one update in a billion (m = 3: |z| > 6.7).
"""

import functools
import math
from collections.abc import Sequence

from .feedback.chi_square import chi_square_quantile

DEFAULT_ORDER = 2
"""AR order of the default whitening (``docs/bridge.md``: AR(1) leaves a two-time-constant error
correlated)."""
DEFAULT_ALPHA = 0.0005
"""Forgetting factor of the autocovariance estimates (horizon ~2000 samples)."""
DEFAULT_WARMUP_SAMPLES = 30
"""Consecutive pairs that feed the estimate before the first outcome is emitted."""
DEFAULT_MAX_GAP_FACTOR = 1.5
"""A spacing above this many times the usual one breaks the chain."""
DEFAULT_GUARD_ALPHA = 0.02
"""Forgetting factor of the guard's fast estimate (horizon ~50 samples); 0 turns the guard off."""
GUARD_RATIO = 1.5
"""The guard whitens with the fast estimate only when it leaves this many times the slow one's
innovation variance (below it, the fast estimate's noise would cost power, not save a false
alarm)."""
GROSS_PROBABILITY = 1e-9
"""An honest sample is gross (beyond the chi2(m) quantile at ``1 - GROSS_PROBABILITY``) this
rarely."""
MAX_ORDER = 2
MAX_PHI = 0.995
"""Largest autocorrelation used (a random-walk error would divide by ~0)."""
MIN_INNOVATION_RATIO = 1e-4
"""Smallest innovation variance relative to the series' (a near-deterministic fit)."""


def _clipped(r: float) -> float:
    """Return ``r`` clipped to [-MAX_PHI, MAX_PHI] (a NaN stays NaN)."""
    if r < -MAX_PHI:
        return -MAX_PHI
    if r > MAX_PHI:
        return MAX_PHI
    return r


def squared_norm(v: Sequence[float]) -> float:
    """Return ``|v|^2``, the squares added from 0.0 in order.

    What ``sum()`` does in 3.11, as an explicit loop: the same bits where ``sum()`` compensates
    (3.12+).
    """
    squared = 0.0
    for x in v:
        squared += x * x
    return squared


def yule_walker(rho: Sequence[float], order: int) -> tuple[tuple[float, ...], float]:
    """Return ``(phi, s2)`` of an AR(``order``) from autocorrelations ``rho[0..order-1]``.

    ``rho[j]`` is the lag ``j + 1`` autocorrelation. Falls back to a lower order when the fit is
    not stationary or leaves less than ``MIN_INNOVATION_RATIO`` of the variance; ``s2`` is the
    innovation variance relative to the process variance.
    """
    r1 = _clipped(rho[0]) if rho else 0.0
    if order >= 2 and len(rho) >= 2:
        r2 = _clipped(rho[1])
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

    __slots__ = ('order', 'alpha', 'warmup_samples', 'max_gap_factor', 'guard_alpha', 'samples',
                 'pairs', 'guarded', '_slow', '_fast', '_lags', '_dt_ns', '_last_stamp_ns',
                 'breaks', 'gross', '_fits')

    def __init__(self, order: int = DEFAULT_ORDER, alpha: float = DEFAULT_ALPHA,
                 warmup_samples: int = DEFAULT_WARMUP_SAMPLES,
                 max_gap_factor: float = DEFAULT_MAX_GAP_FACTOR,
                 guard_alpha: float = DEFAULT_GUARD_ALPHA) -> None:
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
        if not (guard_alpha == 0.0 or alpha < guard_alpha <= 1.0):
            raise ValueError(f'guard_alpha must be 0 (off) or in (alpha, 1], got {guard_alpha!r}')
        self.order = order
        self.guard_alpha = float(guard_alpha)
        self.alpha = float(alpha)
        self.warmup_samples = warmup_samples
        self.max_gap_factor = float(max_gap_factor)
        self.reset()

    def reset(self) -> None:
        """Forget everything (a start, a reset, a configuration change)."""
        self.samples = 0      # samples that fed the mean and variance
        self.pairs = 0        # consecutive pairs that fed the lag-1 covariance
        self.breaks = 0       # chain breaks (gaps, unwhitenable samples)
        self.guarded = 0      # samples whitened by the guard's fast estimate
        self.gross = 0        # samples kept out of the estimates (module documentation)
        self._slow = _Autocovariance(self.order, self.alpha)
        self._fast = (_Autocovariance(self.order, self.guard_alpha) if self.guard_alpha
                      else None)
        self._lags: list[tuple[float, ...]] = []  # newest first, the current chain
        self._dt_ns = 0.0
        self._last_stamp_ns: int | None = None
        # _fit's results by number of lags, valid until the estimates next change (_update).
        self._fits: dict[int, tuple[tuple[float, ...], float, bool]] = {}

    @property
    def warm(self) -> bool:
        """Return True once ``warmup_samples`` pairs fed the estimate (always, at order 0)."""
        return self.order == 0 or self.pairs >= self.warmup_samples

    def autocorrelations(self) -> tuple[float, ...]:
        """Return the estimated lag 1..order autocorrelations of ``z`` (zeros before data)."""
        return self._slow.autocorrelations()

    def fast_autocorrelations(self) -> tuple[float, ...]:
        """Return the guard's fast estimate of them (the slow one's when the guard is off)."""
        return (self._fast or self._slow).autocorrelations()

    def coefficients(self) -> tuple[tuple[float, ...], float]:
        """Return ``(phi, s2)`` in use for the next sample of a full chain (guard applied)."""
        return self._fit(self.order)[:2]

    def _fit(self, lags: int) -> tuple[tuple[float, ...], float, bool]:
        """Return ``(phi, s2, guarded)`` for a chain with ``lags`` past samples.

        The fit uses at most ``lags`` coefficients (a young chain: the lower-order fit it can
        use). That is the fit of order ``min(order, lags)``: with ``MAX_ORDER`` 2, an AR(2) fit
        that falls back uses one coefficient and is the AR(1) fit. The guard: of the slow and the
        fast estimate, the one that leaves the larger innovation variance (the less correlated
        model) whitens, the fast one only when it leaves ``GUARD_RATIO`` times the slow one's.
        Cached until the estimates change.
        """
        fit = self._fits.get(lags)
        if fit is None:
            used = min(self.order, lags)   # the coefficients a chain of ``lags`` can use
            best = yule_walker(self._slow.autocorrelations(), used)
            guarded = False
            if self._fast is not None:
                fast = yule_walker(self._fast.autocorrelations(), used)
                if fast[1] > GUARD_RATIO * best[1]:
                    best, guarded = fast, True
            fit = self._fits[lags] = (best[0], best[1], guarded)
        return fit

    def _break(self) -> None:
        self._lags = []
        self.breaks += 1

    def whiten(self, stamp_ns: int, z: tuple[float, ...] | None) -> tuple[float, ...] | None:
        """Return ``v_t`` for ``z_t`` at ``stamp_ns`` (None for None), then update the estimate.

        A ``z_t`` of another number of components than the chain's breaks it first (counted in
        ``breaks``): it is whitened as the first sample of a new chain (``v_t = z_t``).
        """
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
        lags = self._lags
        if lags and len(lags[0]) != len(z):   # the number of components changed: a new chain
            self._break()
            lags = self._lags
        phi, s2, guarded = self._fit(len(lags))
        if phi:
            self.guarded += guarded
            scale = 1.0 / math.sqrt(s2)
            white: list[float] = []
            for c, zc in enumerate(z):
                # sum_j phi_j z_{t-j}, added up from 0.0 in the order of j (sum() in 3.11)
                prediction = 0.0
                for coefficient, past in zip(phi, lags):
                    prediction += coefficient * past[c]
                white.append((zc - prediction) * scale)
            v = tuple(white)
        else:
            v = z
        if squared_norm(z) > gross_limit(len(z)):
            self.gross += 1
            self._lags = []   # not a gap: counted in ``gross``, not ``breaks``
            return v
        self._update(z)
        return v

    def _update(self, z: tuple[float, ...]) -> None:
        """Fold ``z`` into the estimates and the chain (of ``z``'s components: :meth:`whiten`)."""
        lags = self._lags
        self._slow.update(z, lags, self.samples, self.pairs)
        if self._fast is not None:
            self._fast.update(z, lags, self.samples, self.pairs)
        self._fits.clear()
        self.pairs += bool(lags)
        self.samples += 1
        lags.insert(0, z)
        del lags[self.order:]


@functools.cache
def gross_limit(components: int) -> float:
    """Return the ``|z|^2`` above which a sample of ``components`` is gross (module docs)."""
    return chi_square_quantile(1.0 - GROSS_PROBABILITY, components)


class _Autocovariance:
    """Exponentially forgotten mean and lag 0..order autocovariances, pooled over components."""

    __slots__ = ('order', 'alpha', 'mean', 'gamma')

    def __init__(self, order: int, alpha: float) -> None:
        self.order = order
        self.alpha = alpha
        self.mean: list[float] | None = None
        self.gamma = [0.0] * (order + 1)

    def autocorrelations(self) -> tuple[float, ...]:
        gamma = self.gamma
        g0 = gamma[0]
        if not g0 > 0.0:
            return (0.0,) * self.order
        return tuple([g / g0 for g in gamma[1:]])

    def update(self, z: tuple[float, ...], lags: list[tuple[float, ...]], samples: int,
               pairs: int) -> None:
        """Fold ``z`` in (``lags``: the chain's past samples, newest first; empty at a break)."""
        m = len(z)
        mean = self.mean
        if mean is None or len(mean) != m:
            mean = self.mean = [0.0] * m
        a = max(self.alpha, 1.0 / (samples + 1))
        # The sums below start from 0.0 and add in component order: what sum() does (3.11).
        centred: list[float] = []
        total = 0.0
        for c, zc in enumerate(z):
            mc = mean[c]
            mc += a * (zc - mc)
            mean[c] = mc
            x = zc - mc
            centred.append(x)
            total += x * x
        gamma = self.gamma
        gamma[0] += a * (total / m - gamma[0])
        if lags:
            b = max(self.alpha, 1.0 / (pairs + 1))
            for j, past in enumerate(lags[:self.order], 1):
                total = 0.0
                for x, p, mc in zip(centred, past, mean):
                    total += x * (p - mc)
                gamma[j] += b * (total / m - gamma[j])
