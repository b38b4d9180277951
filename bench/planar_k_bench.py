#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A planar filter's k: read with its vec3 components against read as chi(3) (issue 43 item 5).

A planar estimator (``ignored_axes`` z, roll, pitch: position 2 components, yaw 1) whose errors
are ``k`` times its claim, through the bridge's pairing engine (``bridge/pairing.py``, the
default whitening and ``decorrelation.method: none``), 10 estimates/s against a reference at 0:

- **pooled k** over each stream (mean over ``--seeds`` streams +- standard error), read with the
  components ``(2, 1)`` (``RunOverconfidence((2, 1))``) and as chi(3) (the mapped distances);
- **window coverage**: the share of disjoint 32-outcome windows whose 95% interval
  (``estimate_overconfidence``) holds the true ``k``, with its binomial standard error.

Figures only, never a gate. ``--quick`` for a short run.
"""

import argparse
import math
import time
from typing import Any, cast

import numpy as np

from project_ghost_feedback.bridge.engine_interface import EngineListener, Estimate
from project_ghost_feedback.bridge.geometry import vec3_components
from project_ghost_feedback.bridge.pairing import PairingEngine
from project_ghost_feedback.bridge.parameters import engine_config, PARAMETERS
from project_ghost_feedback.core.feedback import CalibrationHistory, RunOverconfidence
from project_ghost_feedback.core.feedback.overconfidence import (
    estimate_overconfidence, OverconfidenceEstimate)
from project_ghost_feedback.core import (
    BeliefSelfAssessment, PredictionOutcome, SelfAssessmentLevel)
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.sim.pose_errors import feed_errors

STD = 0.1
IGNORED = ['z', 'roll', 'pitch']
WINDOW = 32


class _Outcomes(EngineListener):
    def __init__(self) -> None:
        self.outcomes: list[PredictionOutcome] = []

    def outcome_ready(self, outcome: PredictionOutcome, estimate: Estimate) -> None:
        self.outcomes.append(outcome)


def stream(method: str, k: float, seed: int, length: int) -> list[PredictionOutcome]:
    """Return the outcomes of one planar stream of ``length`` estimates, errors ``k`` x claim."""
    params = {name: spec.default for name, spec in PARAMETERS.items()}
    params.update({'use_tf': False, 'use_reference_covariance': False, 'ignored_axes': IGNORED,
                   'decorrelation.method': method})
    listener = _Outcomes()
    engine = PairingEngine(engine_config(params), listener)
    rng = np.random.default_rng(seed)
    errors = k * STD * rng.standard_normal((length, 3))
    yaws = k * STD * rng.standard_normal(length)
    # feed_errors takes arrays too (it indexes rows), its annotation says Sequence
    feed_errors(engine, cast(Any, errors), yaw_errors=cast(Any, yaws), std=STD)
    return listener.outcomes


def _window_history(window: list[PredictionOutcome]) -> CalibrationHistory:
    """Return the CalibrationHistory the feedback loop judges for a window of outcomes."""
    loop = FeedbackLoop(LoopConfig.make())
    for outcome in window:
        loop.outcome(outcome)
    raw = BeliefSelfAssessment(belief_stamp_sim_ns=window[-1].observed_stamp_sim_ns,
                               overall_level=SelfAssessmentLevel.KNOWN)
    calibrated = loop.assessment(raw).calibrated
    assert calibrated is not None  # no now_ns: an assessment is never refused
    return calibrated.calibration_history


def row(method: str, k: float, seeds: int, length: int) -> dict[Any, Any]:
    """Return the figures of one (method, k) row."""
    components = vec3_components(IGNORED)
    pooled: dict[str, list[list[float]]] = {'fixed': [], 'mapped': []}
    covered = {('fixed', 'position'): 0, ('fixed', 'orientation'): 0,
               ('mapped', 'position'): 0, ('mapped', 'orientation'): 0}
    windows = 0
    for seed in range(seeds):
        outcomes = stream(method, k, seed, length)
        fixed, mapped = RunOverconfidence(components), RunOverconfidence()
        for outcome in outcomes:
            fixed.add(outcome)
            mapped.add(outcome)
        # Every vec3 has outcomes here: no estimate is None.
        pooled['fixed'].append([cast(OverconfidenceEstimate, e).k_hat
                                for e in fixed.estimates().values()])
        pooled['mapped'].append([cast(OverconfidenceEstimate, e).k_hat
                                 for e in mapped.estimates().values()])
        for start in range(0, len(outcomes) - WINDOW + 1, WINDOW):
            history = _window_history(outcomes[start:start + WINDOW])
            windows += 1
            for name, used in (('fixed', components), ('mapped', (3, 3))):
                estimates = estimate_overconfidence(history, used)
                assert estimates is not None  # a schema-2 history
                for vec3, estimate in estimates.items():
                    assert estimate is not None  # every vec3 has outcomes
                    covered[(name, vec3)] += estimate.low <= k <= estimate.high
    result: dict[Any, Any] = {'windows': windows}
    for name, values in pooled.items():
        array = np.array(values)
        result[name] = (array.mean(axis=0), array.std(axis=0, ddof=1) / math.sqrt(len(array)))
    for key, count in covered.items():
        share = count / windows
        result[key] = (share, math.sqrt(share * (1 - share) / windows))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, default=12)
    parser.add_argument('--length', type=int, default=3200, help='estimates per stream')
    parser.add_argument('--quick', action='store_true', help='4 seeds of 800')
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.length = 4, 800
    started = time.monotonic()
    print(f'planar filter (ignored_axes {IGNORED}, components {vec3_components(IGNORED)}), '
          f'{args.seeds} streams of {args.length} estimates at 10/s; mean +- s.e.')
    print('| method | true k | pooled k, components (pos / yaw) | pooled k, as chi(3) | '
          'windows holding k, components | windows holding k, as chi(3) |')
    print('|---|---|---|---|---|---|')
    for method in ('whiten', 'none'):
        for k in (1.0, 1.5, 3.0):
            r = row(method, k, args.seeds, args.length)

            def pair(name: str) -> str:
                mean, se = r[name]
                return ' / '.join(f'{m:.3f} +- {s:.3f}' for m, s in zip(mean, se))

            def share(name: str) -> str:
                return ' / '.join('{:.1%} +- {:.1%}'.format(*r[(name, vec3)])
                                  for vec3 in ('position', 'orientation'))

            print(f'| {method} | {k:g} | {pair("fixed")} | {pair("mapped")} | {share("fixed")} '
                  f'| {share("mapped")} ({r["windows"]} windows) |')
    print(f'({time.monotonic() - started:.0f} s)')


if __name__ == '__main__':
    main()
