# SPDX-License-Identifier: Apache-2.0
"""Vectorised mirror of the bridge's prewhitening (``bridge/whitening.py``) for the benches.

Bench helper (numpy, never imported by the pure core or the nodes). :func:`errors` draws the
spatially whitened errors ``z`` of both vec3 of many streams at once (AR(1), a mix of two time
constants, i.i.d.), :func:`whiten` applies the rules of
:class:`~..core.serial_whitening.SerialWhitener` to all streams at once (regular sampling: no
gaps; gross samples break a stream's chain), and :func:`self_check` compares the two sample by
sample; :func:`bias_evidence` mirrors the bias channel (``core/bias_evidence.py``) and
:func:`bias_self_check` compares it with the engine.
"""

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.bias_evidence import (
    BiasEvidence, LRV_ALPHA, LRV_BLOCK, MAX_SUFFIX, MIXTURE_VARIANCE, REWHITEN_ALPHA, suffixes,
    WARMUP_OUTCOMES)
from ..core.serial_whitening import (
    DEFAULT_ALPHA, DEFAULT_GUARD_ALPHA, gross_limit, GUARD_RATIO, MAX_PHI, MIN_INNOVATION_RATIO,
    SerialWhitener)

_FloatArray = NDArray[np.float64]
_Fit = tuple[_FloatArray, _FloatArray, _FloatArray]
"""``(phi1, phi2, s2)`` per stream and vec3."""


def ar1(rng: np.random.Generator, streams: int, length: int, rho: float, dim: int = 3,
        vectors: int = 2) -> _FloatArray:
    """Return unit-variance AR(1) errors, shape ``(streams, length, vectors, dim)``."""
    w = rng.standard_normal((streams, length, vectors, dim))
    if rho == 0.0:
        return w
    e = np.empty_like(w)
    e[:, 0] = w[:, 0]
    c = math.sqrt(1.0 - rho * rho)
    for t in range(1, length):
        e[:, t] = rho * e[:, t - 1] + c * w[:, t]
    return e


def errors(rng: np.random.Generator, streams: int, length: int, model: tuple[Any, ...],
           dim: int = 3, vectors: int = 2) -> _FloatArray:
    """Return unit-variance errors of ``model``: ``('ar1', rho)`` or ``('mix', r1, r2)``.

    The mix is the sum of two independent AR(1) of equal variance (two time constants).
    """
    if model[0] == 'ar1':
        return ar1(rng, streams, length, model[1], dim, vectors)
    if model[0] == 'mix':
        return (ar1(rng, streams, length, model[1], dim, vectors)
                + ar1(rng, streams, length, model[2], dim, vectors)) / math.sqrt(2.0)
    raise ValueError(f'unknown model {model!r}')


def _yule_walker(r1: _FloatArray, r2: _FloatArray, order: int) -> _Fit:
    """Vectorised :func:`~..core.serial_whitening.yule_walker` (arrays of autocorrelations)."""
    r1 = np.clip(r1, -MAX_PHI, MAX_PHI)
    phi1_ar1, s2_ar1 = r1, 1.0 - r1 * r1
    if order < 2:
        return phi1_ar1, np.zeros_like(r1), s2_ar1
    r2 = np.clip(r2, -MAX_PHI, MAX_PHI)
    den = 1.0 - r1 * r1
    phi1 = r1 * (1.0 - r2) / den
    phi2 = (r2 - r1 * r1) / den
    s2 = 1.0 - phi1 * r1 - phi2 * r2
    ok = ((np.abs(phi2) < 1.0) & (phi1 + phi2 < 1.0) & (phi2 - phi1 < 1.0)
          & (s2 >= MIN_INNOVATION_RATIO) & (np.abs(phi2) <= MAX_PHI))
    return (np.where(ok, phi1, phi1_ar1), np.where(ok, phi2, 0.0), np.where(ok, s2, s2_ar1))


