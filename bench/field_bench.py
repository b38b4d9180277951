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

Prints a markdown table. ``--quick`` for a short run, ``--only WORD`` for some sources. Figures
only, never a gate.
"""

import argparse
import math
import random
import statistics
import time

from project_ghost_feedback.core import BeliefSelfAssessment, NS_PER_S, PredictionOutcome
from project_ghost_feedback.core import SelfAssessmentLevel
from project_ghost_feedback.core.innovation import (
    InnovationOutcome,
    InnovationPairing,
    KIND_ORIENTATION,
    KIND_POSITION,
)
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.bridge.navsat_innovation import NavSatInnovations
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

    def __init__(self, rng):
        self.kf = RandomWalkFilter(rng, 3, q=Q, r=R)
        self.rng = rng
        self.fixes = NavSatInnovations(DATUM)
        self.noise_factor = 1.0

    def innovation(self, stamp):
        kf = self.kf
        kf.step()
        covariance = [0.0] * 36
        for i in range(3):
            covariance[i * 7] = kf.variance[i]
        self.fixes.take_estimate(stamp, '', kf.estimate, covariance)
        sigma = self.noise_factor * math.sqrt(GNSS_R)
        enu = [kf.truth[i] + self.rng.gauss(0.0, sigma) for i in range(3)]
        claimed = [GNSS_R if i == j else 0.0 for i in range(3) for j in range(3)]
        fix = self.fixes.take_fix(stamp, 0, *enu_to_geodetic(*enu, DATUM), 2, claimed)
        return fix.innovation, fix.covariance


class FilterSource:
    """The other rows: the filter's own innovations, diagonal S."""

    def __init__(self, rng, m):
        self.kf = RandomWalkFilter(rng, m, q=Q, r=R)
        self.m = m

    @property
    def noise_factor(self):
        return self.kf.noise_factor

    @noise_factor.setter
    def noise_factor(self, value):
        self.kf.noise_factor = value

    def innovation(self, stamp):
        e, s = self.kf.step()
        m = self.m
        return e, [s[i] if i == j else 0.0 for i in range(m) for j in range(m)]


def run(kinds, seed, seconds, fault_at_s=None, k=1.0, stop_level=None, gnss=False):
    """Return [(stamp_s, level)] of every assessment (stops at ``stop_level`` after the fault)."""
    rng = random.Random(seed)
    source = GnssSource(rng) if gnss else FilterSource(rng, len(kinds))
    pairing = InnovationPairing()
    loop = FeedbackLoop(LoopConfig.make())
    levels = []
    for n in range(1, seconds * RATE_HZ + 1):
        stamp = n * PERIOD_NS
        if fault_at_s is not None and stamp >= fault_at_s * NS_PER_S:
            source.noise_factor = k
        e, cov = source.innovation(stamp)
        row = pairing.push('source', stamp, e, cov, kinds)
        if not isinstance(row, InnovationOutcome):
            continue
        loop.outcome(PredictionOutcome(
            row.prediction_stamp_ns, row.observed_stamp_ns, row.position_error,
            row.orientation_error, row.position_mahalanobis, row.orientation_mahalanobis))
        step = loop.assessment(BeliefSelfAssessment(row.observed_stamp_ns, KNOWN))
        level = step.calibrated.adjusted_overall_level
        levels.append((stamp / NS_PER_S, level))
        if stop_level is not None and fault_at_s is not None and stamp >= fault_at_s * NS_PER_S \
                and level.confidence_rank <= stop_level.confidence_rank:
            break
    return levels


def false_downgrades(kinds, starts, seconds, seed0, gnss=False):
    downgraded = 0
    first_times = []
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


def delays(kinds, runs, k, stop_level, seed0, honest_s=10, after_s=60, gnss=False):
    values = []
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='short run')
    parser.add_argument('--starts', type=int, default=200, help='honest starts per source')
    parser.add_argument('--runs', type=int, default=100, help='detection runs per k')
    parser.add_argument('--only', metavar='WORD', help='only the sources whose name holds WORD')
    args = parser.parse_args()
    starts = 20 if args.quick else args.starts
    runs = 10 if args.quick else args.runs
    print(f'field bench: {starts} honest starts x 60 s, {runs} detection runs per k, '
          f'{RATE_HZ} Hz, default policy ({LoopConfig.make().policy})')
    print()
    print('| source | outcomes/s | starts downgraded in 60 s | false downgrades per hour | '
          'k = 1.5: s to UNCERTAIN (mean +- se, median) | k = 3: s to UNKNOWN (mean +- se, '
          'median) |')
    print('|---|---|---|---|---|---|')
    for name, kinds in SOURCES.items():
        if args.only and args.only not in name:
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

        def fmt(d):
            missed = f', {d[3]} not in 60 s' if d[3] else ''
            return f'{d[0]:.2f} +- {d[1]:.2f}, {d[2]:.1f}{missed}'
        print(f'| {name} | {RATE_HZ if both else RATE_HZ / 2:g} | {100 * p:.1f}% +- '
              f'{100 * p_se:.1f} | {rate} | {fmt(d15)} | '
              f'{fmt(d3)} |  <!-- {time.monotonic() - t0:.0f} s -->')


if __name__ == '__main__':
    main()
