#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stack whitening bench: the quick demo's phases through the default bridge path, offline.

The simulated robot and Kalman filter (``sim/localization_stack.py``: tuned 150 s, mistuned
120 s with the true process noise 6x the filter's, recovered 90 s with the filter retuned), every
estimate paired with the truth at its stamp (``bridge/geometry.py``), its claim read from the
covariance, its errors whitened by ``bridge/whitening.py`` exactly as the pairing engine does
(withheld while warming up), then the feedback node's loop (``core/loop.py``, the default
policy, window 32). Per seed: false downgrades in the tuned phase, seconds to the first
downgrade after the mistuning, and seconds after the retuning to the first assessment back at
its raw level, with the guard (``--guard-alpha``, default the bridge's) and without (0).

    python3 bench/stack_whitening_bench.py --seeds 1,2,3
"""

import argparse
from typing import Any

from project_ghost_feedback.bridge.belief_claim import claim_levels, ClaimThresholds
from project_ghost_feedback.bridge.geometry import pose_error
from project_ghost_feedback.bridge.whitening import error_blocks, OutcomeWhitening
from project_ghost_feedback.core import (
    BeliefSelfAssessment, NamedLevel, NS_PER_S, PredictionOutcome)
from project_ghost_feedback.core.feedback import DEFAULT_POLICY
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.core.serial_whitening import DEFAULT_GUARD_ALPHA
from project_ghost_feedback.sim.localization_stack import (
    LocalizationStack, StackConfig, StackPhase)

PHASES = (StackPhase('tuned', 150.0),
          StackPhase('mistuned', 120.0, truth_accel_factor=6.0, filter_accel_factor=1.0),
          StackPhase('recovered', 90.0, truth_accel_factor=6.0, filter_accel_factor=6.0))
CONFIG = StackConfig(truth_rate_multiple=1)


def run(seed: int, guard_alpha: float) -> dict[str, list[Any]]:
    """Return ``{phase: (assessments, downgraded, first downgrade s, first not downgraded s)}``."""
    whitening = OutcomeWhitening(guard_alpha=guard_alpha)
    loop = FeedbackLoop(LoopConfig.make(DEFAULT_POLICY, None, 32, 4096))
    thresholds = ClaimThresholds()
    starts = {name: start for name, start, _ in
              LocalizationStack(config=CONFIG, phases=PHASES).phase_spans_ns()}
    result: dict[str, list[Any]] = {}
    for sample in LocalizationStack(config=CONFIG, phases=PHASES, seed=seed).run():
        if not sample.is_estimate:
            continue
        error = pose_error(sample.estimate_position, sample.estimate_quaternion,
                           sample.pose_covariance, sample.truth_position,
                           sample.truth_quaternion)
        overall, axes, blocks = claim_levels(sample.pose_covariance, thresholds)
        stamp = sample.stamp_ns
        warm = whitening.warm   # the engine decides on the estimate before the sample
        distances = whitening.distances(
            stamp, error_blocks(error, sample.pose_covariance, None, [True] * 6))
        if warm:
            loop.outcome(PredictionOutcome(stamp, stamp, error.position_error_m,
                                           error.orientation_error_rad, *distances))
        raw = BeliefSelfAssessment(stamp, overall,
                                   tuple(NamedLevel(k, v) for k, v in axes.items()),
                                   tuple(NamedLevel(k, v) for k, v in blocks.items()))
        calibrated = loop.assessment(raw).calibrated
        assert calibrated is not None  # no now_ns: an assessment is never refused
        down = calibrated.was_downgraded
        row = result.setdefault(sample.phase, [0, 0, None, None])
        t = (stamp - starts[sample.phase]) / NS_PER_S
        row[0] += 1
        row[1] += down
        if down and row[2] is None:
            row[2] = t
        if not down and row[3] is None:
            row[3] = t
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', default='1,2,3')
    parser.add_argument('--guard-alpha', type=float, default=DEFAULT_GUARD_ALPHA)
    args = parser.parse_args()
    print('| guard | seed | tuned: downgraded | mistuned: first downgrade, s '
          '| recovered: downgraded | recovered: back to raw, s |')
    print('|---|---|---|---|---|---|')
    for guard in (args.guard_alpha, 0.0):
        for seed in (int(s) for s in args.seeds.split(',')):
            r = run(seed, guard)
            tuned, mistuned, recovered = r['tuned'], r['mistuned'], r['recovered']
            back = 'never' if recovered[3] is None else f'{recovered[3]:.1f}'
            print(f'| {guard:g} | {seed} | {tuned[1]} of {tuned[0]} | {mistuned[2]} '
                  f'| {recovered[1]} of {recovered[0]} | {back} |', flush=True)


if __name__ == '__main__':
    main()