class _Autocovariance:
    """Vectorised mirror of ``core/serial_whitening._Autocovariance``."""

    def __init__(self, streams: int, vectors: int, dim: int, alpha: float) -> None:
        self.alpha = alpha
        self.mean = np.zeros((streams, vectors, dim))
        self.g0 = np.zeros((streams, vectors))
        self.g1 = np.zeros((streams, vectors))
        self.g2 = np.zeros((streams, vectors))

    def fit(self, order: int) -> _Fit:
        """Return ``(phi1, phi2, s2)`` of the Yule-Walker fit of ``order`` (phi2 0 below 2)."""
        with np.errstate(invalid='ignore', divide='ignore'):
            safe = np.where(self.g0 > 0.0, self.g0, 1.0)
            r1 = np.where(self.g0 > 0.0, self.g1 / safe, 0.0)
            r2 = np.where(self.g0 > 0.0, self.g2 / safe, 0.0)
        p1, p2, s2 = _yule_walker(r1, r2, order)
        return p1, (p2 if order >= 2 else np.zeros_like(p1)), s2

    def chain_fit(self, used: NDArray[Any], order: int) -> _Fit:
        """Return the fit each stream's chain can use (``used`` lags: 0, 1 or 2, an array)."""
        p1, p2, s2 = self.fit(1)
        p2 = np.zeros_like(p1)
        if order >= 2:
            q1, q2, t2 = self.fit(2)
            two = used >= 2
            p1, p2, s2 = np.where(two, q1, p1), np.where(two, q2, p2), np.where(two, t2, s2)
        return p1, p2, s2

    def update(self, keep: NDArray[np.bool_], zt: _FloatArray, lag1: _FloatArray, lag2: _FloatArray,
               chain: NDArray[Any], samples: _FloatArray, pairs: _FloatArray) -> None:
        """Fold ``zt`` in where ``keep`` (per stream and vec3: counts and chain lengths)."""
        dim = zt.shape[-1]
        a = np.maximum(self.alpha, 1.0 / (samples + 1))
        mean = np.where(keep[..., None], self.mean + a[..., None] * (zt - self.mean), self.mean)
        self.mean = mean
        c = zt - mean
        self.g0 = np.where(keep, self.g0 + a * ((c * c).sum(-1) / dim - self.g0), self.g0)
        b = np.maximum(self.alpha, 1.0 / (pairs + 1))
        one = keep & (chain >= 1)
        self.g1 = np.where(one, self.g1 + b * ((c * (lag1 - mean)).sum(-1) / dim - self.g1),
                           self.g1)
        two = keep & (chain >= 2)
        self.g2 = np.where(two, self.g2 + b * ((c * (lag2 - mean)).sum(-1) / dim - self.g2),
                           self.g2)


