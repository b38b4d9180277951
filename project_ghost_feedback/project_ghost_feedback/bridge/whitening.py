# SPDX-License-Identifier: Apache-2.0
"""Prewhitening of the bridge's outcomes: every one kept, its serial correlation removed (no ROS).

The policies' false-alarm rates assume independent outcomes, but a filter's estimate-vs-reference
errors are serially correlated (a Kalman filter's error is an AR process). Instead of thinning the
stream (the :class:`~.decorrelation.OutcomePacer`, which throws away the evidence a test needs and
still leaves the kept outcomes correlated), each vec3's error is whitened twice:

1. **in space**, by the claimed covariance: ``z_t = L_t^-1 e_t`` with ``S_t = L_t L_t^T`` the
   Cholesky factor of the vec3's claimed covariance (estimate plus reference) at ``t``; under an
   honest claim ``z_t`` has identity covariance and ``|z_t| = d_t``, the Mahalanobis distance;
2. **in time**, by an AR(p) model of ``z`` fitted on past data only: ``v_t = (z_t - sum_j phi_j
   z_{t-j}) / s`` with ``phi`` from the Yule-Walker equations of the autocorrelations
   ``rho_1 .. rho_p`` of ``z`` (pooled over the vec3's components, exponential forgetting
   ``alpha``) and ``s^2 = 1 - sum_j phi_j rho_j`` the innovation variance relative to ``z``'s.
   ``s`` is a ratio of autocovariances, so an overconfidence ``k`` (``z`` scaled by ``k``) passes
   through unchanged: ``v`` is ``k`` times a white unit vector, ``|v|^2`` is ``k^2`` chi-square(m),
   independent from outcome to outcome -- what the policies are calibrated for.

Rules (``docs/bridge.md``, "Prewhitening"):

- the estimate used for ``v_t`` is the one *before* ``z_t`` updates it (past data only);
- warm-up: until ``warmup_samples`` pairs of consecutive samples have fed the estimate the vec3 is
  *not warm* and the engine withholds the outcome (a start, a reset, a configuration change);
- a chain break: a sample further than ``max_gap_factor`` times the usual spacing from the previous
  one (a dropped reference, a pause), or after a non-finite or unwhitenable sample, starts a new
  chain: its first samples are emitted with the lags they have (``v = z`` for the first: still a
  unit vector under an honest claim, uncorrelated with the next innovations);
- a sample whose covariance is not positive definite (``z`` unknown) or whose distance is ``+inf``
  passes through unwhitened (the distance as computed) and breaks the chain;
- the statistics restart on the bridge's resets (clock jump, stamp jump) and configuration changes.

The cost, measured in ``bench/whitening_bench.py``: a constant bias ``b`` of ``z`` reaches ``v``
attenuated by ``(1 - sum phi) / s`` (``sqrt((1 - phi) / (1 + phi))`` for AR(1): 0.23 at 0.9).
"""

import math
from collections.abc import Sequence
from typing import Any

from ..core.feedback.chi_square import chi_to_chi3
from ..core.innovation import InnovationRefused, whiten

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


def cholesky_whiten(error: Sequence[float], covariance: Sequence[Sequence[float]]
                    ) -> tuple[float, ...] | None:
    """Return ``L^-1 e`` for ``S = L L^T`` (``S`` symmetrised), or None if ``S`` is not PD."""
    m = len(error)
    flat = [0.5 * (covariance[i][j] + covariance[j][i]) for i in range(m) for j in range(m)]
    try:
        z = whiten(error, flat)
    except InnovationRefused:
        return None
    if not all(math.isfinite(value) for value in z):
        return None
    return tuple(z)


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


def norm(v: Sequence[float]) -> float:
    """Return the Euclidean norm of ``v``."""
    return math.sqrt(sum(x * x for x in v))


def error_blocks(error: Any, estimate_covariance: Any, reference_covariance: Any,
                 kept: Sequence[bool]) -> list[tuple[list[float], list[list[float]], float]]:
    """Return per vec3 ``(error, covariance, raw distance)`` over the components ``kept``.

    ``error``: a :class:`~.geometry.PoseError`; the covariances are 6x6 (array-likes with
    ``tolist``, the reference's None when it has none or it is not used); ``kept``: six booleans
    (AXES order), False for an ignored axis. The covariance is the estimate's plus the
    reference's, as the raw distance was taken.
    """
    rows = estimate_covariance.tolist()
    if reference_covariance is not None:
        rows = [[a + b for a, b in zip(row, other)]
                for row, other in zip(rows, reference_covariance.tolist())]
    result = []
    for offset, vector, raw in ((0, error.position_error_m, error.position_mahalanobis),
                                (3, error.orientation_error_rad, error.orientation_mahalanobis)):
        index = [offset + i for i in range(3) if kept[offset + i]]
        result.append(([float(vector[i - offset]) for i in index],
                       [[float(rows[i][j]) for j in index] for i in index], float(raw)))
    return result


class OutcomeWhitening:
    """Both vec3 of the bridge's outcomes whitened in space and time (module documentation).

    :meth:`distances` takes one paired estimate's two error vectors with the claimed covariance
    blocks (estimate plus reference) and the raw distances, and returns the distances the
    outcome carries: ``|v|`` of each vec3 mapped from ``chi(m)`` onto ``chi(3)`` when the vec3
    keeps ``m < 3`` components (ignored axes), ``+inf`` kept, a vec3 with no component 0.
    """

    __slots__ = ('position', 'orientation', 'settings')

    def __init__(self, order: int = DEFAULT_ORDER, alpha: float = DEFAULT_ALPHA,
                 warmup_samples: int = DEFAULT_WARMUP_SAMPLES,
                 max_gap_factor: float = DEFAULT_MAX_GAP_FACTOR) -> None:
        self.settings = (order, float(alpha), warmup_samples, float(max_gap_factor))
        self.position = SerialWhitener(order, alpha, warmup_samples, max_gap_factor)
        self.orientation = SerialWhitener(order, alpha, warmup_samples, max_gap_factor)

    def reset(self) -> None:
        """Forget both estimates (the bridge's resets, a configuration change)."""
        self.position.reset()
        self.orientation.reset()

    @property
    def warm(self) -> bool:
        """Return True once every vec3 that has had a whitenable sample is warm (and one has)."""
        fed = [w for w in (self.position, self.orientation) if w.samples]
        return bool(fed) and all(w.warm for w in fed)

    @property
    def pairs(self) -> int:
        """Return the fewer consecutive pairs of the two vec3 that have fed their estimates."""
        fed = [w.pairs for w in (self.position, self.orientation) if w.samples]
        return min(fed) if fed else 0

    def distances(self, stamp_ns: int, blocks: Sequence[tuple[Sequence[float],
                                                             Sequence[Sequence[float]], float]]
                  ) -> tuple[float, float]:
        """Return the whitened (position, orientation) distances of one paired estimate.

        ``blocks``: per vec3 ``(error, covariance, raw_distance)`` over the components kept
        (ignored axes removed; ``error`` may be empty). A raw distance of ``+inf`` or a
        covariance that is not positive definite passes the raw distance on (mapped to chi(3))
        and breaks that vec3's chain.
        """
        result = []
        for whitener, (error, covariance, raw) in zip((self.position, self.orientation), blocks):
            m = len(error)
            if m == 0:
                result.append(0.0)
                continue
            z = None if raw == math.inf else cholesky_whiten(error, covariance)
            v = whitener.whiten(stamp_ns, z)
            distance = raw if v is None else norm(v)
            result.append(chi_to_chi3(distance, m))
        return result[0], result[1]
