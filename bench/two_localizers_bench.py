#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two localizers judged one against the other: the outcome bridge with S = P_est + P_ref.

No ground truth: localizer A (the estimate, e.g. lidar) is held against localizer B (the
reference, e.g. visual odometry), both 6-D poses with their own covariance, through the bridge's
pairing engine (``bridge/pairing.py``: ``use_reference_covariance: true``, the default
prewhitening) and the feedback node's loop (``core/loop.py``, default policy and false-alarm
budget in time), 10 estimates/s, the reference at the same stamps. Each localizer's error is, per
axis, a stationary AR(1) process of lag-1 correlation ``rho`` (a localizer's error drifts: it is
never white) with standard deviation 0.1 m (position) and 0.02 rad (orientation), independent of
the other's; B claims its covariance honestly.

- **honest**: A claims its covariance honestly: false downgrade episodes per hour of stream
  (Poisson 95% interval), ``--hours`` per row;
- **overconfident**: after 60 s honest, A's error becomes ``k`` times its claim: median seconds
  (+- bootstrap standard error) to the first downgrade (k = 1.5) and to UNKNOWN (k = 3), over
  ``--runs`` runs, and how many never got there within 120 s.

What it cannot show: which of the two is wrong (B overconfident gives the same figures), or an
error both share (the same map). Figures only, never a gate. ``--quick`` for a short run.
"""

import argparse
import math
import random
import statistics
import time

from project_ghost_feedback.bridge.engine_interface import EngineListener, Estimate
from project_ghost_feedback.bridge.pairing import PairingEngine
from project_ghost_feedback.bridge.parameters import engine_config, PARAMETERS
from project_ghost_feedback.core import (
    BeliefSelfAssessment, NS_PER_S, PredictionOutcome, SelfAssessmentLevel)
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.sim.pose_errors import pose_like

RATE_HZ = 10
PERIOD_NS = NS_PER_S // RATE_HZ
STD = (0.1, 0.1, 0.1, 0.02, 0.02, 0.02)   # per axis: x, y, z (m), roll, pitch, yaw (rad)
KNOWN = SelfAssessmentLevel.KNOWN
UNKNOWN = SelfAssessmentLevel.UNKNOWN


class _Ar1:
    """A stationary AR(1) error per axis: lag-1 correlation ``rho``, standard deviation STD."""

    def __init__(self, rng: random.Random, rho: float) -> None:
        self.rng, self.rho = rng, rho
        self.innovation = math.sqrt(1 - rho * rho)
        self.value = [rng.gauss(0.0, s) for s in STD]

    def step(self, factor: float = 1.0) -> list[float]:
        rho, rng = self.rho, self.rng
        self.value = [rho * v + self.innovation * rng.gauss(0.0, s)
                      for v, s in zip(self.value, STD)]
        return [factor * v for v in self.value]


class _Judge(EngineListener):
    """The feedback loop behind the engine: one judged claim (KNOWN) per paired estimate."""

    def __init__(self) -> None:
        self.loop = FeedbackLoop(LoopConfig.make())
        self.levels: list[tuple[int, SelfAssessmentLevel]] = []   # (stamp_ns, calibrated level)

    def outcome_ready(self, outcome: PredictionOutcome, estimate: Estimate) -> None:
        self.loop.outcome(outcome)

    def assessment_ready(self, belief: BeliefSelfAssessment, estimate: Estimate) -> None:
        calibrated = self.loop.assessment(belief).calibrated
        assert calibrated is not None  # no now_ns: an assessment is never refused
        self.levels.append((belief.belief_stamp_sim_ns, calibrated.adjusted_overall_level))


def _engine(judge: _Judge) -> PairingEngine:
    params = {name: spec.default for name, spec in PARAMETERS.items()}
    params.update({'use_tf': False, 'use_reference_covariance': True})
    return PairingEngine(engine_config(params), judge)


def stream(seed: int, rho: float, seconds: int, fault_at_s: float | None = None,
           k: float = 1.0) -> list[tuple[int, SelfAssessmentLevel]]:
    """Return ``[(stamp_ns, level)]`` of one run: A's error k x its claim from ``fault_at_s``."""
    rng = random.Random(seed)
    a, b = _Ar1(rng, rho), _Ar1(rng, rho)
    judge = _Judge()
    engine = _engine(judge)
    for n in range(1, seconds * RATE_HZ + 1):
        stamp = n * PERIOD_NS
        factor = k if fault_at_s is not None and stamp >= fault_at_s * NS_PER_S else 1.0
        engine.take_reference(pose_like(stamp, b.step(), STD))
        engine.take_estimate(pose_like(stamp, a.step(factor), STD))
    engine.flush()
    return judge.levels


