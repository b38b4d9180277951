# SPDX-License-Identifier: Apache-2.0
"""Evidence of a constant bias in prewhitened errors: a mixture CUSUM over suffixes (stdlib only).

The prewhitening (``core/serial_whitening.py``) turns an honest filter's errors into independent
unit vectors ``v_t``, and the policies test their *scale*. A constant bias ``b`` of the spatially
whitened error ``z`` reaches ``v`` attenuated, ``b (1 - sum phi) / s`` (0.23x for AR(1) 0.9), as a
constant *mean*: small per outcome, but it adds up. :class:`MeanEvidence` measures it on the
concatenation of both vec3's ``v`` (``m`` components, 6 with every axis kept), and
:class:`BiasEvidence` reads two views of ``v`` with it (below).

For the last ``j`` outcomes with sum ``S_j``, the likelihood ratio of "their mean is ``mu``, drawn
from N(0, ``tau2`` I)" against "zero mean" is, in nats,

    ``L_j = tau2 |S_j|^2 / (2 (1 + j tau2)) - (m / 2) ln(1 + j tau2)``

(Robbins' mixture: no direction or size of the bias is assumed). The evidence is ``max(0, max_j
L_j)`` over ``j`` in :data:`SUFFIXES` (a geometric grid up to ``max_suffix``). Under an honest
filter each ``exp(L_j)`` from a fixed start is a martingale of mean 1, so (Ville) it ever reaches
``A`` with probability at most ``1 / A``, and (Lorden 1971) the first time the evidence reaches
``ln A`` comes after at least ``A`` outcomes on average: a threshold of ``ln(ARL0)`` keeps a
false-alarm budget, as for the one-step CUSUM. Checking a grid of ``j`` instead of every ``j``
only lengthens that run. The bound is loose here (measured: ~1 false episode in 2500 honest hours
at ``ln(ARL0)``, ~50x fewer than its budget), so the policy sets the threshold a measured margin
below it (``Vec3ScalePolicy.bias_threshold``, ``bias_threshold_margin``; ``docs/policies.md``,
"The bias channel's threshold"). ``position_share`` is the part of ``|S_j|^2``
(at the maximising ``j``) that is the position vec3's: which vec3 carries the bias.

**The long-run variance.** The whitening's AR model need not match the error's spectrum at low
frequency: a mix of two time constants (0.97 and 0.5) whitened by AR(2) leaves ``v`` whose sums
over long suffixes vary ~4x as much as white noise's, and a mean test that assumed 1 would fire
hundreds of times a day on an honest filter. So each vec3's ``|S_j|^2`` is divided by its
long-run variance ratio ``lambda`` (per component; 1 for white ``v``), estimated from past data
by overlapping batch means: the exponentially forgotten mean (``lrv_alpha``) of ``|S_L - L
mu|^2 / (L m)`` over the trailing blocks of ``L = lrv_block`` outcomes, ``mu`` the slowly
forgotten mean of ``v``. In use: ``max(1, lambda)``, never below white noise's. A young
estimate is noisy (relative standard error ``sqrt(8 L / (3 m n))``, ``n`` the blocks it rests
on: Meketon and Schmeiser 1984; ~0.2 five minutes after a start at 10/s); a cushion of two of
those standard errors was measured and left out: it cost a bias of 1.5 at rho 0.9 ~10 s (29 s
against 19 s) and the budget does not need it (an honest mix's evidence reached the 14.40-nat
threshold in 1 of 1000 one-hour starts without it; ``docs/policies.md``, "The bias channel").
A bias that appears enters the estimate at ``lrv_alpha`` per outcome (after 20 s at 10/s, ~5%
of ``b^2 L``): it costs little power. Warm-up: the evidence is 0 until ``warmup`` outcomes
have fed it (a start, a reset).

**Two views.** The producer's whitening follows the errors' correlation slowly (horizon ~2000
outcomes): when an honest error's correlation rises (white -> AR(1) 0.9: a robot that starts
moving, a filter retuned), ``v`` is under-whitened for minutes, its sums grow like a bias's, and
the long-run variance estimate (horizon 10,000) follows later still. Measured on the regime
bench, one view read that as a bias in 100% of such streams (83% from 0.6 -> 0.9).
:class:`BiasEvidence` therefore also whitens ``v`` again, per vec3, by a fast AR(2) fit
(:data:`REWHITEN_ALPHA`, no guard, centred on its own fast mean, so a constant bias does not
enter its correlation and passes it as ``(1 - sum phi) / s`` ~ 1) and reports the smaller of
the two views' evidence (each a :class:`MeanEvidence`, with its own long-run variance): neither
view alone may call a bias, so the false-alarm bound holds for the pair, and a bias both see
costs little (measured: ``docs/policies.md``, "The bias channel").

Samples the scale test owns are left out (a ``+inf`` distance, an unwhitenable sample, a gross
one: a 2 m frame error is not a bias of 0.3 standard deviations); a change in the number of
components starts again. Reset with the whitening (the bridge's resets, a configuration change).
"""

