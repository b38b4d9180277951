# SPDX-License-Identifier: Apache-2.0
"""Pacing of emitted outcomes so that consecutive ones are close to independent (no ROS).

An option (``decorrelation.method: pace``): the default is prewhitening (``whitening.py``), which
keeps every outcome. Thinning throws away evidence and slows detection (docs/bridge.md).

The calibrated policies' false-alarm rates assume independent outcomes, but a filter's
estimate-vs-truth errors are autocorrelated (lag-1 autocorrelation of ``d^2`` 0.4-0.9 at 10 Hz
for a Kalman filter). :class:`OutcomePacer` emits an outcome only when at least ``interval`` has
passed since the last emitted one, with

``interval = clamp(k * dt, min_interval, max_interval)``, ``k = 2 ln(target) / ln(rho)``,

where ``rho`` is an online estimate of the lag-1 autocorrelation of ``x = d_p^2 + d_o^2`` at the
input sample spacing ``dt``. Assumptions (docs/bridge.md): ``x`` is close to an AR(1) process,
so its lag-k autocorrelation is ``rho^k`` and ``k`` samples apart it is ``target``; ``rho`` and
``dt`` change slowly compared with the exponential-forgetting horizon (``1 / alpha`` samples).
With ``adaptive=False`` the interval is ``min_interval`` (a plain minimum spacing).
``target`` is stated on the errors' lag-1 correlation: for Gaussian AR(1) errors of correlation
``phi`` the correlation of ``d^2`` is ``phi^2``, hence the factor 2. Every candidate (emitted or
not) updates the estimate, so it follows the input stream, but only *after* the decision on it:
deciding on an estimate that already holds the candidate made a large ``d^2`` following another
less likely to be kept (0.896 against 0.994 at target 0.1).

Warm-up: while adaptive, nothing is emitted until ``warmup_samples`` candidates have updated the
estimate (after a start or a :meth:`OutcomePacer.reset`). Before that the autocorrelation is not
known, and emitting would pass the very first, strongly correlated outcomes on to the feedback
node: a window full of them breaks the policies' independence assumption and downgraded an honest
filter within seconds of its start. A candidate whose ``x`` is not finite (a distance
of ``+inf``: an error along a direction the estimator claims to know exactly, certain evidence,
never a false alarm) is not held by the warm-up, only by ``min_interval``.
"""

import math

WHITEN, PACE, NONE = 'whiten', 'pace', 'none'
"""The bridge's ``decorrelation.method``: prewhiten every outcome (the default,
``bridge/whitening.py``), thin them with :class:`OutcomePacer`, or pass them on as they are."""
METHODS = (WHITEN, PACE, NONE)

DEFAULT_TARGET_AUTOCORRELATION = 0.1
"""The lag-1 d^2 autocorrelation aimed at between emitted outcomes. On the simulated filter the
default policy's stated rate holds at 0.05 (0.18% of full windows) and not at 0.1 (0.51%), for
~20% fewer outcomes per second (docs/bridge.md): 0.05 is the documented setting for filters whose
errors stay correlated over seconds."""
DEFAULT_WARMUP_SAMPLES = 50
"""Candidates that feed the autocorrelation estimate before the first outcome is emitted."""
MIN_WARMUP_SAMPLES = 2
MAX_WARMUP_SAMPLES = 1_000_000