def false_episodes(rho: float, hours: float, seed0: int) -> tuple[int, float]:
    """Return (episodes, hours observed): downgrade episodes of honest streams of 1 h each."""
    episodes, observed = 0, 0.0
    for run in range(max(1, round(hours))):
        levels = stream(seed0 + run, rho, 3600)
        down = False
        for _, level in levels:
            if level < KNOWN and not down:
                episodes += 1
            down = level < KNOWN
        observed += 1.0
    return episodes, observed


def delays(rho: float, k: float, stop_level: SelfAssessmentLevel, runs: int, seed0: int,
           honest_s: int = 60, after_s: int = 120) -> tuple[list[float], int]:
    """Return (seconds to ``stop_level`` or worse after the fault, per run; misses)."""
    found: list[float] = []
    missed = 0
    for run in range(runs):
        levels = stream(seed0 + run, rho, honest_s + after_s, fault_at_s=honest_s, k=k)
        fault_ns = honest_s * NS_PER_S
        hit = next((stamp for stamp, level in levels
                    if stamp >= fault_ns and level <= stop_level), None)
        if hit is None:
            missed += 1
        else:
            found.append((hit - fault_ns) / NS_PER_S)
    return found, missed


def _poisson_95(count: int, hours: float) -> tuple[float, float]:
    """Return the exact Poisson 95% interval of a rate (per hour) from ``count`` in ``hours``."""
    from scipy.stats import chi2

    low = 0.0 if count == 0 else chi2.ppf(0.025, 2 * count) / 2
    high = chi2.ppf(0.975, 2 * count + 2) / 2
    return low / hours, high / hours


def _median_se(values: list[float], rng: random.Random, boots: int = 400) -> tuple[float, float]:
    if not values:
        return float('nan'), float('nan')
    medians = [statistics.median(rng.choices(values, k=len(values))) for _ in range(boots)]
    return statistics.median(values), statistics.pstdev(medians)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hours', type=float, default=20.0, help='honest hours per row')
    parser.add_argument('--runs', type=int, default=100, help='detection runs per row')
    parser.add_argument('--rhos', default='0.0,0.9', help='lag-1 correlations of the errors')
    parser.add_argument('--quick', action='store_true', help='2 h and 20 runs per row')
    args = parser.parse_args()
    if args.quick:
        args.hours, args.runs = 2.0, 20
    rng = random.Random(7)
    print('| rho | honest h | false episodes | per hour (95%) | 1.5x: median s to downgrade '
          '(missed) | 3x: median s to UNKNOWN (missed) |')
    print('|---|---|---|---|---|---|')
    for rho in (float(r) for r in args.rhos.split(',')):
        start = time.perf_counter()
        count, hours = false_episodes(rho, args.hours, 1000)
        low, high = _poisson_95(count, hours)
        down, down_missed = delays(rho, 1.5, SelfAssessmentLevel.UNCERTAIN, args.runs, 5000)
        unknown, unknown_missed = delays(rho, 3.0, UNKNOWN, args.runs, 9000)
        d_med, d_se = _median_se(down, rng)
        u_med, u_se = _median_se(unknown, rng)
        print(f'| {rho:g} | {hours:g} | {count} | {count / hours:.2f} ({low:.2f}-{high:.2f}) | '
              f'{d_med:.2f} +- {d_se:.2f} ({down_missed} of {args.runs}) | '
              f'{u_med:.2f} +- {u_se:.2f} ({unknown_missed} of {args.runs}) |  '
              f'<!-- {time.perf_counter() - start:.0f} s -->', flush=True)


if __name__ == '__main__':
    main()
