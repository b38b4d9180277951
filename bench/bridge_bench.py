#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bridge bench: pairs/s, and the feedback loop on the simulator stack with/without decorrelation.

Pure (no ROS, no DDS): the simulated robot + Kalman filter (``sim/localization_stack.py``) is
run per seed, every estimate is paired with the ground truth at its stamp through the bridge's
own geometry (``bridge/geometry.py``: rotation-vector errors, unsquared Mahalanobis), its claim
is read from the covariance (``bridge/belief_claim.py``), and outcomes go through the bridge's
pacer (``bridge/decorrelation.py``) with its defaults (adaptive, target autocorrelation 0.1),
or through no pacer at all, into the feedback node's causal window and the default policy
(``assess_with_feedback``, max_history 32), exactly as the two nodes do, without the transport.
The bench uses ``truth_rate_multiple=1`` (truth stepped at the estimate rate, which the nodes
would see as exact-stamp references: no interpolation).

Figures (per pipeline: default decorrelation, none):
- pairs/s of the pure bridge path on this machine: the bridge's own engine at its defaults
  (``PairingEngine``: pairing, pose error, whitening, bias evidence, claim), no transport;
- false downgrades per full window with the tuned filter: the fraction of the distinct full
  sliding windows (one per emitted outcome) in the tuned phase, after a 30 s warm-up, that the
  policy downgrades, beside the policy's stated rate for independent outcomes (and the ratio);
- detection delay: sim seconds from the start of the mistuned phase to the first downgraded
  assessment (median and range over seeds; assessments at 10 Hz);
- back to raw: sim seconds from the start of the recovered phase to the first assessment that is
  no longer downgraded (median and range over seeds).