import collections
from collections.abc import Sequence
import math
import operator

from .serial_whitening import SerialWhitener

MIXTURE_VARIANCE = 0.05
"""``tau2``: the mixture's variance of the per-outcome mean (``docs/policies.md``, "A bias")."""
MAX_SUFFIX = 1200
"""Longest suffix tested (2 min at 10 outcomes/s): bounds memory and how long a bias is held."""
SUFFIX_RATIO = 1.5
"""Ratio of the geometric grid of suffix lengths."""
LRV_BLOCK = 128
"""Block length of the long-run variance estimate (outcomes)."""
LRV_ALPHA = 1e-4
"""Forgetting factor of the long-run variance estimate and of the mean it centres on (horizon
~10,000 outcomes: 17 min at 10/s)."""
WARMUP_OUTCOMES = 3000
"""Outcomes before the evidence is reported (5 min at 10/s, 1 min at 50/s; 0 until then)."""
REWHITEN_ALPHA = 0.1
"""Forgetting factor of the fast AR(2) fit the second view re-whitens ``v`` with (0: one view)."""


def suffixes(max_suffix: int, ratio: float = SUFFIX_RATIO) -> tuple[int, ...]:
    """Return the suffix lengths tested: 1, 2, 3, 5, 8, ... up to ``max_suffix`` (included)."""
    lengths = {max_suffix}
    j = 1.0
    while j < max_suffix:
        lengths.add(int(round(j)))
        j *= ratio
    return tuple(sorted(lengths))


SUFFIXES = suffixes(MAX_SUFFIX)


