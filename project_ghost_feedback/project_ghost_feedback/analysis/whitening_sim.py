# SPDX-License-Identifier: Apache-2.0
"""Vectorised mirror of the bridge's prewhitening (``bridge/whitening.py``) for the benches.

Bench helper (numpy, never imported by the pure core or the nodes). :func:`errors` draws the
spatially whitened errors ``z`` of both vec3 of many streams at once (AR(1), a mix of two time
constants, i.i.d.), :func:`whiten` applies the rules of
:class:`~..core.serial_whitening.SerialWhitener` to all streams at once (regular sampling: no
chain breaks), and :func:`self_check` compares the two sample by sample.
"""

import math

import numpy as np

from ..core.serial_whitening import (
    DEFAULT_ALPHA, DEFAULT_GUARD_ALPHA, GUARD_RATIO, MAX_PHI, MIN_INNOVATION_RATIO, SerialWhitener)


def ar1(rng, streams, length, rho, dim=3, vectors=2):
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


def errors(rng, streams, length, model, dim=3, vectors=2):
    """Return unit-variance errors of ``model``: ``('ar1', rho)`` or ``('mix', r1, r2)``.

    The mix is the sum of two independent AR(1) of equal variance (two time constants).
    """
    if model[0] == 'ar1':
        return ar1(rng, streams, length, model[1], dim, vectors)
    if model[0] == 'mix':
        return (ar1(rng, streams, length, model[1], dim, vectors)
                + ar1(rng, streams, length, model[2], dim, vectors)) / math.sqrt(2.0)
    raise ValueError(f'unknown model {model!r}')


def _yule_walker(r1, r2, order):
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

    def __init__(self, streams, vectors, dim, alpha):
        self.alpha = alpha
        self.mean = np.zeros((streams, vectors, dim))
        self.g0 = np.zeros((streams, vectors))
        self.g1 = np.zeros((streams, vectors))
        self.g2 = np.zeros((streams, vectors))

    def fit(self, order):
        """Return ``(phi1, phi2, s2)`` of the Yule-Walker fit of ``order`` (phi2 0 below 2)."""
        with np.errstate(invalid='ignore', divide='ignore'):
            safe = np.where(self.g0 > 0.0, self.g0, 1.0)
            r1 = np.where(self.g0 > 0.0, self.g1 / safe, 0.0)
            r2 = np.where(self.g0 > 0.0, self.g2 / safe, 0.0)
        p1, p2, s2 = _yule_walker(r1, r2, order)
        return p1, (p2 if order >= 2 else np.zeros_like(p1)), s2

    def update(self, t, zt, lag1, lag2, order):
        """Fold sample ``t`` in (``samples = t``, ``pairs = t - 1``)."""
        dim = zt.shape[-1]
        a = max(self.alpha, 1.0 / (t + 1))
        self.mean += a * (zt - self.mean)
        c = zt - self.mean
        self.g0 += a * ((c * c).sum(-1) / dim - self.g0)
        if lag1 is not None and order >= 1:
            b = max(self.alpha, 1.0 / t)
            self.g1 += b * ((c * (lag1 - self.mean)).sum(-1) / dim - self.g1)
            if lag2 is not None and order >= 2:
                self.g2 += b * ((c * (lag2 - self.mean)).sum(-1) / dim - self.g2)


def whiten(z, order=2, alpha=DEFAULT_ALPHA, guard_alpha=DEFAULT_GUARD_ALPHA):
    """Return ``v`` (same shape as ``z``: streams, length, vectors, dim) whitened in time.

    Every sample is returned (the warm-up is the caller's: the first ``warmup_samples``). The
    guard (``guard_alpha`` > 0) as in :class:`~..core.serial_whitening.SerialWhitener`.
    """
    streams, length, vectors, dim = z.shape
    v = np.empty_like(z)
    estimates = [_Autocovariance(streams, vectors, dim, alpha)]
    if guard_alpha:
        estimates.append(_Autocovariance(streams, vectors, dim, guard_alpha))
    lag1 = lag2 = None
    for t in range(length):
        zt = z[:, t]
        used = 0 if lag1 is None or order == 0 else (1 if lag2 is None or order == 1 else 2)
        if not used:
            v[:, t] = zt
        else:
            p1, p2, s2 = estimates[0].fit(used)
            if guard_alpha:
                f1, f2, fs2 = estimates[1].fit(used)
                faster = fs2 > GUARD_RATIO * s2
                p1, p2, s2 = (np.where(faster, f1, p1), np.where(faster, f2, p2),
                              np.where(faster, fs2, s2))
            prediction = p1[..., None] * lag1
            if used == 2:
                prediction = prediction + p2[..., None] * lag2
            v[:, t] = (zt - prediction) / np.sqrt(s2)[..., None]
        for estimate in estimates:
            estimate.update(t, zt, lag1, lag2, order)
        lag2, lag1 = lag1, zt
    return v


def self_check(seed=7, length=400, order=2):
    """Return the largest |difference| between :func:`whiten` and SerialWhitener (one stream)."""
    rng = np.random.default_rng(seed)
    z = errors(rng, 1, length, ('mix', 0.97, 0.5))
    mirror = whiten(z, order=order)
    worst = 0.0
    for vec in range(z.shape[2]):
        engine = SerialWhitener(order=order)
        for t in range(length):
            v = engine.whiten(t * 100_000_000, tuple(float(x) for x in z[0, t, vec]))
            assert v is not None
            worst = max(worst, float(np.max(np.abs(np.array(v) - mirror[0, t, vec]))))
    return worst