def whiten(z: _FloatArray, order: int = 2, alpha: float = DEFAULT_ALPHA,
           guard_alpha: float = DEFAULT_GUARD_ALPHA,
           gross: NDArray[Any] | None = None) -> _FloatArray:
    """Return ``v`` (same shape as ``z``: streams, length, vectors, dim) whitened in time.

    Every sample is returned (the warm-up is the caller's: the first ``warmup_samples``). The
    guard (``guard_alpha`` > 0) and the gross samples (kept out of the estimates, a new chain
    after them) as in :class:`~..core.serial_whitening.SerialWhitener`; ``gross``, if given, is
    an int array ``(streams, vectors)`` that counts them.
    """
    streams, length, vectors, dim = z.shape
    v = np.empty_like(z)
    estimates = [_Autocovariance(streams, vectors, dim, alpha)]
    if guard_alpha:
        estimates.append(_Autocovariance(streams, vectors, dim, guard_alpha))
    limit = gross_limit(dim)
    samples = np.zeros((streams, vectors))
    pairs = np.zeros((streams, vectors))
    chain = np.zeros((streams, vectors), dtype=int)
    lag1 = np.zeros((streams, vectors, dim))
    lag2 = np.zeros((streams, vectors, dim))
    for t in range(length):
        zt = z[:, t]
        used = np.minimum(chain, order)
        if order == 0 or not used.any():
            v[:, t] = zt
        else:
            p1, p2, s2 = estimates[0].chain_fit(used, order)
            if guard_alpha:
                f1, f2, fs2 = estimates[1].chain_fit(used, order)
                faster = fs2 > GUARD_RATIO * s2
                p1, p2, s2 = (np.where(faster, f1, p1), np.where(faster, f2, p2),
                              np.where(faster, fs2, s2))
            p2 = np.where(used >= 2, p2, 0.0)
            whitened = (zt - p1[..., None] * lag1 - p2[..., None] * lag2) / np.sqrt(s2)[..., None]
            v[:, t] = np.where((used > 0)[..., None], whitened, zt)
        keep = (zt * zt).sum(-1) <= limit
        if gross is not None:
            gross += ~keep
        for estimate in estimates:
            estimate.update(keep, zt, lag1, lag2, chain, samples, pairs)
        pairs += keep & (chain >= 1)
        samples += keep
        k = keep[..., None]
        lag2 = np.where(k, lag1, lag2)
        lag1 = np.where(k, zt, lag1)
        chain = np.where(keep, np.minimum(chain + 1, order), 0)
    return v


def self_check(seed: int = 7, length: int = 400, order: int = 2) -> float:
    """Return the largest |difference| between :func:`whiten` and SerialWhitener (one stream).

    The stream has a burst of 4x from 40% to 45% of its length and one 8-sigma outlier at 75%
    (gross samples: chains broken, estimates left alone).
    """
    rng = np.random.default_rng(seed)
    z = errors(rng, 1, length, ('mix', 0.97, 0.5))
    z[:, int(0.4 * length):int(0.45 * length)] *= 4.0
    z[:, int(0.75 * length)] += 8.0
    gross = np.zeros((1, z.shape[2]), dtype=int)
    mirror = whiten(z, order=order, gross=gross)
    assert gross.min() > 0, 'the check must cover gross samples'
    engines: list[SerialWhitener] = []
    worst = 0.0
    for vec in range(z.shape[2]):
        engine = SerialWhitener(order=order)
        engines.append(engine)
        for t in range(length):
            v = engine.whiten(t * 100_000_000, tuple(float(x) for x in z[0, t, vec]))
            assert v is not None
            worst = max(worst, float(np.max(np.abs(np.array(v) - mirror[0, t, vec]))))
    assert [e.gross for e in engines] == gross[0].tolist()
    return worst


def bias_evidence(v: _FloatArray, max_suffix: int = MAX_SUFFIX,
                  mixture_variance: float = MIXTURE_VARIANCE, lrv_block: int = LRV_BLOCK,
                  lrv_alpha: float = LRV_ALPHA, warmup: int = WARMUP_OUTCOMES,
                  rewhiten_alpha: float = REWHITEN_ALPHA) -> tuple[_FloatArray, _FloatArray]:
    """Return ``(evidence, position_share)``, shape ``(streams, length)``, of emitted ``v``.

    ``v``: ``(streams, length, 2, m)``, the outcomes the bridge emits (after the warm-up), both
    vec3. The rules of :class:`~..core.bias_evidence.BiasEvidence`: the smaller of the mean
    evidence of ``v`` and of ``v`` whitened again by a fast AR(2) fit (:func:`whiten`,
    ``rewhiten_alpha``, no guard), each by :func:`mean_evidence`.
    """
    args = (max_suffix, mixture_variance, lrv_block, lrv_alpha, warmup)
    direct, direct_share = mean_evidence(v, *args)
    if not rewhiten_alpha:
        return direct, direct_share
    again, again_share = mean_evidence(
        whiten(v, order=2, alpha=rewhiten_alpha, guard_alpha=0.0), *args)
    smaller = again < direct
    return np.where(smaller, again, direct), np.where(smaller, again_share, direct_share)