class MeanEvidence:
    """The evidence that one stream of whitened outcomes has a mean (module documentation).

    :meth:`add` takes one outcome's ``v`` of each vec3 (None: left out) and returns ``(evidence
    in nats, position_share)`` after it. :class:`BiasEvidence` runs two of them.
    """

    __slots__ = ('max_suffix', 'mixture_variance', 'lrv_block', 'lrv_alpha', 'warmup',
                 'samples', '_sums', '_terms', '_shape', '_offset', '_padding', '_last', '_mean',
                 '_lrv', '_blocks')

    def __init__(self, max_suffix: int = MAX_SUFFIX,
                 mixture_variance: float = MIXTURE_VARIANCE, lrv_block: int = LRV_BLOCK,
                 lrv_alpha: float = LRV_ALPHA, warmup: int = WARMUP_OUTCOMES) -> None:
        for name, value, low, high in (('max_suffix', max_suffix, 1, 100_000),
                                       ('lrv_block', lrv_block, 1, max_suffix),
                                       ('warmup', warmup, 0, 10_000_000)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f'{name} must be an int in {low}..{high}, got {value!r}')
        if not 0.0 < mixture_variance <= 100.0:
            raise ValueError(f'mixture_variance must be in (0, 100], got {mixture_variance!r}')
        if not 0.0 < lrv_alpha <= 1.0:
            raise ValueError(f'lrv_alpha must be in (0, 1], got {lrv_alpha!r}')
        self.max_suffix = max_suffix
        self.mixture_variance = float(mixture_variance)
        self.lrv_block = lrv_block
        self.lrv_alpha = float(lrv_alpha)
        self.warmup = warmup
        self.reset()

    def reset(self) -> None:
        """Forget every sample (a start, a reset, a configuration change)."""
        self.samples = 0
        # The running sums of v, oldest first. Stored (as the slow mean) in a padded layout: a
        # vec3 of fewer than 3 components gets zeros up to 3, the orientation's start at
        # ``_offset``. A zero component adds exactly 0.0 to every sum of squares below (a
        # square is never -0.0), so the padding changes no result; it lets the usual shapes
        # (up to 3 + 3 components) take the unrolled loop of :meth:`_largest_term`.
        self._sums: collections.deque[tuple[float, ...]] = collections.deque(
            maxlen=self.max_suffix + 1)
        self._terms: tuple[tuple[int, float, float], ...] = ()
        self._shape = (-1, -1)   # (position, orientation) components; -1: no sample yet
        self._offset = 3
        self._padding: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
        self._last = (0.0, 0.0)
        self._mean: list[float] = []
        self._lrv = [0.0, 0.0]
        self._blocks = 0

    @property
    def last(self) -> tuple[float, float]:
        """Return ``(evidence, position_share)`` after the last sample (zeros before any)."""
        return self._last

    @property
    def warm(self) -> bool:
        """Return True once ``warmup`` outcomes have fed the evidence."""
        return self.samples >= self.warmup

    def long_run_variances(self) -> tuple[float, float]:
        """Return the (position, orientation) long-run variance ratios in use (module doc).

        ``inf`` (no evidence) before the first block of a vec3 that has components.
        """
        (position, orientation), blocks = self._shape, self._blocks
        return (math.inf if position <= 0 or blocks <= 0 else max(1.0, self._lrv[0]),
                math.inf if orientation <= 0 or blocks <= 0 else max(1.0, self._lrv[1]))

    def add(self, position: Sequence[float] | None, orientation: Sequence[float] | None
            ) -> tuple[float, float]:
        """Fold one outcome's ``v`` in and return ``(evidence, position_share)``.

        Either vec3 None (or non-finite) leaves the outcome out: the evidence stays as it was.
        """
        if position is None or orientation is None:
            return self._last
        shape = (len(position), len(orientation))
        if not (shape[0] or shape[1]) or not (all(map(math.isfinite, position))
                                              and all(map(math.isfinite, orientation))):
            return self._last
        if shape != self._shape:
            self._start(shape)
        pad_p, pad_o = self._padding
        v = (*position, *pad_p, *orientation, *pad_o)
        sums = self._sums
        if not sums:
            sums.append((0.0,) * len(v))
        now = tuple(map(operator.add, sums[-1], v))
        sums.append(now)
        self.samples += 1
        self._update_lrv(v, now)
        if self.samples < self.warmup:
            return self._last
        self._last = self._largest_term(now)
        return self._last

    def _start(self, shape: tuple[int, int]) -> None:
        """Start again with ``shape`` ``(position, orientation)`` components."""
        self.reset()
        self._shape = shape
        widths = (max(3, shape[0]), max(3, shape[1]))
        self._offset = widths[0]
        self._padding = ((0.0,) * (widths[0] - shape[0]), (0.0,) * (widths[1] - shape[1]))
        self._mean = [0.0] * (widths[0] + widths[1])
        tau2 = self.mixture_variance
        half = (shape[0] + shape[1]) / 2.0
        self._terms = tuple(
            (j, tau2 / (2.0 * (1.0 + j * tau2)), half * math.log1p(j * tau2))
            for j in suffixes(self.max_suffix))

    def _largest_term(self, now: tuple[float, ...]) -> tuple[float, float]:
        """Return ``(max(0, max_j L_j), position_share)`` for the sums ``now`` (module doc)."""
        scale_p, scale_o = self.long_run_variances()
        sums = self._sums
        count = len(sums) - 1
        split = self._offset
        # Both vec3 padded to 3 (the usual shapes): |S_j|^2 unrolled, each vec3's summed from
        # 0.0 in component order, as the loops of the other shapes do.
        unrolled = len(now) == 6 and split == 3
        n0, n1, n2, n3, n4, n5 = now if unrolled else (0.0,) * 6
        best, share = 0.0, 0.0
        for j, a, c in self._terms:
            if j > count:
                break
            past = sums[-1 - j]
            if unrolled:
                p0, p1, p2, p3, p4, p5 = past
                d0, d1, d2 = n0 - p0, n1 - p1, n2 - p2
                sp = 0.0 + d0 * d0 + d1 * d1 + d2 * d2
                d0, d1, d2 = n3 - p3, n4 - p4, n5 - p5
                so = 0.0 + d0 * d0 + d1 * d1 + d2 * d2
            else:
                sp = so = 0.0
                for i in range(split):
                    d = now[i] - past[i]
                    sp += d * d
                for i in range(split, len(now)):
                    d = now[i] - past[i]
                    so += d * d
            sp /= scale_p
            so /= scale_o
            value = a * (sp + so) - c
            if value > best:
                best = value
                share = sp / (sp + so) if sp + so > 0.0 else 0.0
        return best, share

    def _update_lrv(self, v: tuple[float, ...], now: tuple[float, ...]) -> None:
        """Fold ``v`` into the slow mean and the trailing block into the long-run variances."""
        mean = self._mean
        a = max(self.lrv_alpha, 1.0 / self.samples)
        for i, value in enumerate(v):
            mean[i] += a * (value - mean[i])
        block = self.lrv_block
        sums = self._sums
        if len(sums) <= block:
            return
        past = sums[-1 - block]
        self._blocks += 1
        b = max(self.lrv_alpha, 1.0 / self._blocks)
        lrv = self._lrv
        for k, (low, m) in enumerate(((0, self._shape[0]), (self._offset, self._shape[1]))):
            if m > 0:
                total = 0.0
                for i in range(low, low + m):
                    d = now[i] - past[i] - block * mean[i]
                    total += d * d
                lrv[k] += b * (total / (block * m) - lrv[k])


