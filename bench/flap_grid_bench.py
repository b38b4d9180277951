#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Default policy on a fine grid: flapping per k, one outlier by band, the per-window rate.

The numpy mirror of ``vec3_scale`` (``verification/vec3_sim.py``, checked against
``core/loop.py`` by ``bench/honesty_bench.py``) on i.i.d. Gaussian outcomes, window 32, for two
configurations: the false-alarm budget in time at 10 outcomes/s (the default) and budget 0 (the
per-window thresholds bags recorded before the budget replay with; docs/policies.md's target table).

- **flapping**: level changes per 1000 outcomes at steady state at constant k, every 0.01 from
  1.00 to 3.00 and at 4, 5, 10 (``--streams`` streams of ``--length`` after a burn-in of 256);
  the worst k with its standard error;
- **one outlier**: an honest stream with one position distance ``d`` (orientation calibrated) at
  a full window: the share of streams downgraded at the outlier and the median number of
  outcomes the downgrade is held from it (bootstrap s.e.), per band of ``d``;
- **per full window** (budget 0 only): the false-downgrade share of full windows, with its s.e.

Figures only, never a gate. ``--quick`` for a short run.
"""

import argparse
import math
import time

import numpy as np
from numpy.typing import NDArray

from project_ghost_feedback.verification import vec3_sim
from project_ghost_feedback.core.feedback import make_policy, Vec3ScalePolicy

KNOWN = 2
WINDOW = 32
BURN = 256
GRID = tuple(round(1.0 + 0.01 * i, 2) for i in range(201)) + (4.0, 5.0, 10.0)
BANDS = ((4.0, 5.0), (5.0, 5.5), (5.5, 5.7), (5.7, 6.0), (6.0, 7.0), (7.0, 8.0), (8.0, 10.0),
         (10.0, 12.0))
CONFIGS = {'budget 1 per 24 h at 10 outcomes/s (default)': ({}, 10.0),
           'budget 0 (per-window thresholds)': ({'false_alarm_budget_per_day': 0.0}, None)}


def _median_se(values: NDArray[np.int64], rng: np.random.Generator) -> tuple[float, float]:
    """Return (median, bootstrap s.e. over 200 resamples) of ``values``."""
    boots = [np.median(rng.choice(values, len(values))) for _ in range(200)]
    return float(np.median(values)), float(np.std(boots))


def flapping(policy: Vec3ScalePolicy, rate_hz: float | None, rng: np.random.Generator,
             streams: int, length: int) -> dict[float, tuple[float, float]]:
    """Return ``{k: (changes per 1000, s.e.)}`` over the grid."""
    out: dict[float, tuple[float, float]] = {}
    for k in GRID:
        xp, xo = vec3_sim.squared_distances(rng, streams, BURN + length, scale=k)
        lv = vec3_sim.levels(policy, xp, xo, WINDOW, rate_hz=rate_hz)[:, BURN:]
        ch = (np.diff(lv, axis=1) != 0).sum(axis=1) * 1000.0 / (length - 1)
        out[k] = (float(ch.mean()), float(ch.std(ddof=1) / math.sqrt(streams)))
    return out


def outliers(policy: Vec3ScalePolicy, rate_hz: float | None, rng: np.random.Generator,
             streams: int) -> dict[tuple[float, float], tuple[float, float, float, float]]:
    """Return per band ``(share downgraded at the outlier, median hold, its s.e.)``."""
    at = BURN
    out: dict[tuple[float, float], tuple[float, float, float, float]] = {}
    for low, high in BANDS:
        xp, xo = vec3_sim.squared_distances(rng, streams, at + 4 * WINDOW)
        d = rng.uniform(low, high, streams)
        xp[:, at] = d * d
        lv = vec3_sim.levels(policy, xp, xo, WINDOW, rate_hz=rate_hz)
        clean = lv[:, at - 1] == KNOWN
        down = (lv[:, at:] != KNOWN)
        fired = down[:, 0] & clean
        hold = np.where(down.all(axis=1), down.shape[1], down.argmin(axis=1))[fired]
        share = float(fired.sum() / max(clean.sum(), 1))
        if hold.size:
            median, se = _median_se(hold, rng)
        else:
            median, se = float('nan'), float('nan')
        out[(low, high)] = (share, vec3_sim.binomial_se(share, int(clean.sum())), median, se)
    return out


def per_window(policy: Vec3ScalePolicy, rng: np.random.Generator, streams: int,
               length: int) -> tuple[float, float]:
    """Return (share of full windows downgraded, s.e. over streams), budget-free policy."""
    xp, xo = vec3_sim.squared_distances(rng, streams, length)
    lv = vec3_sim.levels(policy, xp, xo, WINDOW)[:, WINDOW - 1:]
    down = (lv != KNOWN).mean(axis=1)
    return float(down.mean()), float(down.std(ddof=1) / math.sqrt(streams))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--streams', type=int, default=40, help='streams per k')
    parser.add_argument('--length', type=int, default=5000, help='outcomes per stream')
    parser.add_argument('--outlier-streams', type=int, default=20000)
    parser.add_argument('--window-streams', type=int, default=200,
                        help='streams of 200,000 outcomes for the per-window rate')
    parser.add_argument('--seed', type=int, default=11)
    parser.add_argument('--quick', action='store_true')
    args = parser.parse_args()
    if args.quick:
        args.streams, args.length, args.outlier_streams, args.window_streams = 6, 1000, 2000, 4
    rng = np.random.default_rng(args.seed)
    for name, (parameters, rate_hz) in CONFIGS.items():
        started = time.time()
        policy = make_policy('vec3_scale', parameters)
        assert isinstance(policy, Vec3ScalePolicy)
        print(f'\n### vec3_scale, {name}\n')
        flaps = flapping(policy, rate_hz, rng, args.streams, args.length)
        worst = max(flaps, key=lambda k: flaps[k][0])
        print(f'level changes per 1000 outcomes at steady state ({args.streams} streams of '
              f'{args.length}, k = 1.00, 1.01, ..., 3.00, 4, 5, 10): worst '
              f'{flaps[worst][0]:.1f} +- {flaps[worst][1]:.1f} at k = {worst:g}; above 10 at '
              f'{[k for k, v in flaps.items() if v[0] > 10.0] or "no k"}')
        peaks = sorted(flaps, key=lambda k: -flaps[k][0])[:5]
        print('five highest: ' + ', '.join(f'k = {k:g}: {flaps[k][0]:.1f} +- {flaps[k][1]:.1f}'
                                           for k in peaks))
        print('\n| d (position; orientation calibrated) | downgraded at the outlier | held, '
              'outcomes (median +- s.e.) |\n|---|---|---|')
        for (low, high), (share, se, median, mse) in outliers(
                policy, rate_hz, rng, args.outlier_streams).items():
            held = f'{median:.0f} +- {mse:.1f}' if share > 0 else '-'
            print(f'| {low:g}-{high:g} | {100 * share:.1f}% +- {100 * se:.1f} | {held} |')
        if rate_hz is None:
            mean, se = per_window(policy, rng, args.window_streams, 200_000)
            print(f'\nfalse downgrades per full window: {100 * mean:.3f}% +- {100 * se:.3f} '
                  f'({args.window_streams} streams of 200,000 outcomes)')
        print(f'\n({time.time() - started:.0f} s)')


if __name__ == '__main__':
    main()