def mean_evidence(v: _FloatArray, max_suffix: int = MAX_SUFFIX,
                  mixture_variance: float = MIXTURE_VARIANCE, lrv_block: int = LRV_BLOCK,
                  lrv_alpha: float = LRV_ALPHA,
                  warmup: int = WARMUP_OUTCOMES) -> tuple[_FloatArray, _FloatArray]:
    """Return ``(evidence, position_share)`` of one view (``core/bias_evidence.MeanEvidence``).

    The long-run variances and the warm-up step by step, every suffix on its grid vectorised
    over time, but every sample counts: the engine leaves gross samples out, which no honest or
    biased stream of the benches has (``bias_self_check`` compares the two).
    """
    streams, length = v.shape[:2]
    split = v.shape[3]
    flat = v.reshape(streams, length, -1)
    width = flat.shape[2]
    sums = np.concatenate([np.zeros((streams, 1, width)), np.cumsum(flat, axis=1)], axis=1)
    scales = np.full((2, streams, length), np.inf)
    mean = np.zeros((streams, width))
    lrv = np.zeros((2, streams))
    parts = ((0, split), (split, width))
    for t in range(length):
        samples = t + 1
        mean += max(lrv_alpha, 1.0 / samples) * (flat[:, t] - mean)
        if samples < lrv_block:
            continue
        blocks = samples - lrv_block + 1
        b = max(lrv_alpha, 1.0 / blocks)
        d = sums[:, samples] - sums[:, samples - lrv_block] - lrv_block * mean
        for k, (low, high) in enumerate(parts):
            lrv[k] += b * ((d[:, low:high] ** 2).sum(axis=1) / (lrv_block * (high - low))
                           - lrv[k])
            scales[k, :, t] = np.maximum(1.0, lrv[k])
    best = np.zeros((streams, length))
    share = np.zeros((streams, length))
    half = width / 2.0
    for j in suffixes(max_suffix):
        if j > length:
            break
        a = mixture_variance / (2.0 * (1.0 + j * mixture_variance))
        c = half * math.log1p(j * mixture_variance)
        s = sums[:, j:] - sums[:, :-j]   # the suffix of j ending at each step j-1 .. length-1
        sp = np.einsum('ntk,ntk->nt', s[..., :split], s[..., :split]) / scales[0, :, j - 1:]
        so = np.einsum('ntk,ntk->nt', s[..., split:], s[..., split:]) / scales[1, :, j - 1:]
        total = sp + so
        value = a * total - c
        region = best[:, j - 1:]
        better = value > region
        best[:, j - 1:] = np.where(better, value, region)
        with np.errstate(invalid='ignore', divide='ignore'):
            part = np.where(total > 0.0, sp / total, 0.0)
        share[:, j - 1:] = np.where(better, part, share[:, j - 1:])
    cold = np.arange(1, length + 1) < warmup
    best[:, cold] = 0.0
    share[:, cold] = 0.0
    return best, share


def bias_self_check(seed: int = 11, length: int = 4500) -> float:
    """Return the largest |difference| between :func:`bias_evidence` and BiasEvidence."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((2, length, 2, 3))
    v[1, 2 * length // 3:, 0] += 0.3   # a position bias in the last third of the second stream
    mirror, share = bias_evidence(v)
    worst = 0.0
    for stream in range(v.shape[0]):
        engine = BiasEvidence()
        for t in range(length):
            value, part = engine.add(tuple(v[stream, t, 0]), tuple(v[stream, t, 1]))
            worst = max(worst, abs(value - mirror[stream, t]), abs(part - share[stream, t]))
    assert mirror[1, -1] > 20.0, 'the check must cover a detected bias'
    return worst