- start-up: honest starts (tuned filter, fresh pacer and window) that meet a false downgrade in
  their first 60 s, over ``--startup-seeds`` seeds at 10 and 20 Hz, with the bridge's warm-up
  (``decorrelation.warmup_samples``, default 50) and without it (the pacer before issue 33, which
  emitted every sample until its estimate had 50), beside the same fraction for independent
  outcomes at the same outcome count (the policy's stated rate, from an empty window).

    python3 bench/bridge_bench.py            # 12 seeds of the default phases + 24 tuned runs
    python3 bench/bridge_bench.py --quick
"""

import argparse
import math
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from project_ghost_feedback.bridge.belief_claim import claim_levels, ClaimThresholds
from project_ghost_feedback.bridge.geometry import PoseError
from project_ghost_feedback.bridge.decorrelation import OutcomePacer
from project_ghost_feedback.bridge.engine_interface import EngineListener
from project_ghost_feedback.bridge.pairing import PairingEngine
from project_ghost_feedback.bridge.parameters import config_from
from project_ghost_feedback.bridge.parameters import PARAMETERS as BRIDGE_PARAMETERS
from project_ghost_feedback.bridge.geometry import pose_error
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    NS_PER_S,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import DEFAULT_POLICY
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.sim.localization_stack import (
    DEFAULT_PHASES,
    LocalizationStack,
    StackConfig,
    StackPhase,
)

MAX_HISTORY = 32
NODE_DEFAULT_POLICY = DEFAULT_POLICY
MEASURED_RATES = {'vec3_scale': 0.0019}
"""Full-window false-downgrade fractions of policies without an exact rate, for independent
outcomes (bench/honesty_bench.py, docs/policies.md): the "x stated" reference."""
WARMUP_NS = 30 * NS_PER_S
CONFIG = StackConfig(truth_rate_multiple=1)


def _pairs(stack: LocalizationStack) -> Iterator[tuple[Any, PoseError, Any]]:
    """Yield (sample, PoseError, claim) per estimate of ``stack``."""
    thresholds = ClaimThresholds()
    for sample in stack.run():
        if not sample.is_estimate:
            continue
        error = pose_error(sample.estimate_position, sample.estimate_quaternion,
                           sample.pose_covariance, sample.truth_position,
                           sample.truth_quaternion)
        yield sample, error, claim_levels(sample.pose_covariance, thresholds)


def _run(seed: int, phases: Sequence[StackPhase], policy: str, evaluate_assessments: bool,
         target: float = 0.1) -> dict[str, dict[str, Any]]:
    """Return per-pipeline results for one seeded run of the policy named ``policy``.

    ``target``: the pacer's target autocorrelation (the bridge's default 0.1).
    """
    pipelines: dict[str, OutcomePacer | None] = {
        'decorrelated': OutcomePacer(target_autocorrelation=target), 'every sample': None}
    loops = {name: FeedbackLoop(LoopConfig.make(policy, None, MAX_HISTORY, 4096))
             for name in pipelines}
    results: dict[str, dict[str, Any]] = {
        name: {'full': 0, 'false': 0, 'detect': None, 'back': None, 'emitted': 0}
        for name in pipelines}
    spans = {name: (start, end) for name, start, end in
             LocalizationStack(config=CONFIG, phases=phases).phase_spans_ns()}
    for sample, error, (overall, axes, blocks) in _pairs(
            LocalizationStack(config=CONFIG, phases=phases, seed=seed)):
        stamp = sample.stamp_ns
        raw = BeliefSelfAssessment(
            stamp, overall, tuple(NamedLevel(k, v) for k, v in axes.items()),
            tuple(NamedLevel(k, v) for k, v in blocks.items()))
        outcome = PredictionOutcome(stamp, stamp, error.position_error_m,
                                    error.orientation_error_rad, error.position_mahalanobis,
                                    error.orientation_mahalanobis)
        for name, pacer in pipelines.items():
            result = results[name]
            emitted = pacer is None or pacer.offer(
                stamp, error.position_mahalanobis, error.orientation_mahalanobis)
            if emitted:
                loops[name].outcome(outcome)
                result['emitted'] += 1
            step = loops[name].assessment(raw)
            calibrated = step.calibrated
            assert calibrated is not None  # no now_ns: an assessment is never refused
            in_tuned = sample.phase == 'tuned' and stamp >= WARMUP_NS
            if emitted and in_tuned and len(step.judged) == MAX_HISTORY:
                result['full'] += 1
                result['false'] += calibrated.was_downgraded
            if not evaluate_assessments or sample.phase == 'tuned':
                continue
            phase_start = spans[sample.phase][0]
            if sample.phase == 'mistuned' and result['detect'] is None and (
                    calibrated.was_downgraded):
                result['detect'] = (stamp - phase_start) / NS_PER_S
            if sample.phase == 'recovered':
                if result['back'] is None and not calibrated.was_downgraded:
                    result['back'] = (stamp - phase_start) / NS_PER_S
    return results


STARTUP_S = 60.0


class _NoWarmUpPacer(OutcomePacer):
    """The pacer before issue 33: every sample emitted until the estimate had 50 samples."""

    @property
    def warm(self) -> bool:
        return True


def _startup(seed: int, rate_hz: float, pacer: OutcomePacer,
             policy: str) -> tuple[float | None, int]:
    """Return (first false downgrade in s or None, outcomes emitted) of one honest start."""
    config = StackConfig(rate_hz=rate_hz, truth_rate_multiple=1)
    loop = FeedbackLoop(LoopConfig.make(policy, None, MAX_HISTORY, 4096))
    emitted = 0
    for sample, error, (overall, axes, blocks) in _pairs(LocalizationStack(
            config=config, phases=(StackPhase('tuned', STARTUP_S),), seed=seed)):
        stamp = sample.stamp_ns
        if pacer.offer(stamp, error.position_mahalanobis, error.orientation_mahalanobis):
            emitted += 1
            loop.outcome(PredictionOutcome(stamp, stamp, error.position_error_m,
                                           error.orientation_error_rad,
                                           error.position_mahalanobis,
                                           error.orientation_mahalanobis))
        step = loop.assessment(BeliefSelfAssessment(
            stamp, overall, tuple(NamedLevel(k, v) for k, v in axes.items()),
            tuple(NamedLevel(k, v) for k, v in blocks.items())))
        assert step.calibrated is not None  # no now_ns: an assessment is never refused
        if step.calibrated.was_downgraded:
            return stamp / NS_PER_S, emitted
    return None, emitted


def _independent_startups(outcomes: int, runs: int, policy: str, seed: int = 1) -> float:
    """Return the fraction of starts with independent calibrated outcomes downgraded early."""
    rng = random.Random(seed)
    level = SelfAssessmentLevel.KNOWN
    downgraded = 0
    for _ in range(runs):
        loop = FeedbackLoop(LoopConfig.make(policy, None, MAX_HISTORY, 4096))
        for i in range(outcomes):
            p, o = (math.sqrt(sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(3)))
                    for _ in range(2))
            loop.outcome(PredictionOutcome(2 * i, 2 * i, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), p, o))
            step = loop.assessment(BeliefSelfAssessment(
                2 * i + 1, level, (NamedLevel('x', level),), (NamedLevel('position', level),)))
            assert step.calibrated is not None  # no now_ns: an assessment is never refused
            if step.calibrated.was_downgraded:
                downgraded += 1
                break
    return downgraded / runs


def bench_startup(seeds: int, policy: str) -> None:
    """Print the start-up table (honest starts downgraded in their first 60 s)."""
    print(f'\nstart-up: honest starts downgraded in their first {STARTUP_S:.0f} s, {seeds} seeds, '
          f'policy {policy}, max_history {MAX_HISTORY}\n')
    print('| estimate rate | pacer | starts downgraded | first downgrade s (median, range) '
          '| outcomes per start | independent outcomes, same count |')
    print('|---|---|---|---|---|---|')
    for rate_hz in (10.0, 20.0):
        make: Callable[[], OutcomePacer]
        for name, make in (('warm-up 50 (default)', OutcomePacer),
                           ('no warm-up (before)', _NoWarmUpPacer)):
            runs = [_startup(seed, rate_hz, make(), policy) for seed in range(seeds)]
            firsts = [first for first, _ in runs if first is not None]
            # Outcomes of a whole start (a downgraded one stops counting at its downgrade).
            whole = [count for first, count in runs if first is None] or [0]
            mean_outcomes = round(statistics.mean(whole))
            independent = _independent_startups(mean_outcomes, 2000, policy)
            print(f'| {rate_hz:.0f} Hz | {name} | {len(firsts)} of {seeds} '
                  f'({len(firsts) / seeds:.1%}) | {_spread(firsts)} | {mean_outcomes} '
                  f'| {independent:.1%} (2000 runs) |')


def _odometry(stamp_ns: int, position: Sequence[float], quaternion: Sequence[float],
              covariance: ArrayLike | None = None) -> SimpleNamespace:
    """Return a nav_msgs/Odometry-shaped input (what the engine reads of one; 6x6 covariance)."""
    sec, nanosec = divmod(stamp_ns, NS_PER_S)
    p = SimpleNamespace(x=float(position[0]), y=float(position[1]), z=float(position[2]))
    q = SimpleNamespace(x=float(quaternion[0]), y=float(quaternion[1]), z=float(quaternion[2]),
                        w=float(quaternion[3]))
    values = [0.0] * 36 if covariance is None else [float(v) for v in np.ravel(covariance)]
    return SimpleNamespace(
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec), frame_id='odom'),
        child_frame_id='base_link',
        pose=SimpleNamespace(pose=SimpleNamespace(position=p, orientation=q),
                             covariance=values))


def bench_pairs(seconds: float = 60.0) -> float:
    """Return pairs/s of the bridge's own engine at its defaults (what the node runs, no tf).

    Every estimate of a tuned ``seconds`` run and its ground truth at the same stamp go through
    ``PairingEngine`` (intake checks, pairing, pose error, whitening and bias evidence, pacing,
    claim): the node's data path without the transport and the byte decoding.
    """
    stack = LocalizationStack(config=CONFIG, phases=(StackPhase('tuned', seconds),), seed=99)
    inputs = [(_odometry(s.stamp_ns, s.truth_position, s.truth_quaternion),
               _odometry(s.stamp_ns, s.estimate_position, s.estimate_quaternion,
                         s.pose_covariance))
              for s in stack.run() if s.is_estimate]
    values: dict[str, Any] = {name: spec.default for name, spec in BRIDGE_PARAMETERS.items()}
    values['use_tf'] = False
    engine = PairingEngine(config_from(values), EngineListener(),
                           reference_buffer_size=values['reference_buffer_size'],
                           pending_capacity=values['pending_capacity'])
    start = time.perf_counter()
    for reference, estimate in inputs:
        engine.take_reference(reference)
        engine.take_estimate(estimate)
    elapsed = time.perf_counter() - start
    if engine.assessments != len(inputs):
        raise RuntimeError(f'the engine assessed {engine.assessments} of {len(inputs)} estimates')
    return len(inputs) / elapsed


def _spread(values: Sequence[float | None]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return 'never'
    known = cast('list[float]', values)   # the Nones are filtered out above
    return f'{statistics.median(known):.1f} ({min(known):.1f}-{max(known):.1f})'


def main(argv: list[str] | None = None) -> None:
    """Run the bench and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=12,
                        help='runs of the default phases (detection, recovery; default 12)')
    parser.add_argument('--tuned-seeds', type=int, default=24,
                        help='extra tuned-only runs of 600 s for the false-downgrade rate')
    parser.add_argument('--policy', default=NODE_DEFAULT_POLICY,
                        help=f'adjustment policy (default {NODE_DEFAULT_POLICY}, the feedback '
                             'node default)')
    parser.add_argument('--target-autocorrelation', type=float, default=0.1,
                        help="the pacer's decorrelation.target_autocorrelation (default 0.1, "
                        "the bridge's)")
    parser.add_argument('--startup-seeds', type=int, default=60,
                        help='honest starts per estimate rate and pacer (default 60)')
    parser.add_argument('--quick', action='store_true',
                        help='3 seeds, 3 tuned runs, 10 starts')
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.tuned_seeds, args.startup_seeds = 3, 3, 10
    policy = LoopConfig.make(args.policy).make_policy()
    stated = getattr(policy, 'STATED_FULL_WINDOW_FALSE_ALARM_RATE',
                     MEASURED_RATES.get(policy.policy_id, float('nan')))
    print(f'pure bridge path: {bench_pairs():.0f} pairs/s (the engine at its defaults)')
    target = args.target_autocorrelation
    runs = [_run(seed, DEFAULT_PHASES, args.policy, True, target) for seed in range(args.seeds)]
    tuned = (StackPhase('tuned', 600.0),)
    runs += [_run(1000 + seed, tuned, args.policy, False, target)
             for seed in range(args.tuned_seeds)]
    print(f'\npolicy {policy.policy_id}, max_history {MAX_HISTORY}; phases '
          + ', '.join(f'{p.name} {p.duration_s:.0f} s' for p in DEFAULT_PHASES)
          + f'; {args.seeds} seeds + {args.tuned_seeds} tuned-only runs of 600 s; pacer '
          f'target autocorrelation {target:g}\n')
    print('| pipeline | outcomes/s | full windows (tuned) | false downgrades per full window '
          '| x stated | detection delay s | back to raw s |')
    print('|---|---|---|---|---|---|---|')
    total_s = sum(p.duration_s for p in DEFAULT_PHASES) * args.seeds + 600.0 * args.tuned_seeds
    for name in ('decorrelated', 'every sample'):
        full = sum(r[name]['full'] for r in runs)
        false = sum(r[name]['false'] for r in runs)
        rate = false / full if full else float('nan')
        emitted = sum(r[name]['emitted'] for r in runs) / total_s
        print(f'| {name} | {emitted:.2f} | {full} | {rate:.4%} ({false}) | '
              f'{rate / stated:.1f} | {_spread([r[name]["detect"] for r in runs[:args.seeds]])} '
              f'| {_spread([r[name]["back"] for r in runs[:args.seeds]])} |')
    print(f'\nstated rate for independent outcomes: {stated:.4%} per full window')
    bench_startup(args.startup_seeds, args.policy)


if __name__ == '__main__':
    main()
