# SPDX-License-Identifier: Apache-2.0
"""Benchmark of the pure core: median microseconds per assess_with_feedback call.

Run from the repository root with ``python bench/core_bench.py``. Prints, for windows of 32 and
1024 outcomes, the median time of one ``assess_with_feedback`` call (reference policy, default
parameters) and of ``build_calibration_history`` alone, measured with ``time.perf_counter_ns``
over several repeats, plus the machine it ran on. The target (not a gate) is <= 10 us at 32.
"""

import argparse
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    assess_with_feedback,
    build_calibration_history,
    MahalanobisDowngradePolicy,
)

TARGET_US_AT_32 = 10.0
WINDOWS = (32, 1024)


def make_outcomes(count: int) -> list[PredictionOutcome]:
    """Return ``count`` chronologically ordered outcomes spread over all four buckets."""
    distances = (0.3, 0.9, 1.7, 2.8, 3.4, 4.9, 6.5, math.inf)
    return [
        PredictionOutcome(
            prediction_stamp_sim_ns=1_000_000 * i,
            observed_stamp_sim_ns=1_000_000 * i + 500_000,
            position_error_m=(0.01 * (i % 7), -0.02, 0.005),
            orientation_error_rad=(0.001, 0.0, -0.002 * (i % 3)),
            position_mahalanobis=distances[i % len(distances)],
            orientation_mahalanobis=distances[(i * 3) % len(distances)] / 2.0,
        )
        for i in range(count)
    ]


def median_us(call: Callable[[], object], repeats: int, loops: int) -> tuple[float, float]:
    """Return the median over ``repeats`` of the mean microseconds per call of ``loops`` calls."""
    samples: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(loops):
            call()
        samples.append((time.perf_counter_ns() - start) / loops / 1000.0)
    return statistics.median(samples), min(samples)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=15, help='timed repeats (default 15)')
    parser.add_argument('--loops', type=int, default=2000,
                        help='calls per repeat at 32 outcomes (scaled down for larger windows)')
    args = parser.parse_args(argv)

    raw = BeliefSelfAssessment(
        123_456_789, SelfAssessmentLevel.KNOWN,
        (NamedLevel('position_x', SelfAssessmentLevel.KNOWN),),
        (NamedLevel('pose', SelfAssessmentLevel.KNOWN),))
    policy = MahalanobisDowngradePolicy()

    print('core_bench: pure core of project_ghost_feedback (ADR-0026)')
    print(f'machine: {platform.platform()} | {platform.machine()} | '
          f'{platform.processor() or "unknown cpu"} | {os.cpu_count()} cpus | '
          f'load average {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    print(f'python: {platform.python_implementation()} {platform.python_version()}')
    print(f'method: time.perf_counter_ns, median of {args.repeats} repeats '
          f'(min in brackets), {args.loops} calls per repeat at 32 outcomes')
    results: dict[int, float] = {}
    for window in WINDOWS:
        outcomes = make_outcomes(window)
        loops = max(10, args.loops * 32 // window)
        result = assess_with_feedback(raw, outcomes, policy, window)
        assert result.calibration_history.outcomes_considered == window
        for _ in range(loops):  # warm-up
            assess_with_feedback(raw, outcomes, policy, window)
        assess_median, assess_min = median_us(
            lambda: assess_with_feedback(raw, outcomes, policy, window), args.repeats, loops)
        build_median, build_min = median_us(
            lambda: build_calibration_history(outcomes, window), args.repeats, loops)
        results[window] = assess_median
        print(f'window {window:5d}: assess_with_feedback {assess_median:9.2f} us '
              f'[{assess_min:.2f}] | build_calibration_history {build_median:9.2f} us '
              f'[{build_min:.2f}]')
    outcomes = make_outcomes(1024)
    tail_median, tail_min = median_us(
        lambda: assess_with_feedback(raw, outcomes, policy), args.repeats, args.loops)
    print(f'1024 outcomes, default max_history 32: assess_with_feedback {tail_median:9.2f} us '
          f'[{tail_min:.2f}] (list input: only the last 32 are folded)')
    verdict = 'met' if results[32] <= TARGET_US_AT_32 else 'NOT met'
    print(f'target: assess_with_feedback <= {TARGET_US_AT_32:.0f} us at 32 outcomes: {verdict} '
          f'({results[32]:.2f} us)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