class OutcomePacer:
    """Decide which outcomes to emit; stamps in nanoseconds (the estimate's time base)."""

    def __init__(self, min_interval_ns: int = 0, max_interval_ns: int = 10_000_000_000,
                 adaptive: bool = True,
                 target_autocorrelation: float = DEFAULT_TARGET_AUTOCORRELATION,
                 alpha: float = 0.01,
                 warmup_samples: int = DEFAULT_WARMUP_SAMPLES) -> None:
        if not 0 <= min_interval_ns <= max_interval_ns:
            raise ValueError(
                f'need 0 <= min_interval_ns ({min_interval_ns!r}) <= max_interval_ns '
                f'({max_interval_ns!r})')
        if not 0.0 < target_autocorrelation < 1.0:
            raise ValueError(
                f'target_autocorrelation must be in (0, 1), got {target_autocorrelation!r}')
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f'alpha must be in (0, 1], got {alpha!r}')
        if isinstance(warmup_samples, bool) or not isinstance(warmup_samples, int) or not (
                MIN_WARMUP_SAMPLES <= warmup_samples <= MAX_WARMUP_SAMPLES):
            raise ValueError(
                f'warmup_samples must be an integer in [{MIN_WARMUP_SAMPLES}, '
                f'{MAX_WARMUP_SAMPLES}], got {warmup_samples!r}')
        self.min_interval_ns = int(min_interval_ns)
        self.max_interval_ns = int(max_interval_ns)
        self.adaptive = bool(adaptive)
        self.target_autocorrelation = float(target_autocorrelation)
        self.alpha = float(alpha)
        self.warmup_samples = int(warmup_samples)
        self.reset()

    def reset(self) -> None:
        """Forget the statistics and the last emitted stamp (e.g. after a clock jump)."""
        self.samples = 0
        self._mean = 0.0
        self._var = 0.0
        self._cov1 = 0.0
        self._dt_ns = 0.0
        self._previous: tuple[int, float] | None = None  # (stamp_ns, x)
        self._last_emitted_ns: int | None = None

    @property
    def warm(self) -> bool:
        """Return True once the estimate is warm (or when not adaptive: nothing to warm up)."""
        return not self.adaptive or self.samples >= self.warmup_samples

    @property
    def autocorrelation(self) -> float:
        """Return the current lag-1 autocorrelation estimate in [0, 1) (0 before warm-up)."""
        if self.samples < self.warmup_samples or self._var <= 0.0:
            return 0.0
        return min(max(self._cov1 / self._var, 0.0), 0.999)

    @property
    def interval_ns(self) -> int:
        """Return the spacing now required between two emitted outcomes (ns)."""
        interval = float(self.min_interval_ns)
        rho = self.autocorrelation
        if self.adaptive and rho > 0.0 and self._dt_ns > 0.0:
            # target on the errors' correlation; d^2's is its square (Gaussian errors)
            lags = 2.0 * math.log(self.target_autocorrelation) / math.log(rho)
            interval = max(interval, lags * self._dt_ns)
        return int(min(interval, self.max_interval_ns))

    def _update(self, stamp_ns: int, x: float) -> None:
        if self._previous is not None and stamp_ns > self._previous[0]:
            previous_stamp, previous_x = self._previous
            a = self.alpha if self.samples >= 1 / self.alpha else 1.0 / (self.samples + 1)
            dt = stamp_ns - previous_stamp
            self._dt_ns += a * (dt - self._dt_ns)
            self._mean += a * (x - self._mean)
            self._var += a * ((x - self._mean) ** 2 - self._var)
            self._cov1 += a * ((x - self._mean) * (previous_x - self._mean) - self._cov1)
            self.samples += 1
        elif self._previous is None:
            self._mean = x
        self._previous = (stamp_ns, x)

    def offer(self, stamp_ns: int, position_mahalanobis: float,
              orientation_mahalanobis: float) -> bool:
        """Update the statistics with one candidate; return True if it is to be emitted."""
        x = position_mahalanobis ** 2 + orientation_mahalanobis ** 2
        finite = math.isfinite(x)
        keep = self._decide(stamp_ns, finite)  # on the estimate before x: past data only
        if finite:
            self._update(stamp_ns, x)
        return keep

    def _decide(self, stamp_ns: int, finite: bool) -> bool:
        if finite and not self.warm:
            return False  # the autocorrelation is not known yet (module documentation)
        if self._last_emitted_ns is not None and stamp_ns < self._last_emitted_ns:
            self._last_emitted_ns = None  # time went backwards: start over
        if (self._last_emitted_ns is None
                or stamp_ns - self._last_emitted_ns >= self.interval_ns):
            self._last_emitted_ns = stamp_ns
            return True
        return False
