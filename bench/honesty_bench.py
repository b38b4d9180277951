#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Honesty bench: false downgrades and detection delays of every registered adjustment policy.

Monte Carlo over seeded runs of the simulator's outcome model (``project_ghost_feedback.sim``),
pure core only (no ROS). For each policy (with its default parameters) it reports:

- false downgrades per full window for a calibrated estimator: the exact probability (from the
  policy's own exact computation, or by enumerating every bucket-count vector of a window for a
  policy that has none) and the Monte Carlo fraction of full sliding windows that downgrade;
- the fraction of full windows that go two steps down (KNOWN -> UNKNOWN);
- mean outcomes to the first false downgrade, from an empty window on a calibrated stream
  (censored at the stream length; estimated as total outcomes observed before a first downgrade
  or the end, divided by the number of runs that downgraded: the exponential maximum-likelihood
  estimate, exact for a geometric waiting time and honest under censoring);
- median outcomes to detection (first downgrade, and first UNKNOWN) after the estimator turns
  1.5x, 2x, 10x or 50x overconfident, starting from a full window of calibrated outcomes that the
  policy does not downgrade.

Windows hold the last ``--window`` outcomes (32, the ADR's ``max_history``); histories are folded
incrementally and checked against ``build_calibration_history`` at start-up. Prints a markdown
table. Run ``python3 bench/honesty_bench.py --quick`` for a short run.

``vec3_scale`` is measured at budget 0 (``PER_WINDOW``: its per-window thresholds); its default
budget in time is ``whitening_bench.py``'s and ``flap_grid_bench.py``'s.

Stateful policies (``MIRRORED``: ``vec3_scale``, whose level depends on the loop's previous output
and on the window's squared distances) are measured through a vectorised numpy mirror
(``verification/vec3_sim.py``) that is checked outcome by outcome against the policy's own
``adjust_following`` at start-up; the bench then prints the issue-28 targets with standard errors
(first-passage Monte Carlo for the mean run, bootstrap for medians, spread across streams for
fractions), the effect of broken assumptions on it, and, for every registered policy, the level
changes per 1000 outcomes at each constant overconfidence and on a drift of k from 1 to 3.
"""

import argparse
import collections
import datetime
import math
import multiprocessing
import os
import platform
import random
import statistics
import time
from collections.abc import Container, Iterator, Sequence
from typing import Any, cast, TYPE_CHECKING


from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    bucket_of_distance,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import (
    build_calibration_history,
    CalibrationAdjustmentPolicy,
    CalibrationHistory,
    make_policy as registry_policy,
    policy_names,
    Vec3ScalePolicy,
)
from project_ghost_feedback.core.feedback.calibration_math import (
    bucket_probabilities,
)
from project_ghost_feedback.core.loop import CAUSE_SERVICE, FeedbackLoop, LoopConfig
from project_ghost_feedback.core import PredictionOutcome
from project_ghost_feedback.sim import OutcomeModel
from project_ghost_feedback.verification import vec3_sim
from project_ghost_feedback.verification.schema2_history import schema2_history

PER_WINDOW: dict[str, dict[str, object]] = {'vec3_scale': {'false_alarm_budget_per_day': 0.0}}
"""What this bench measures: ``vec3_scale`` at budget 0, its per-window thresholds (the figures
docs/policies.md states per window). The default's budget in time and its bias channel are
measured per 24 h by ``whitening_bench.py`` and ``flap_grid_bench.py``."""


def make_policy(name: str,
                parameters: dict[str, Any] | None = None) -> CalibrationAdjustmentPolicy:
    """Return the registry's policy ``name`` with this bench's settings (``PER_WINDOW``) first."""
    return registry_policy(name, {**PER_WINDOW.get(name, {}), **(parameters or {})})


def loop_config(name: str, window: int) -> LoopConfig:
    """Return the loop's configuration of policy ``name`` as this bench measures it."""
    return LoopConfig.make(name, PER_WINDOW.get(name), max_history=window)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

OVERCONFIDENCE_FACTORS = (1.5, 2.0, 10.0, 50.0)
MIRRORED = ('vec3_scale',)
"""Stateful policies measured through their numpy mirror (verification/vec3_sim.py, checked)."""
RAW = BeliefSelfAssessment(belief_stamp_sim_ns=0, overall_level=SelfAssessmentLevel.KNOWN)
MODEL = OutcomeModel()


class SlidingHistory:
    """The CalibrationHistory of the last ``size`` outcomes, updated in O(1) per outcome."""

    def __init__(self, size: int) -> None:
        """Start empty with room for ``size`` outcomes."""
        self.size = size
        self.position: collections.deque[float] = collections.deque()
        self.orientation: collections.deque[float] = collections.deque()
        self.buckets: collections.deque[int] = collections.deque()
        self.counts = [0, 0, 0, 0]
        self.stamp = 0

    def push(self, d_position: float, d_orientation: float) -> None:
        """Add one outcome's distances (the oldest leaves a full window)."""
        bucket = bucket_of_distance(max(d_position, d_orientation))
        self.position.append(d_position)
        self.orientation.append(d_orientation)
        self.buckets.append(bucket)
        self.counts[bucket] += 1
        if len(self.buckets) > self.size:
            self.position.popleft()
            self.orientation.popleft()
            self.counts[self.buckets.popleft()] -= 1
        self.stamp += 1

    def history(self) -> CalibrationHistory:
        """Return the CalibrationHistory of the window."""
        c = self.counts
        return CalibrationHistory(
            len(self.buckets), c[0], c[1], c[2], c[3], max(self.position),
            max(self.orientation), self.stamp)


def self_check(window: int) -> None:
    """Assert that SlidingHistory folds exactly like build_calibration_history."""
    outcomes = MODEL.outcomes(3 * window, seed=1, overconfidence=2.5, start_stamp_sim_ns=1)
    sliding = SlidingHistory(window)
    for i, outcome in enumerate(outcomes):
        sliding.push(outcome.position_mahalanobis, outcome.orientation_mahalanobis)
        expected = build_calibration_history(outcomes[:i + 1], window)
        got = sliding.history()
        assert (got.outcomes_considered, got.count_within_1_std, got.count_beyond_1_std,
                got.count_beyond_3_std, got.count_beyond_5_std, got.worst_position_mahalanobis,
                got.worst_orientation_mahalanobis) == (
            expected.outcomes_considered, expected.count_within_1_std,
            expected.count_beyond_1_std, expected.count_beyond_3_std,
            expected.count_beyond_5_std, expected.worst_position_mahalanobis,
            expected.worst_orientation_mahalanobis), f'sliding history differs at outcome {i}'


def exact_false_alarm_rate(policy: CalibrationAdjustmentPolicy, n: int) -> float:
    """Return the exact downgrade probability of a calibrated estimator on a window of ``n``."""
    own = getattr(policy, 'calibrated_downgrade_probability', None)
    if own is not None:
        return own(n)
    logs = [math.log(p) for p in bucket_probabilities(3, 2)]
    log_n_fact = math.lgamma(n + 1)
    total = 0.0
    for c3 in range(n + 1):
        for c2 in range(n + 1 - c3):
            for c0 in range(n + 1 - c3 - c2):
                counts = (c0, n - c0 - c2 - c3, c2, c3)
                worst = 6.0 if c3 else 4.0 if c2 else 2.0
                history = CalibrationHistory(n, *counts, worst, worst, 1)
                if policy.adjust(RAW, history).was_downgraded:
                    total += math.exp(log_n_fact + sum(
                        c * lp - math.lgamma(c + 1) for c, lp in zip(counts, logs)))
    return total


def calibrated_task(task: tuple[list[str], list[int], int, int]) -> dict[str, list[int]]:
    """Run calibrated streams; return per-policy false-downgrade statistics."""
    names, seeds, window, length = task
    policies = [make_policy(name) for name in names]
    stats = {name: [0, 0, 0, 0, 0] for name in names}
    # [outcomes before first downgrade (censored), runs with a downgrade, full windows seen,
    #  full windows downgraded, full windows sent to UNKNOWN]
    unknown = SelfAssessmentLevel.UNKNOWN
    for seed in seeds:
        rng = random.Random(seed)
        sliding = SlidingHistory(window)
        first: list[Any] = [None] * len(policies)   # per policy: None or the first downgrade's t
        for t in range(1, length + 1):
            sliding.push(*MODEL.draw_distances(rng))
            history = sliding.history()
            full = history.outcomes_considered >= window
            for i, policy in enumerate(policies):
                level = policy.adjust(RAW, history).adjusted_overall_level
                downgraded = level is not SelfAssessmentLevel.KNOWN
                entry = stats[names[i]]
                if downgraded and first[i] is None:
                    first[i] = t
                if full:
                    entry[2] += 1
                    entry[3] += downgraded
                    entry[4] += level is unknown
        for i, name in enumerate(names):
            entry = stats[name]
            if first[i] is None:
                entry[0] += length
            else:
                entry[0] += first[i]
                entry[1] += 1
    return stats


def detection_task(task: tuple[str, float, list[int], int, int]
                   ) -> tuple[str, float, list[tuple[float, float]]]:
    """Return, for one policy and factor, (outcomes to first downgrade, to UNKNOWN) per seed."""
    name, factor, seeds, window, cap = task
    policy = make_policy(name)
    delays: list[tuple[float, float]] = []
    for seed in seeds:
        rng = random.Random(seed)
        while True:
            sliding = SlidingHistory(window)
            for _ in range(window):
                sliding.push(*MODEL.draw_distances(rng))
            if not policy.adjust(RAW, sliding.history()).was_downgraded:
                break
        first = to_unknown = math.inf
        for step in range(1, cap + 1):
            sliding.push(*MODEL.draw_distances(rng, factor))
            level = policy.adjust(RAW, sliding.history()).adjusted_overall_level
            if level is not SelfAssessmentLevel.KNOWN and first == math.inf:
                first = step
            if level is SelfAssessmentLevel.UNKNOWN:
                to_unknown = step
                break
        delays.append((first, to_unknown))
    return name, factor, delays


def _chunks(seq: list[int], parts: int) -> list[list[int]]:
    size = max(1, math.ceil(len(seq) / parts))
    return [seq[i:i + size] for i in range(0, len(seq), size)]


def _median(values: 'Sequence[float] | NDArray[np.float64]') -> str:
    finite = [v for v in values if v != math.inf]
    if len(finite) * 2 <= len(values):
        return 'never'
    return f'{statistics.median(values):g}'


def run(args: argparse.Namespace) -> str:
    """Run the bench and return the markdown report (str)."""
    names = args.policy or policy_names()
    self_check(args.window)
    mirrored = [name for name in names if name in MIRRORED]
    names = [name for name in names if name not in MIRRORED]
    v3 = issue20_measure(mirrored, args) if mirrored else {}
    base = args.seed << 32
    calibrated_seeds = [base + i for i in range(args.runs)]
    tasks = [(names, chunk, args.window, args.stream_length)
             for chunk in _chunks(calibrated_seeds, args.jobs * 4)]
    detection_tasks: list[tuple[str, float, list[int], int, int]] = []
    for j, factor in enumerate(OVERCONFIDENCE_FACTORS):
        seeds = [base + (j + 1) * 10_000_000 + i for i in range(args.detection_runs)]
        for name in names:
            for chunk in _chunks(seeds, args.jobs * 2):
                detection_tasks.append((name, factor, chunk, args.window, 4 * args.window))
    started = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool:
        calibrated_async = pool.map_async(calibrated_task, tasks)
        detection_results = pool.map(detection_task, detection_tasks)
        calibrated_results = calibrated_async.get()
    elapsed = time.perf_counter() - started

    totals = {name: [0, 0, 0, 0, 0] for name in names}
    for stats in calibrated_results:
        for name, entry in stats.items():
            totals[name] = [a + b for a, b in zip(totals[name], entry)]
    delays: collections.defaultdict[tuple[str, float], list[Any]] = collections.defaultdict(list)
    for name, factor, values in detection_results:
        delays[name, factor].extend(values)

    lines = [
        f'Honesty bench, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, '
        f'{platform.machine()} {platform.system()} ({os.cpu_count()} CPUs, {args.jobs} jobs), '
        f'Python {platform.python_version()}; window {args.window}; seed {args.seed}; '
        f'{args.runs} calibrated streams of {args.stream_length} outcomes; '
        f'{args.detection_runs} detection runs per factor; {elapsed:.0f} s.',
        '',
        '| policy | false downgrade / full window, exact | same, MC '
        '| false UNKNOWN / full window, MC | mean outcomes to first false downgrade (rough: '
        'censored MLE over the calibrated streams; exact/1e5-run figures below) '
        + ''.join(f'| median to detect {f:g}x ' for f in OVERCONFIDENCE_FACTORS)
        + '| median to UNKNOWN 2x / 10x / 50x |',
        '|---' * (6 + len(OVERCONFIDENCE_FACTORS)) + '|',
    ]
    for name in names:
        before_first, alarmed_runs, full, downgraded, unknown = totals[name]
        exact = exact_false_alarm_rate(make_policy(name), args.window)
        if alarmed_runs:
            mean_first = f'{before_first / alarmed_runs:.0f}'
        else:
            mean_first = f'> {before_first}'
        if alarmed_runs < args.runs:
            mean_first += f' ({args.runs - alarmed_runs}/{args.runs} censored)'
        detect = ''.join(
            f'| {_median([d[0] for d in delays[name, f]])} ' for f in OVERCONFIDENCE_FACTORS)
        to_unknown = ' / '.join(
            _median([d[1] for d in delays[name, f]]) for f in (2.0, 10.0, 50.0))
        lines.append(
            f'| `{name}` | {100 * exact:.4f}% | {100 * downgraded / max(full, 1):.4f}% '
            f'| {100 * unknown / max(full, 1):.4f}% | {mean_first} {detect}| {to_unknown} |')
    for name in mirrored:
        m = v3[name]
        detect = ''.join(f'| {_median(m["delays"][f][0])} ' for f in OVERCONFIDENCE_FACTORS)
        to_unknown = ' / '.join(_median(m['delays'][f][1]) for f in (2.0, 10.0, 50.0))
        lines.append(
            f'| `{name}` | - (stateful; MC) | {100 * m["false"][0]:.4f}% '
            f'| {100 * m["unknown"][0]:.4f}% | {m["arl"][0]:.0f} +- {m["arl"][1]:.0f} (first '
            f'passage MC) {detect}| {to_unknown} |')
    lines += [
        '',
        'Detection delays count overconfident outcomes after the switch, from a full calibrated '
        'window the policy does not downgrade; "never" means not within '
        f'{4 * args.window} outcomes in at least half the runs.',
    ]
    own = {name: v3[name] for name in mirrored}
    lines += issue12_report(names, args.window, own)
    for name in mirrored:
        for factor in OVERCONFIDENCE_FACTORS:
            delays[name, factor] = list(zip(*v3[name]['delays'][factor]))
    lines += run_length_report(names, args, delays, own)
    lines += issue20_report(names, mirrored, v3, args)
    return '\n'.join(lines)


# -- issue 12: exact grading table ---------------------------------------------------------------

GRADING_FACTORS = (1.25, 1.5, 2.0, 3.0, 10.0)


def _window_histories(n: int) -> Iterator[tuple[tuple[int, int, int, int], CalibrationHistory]]:
    """Yield ``(counts, history)`` for every bucket-count vector of a window of ``n``."""
    for c3 in range(n + 1):
        for c2 in range(n + 1 - c3):
            for c1 in range(n + 1 - c3 - c2):
                counts = (n - c1 - c2 - c3, c1, c2, c3)
                worst = 6.0 if c3 else 4.0 if c2 else 2.0 if c1 else 0.5
                yield counts, CalibrationHistory(n, *counts, worst, worst, 1)


def exact_grading(policy: CalibrationAdjustmentPolicy, factor: float,
                  n: int) -> tuple[float, float, float]:
    """Return the exact (K, U, X) probabilities of one window of ``n`` i.i.d. outcomes at ``k``."""
    logs = [math.log(p) if p > 0.0 else -math.inf for p in bucket_probabilities(3, 2, factor)]
    shares = {level: 0.0 for level in SelfAssessmentLevel}
    for counts, history in _window_histories(n):
        log_p = math.lgamma(n + 1)
        for count, log_q in zip(counts, logs):
            if count:
                log_p += count * log_q - math.lgamma(count + 1)
        if log_p > -math.inf:
            shares[policy.adjust(RAW, history).adjusted_overall_level] += math.exp(log_p)
    return (shares[SelfAssessmentLevel.KNOWN], shares[SelfAssessmentLevel.UNCERTAIN],
            shares[SelfAssessmentLevel.UNKNOWN])


def issue12_report(names: Sequence[str], window: int,
                   v3: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Return the markdown lines of the exact grading table (issue 12); MC rows for ``v3``."""
    lines = ['', f'Grading at constant overconfidence k (exact enumeration of a full window of '
             f'{window}, i.i.d. Gaussian, 3 dof x 2 vectors): % of time KNOWN / UNCERTAIN / '
             'UNKNOWN.', '',
             '| policy ' + ''.join(f'| k = {f:g} ' for f in GRADING_FACTORS) + '|',
             '|---' * (1 + len(GRADING_FACTORS)) + '|']
    for name in names:
        policy = make_policy(name)
        cells = ''.join('| {:.1f} / {:.1f} / {:.1f} '.format(
            *(100 * p for p in exact_grading(policy, f, window))) for f in GRADING_FACTORS)
        lines.append(f'| `{name}` {cells}|')
    for name, m in (v3 or {}).items():
        cells = ''.join('| {:.1f} / {:.1f} / {:.1f} '.format(
            *(100 * m['steady'][f][level][0] for level in ('known', 'uncertain', 'unknown')))
            for f in GRADING_FACTORS)
        lines.append(f'| `{name}` (stateful: steady-state MC, s.e. <= '
                     f'{100 * m["steady_se"]:.1f}) {cells}|')
    return lines


# -- issue 12: exact run lengths and the CUSUM limits -------------------------------------------

CUSUM_FACTORS = (1.5, 2.0, 10.0)
NO_CHAIN = {
    'bucket_likelihood_ratio': 'not tractable: the state would be the ages of every non-beyond_1 '
                               'outcome, within_1 ones included',
    'mahalanobis_downgrade': 'no thresholds(); 2-of-n, ~38 by MC',
}


def run_length_report(names: Sequence[str], args: argparse.Namespace,
                      delays: dict[tuple[str, float], list[Any]],
                      v3: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Return the markdown lines of the run-length and CUSUM-limit tables (issue 12)."""
    v3 = v3 or {}
    from project_ghost_feedback.verification import arl_chain, cusum_limits

    policies = [make_policy(name) for name in names]
    started = time.perf_counter()
    exact: dict[str, dict[str, Any]] = {}
    for policy in policies:
        if policy.policy_id in arl_chain.EXCEEDANCE_FORM:
            exact[policy.policy_id] = arl_chain.exceedance_arl(
                cast(arl_chain.ExceedancePolicy, policy), args.window)
    chain_s = time.perf_counter() - started
    started = time.perf_counter()
    mc = (arl_chain.first_passage_monte_carlo(policies, args.arl_runs, args.window,
                                              seed=args.seed) if policies else {})
    mc_s = time.perf_counter() - started
    lines = ['', 'Mean outcomes to the first false downgrade from an empty window of '
             f'{args.window} '
             '(i.i.d. calibrated Gaussian outcomes, 3 dof x 2 vectors). Exact: Markov chain on the '
             'ages of the beyond-3 outcomes in the window (verification/arl_chain.py; the solution '
             "of (I - Q) h = 1 is checked by its residual), where the policy's rule has that form; "
             f'Monte Carlo: {args.arl_runs} independent first-passage runs, each decided by the '
             f"policy's own adjust() (common random numbers). Chain {chain_s:.0f} s, MC "
             f'{mc_s:.0f} s.', '',
             '| policy | exact ARL (chain) | chain states / residual | MC ARL +- s.e. |',
             '|---|---|---|---|']
    targets: dict[str, tuple[float, str]] = {}
    for name in names:
        mean, error, _ = mc[name]
        if name in exact:
            row = exact[name]
            cell = f'**{row["arl"]:.1f}** | {row["states"]} / {row["residual"]:.1e}'
            targets[name] = (row['arl'], 'exact')
        else:
            reason = NO_CHAIN.get(name, 'rule not in the chain form')
            cell = f'- ({reason}) | -'
            targets[name] = (mean, 'MC')
        lines.append(f'| `{name}` | {cell} | {mean:.1f} +- {error:.1f} |')
    for name, m in v3.items():
        targets[name] = (m['arl'][0], 'MC')
        lines.append(f'| `{name}` | - (stateful: the state is the window of squared distances) '
                     f'| - | {m["arl"][0]:.1f} +- {m["arl"][1]:.1f} ({m["arl_runs"]} runs) |')
    lines += ['', 'CUSUM limits at the same in-control ARL (verification/cusum_limits.py: '
              "Page's CUSUM on "
              'the per-outcome log-likelihood ratio of scale k vs 1, threshold set so that its ARL '
              "from W = 0 equals the policy's ARL above; full information = the two squared "
              "distances (chi-square 6), bucket information = the outcome's bucket only; run "
              'lengths from a Markov chain on a 1500-state lattice, Brook & Evans). Delays: the '
              "policy's median from this bench's detection runs (full calibrated window at the "
              "switch); the CUSUM's median and ARL1 from W = 0, its worst start, so the ratios "
              "understate the gap. The bucket CUSUM's ARL is a step function of h: its achieved "
              'in-control ARL is shown.', '',
              '| policy (in-control ARL) | k | policy median | full-info CUSUM median (ARL1) '
              '| bucket CUSUM median (ARL1, its ARL0) | policy / full | policy / bucket |',
              '|---|---|---|---|---|---|---|']
    cache: dict[tuple[float, float], dict[str, Any]] = {}
    for name in list(names) + list(v3):
        target, how = targets[name]
        for factor in CUSUM_FACTORS:
            key = (round(target, 6), factor)
            if key not in cache:
                cache[key] = cusum_limits.limits(factor, target)
            limit = cache[key]
            full, bucket = limit['full'], limit['bucket']
            policy_median = _median([d[0] for d in delays[name, factor]])
            try:
                value = float(policy_median)
                ratios = (f'{value / full["median"]:.2f} | {value / bucket["median"]:.2f}')
            except ValueError:
                ratios = '- | -'
            lines.append(
                f'| `{name}` ({target:.0f}, {how}) | {factor:g} | {policy_median} '
                f'| {full["median"]} ({full["arl1"]:.2f}) '
                f'| {bucket["median"]} ({bucket["arl1"]:.2f}, {bucket["arl0"]:.0f}) | {ratios} |')
    return lines


# -- issue 20: the stateful policy v3 against its targets, and where every policy flaps -----------

V3_VARIANTS = {'': {}, 'robust: winsorize_distance 4': {'winsorize_distance': 4.0}}
"""Parameter sets of each mirrored policy measured against the issue-28 targets."""
ASSUMPTIONS: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
    ('AR(1) phi = 0.3', {'ar1': 0.3}, {}), ('AR(1) phi = 0.6', {'ar1': 0.6}, {}),
    ('AR(1) phi = 0.9', {'ar1': 0.9}, {}),
    ('Student-t nu = 5 (covariance = claim)', {'student_nu': 5.0}, {}),
    ('Student-t nu = 3 (covariance = claim)', {'student_nu': 3.0}, {}),
    ('planar (true dim 2), degrees_of_freedom = 3', {'dim': 2}, {}),
    ('planar (true dim 2), degrees_of_freedom = 2', {'dim': 2}, {'degrees_of_freedom': 2}),
)


STEP_NS = 100_000_000
"""Stamp step of the outcomes the bench feeds the loop (10 Hz)."""


def loop_levels(config: LoopConfig, xp: 'NDArray[np.float64]', xo: 'NDArray[np.float64]',
                resets: Container[int] = ()) -> list[int]:
    """Return the level values ``core/loop.py`` publishes for one stream, as the node runs it.

    Each outcome (squared distances ``xp[t]``, ``xo[t]``) goes to ``FeedbackLoop.outcome`` and is
    followed by an assessment stamped at it (``FeedbackLoop.assessment``), whose calibrated level
    is recorded; before each index in ``resets`` the loop is reset (``~/reset``).
    """
    loop = FeedbackLoop(config)
    out: list[int] = []
    for t, (p, o) in enumerate(zip(xp, xo)):
        stamp = (t + 1) * STEP_NS
        if t in resets:
            loop.reset(CAUSE_SERVICE, 'bench', stamp)
        loop.outcome(PredictionOutcome(stamp - 1, stamp, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                                       math.sqrt(float(p)), math.sqrt(float(o))))
        step = loop.assessment(BeliefSelfAssessment(
            belief_stamp_sim_ns=stamp, overall_level=SelfAssessmentLevel.KNOWN))
        assert step.calibrated is not None  # no now_ns: an assessment is never refused
        out.append(step.calibrated.adjusted_overall_level.value)
    return out


def self_check_vec3(name: str, window: int, seed: int) -> None:
    """Assert that the numpy mirror gives the levels of adjust_following and of the loop.

    The loop (``core/loop.py``, as the node runs it) is reset in the middle of each stream; the
    mirror starts afresh there.
    """
    import numpy as np
    rng = np.random.default_rng(seed)
    policy = make_policy(name)
    assert isinstance(policy, Vec3ScalePolicy)  # the mirrored policies
    config = loop_config(name, window)
    scale = np.concatenate([np.full(150, 1.0), np.linspace(1.0, 3.2, 300), np.full(60, 12.0),
                            np.full(90, 1.0)])
    for model in ({'scale': scale}, {'position_scale': scale, 'scale': 1.0},
                  {'scale': 1.0, 'axis_scale': 5.0}):
        xp, xo = vec3_sim.squared_distances(rng, 2, len(scale), **model)
        mirror = vec3_sim.levels(policy, xp, xo, window)
        for s in range(xp.shape[0]):
            previous = None
            for t in range(xp.shape[1]):
                low = max(0, t + 1 - window)
                history = schema2_history(xp[s, low:t + 1], xo[s, low:t + 1], t)
                previous = policy.adjust_following(RAW, history, previous)
                assert previous.adjusted_overall_level.value == mirror[s, t], (
                    f'{name}: mirror differs from adjust_following at outcome {t}')
        cut = len(scale) // 2
        mirror = np.concatenate([vec3_sim.levels(policy, xp[:, :cut], xo[:, :cut], window),
                                 vec3_sim.levels(policy, xp[:, cut:], xo[:, cut:], window)], 1)
        for s in range(xp.shape[0]):
            got = loop_levels(config, xp[s], xo[s], resets=(cut,))
            bad = [t for t in range(len(got)) if got[t] != mirror[s, t]]
            assert not bad, f'{name}: mirror differs from core/loop.py at outcome {bad[0]}'


LOOP_FACTORS = (1.5, 2.0, 3.0, 10.0, 50.0)


def loop_task(task: tuple[str, str, float | None, int, int, int]
              ) -> tuple[str, float | None, Any]:
    """Run one chunk of the loop-driven Monte Carlo (``core/loop.py``); return its counts."""
    import numpy as np
    name, kind, factor, seed, runs, window = task
    rng = np.random.default_rng(seed)
    config = loop_config(name, window)
    if kind == 'reset':  # runs starts of `window` outcomes each, a reset before every start
        xp, xo = vec3_sim.squared_distances(rng, 1, runs * window)
        lv: Any = np.array(loop_levels(config, xp[0], xo[0], resets=set(range(0, runs * window,
                                                                          window))))
        lv = lv.reshape(runs, window)
        return kind, factor, (int((lv == vec3_sim.UNKNOWN).any(1).sum()),
                              int((lv != vec3_sim.KNOWN).any(1).sum()), runs)
    if kind == 'calibrated':  # one stream of `runs` outcomes: full windows not KNOWN
        xp, xo = vec3_sim.squared_distances(rng, 1, runs)
        lv = np.array(loop_levels(config, xp[0], xo[0]))[window - 1:]
        return kind, factor, (int((lv != vec3_sim.KNOWN).sum()),
                              int((lv == vec3_sim.UNKNOWN).sum()), lv.size)
    # detection: 96 calibrated outcomes, KNOWN at the switch, then k x
    delays: list[tuple[float, float]] = []
    burn, cap = 96, 4 * window
    while len(delays) < runs:
        bp, bo = vec3_sim.squared_distances(rng, 1, burn)
        assert factor is not None  # the detection tasks have one
        ap, ao = vec3_sim.squared_distances(rng, 1, cap, scale=factor)
        lv = loop_levels(config, np.concatenate([bp[0], ap[0]]), np.concatenate([bo[0], ao[0]]))
        if lv[burn - 1] != vec3_sim.KNOWN:
            continue
        after = lv[burn:]
        first = next((i + 1 for i, v in enumerate(after) if v != vec3_sim.KNOWN), math.inf)
        unknown = next((i + 1 for i, v in enumerate(after) if v == vec3_sim.UNKNOWN), math.inf)
        delays.append((first, unknown))
    return kind, factor, delays


def loop_measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Return the loop-driven Monte Carlo figures of ``name`` (``core/loop.py``, no mirror)."""
    quick = args.runs < 200
    sizes: dict[str, Any] = {'reset': 2000 if quick else 20_000, 'calibrated': (4, 10_000) if quick
             else (20, 20_000), 'detect': 100 if quick else 500}
    parts = max(1, args.jobs * 2)
    seed = (args.seed << 8) + 77
    tasks: list[tuple[str, str, float | None, int, int, int]] = [
        (name, 'reset', None, seed + i, math.ceil(sizes['reset'] / parts), args.window)
        for i in range(parts)]
    tasks += [(name, 'calibrated', None, seed + 100 + i, sizes['calibrated'][1], args.window)
              for i in range(sizes['calibrated'][0])]
    factor: float | None   # a factor of LOOP_FACTORS here, None below for the other kinds
    for j, factor in enumerate(LOOP_FACTORS):
        tasks += [(name, 'detect', factor, seed + 1000 * (j + 1) + i,
                   math.ceil(sizes['detect'] / parts), args.window) for i in range(parts)]
    started = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool:
        results = pool.map(loop_task, tasks)
    out: dict[str, Any] = {
        'reset': [0, 0, 0], 'calibrated': [], 'delays': collections.defaultdict(list),
        'seconds': time.perf_counter() - started, 'sizes': sizes}
    for kind, factor, value in results:
        if kind == 'reset':
            out['reset'] = [a + b for a, b in zip(out['reset'], value)]
        elif kind == 'calibrated':
            out['calibrated'].append(value)
        else:
            out['delays'][factor].extend(value)
    return out


def issue20_measure(mirrored: Sequence[str], args: argparse.Namespace
                    ) -> dict[str, dict[str, Any]]:
    """Return ``{name: figures}`` for every mirrored policy (and ``name (variant)``)."""
    import numpy as np
    quick = args.runs < 200
    sizes: dict[str, Any] = {'streams': 16 if quick else 100, 'length': 10_000 if quick else 20_000,
             'arl': 400 if quick else 4000, 'detect': args.detection_runs,
             'steady': (8, 2000) if quick else (20, 5000), 'drift': 200 if quick else 2000,
             'assume': (6, 10_000) if quick else (20, 25_000),
             'reset': 200_000 if quick else 2_000_000}
    result: dict[str, dict[str, Any]] = {}
    for index, name in enumerate(mirrored):
        self_check_vec3(name, args.window, args.seed)
        for variant, parameters in V3_VARIANTS.items():
            key = f'{name} ({variant})' if variant else name
            policy = make_policy(name, parameters)
            assert isinstance(policy, Vec3ScalePolicy)  # the mirrored policies
            rng = np.random.default_rng((args.seed, 20, index, len(result)))
            m: dict[str, Any] = {'sizes': sizes}
            calibrated = vec3_sim.calibrated_stream_figures(
                policy, rng, sizes['streams'], sizes['length'], args.window)
            m.update(calibrated)
            mean, error, censored = vec3_sim.first_passage(policy, rng, sizes['arl'], args.window)
            m['arl'], m['arl_runs'], m['arl_censored'] = (mean, error), sizes['arl'], censored
            m['delays'] = {f: vec3_sim.detection(policy, rng, sizes['detect'], {'scale': f},
                                                 args.window)
                           for f in OVERCONFIDENCE_FACTORS + (3.0,)}
            m['delays']['position 3'] = vec3_sim.detection(
                policy, rng, sizes['detect'], {'position_scale': 3.0}, args.window)
            streams, length = sizes['steady']
            m['steady'] = {f: vec3_sim.steady_state(policy, rng, streams, length, args.window,
                                                    scale=f)
                           for f in sorted(set(vec3_sim.FLAP_FACTORS + GRADING_FACTORS))}
            m['steady_se'] = max(v[level][1] for v in m['steady'].values()
                                 for level in ('known', 'uncertain', 'unknown'))
            m['steady']['position 3'] = vec3_sim.steady_state(
                policy, rng, streams, length, args.window, position_scale=3.0)
            m['steady']['axis 5'] = vec3_sim.steady_state(
                policy, rng, streams, length, args.window, axis_scale=5.0)
            m['drift'] = vec3_sim.drift(policy, rng, sizes['drift'], window=args.window)
            m['reset'] = vec3_sim.reset_starts(policy, rng, sizes['reset'], args.window)
            m['reset_bound'] = math.fsum(policy.calibrated_unknown_probability(n)
                                         for n in range(1, args.window + 1))
            m['reset_gross_distance'] = (args.window
                                         * policy.calibrated_gross_distance_probability())
            m['from_reset'] = {f: vec3_sim.from_reset(policy, rng, sizes['detect'],
                                                      {'scale': f}, args.window)
                               for f in (10.0, 50.0)}
            if not variant:
                m['loop'] = loop_measure(name, args)
            streams, length = sizes['assume']
            m['assumptions'] = {}
            for label, model, extra in ASSUMPTIONS:
                variant_policy = make_policy(name, {**parameters, **extra})
                assert isinstance(variant_policy, Vec3ScalePolicy)
                m['assumptions'][label] = vec3_sim.calibrated_stream_figures(
                    variant_policy, rng, streams, length, args.window, **model)
            m['assumptions']['underconfident k = 0.5'] = vec3_sim.calibrated_stream_figures(
                policy, rng, streams, length, args.window, scale=0.5)
            result[key] = m
    return result


def _median_se(values: 'ArrayLike', seed: int = 0) -> tuple[float, float]:
    """Return ``(median, bootstrap s.e.)`` of ``values`` (``inf`` allowed)."""
    import numpy as np
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    boots = np.median(rng.choice(values, (200, len(values))), axis=1)
    finite = boots[np.isfinite(boots)]
    return float(np.median(values)), (float(np.std(finite)) if len(finite) == len(boots)
                                      else math.inf)


def _fmt(value: float, error: float, *, pct: bool = False, digits: int = 2) -> str:
    scale = 100.0 if pct else 1.0
    unit = '%' if pct else ''
    if value == math.inf:
        return 'never'
    return f'{scale * value:.{digits}f}{unit} +- {scale * error:.{digits}f}'


def _verdict(met: bool | None) -> str:
    return '(measured)' if met is None else '(met)' if met else '(**not met**)'


def _zero_aware(count: int, total: int, digits: int) -> str:
    """Return a share with its s.e., or for no event the 95% upper bound (3 / total)."""
    if count == 0:
        return f'0 of {total} (95% upper bound {100 * 3 / total:.{digits}f}%)'
    return f'{count} of {total}: {_share(count, total, digits)}'


def _target_rows(m: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """Return ``(target, measured, met)`` rows of one mirrored policy's figures."""
    import numpy as np
    rows = [('false downgrades per full window <= 0.30%', _fmt(*m['false'], pct=True, digits=3),
             m['false'][0] <= 0.003),
            ('mean outcomes to the first false downgrade >= 3398 (from an empty window)',
             f'{m["arl"][0]:.0f} +- {m["arl"][1]:.0f}', m['arl'][0] >= 3398)]
    limit: float
    for factor, limit in ((1.5, 6), (2.0, 3), (10.0, 1)):
        med, se = _median_se(m['delays'][factor][0])
        rows.append((f'median outcomes to the first downgrade at {factor:g}x <= {limit}',
                     _fmt(med, se, digits=1), med <= limit))
    for factor, limit in ((10.0, 2), (50.0, 2), (3.0, 8)):
        med, se = _median_se(m['delays'][factor][1])
        rows.append((f'median outcomes to UNKNOWN at {factor:g}x <= {limit}',
                     _fmt(med, se, digits=1), med <= limit))
    worst = max((v['changes'][0], f) for f, v in m['steady'].items()
                if isinstance(f, float) and f in vec3_sim.FLAP_FACTORS)
    error = m['steady'][worst[1]]['changes'][1]
    rows.append(('level changes per 1000 outcomes at steady state <= 10 at every k in '
                 '{1.0, 1.1, ..., 3.0, 4, 5, 10} (worst k)',
                 f'{worst[0]:.1f} +- {error:.1f} (k = {worst[1]:g})', worst[0] <= 10))
    for label, key, level, limit in (('1.5x: UNCERTAIN', 1.5, 'uncertain', 0.90),
                                     ('3x: UNKNOWN', 3.0, 'unknown', 0.95),
                                     ('position 3x, orientation calibrated: UNKNOWN',
                                      'position 3', 'unknown', 0.95),
                                     ('one axis 5x inside a vec3: UNKNOWN', 'axis 5', 'unknown',
                                      0.90)):
        value, error = m['steady'][key][level]
        rows.append((f'{label} >= {100 * limit:.0f}% of the time', _fmt(value, error, pct=True,
                                                                         digits=1),
                     value >= limit))
    changes, k_first, k_unknown = m['drift']
    runs = len(changes)
    median, p99 = np.median(changes), np.quantile(changes, 0.99)
    rows.append((f'drift k 1 -> 3 over 2000 outcomes ({runs} runs): level changes per run '
                 'median <= 3 and 99th percentile <= 6 (mean; median; 99th percentile; max)',
                 f'{changes.mean():.2f} +- {changes.std(ddof=1) / math.sqrt(runs):.2f}; '
                 f'{median:g}; {p99:g}; {changes.max()}', median <= 3 and p99 <= 6))
    for label, ks, limit in (('first downgrade before k = 1.3', k_first, 1.3),
                             ('UNKNOWN before k = 2.6', k_unknown, 2.6)):
        share = (ks < limit).mean()
        error = vec3_sim.binomial_se(share, runs)
        rows.append((f'drift: {label} in >= 99% of runs (share; median k; 99th percentile; '
                     'max)', f'{100 * share:.2f}% +- {100 * error:.2f}; '
                     f'{np.median(ks):.3f}; {np.quantile(ks, 0.99):.3f}; {ks.max():.3f}',
                     share >= 0.99))
    reset = m['reset']
    rows.append((f'false UNKNOWN within the first W outcomes after a reset <= 0.01% per start '
                 f'(MC over {reset["starts"]} starts; exact bound of the window-sum test + '
                 'single-distance test)',
                 f'{_zero_aware(reset["unknown_count"], reset["starts"], 5)}; bound '
                 f'{100 * (m["reset_bound"] + m["reset_gross_distance"]):.5f}%',
                 reset['unknown'][0] + 2 * reset['unknown'][1] <= 1e-4
                 and m['reset_bound'] + m['reset_gross_distance'] <= 1e-4))
    rows.append(('false downgrade within the first W outcomes after a reset (no target; '
                 'the CUSUM from its start)', _fmt(*reset['downgrade'], pct=True, digits=3),
                 None))
    for factor in (10.0, 50.0):
        med, se = _median_se(m['from_reset'][factor][1])
        rows.append((f'median outcomes to UNKNOWN at {factor:g}x from a reset <= 2',
                     _fmt(med, se, digits=1), med <= 2))
    return rows


def _share(count: int, total: int, digits: int) -> str:
    p = count / max(total, 1)
    return _fmt(p, vec3_sim.binomial_se(p, total), pct=True, digits=digits)


def loop_report(name: str, m: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """Return the markdown lines of the loop-driven Monte Carlo beside the mirror's figures."""
    import numpy as np
    loop = m['loop']
    sizes = loop['sizes']
    unknown, downgraded, starts = loop['reset']
    cal = np.array([c[0] / c[2] for c in loop['calibrated']])
    cal_u = np.array([c[1] / c[2] for c in loop['calibrated']])
    lines = ['', f'`{name}` driven through `core/loop.py` as the node runs it (each outcome to '
             '`FeedbackLoop.outcome`, then an assessment stamped at it; no mirror): '
             f'{starts} starts of {args.window} outcomes after `~/reset`, '
             f'{sizes["calibrated"][0]} calibrated streams of {sizes["calibrated"][1]}, '
             f'{sizes["detect"]} detection runs per factor; {loop["seconds"]:.0f} s. '
             'Beside it, the same figure from the mirror above.', '',
             '| figure | `core/loop.py` | mirror |', '|---|---|---|',
             f'| false downgrades per full window | '
             f'{_fmt(cal.mean(), cal.std(ddof=1) / math.sqrt(len(cal)), pct=True, digits=3)} '
             f'| {_fmt(*m["false"], pct=True, digits=3)} |',
             f'| false UNKNOWN per full window | {100 * cal_u.mean():.4f}% '
             f'| {100 * m["unknown"][0]:.4f}% |',
             f'| false UNKNOWN within the first {args.window} outcomes after a reset | '
             f'{_zero_aware(unknown, starts, 4)} '
             f'| {_fmt(*m["reset"]["unknown"], pct=True, digits=4)} |',
             f'| false downgrade within the first {args.window} outcomes after a reset | '
             f'{_share(downgraded, starts, 3)} '
             f'| {_fmt(*m["reset"]["downgrade"], pct=True, digits=3)} |']
    for factor in LOOP_FACTORS:
        delays = loop['delays'][factor]
        first = _median_se([d[0] for d in delays])
        to_unknown = _median_se([d[1] for d in delays])
        lines.append(f'| {factor:g}x: median outcomes to the first downgrade / to UNKNOWN | '
                     f'{_fmt(*first, digits=1)} / {_fmt(*to_unknown, digits=1)} | '
                     f'{_fmt(*_median_se(m["delays"][factor][0]), digits=1)} / '
                     f'{_fmt(*_median_se(m["delays"][factor][1]), digits=1)} |')
    return lines


def issue20_report(names: Sequence[str], mirrored: Sequence[str], v3: dict[str, dict[str, Any]],
                   args: argparse.Namespace) -> list[str]:
    """Return the markdown lines of the issue-28 targets, flapping and assumptions tables."""
    from project_ghost_feedback.verification import arl_chain
    import numpy as np
    lines: list[str] = []
    for name in mirrored:
        keys = [key for key in v3 if key == name or key.startswith(name + ' (')]
        sizes = v3[name]['sizes']
        lines += ['', f'Issue-28 targets of `{name}` (numpy mirror of the policy, checked outcome '
                  'by outcome against its own adjust_following and core/loop.py; i.i.d. Gaussian, '
                  'W = '
                  f'{args.window}, 3 dof x 2 vec3; +- one standard error: across '
                  f'{sizes["streams"]} calibrated streams of {sizes["length"]}, '
                  f'{sizes["arl"]} first-passage runs, bootstrap of {sizes["detect"]} '
                  f'detection runs, {sizes["steady"][0]} steady-state streams of '
                  f'{sizes["steady"][1]} per k, {sizes["drift"]} drift runs).', '',
                  '| target | ' + ' | '.join(f'`{k}`' for k in keys) + ' |',
                  '|---' * (1 + len(keys)) + '|']
        table: Any = {key: _target_rows(v3[key]) for key in keys}  # a level table below
        cells: Any   # a row's text here, its list of cells below
        for i, (target, _, _) in enumerate(table[keys[0]]):
            cells = ' | '.join(f'{table[k][i][1]} {_verdict(table[k][i][2])}' for k in keys)
            lines.append(f'| {target} | {cells} |')
        lines += ['', f'`{name}` when its assumptions break (% of full windows downgraded / '
                  'sent to UNKNOWN, +- s.e. across '
                  f'{sizes["assume"][0]} streams of {sizes["assume"][1]}; errors with the '
                  'claimed covariance unless stated):', '',
                  '| errors | ' + ' | '.join(f'`{k}`' for k in keys) + ' |',
                  '|---' * (1 + len(keys)) + '|']
        labels = ['i.i.d. Gaussian (null model)'] + list(v3[name]['assumptions'])
        for label in labels:
            cells = []
            for k in keys:
                f = v3[k] if label.startswith('i.i.d.') else v3[k]['assumptions'][label]
                cell = (f'{_fmt(*f["false"], pct=True, digits=3)} / '
                        f'{100 * f["unknown"][0]:.3f}%')
                if label.startswith('underconfident'):
                    cell += f'; reason underconfident_calibration {100 * f["under"][0]:.1f}%'
                cells.append(cell)
            lines.append(f'| {label} | {" | ".join(cells)} |')
        if 'loop' in v3[name]:
            lines += loop_report(name, v3[name], args)

    # Where each policy flaps: every registered policy on the same kind of streams.
    rng = np.random.default_rng((args.seed, 21))
    streams, length = (8, 2000) if args.runs < 200 else (20, 5000)
    drift_runs = 200 if args.runs < 200 else 400
    flaps: dict[str, dict[float, Any]] = {}
    drifts: dict[str, Any] = {}
    for name in names:
        table = vec3_sim.level_table(make_policy(name), args.window, RAW,
                                     arl_chain.window_histories)
        flaps[name] = {f: vec3_sim.steady_state(table, rng, streams, length, args.window,
                                                scale=f)['changes']
                       for f in vec3_sim.FLAP_FACTORS}
        drifts[name] = vec3_sim.drift(table, rng, drift_runs, window=args.window)
    for name in v3:
        if name in mirrored:
            flaps[name] = {f: v3[name]['steady'][f]['changes'] for f in vec3_sim.FLAP_FACTORS}
            drifts[name] = v3[name]['drift']
    order = list(names) + [n for n in v3 if n in mirrored]
    lines += ['', 'Where each policy flaps: level changes per 1000 outcomes at steady state at '
              f'constant k (i.i.d. Gaussian, W = {args.window}; mean of {streams} streams of '
              f'{length} after a burn-in of 256; the s.e. is at most about a third of the '
              'mean, more where it is small). Bold: above 10.', '',
              '| k | ' + ' | '.join(f'`{n}`' for n in order) + ' |',
              '|---' * (1 + len(order)) + '|']
    for f in vec3_sim.FLAP_FACTORS:
        cells = []
        for n in order:
            value = flaps[n][f][0]
            cells.append(f'**{value:.1f}**' if value > 10 else f'{value:.1f}')
        lines.append(f'| {f:g} | {" | ".join(cells)} |')
    lines += ['', f'Drift of k from 1 to 3 over 2000 outcomes ({drift_runs} runs each): level '
              'changes per run and the k at the first downgrade / first UNKNOWN (medians; '
              '"never" when most runs never get there).', '',
              '| policy | level changes per run, mean +- s.e. (max) | k at first downgrade '
              '| k at first UNKNOWN |', '|---|---|---|---|']
    for n in order:
        changes, k_first, k_unknown = drifts[n]
        med_u = np.median(k_unknown)
        lines.append(
            f'| `{n}` | {changes.mean():.1f} +- {changes.std(ddof=1) / math.sqrt(len(changes)):.1f}'
            f' ({changes.max()}) | {np.median(k_first):.3f} | '
            f'{"never" if med_u == math.inf else f"{med_u:.3f}"} |')
    return lines


ROBUST_SCAN = ((4.0, 10.0), (5.0, 10.0), (6.0, 10.0), (4.0, 20.0), (5.0, 20.0), (6.0, 20.0),
               (0.0, 20.0), (0.0, 10.0))
"""(winsorize_distance, gross_distance) pairs of the robust scan (issue 28.3)."""


def robust_scan(args: argparse.Namespace) -> list[str]:
    """Return the markdown lines of the scan: can a robust vec3_scale meet the targets at t5.

    For each ``ROBUST_SCAN`` setting: false downgrades per full window with Gaussian and with
    Student-t nu = 5 errors (the claimed covariance), the UNKNOWN share under nu = 5, and the
    medians to the first downgrade / to UNKNOWN at 1.5x, 3x and 10x (Gaussian), by the mirror.
    """
    import numpy as np
    rng = np.random.default_rng((args.seed, 28, 3))
    streams, length = (4, 10_000) if args.runs < 200 else (16, 20_000)
    runs = min(args.detection_runs, 1000)
    lines = ['', 'Robust settings of `vec3_scale` against Student-t nu = 5 errors (issue 28.3; '
             f'mirror, {streams} streams of {length} per rate, {runs} detection runs per '
             'factor; the target: every issue-28 target, at nu = 5 within 2x the Gaussian '
             'rate).', '',
             '| winsorize_distance / gross_distance | false downgrades, Gaussian | same, '
             'Student-t 5 (UNKNOWN) | t5 / Gaussian | 1.5x first / UNKNOWN | 3x | 10x |',
             '|---|---|---|---|---|---|---|']
    for cap, gross in ROBUST_SCAN:
        policy = make_policy('vec3_scale', {'winsorize_distance': cap, 'gross_distance': gross})
        assert isinstance(policy, Vec3ScalePolicy)
        gauss = vec3_sim.calibrated_stream_figures(policy, rng, streams, length, args.window)
        heavy = vec3_sim.calibrated_stream_figures(policy, rng, streams, length, args.window,
                                                   student_nu=5.0)
        cells = []
        for factor in (1.5, 3.0, 10.0):
            first, unknown = vec3_sim.detection(policy, rng, runs, {'scale': factor},
                                                args.window)
            cells.append(f'{_median(first)} / {_median(unknown)}')
        ratio = heavy['false'][0] / max(gauss['false'][0], 1e-12)
        lines.append(f'| {cap:g} / {gross:g} | {_fmt(*gauss["false"], pct=True, digits=3)} '
                     f'| {_fmt(*heavy["false"], pct=True, digits=2)} '
                     f'({100 * heavy["unknown"][0]:.2f}%) | {ratio:.0f}x | '
                     + ' | '.join(cells) + ' |')
    return lines


def main(argv: list[str] | None = None) -> None:
    """Parse options, run the bench and print the markdown report."""
    parser = argparse.ArgumentParser(
        description='Monte Carlo honesty bench of the registered adjustment policies.')
    parser.add_argument('--runs', type=int, default=200,
                        help='calibrated streams (default 200; --quick: 24)')
    parser.add_argument('--stream-length', type=int, default=20_000,
                        help='outcomes per calibrated stream (default 20000; --quick: 4000)')
    parser.add_argument('--detection-runs', type=int, default=2000,
                        help='runs per overconfidence factor (default 2000; --quick: 300)')
    parser.add_argument('--window', type=int, default=32, help='outcomes per window (32)')
    parser.add_argument('--arl-runs', type=int, default=100_000,
                        help='first-passage Monte Carlo runs (default 100000; --quick: 10000)')
    parser.add_argument('--seed', type=int, default=2026, help='base seed (2026)')
    parser.add_argument('--jobs', type=int, default=min(2, os.cpu_count() or 1),
                        help='worker processes (default: 2 or fewer CPUs)')
    parser.add_argument('--policy', action='append', choices=policy_names(),
                        help='bench only this policy (repeatable; default: all registered)')
    parser.add_argument('--robust-scan', action='store_true',
                        help='print only the robust-settings scan of vec3_scale (issue 28.3)')
    parser.add_argument('--quick', action='store_true',
                        help='a short run (about a minute on 2 cores; '
                        'the full run: ~7 min of CPU, 14 min wall on 2 busy cores)')
    args = parser.parse_args(argv)
    if args.quick:
        defaults = {'runs': 200, 'stream_length': 20_000, 'detection_runs': 2000,
                    'arl_runs': 100_000}
        quick = {'runs': 24, 'stream_length': 4000, 'detection_runs': 300, 'arl_runs': 10_000}
        for key, value in quick.items():
            if getattr(args, key) == defaults[key]:
                setattr(args, key, value)
    if args.robust_scan:
        print('\n'.join(robust_scan(args)[1:]))
        return
    print(run(args))


if __name__ == '__main__':
    main()
