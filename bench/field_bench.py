#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Field bench: innovation sources through the feedback loop, per source (docs/field.md).

A Kalman filter per source (independent scalar filters, random-walk state, q = 1e-4 r per step,
10 Hz of stamp time) publishes innovations; ``core/innovation.py``'s InnovationPairing turns
them into outcomes and ``core/loop.py``'s FeedbackLoop (the feedback node's loop, default policy)
judges them, one claim (KNOWN) per outcome: the node's path without DDS. Per source:

- false downgrades: the fraction of honest starts downgraded within 60 s (binomial standard
  error) and the rate per hour of honest stream (first downgrades / hours observed, Poisson
  standard error);
- detection delay: seconds from the moment the measurement noise becomes k times (standard
  deviation) what the filter claims to the first UNCERTAIN-or-worse (k = 1.5) and to UNKNOWN
  (k = 3), after 10 s honest; mean +- standard error and median over runs.

The GNSS row holds an independent NavSatFix against the filter's estimate through
``bridge/navsat_innovation.py`` (the navsat_bridge node's rule), as test/ros/test_navsat_bridge.py.
Its bias channel (``--bias-hours``, default 100 h of honest 1 h streams after the 600 s warm-up,
``--bias-runs`` per offset): false episodes per hour split by channel, and the time to find a fix
offset of 0.5 m and 1 m east (noise 1 m per axis).

Prints a markdown table. ``--quick`` for a short run, ``--only WORD`` for some sources,
``--bias-only`` for the bias channel alone. Figures only, never a gate.
"""

import argparse
import math
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any, cast

from project_ghost_feedback.core import BeliefSelfAssessment, NS_PER_S, PredictionOutcome
from project_ghost_feedback.core import SelfAssessmentLevel
from project_ghost_feedback.core.bias_evidence import WARMUP_OUTCOMES
from project_ghost_feedback.core.innovation import (
    InnovationOutcome,
    InnovationPairing,
    KIND_ORIENTATION,
    KIND_POSITION,
)
from project_ghost_feedback.core.feedback.chi_square import chi_square_quantile
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.bridge.navsat_innovation import FixInnovation, NavSatInnovations
from project_ghost_feedback.navsat_reference import enu_to_geodetic
from project_ghost_feedback.sim.random_walk_filter import RandomWalkFilter

RATE_HZ = 10
PERIOD_NS = NS_PER_S // RATE_HZ
R = 1.0
Q = 1e-4
KNOWN = SelfAssessmentLevel.KNOWN
UNKNOWN = SelfAssessmentLevel.UNKNOWN
P, OR = KIND_POSITION, KIND_ORIENTATION
GNSS = 'NavSatFix vs estimate (navsat_bridge)'
GNSS_R = 1.0  # true fix noise variance per axis, m^2 (the estimate's own P is ~0.01 m^2)
DATUM = (47.3769, 8.5417, 408.0)
SOURCES = {
    # name: component kinds (what the filter reports)
    'position_3d (GNSS-like)': (P, P, P),
    'planar_2d (x, y)': (P, P),
    'scalar_1d (one aid source axis)': (P,),
    'pose_6d (two blocks)': (P, P, P, OR, OR, OR),
    GNSS: (P, P, P),
}


class GnssSource:
    """The GNSS row: the filter's estimate and an independent NavSatFix, held together.

    As test/ros/test_navsat_bridge.py: the filter tracks the random walk from its own sensor
    (P ~ 0.01 m^2) and publishes its estimate; a receiver reports truth + N(0, GNSS_R) per axis
    as latitude, longitude, altitude with the claimed covariance GNSS_R, and
    ``bridge/navsat_innovation.py`` (the node's rule) makes ``e = p_fix - p_est``,
    ``S = P_est + P_fix``. The fault: the fix's true noise std ``k`` times its claim.
    """

    def __init__(self, rng: random.Random) -> None:
        self.kf = RandomWalkFilter(rng, 3, q=Q, r=R)
        self.rng = rng
        self.fixes = NavSatInnovations(DATUM)
        self.noise_factor = 1.0
        self.bias_m = 0.0

    def innovation(self, stamp: int) -> tuple[Sequence[float], Sequence[float]]:
        kf = self.kf
        kf.step()
        covariance = [0.0] * 36
        for i in range(3):
            covariance[i * 7] = kf.variance[i]
        self.fixes.take_estimate(stamp, '', kf.estimate, covariance)
        sigma = self.noise_factor * math.sqrt(GNSS_R)
        enu = [kf.truth[i] + self.rng.gauss(0.0, sigma) for i in range(3)]
        enu[0] += self.bias_m
        claimed = [GNSS_R if i == j else 0.0 for i in range(3) for j in range(3)]
        fix = self.fixes.take_fix(stamp, 0, *enu_to_geodetic(enu[0], enu[1], enu[2], DATUM), 2,
                                  claimed)
        assert isinstance(fix, FixInnovation), fix
        return fix.innovation, fix.covariance


class FilterSource:
    """The other rows: the filter's own innovations, diagonal S."""

    def __init__(self, rng: random.Random, m: int) -> None:
        self.kf = RandomWalkFilter(rng, m, q=Q, r=R)
        self.m = m

    @property
    def noise_factor(self) -> float:
        return self.kf.noise_factor

    @noise_factor.setter
    def noise_factor(self, value: float) -> None:
        self.kf.noise_factor = value

    def innovation(self, stamp: int) -> tuple[Sequence[float], Sequence[float]]:
        e, s = self.kf.step()
        m = self.m
        return e, [s[i] if i == j else 0.0 for i in range(m) for j in range(m)]


def run(kinds: Sequence[int], seed: int, seconds: float, fault_at_s: float | None = None,
        k: float = 1.0, stop_level: SelfAssessmentLevel | None = None, gnss: bool = False,
        bias_m: float = 0.0, reasons: bool = False) -> list[tuple[Any, ...]]:
    """Return [(stamp_s, level)] of every assessment (stops at ``stop_level`` after the fault).

    The fault at ``fault_at_s``: the measurement noise ``k`` times its claim and, GNSS row, the
    fix offset by ``bias_m`` metres east. ``reasons``: (stamp_s, level, reason) instead.
    """
    rng = random.Random(seed)
    source: GnssSource | FilterSource = (GnssSource(rng) if gnss
                                         else FilterSource(rng, len(kinds)))
    pairing = InnovationPairing()
    loop = FeedbackLoop(LoopConfig.make())
    levels: list[tuple[Any, ...]] = []
    for n in range(1, int(seconds * RATE_HZ) + 1):
        stamp = n * PERIOD_NS
        if fault_at_s is not None and stamp >= fault_at_s * NS_PER_S:
            source.noise_factor = k
            if gnss:
                cast(GnssSource, source).bias_m = bias_m
        e, cov = source.innovation(stamp)
        row = pairing.push('source', stamp, e, cov, kinds)
        if not isinstance(row, InnovationOutcome):
            continue
        loop.outcome(PredictionOutcome(
            row.prediction_stamp_ns, row.observed_stamp_ns, row.position_error,
            row.orientation_error, row.position_mahalanobis, row.orientation_mahalanobis,
            bias_evidence_nats=row.bias_evidence_nats,
            bias_position_share=row.bias_position_share))
        step = loop.assessment(BeliefSelfAssessment(row.observed_stamp_ns, KNOWN))
        assert step.calibrated is not None  # no now_ns: an assessment is never refused
        level = step.calibrated.adjusted_overall_level
        levels.append((stamp / NS_PER_S, level, step.calibrated.adjustment_reason) if reasons
                      else (stamp / NS_PER_S, level))
        if stop_level is not None and fault_at_s is not None and stamp >= fault_at_s * NS_PER_S \
                and level.confidence_rank <= stop_level.confidence_rank:
            break
    return levels


def bias_channel(hours: float, runs: int, biases: Sequence[float] = (0.5, 1.0), seed0: int = 7000
                 ) -> tuple[dict[str, int], float, list[tuple[float, float, int, int]]]:
    """Run the GNSS row for hours: false episodes per hour by channel, time to find a fix bias.

    Honest streams of 1 h after the bias channel's warm-up (3000 outcomes, 600 s at 5/s): every
    KNOWN -> below transition, split scale / bias by reason. Then ``runs`` streams with the fix
    offset by ``b`` metres east (its noise 1 m per axis) from 660 s: median seconds to the first
    downgrade and how many the scale test took.
    """
    warm_s = WARMUP_OUTCOMES / (RATE_HZ / 2) + 60
    episodes = {'scale': 0, 'bias': 0}
    observed_h = 0.0
    streams = max(1, round(hours))
    for i in range(streams):
        levels = run(SOURCES[GNSS], seed0 + i, warm_s + 3600, gnss=True, reasons=True)
        previous = KNOWN
        for t, level, reason in levels:
            if t >= warm_s and previous == KNOWN and level != KNOWN:
                episodes['bias' if reason.startswith('biased_') else 'scale'] += 1
            previous = level
        observed_h += 1.0
    rows: list[tuple[float, float, int, int]] = []
    for b in biases:
        found: list[float] = []
        by_bias = 0
        for i in range(runs):
            levels = run(SOURCES[GNSS], seed0 + 10_000 + i, warm_s + 120, fault_at_s=warm_s,
                         bias_m=b, stop_level=SelfAssessmentLevel.UNCERTAIN, gnss=True,
                         reasons=True)
            hit = next(((t, r) for t, lv, r in levels if t >= warm_s and lv != KNOWN), None)
            found.append(math.inf if hit is None else hit[0] - warm_s)
            by_bias += hit is not None and hit[1].startswith('biased_')
        rows.append((b, statistics.median(found), sum(not math.isfinite(v) for v in found),
                     by_bias))
    return episodes, observed_h, rows


def false_downgrades(kinds: Sequence[int], starts: int, seconds: float, seed0: int,
                     gnss: bool = False) -> tuple[float, float, float, float, float]:
    downgraded = 0
    first_times: list[float] = []
    hours = 0.0
    for i in range(starts):
        levels = run(kinds, seed0 + i, seconds, gnss=gnss)
        first = next((t for t, lv in levels if lv != KNOWN), None)
        if first is not None:
            downgraded += 1
            first_times.append(first)
        hours += (first if first is not None else seconds) / 3600.0
    p = downgraded / starts
    se = math.sqrt(p * (1 - p) / starts) if 0 < p < 1 else 0.0
    per_hour = downgraded / hours
    return p, se, per_hour, math.sqrt(downgraded) / hours, 3.0 / hours


def delays(kinds: Sequence[int], runs: int, k: float, stop_level: SelfAssessmentLevel, seed0: int,
           honest_s: float = 10, after_s: float = 60,
           gnss: bool = False) -> tuple[float, float, float, int]:
    values: list[float] = []
    for i in range(runs):
        levels = run(kinds, seed0 + i, honest_s + after_s, fault_at_s=honest_s, k=k,
                     stop_level=stop_level, gnss=gnss)
        hit = next((t for t, lv in levels if t >= honest_s
                    and lv.confidence_rank <= stop_level.confidence_rank), None)
        values.append(math.inf if hit is None else hit - honest_s)
    finite = [v for v in values if math.isfinite(v)]
    mean = statistics.mean(finite) if finite else math.inf
    se = statistics.stdev(finite) / math.sqrt(len(finite)) if len(finite) > 1 else 0.0
    return mean, se, statistics.median(values), len(values) - len(finite)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='short run')
    parser.add_argument('--starts', type=int, default=200, help='honest starts per source')
    parser.add_argument('--runs', type=int, default=100, help='detection runs per k')
    parser.add_argument('--only', metavar='WORD', help='only the sources whose name holds WORD')
    parser.add_argument('--bias-hours', type=float, default=100.0,
                        help='honest hours of the GNSS row for the bias channel (0: skip)')
    parser.add_argument('--bias-runs', type=int, default=40, help='runs per fix bias')
    parser.add_argument('--bias-only', action='store_true',
                        help="only the GNSS row's bias channel (no table of sources)")
    args = parser.parse_args()
    starts = 20 if args.quick else args.starts
    runs = 10 if args.quick else args.runs
    print(f'field bench: {starts} honest starts x 60 s, {runs} detection runs per k, '
          f'{RATE_HZ} Hz, default policy ({LoopConfig.make().policy})')
    if not args.bias_only:
        print()
        print('| source | outcomes/s | starts downgraded in 60 s | false downgrades per hour | '
              'k = 1.5: s to UNCERTAIN (mean +- se, median) | k = 3: s to UNKNOWN (mean +- se, '
              'median) |')
        print('|---|---|---|---|---|---|')
    for name, kinds in SOURCES.items():
        if args.bias_only or (args.only and args.only not in name):
            continue
        t0 = time.monotonic()
        both = P in kinds and OR in kinds
        gnss = name == GNSS
        p, p_se, per_hour, per_hour_se, zero_bound = false_downgrades(kinds, starts, 60, 1000,
                                                                      gnss)
        rate = (f'{per_hour:.2f} +- {per_hour_se:.2f}' if per_hour else
                f'0 (95% bound {zero_bound:.2f})')
        d15 = delays(kinds, runs, 1.5, SelfAssessmentLevel.UNCERTAIN, 50_000, gnss=gnss)
        d3 = delays(kinds, runs, 3.0, UNKNOWN, 90_000, gnss=gnss)

        def fmt(d: tuple[float, float, float, int]) -> str:
            missed = f', {d[3]} not in 60 s' if d[3] else ''
            return f'{d[0]:.2f} +- {d[1]:.2f}, {d[2]:.1f}{missed}'
        print(f'| {name} | {RATE_HZ if both else RATE_HZ / 2:g} | {100 * p:.1f}% +- '
              f'{100 * p_se:.1f} | {rate} | {fmt(d15)} | '
              f'{fmt(d3)} |  <!-- {time.monotonic() - t0:.0f} s -->')
    bias_hours = 1.0 if args.quick else args.bias_hours
    if bias_hours > 0 and not args.only:
        t0 = time.monotonic()
        bias_runs = 5 if args.quick else args.bias_runs
        episodes, observed_h, rows = bias_channel(bias_hours, bias_runs)
        total = episodes['scale'] + episodes['bias']
        print(f'\nBias channel, {GNSS} (5 outcomes/s), after its warm-up: {total} false '
              f'episodes in {observed_h:g} h ({episodes["bias"]} by the bias channel, '
              f'{episodes["scale"]} by the scale test; 95% bound '
              f'{poisson_upper(total) / observed_h:.2f} per hour)\n')
        print('| fix offset east (noise 1 m per axis) | median s to the first downgrade | '
              f'not in 120 s (of {bias_runs}) | by the bias channel |')
        print('|---|---|---|---|')
        for b, median, missed, by_bias in rows:
            print(f'| {b:g} m | {median:.1f} | {missed} | {by_bias} |')
        print(f'<!-- {time.monotonic() - t0:.0f} s -->')


def poisson_upper(count: int) -> float:
    """Return the exact 95% upper bound (one-sided 97.5%) of a Poisson count."""
    return chi_square_quantile(0.975, 2 * count + 2) / 2.0


if __name__ == '__main__':
    main()