class BiasEvidence:
    """The bias channel's evidence: the smaller of two views of one stream (module documentation).

    One :class:`MeanEvidence` reads ``v`` as given; the other reads ``v`` whitened again, per
    vec3, by a fast AR(2) fit (forgetting ``rewhiten_alpha``, centred on its own fast mean, so a
    constant bias passes it at full strength while a correlation that has just risen is
    removed). The evidence is the smaller of the two, with that view's position share: neither
    view alone may call a bias. ``rewhiten_alpha`` 0 keeps the first view only.
    """

    __slots__ = ('rewhiten_alpha', '_views', '_fast', '_last', '_shape')

    def __init__(self, max_suffix: int = MAX_SUFFIX,
                 mixture_variance: float = MIXTURE_VARIANCE, lrv_block: int = LRV_BLOCK,
                 lrv_alpha: float = LRV_ALPHA, warmup: int = WARMUP_OUTCOMES,
                 rewhiten_alpha: float = REWHITEN_ALPHA) -> None:
        if not 0.0 <= rewhiten_alpha <= 1.0:
            raise ValueError(f'rewhiten_alpha must be in [0, 1], got {rewhiten_alpha!r}')
        self.rewhiten_alpha = float(rewhiten_alpha)
        views = 2 if rewhiten_alpha > 0.0 else 1
        self._views = tuple(MeanEvidence(max_suffix, mixture_variance, lrv_block, lrv_alpha,
                                         warmup) for _ in range(views))
        self._fast = tuple(
            SerialWhitener(2, rewhiten_alpha, warmup_samples=0, guard_alpha=0.0)
            for _ in range(2)) if views == 2 else ()
        self._last = (0.0, 0.0)
        self._shape = (-1, -1)

    def reset(self) -> None:
        """Forget every sample (a start, a reset, a configuration change)."""
        for view in self._views:
            view.reset()
        for whitener in self._fast:
            whitener.reset()
        self._last = (0.0, 0.0)
        self._shape = (-1, -1)

    @property
    def samples(self) -> int:
        """Return the outcomes that have fed the evidence since the last reset."""
        return self._views[0].samples

    @property
    def warmup(self) -> int:
        """Return the outcomes before the evidence is reported."""
        return self._views[0].warmup

    @property
    def warm(self) -> bool:
        """Return True once ``warmup`` outcomes have fed the evidence."""
        return self._views[0].warm

    @property
    def last(self) -> tuple[float, float]:
        """Return ``(evidence, position_share)`` after the last sample (zeros before any)."""
        return self._last

    def long_run_variances(self) -> tuple[float, float]:
        """Return the first view's (position, orientation) long-run variance ratios in use."""
        return self._views[0].long_run_variances()

    def add(self, position: Sequence[float] | None, orientation: Sequence[float] | None
            ) -> tuple[float, float]:
        """Fold one outcome's ``v`` in and return ``(evidence, position_share)``.

        Either vec3 None (or non-finite) leaves the outcome out: the evidence stays as it was.
        """
        if position is None or orientation is None:
            return self._last
        if not (all(map(math.isfinite, position)) and all(map(math.isfinite, orientation))):
            return self._last
        shape = (len(position), len(orientation))
        if shape != self._shape:   # another number of components: start again
            self.reset()
            self._shape = shape
        direct = self._views[0].add(position, orientation)
        if len(self._views) == 1:
            self._last = direct
            return direct
        # Regular stamps: the fast fit's chain never breaks on a gap (the producer's did).
        stamp = self._views[0].samples
        fast_p, fast_o = self._fast
        rewhitened = self._views[1].add(
            fast_p.whiten(stamp, tuple(position)) if position else tuple(position),
            fast_o.whiten(stamp, tuple(orientation)) if orientation else tuple(orientation))
        self._last = rewhitened if rewhitened[0] < direct[0] else direct
        return self._last
