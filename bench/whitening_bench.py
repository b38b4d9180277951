#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whitening bench: false downgrade episodes per 24 h and detection times, rates in time.

Serially correlated errors (AR(1) of lag-1 correlation rho, and a mix of two time constants,
0.97 and 0.5, of equal variance) are whitened in space (unit claimed covariance) and in time by
the bridge's rules (``verification/whitening_sim.py``, the vectorised mirror of
``bridge/whitening.py``, checked against it here), the first ``warmup_samples + 1`` of every
stream withheld as the bridge does; the squared distances go through the default policy exactly
as ``core/loop.py`` grades them (``verification/vec3_sim.py``, window 32, its false-alarm budget of
1 per 24 h spent at the stream's outcome rate). Every stream is a start (empty window, cold
estimate).

- false episodes: honest streams, every KNOWN -> UNCERTAIN-or-worse transition counted; per 24 h
  of honest operation with the exact Poisson 95% interval;
- detection: honest for ``--lead`` s, then every error scaled by k (1.5, 3): median seconds
  from the switch to the first UNCERTAIN-or-worse / UNKNOWN (bootstrap s.e.), share not found
  within ``--horizon`` s;
- bias: honest errors plus a constant vector of norm b (whitened standard deviations, on both
  vec3) after the lead: median time to the first downgrade, by the scale test's transient or by
  the bias channel (``core/bias_evidence.py``, mirrored by ``whitening_sim.bias_evidence`` and
  checked against it here), which spends half the budget; ``--no-bias-channel`` measures the
  policy without it (``bias_budget_share`` 0: the whole budget to the scale test).

Prints markdown. ``--hours`` per row (default 500 at 10 Hz, 200 at 50 Hz), ``--quick``.
Figures only, never a gate.
"""

import argparse
import math
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from project_ghost_feedback.verification import vec3_sim, whitening_sim
from project_ghost_feedback.core.bias_evidence import WARMUP_OUTCOMES
from project_ghost_feedback.core.serial_whitening import (
    DEFAULT_ALPHA, DEFAULT_GUARD_ALPHA, DEFAULT_WARMUP_SAMPLES)
from project_ghost_feedback.core.feedback import Vec3ScalePolicy
from project_ghost_feedback.core.feedback.chi_square import chi_square_quantile

WINDOW = 32
MODELS = {'AR(1) 0': ('ar1', 0.0), 'AR(1) 0.3': ('ar1', 0.3), 'AR(1) 0.6': ('ar1', 0.6),
          'AR(1) 0.9': ('ar1', 0.9), 'mix 0.97 + 0.5': ('mix', 0.97, 0.5)}
KNOWN, UNKNOWN = 2, 0


def poisson_interval(count: int, exposure: float) -> tuple[float, float]:
    """Return the exact (Garwood) 95% interval of a Poisson rate ``count / exposure``."""
    low = 0.0 if count == 0 else chi_square_quantile(0.025, 2 * count) / 2.0
    high = chi_square_quantile(0.975, 2 * count + 2) / 2.0
    return low / exposure, high / exposure


def _components(model: tuple[Any, ...]) -> tuple[float, float]:
    """Return a model as two AR(1) time constants of equal variance."""
    return (model[1], model[1]) if model[0] == 'ar1' else (model[1], model[2])


def switched_errors(rng: np.random.Generator, streams: int, length: int, model: tuple[Any, ...],
                    other: tuple[Any, ...], start: int) -> NDArray[np.float64]:
    """Return unit-variance errors that follow ``model``, then ``other`` from sample ``start``.

    Continuous: each of the two AR(1) components keeps its state and changes its coefficient
    at ``start`` (its innovations rescaled so that its variance stays 1/2): no jump.
    """
    shape = (streams, length, 2, 3)
    z = np.zeros(shape)
    for before, after in zip(_components(model), _components(other)):
        w = rng.standard_normal(shape)
        e = np.empty(shape)
        e[:, 0] = w[:, 0]
        for t in range(1, length):
            rho = before if t < start else after
            e[:, t] = rho * e[:, t - 1] + math.sqrt(1.0 - rho * rho) * w[:, t]
        z += e / math.sqrt(2.0)
    return z


BATCH_OUTCOMES = [2_000_000]
"""Outcomes simulated at once (``--batch-outcomes``): the step-by-step rules loop over time in
Python, vectorised over streams, so a larger batch is faster at the cost of memory (~500 bytes
an outcome at the peak)."""

ALPHA = [DEFAULT_ALPHA, DEFAULT_GUARD_ALPHA]
"""The forgetting factors the rows use (``--alpha``, ``--guard-alpha``)."""


def whitened_squared(rng: np.random.Generator, streams: int, length: int, model: tuple[Any, ...],
                     scale: NDArray[np.float64] | None = None,
                     bias: NDArray[np.float64] | None = None, order: int = 2,
                     then: tuple[tuple[Any, ...], int] | None = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return ``(xp, xo, evidence)`` of whitened errors after the warm-up the bridge withholds.

    ``evidence``: the bias evidence each emitted outcome carries (``bias_evidence_nats``).

    ``then``: ``(model, start)``: from sample ``start`` on the honest errors follow another
    model (a change of the error's correlation, the claim still honest).
    """
    if then is None:
        z = whitening_sim.errors(rng, streams, length, model)
    else:
        z = switched_errors(rng, streams, length, model, *then)
    if scale is not None:
        z = z * scale[None, :, None, None]
    if bias is not None:
        z = z + bias[None, :, None, None] * (np.ones(3) / math.sqrt(3.0))[None, None, None, :]
    v = whitening_sim.whiten(z, order=order, alpha=ALPHA[0],
                              guard_alpha=ALPHA[1])[:, DEFAULT_WARMUP_SAMPLES + 1:]
    x = (v * v).sum(axis=3)
    evidence, _ = whitening_sim.bias_evidence(v)
    return x[:, :, 0], x[:, :, 1], evidence


def false_episodes(policy: Vec3ScalePolicy, rng: np.random.Generator, model: tuple[Any, ...],
                   hours: float, rate_hz: float, stream_hours: float,
                   tail: dict[float, int] | None = None) -> tuple[int, int, float]:
    """Return (episodes, of which started by the bias channel, hours observed) at ``rate_hz``.

    ``tail``: thresholds (nats) whose bias-only episodes (``vec3_sim.bias_episodes``) are added to
    its values, on the same honest streams.
    """
    length = int(stream_hours * 3600 * rate_hz)
    streams_total = max(1, int(round(hours / stream_hours)))
    episodes, by_bias, observed = 0, 0, 0.0
    batch = max(1, min(streams_total, int(BATCH_OUTCOMES[0] // length)))
    done = 0
    while done < streams_total:
        n = min(batch, streams_total - done)
        xp, xo, evidence = whitened_squared(rng, n, length, model)
        biased: list[NDArray[np.bool_]] = []
        lv = vec3_sim.levels(policy, xp, xo, WINDOW, rate_hz=rate_hz, bias=evidence,
                             biased=biased)
        down = lv != KNOWN
        starts = np.concatenate([down[:, :1], down[:, 1:] & ~down[:, :-1]], axis=1)
        episodes += int(starts.sum())
        by_bias += int((starts & biased[0]).sum())
        if tail is not None:
            for threshold in tail:
                tail[threshold] += vec3_sim.bias_episodes(evidence, threshold)
        observed += n * xp.shape[1] / rate_hz / 3600.0
        done += n
    return episodes, by_bias, observed


def detection(policy: Vec3ScalePolicy, rng: np.random.Generator, model: tuple[Any, ...],
              rate_hz: float, streams: int, lead_s: float, horizon_s: float,
              k: float | None = None, bias: float | None = None,
              then: str | None = None) -> list[NDArray[np.float64]]:
    """Return (times to the first downgrade, times to UNKNOWN) after the switch (inf: missed)."""
    warm = DEFAULT_WARMUP_SAMPLES + 1
    switch = warm + int(lead_s * rate_hz)
    length = switch + int(horizon_s * rate_hz)
    scale = np.ones(length)
    shift = np.zeros(length)
    if k is not None:
        scale[switch:] = k
    if bias is not None:
        shift[switch:] = bias
    xp, xo, evidence = whitened_squared(rng, streams, length, model, scale=scale, bias=shift,
                                        then=None if then is None else (MODELS[then], switch))
    lv = vec3_sim.levels(policy, xp, xo, WINDOW, rate_hz=rate_hz,
                         bias=evidence)[:, switch - warm:]
    out: list[NDArray[np.float64]] = []
    for hit in (lv != KNOWN, lv == UNKNOWN):
        first = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
        out.append(np.where(first >= 0, (first + 1) / rate_hz, np.inf))
    return out


def median_se(times: NDArray[np.float64], rng: np.random.Generator) -> tuple[float, float]:
    """Return (median, bootstrap s.e.) of ``times`` (inf allowed)."""
    med = float(np.median(times))
    boots = [np.median(rng.choice(times, len(times))) for _ in range(200)]
    finite = [b for b in boots if math.isfinite(b)]
    return med, (float(np.std(finite)) if len(finite) == len(boots) else math.inf)


def fmt_time(times: NDArray[np.float64], rng: np.random.Generator) -> str:
    med, se = median_se(times, rng)
    missed = float(np.mean(~np.isfinite(times)))
    text = f'{med:.2f} +- {se:.2f}' if math.isfinite(med) else 'not found'
    return text + (f' ({missed:.0%} missed)' if missed else '')


REGIMES = (('AR(1) 0.9', 'AR(1) 0.6'), ('AR(1) 0.9', 'AR(1) 0.3'), ('AR(1) 0.9', 'AR(1) 0'),
           ('mix 0.97 + 0.5', 'AR(1) 0.6'), ('AR(1) 0.6', 'AR(1) 0.9'), ('AR(1) 0', 'AR(1) 0.9'))
"""Changes of the honest error's correlation (a filter retuned, a robot that stops moving)."""


def regime_rows(policy: Vec3ScalePolicy, rng: np.random.Generator,
                args: argparse.Namespace) -> None:
    """Print, per change of correlation, how often an honest stream is downgraded after it.

    The stream is honest throughout; for ``3 / (alpha * rate)`` s (three forgetting horizons,
    at least ``--lead``) its errors follow the first model, then the second. A downgrade after
    the change is a false one, made by the whitening's estimate of the old correlation.
    """
    rate = 10.0
    lead = max(args.lead, 3.0 / (args.alpha * rate))
    horizon = 3.0 * args.horizon
    print(f'\n### change of correlation at {rate:g} outcomes/s, alpha {args.alpha:g}, guard '
          f'{args.guard_alpha:g} '
          f'(lead {lead:.0f} s, {args.streams} streams)\n')
    print('| before | after | downgraded within '
          f'{horizon:.0f} s | first downgrade, s (median +- s.e.) | mean s downgraded '
          '| UNKNOWN within | run, s |')
    print('|---|---|---|---|---|---|---|')
    for before, after in REGIMES:
        started = time.monotonic()
        warm = DEFAULT_WARMUP_SAMPLES + 1
        switch = warm + int(lead * rate)
        length = switch + int(horizon * rate)
        xp, xo, evidence = whitened_squared(rng, args.streams, length, MODELS[before],
                                            then=(MODELS[after], switch))
        lv = vec3_sim.levels(policy, xp, xo, WINDOW, rate_hz=rate,
                             bias=evidence)[:, switch - warm:]
        down, unknown = lv != KNOWN, lv == UNKNOWN
        share = float(np.mean(down.any(axis=1)))
        first = np.where(down.any(axis=1), down.argmax(axis=1) + 1, -1) / rate
        first_text = fmt_time(first[first > 0], rng) if share else 'none'
        print(f'| {before} | {after} | {share:.0%} | {first_text} | '
              f'{float(down.mean()) * horizon:.1f} | {float(np.mean(unknown.any(axis=1))):.0%} | '
              f'{time.monotonic() - started:.0f} |', flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hours', type=float, default=None,
                        help='honest hours per row (default 500 at 10 Hz, 200 at 50 Hz)')
    parser.add_argument('--rates', default='10,50', help='outcome rates, Hz')
    parser.add_argument('--stream-hours', type=float, default=1.0,
                        help='length of one honest stream (a start each)')
    parser.add_argument('--streams', type=int, default=400, help='streams per detection row')
    parser.add_argument('--lead', type=float, default=20.0, help='honest seconds before a switch')
    parser.add_argument('--horizon', type=float, default=60.0, help='seconds after it')
    parser.add_argument('--models', default=','.join(MODELS),
                        help=f"comma-separated, of: {'; '.join(MODELS)}")
    parser.add_argument('--seed', type=int, default=39)
    parser.add_argument('--quick', action='store_true', help='10 h per row, 100 streams')
    parser.add_argument('--alpha', type=float, default=DEFAULT_ALPHA,
                        help='forgetting factor of the whitening (whitening.alpha)')
    parser.add_argument('--guard-alpha', type=float, default=DEFAULT_GUARD_ALPHA,
                        help='forgetting factor of its guard (whitening.guard_alpha; 0: off)')
    parser.add_argument('--no-bias-channel', action='store_true',
                        help='the policy without its bias channel (bias_budget_share 0)')
    parser.add_argument('--batch-outcomes', type=int, default=BATCH_OUTCOMES[0],
                        help='outcomes simulated at once (memory ~500 bytes each)')
    parser.add_argument('--bias-tail', default='',
                        help="nats below the bias threshold (e.g. 0,1,2,3): the bias channel's "
                        "own false episodes at each, on the false rows' streams (no detection "
                        'rows)')
    parser.add_argument('--regime', action='store_true',
                        help='only the change-of-correlation rows (honest throughout)')
    args = parser.parse_args()
    unknown_models = [name for name in args.models.split(',') if name not in MODELS]
    if unknown_models:
        parser.error(f"--models: unknown {', '.join(map(repr, unknown_models))}; "
                     f"known: {', '.join(map(repr, MODELS))}")
    ALPHA[:] = [args.alpha, args.guard_alpha]
    BATCH_OUTCOMES[:] = [args.batch_outcomes]
    if args.quick:
        args.hours, args.streams, args.stream_hours = 10.0, 100, 0.5
    rng = np.random.default_rng(args.seed)
    check = whitening_sim.self_check()
    bias_check = whitening_sim.bias_self_check()
    policy = Vec3ScalePolicy(bias_budget_share=0.0) if args.no_bias_channel else Vec3ScalePolicy()
    print(f'mirror vs core/serial_whitening.py: max |dv| = {check:.1e}; vs core/bias_evidence.py:'
          f' {bias_check:.1e}; alpha {args.alpha:g}, guard {args.guard_alpha:g}; policy budget '
          f'{policy.false_alarm_budget_per_day:g} per 24 h, bias share '
          f'{policy.bias_budget_share:g}, window {WINDOW}')
    if args.regime:
        regime_rows(policy, rng, args)
        return
    for rate in (float(r) for r in args.rates.split(',')):
        hours = args.hours if args.hours is not None else (500.0 if rate <= 10 else 200.0)
        h = policy.at_rate(rate).threshold_in_use
        hb = policy.at_rate(rate).bias_threshold
        print(f'\n### {rate:g} outcomes/s (thresholds: one step {h:.2f}, bias {hb:.2f} nats), '
              f'{hours:g} h per row\n')
        print('| errors | false episodes (bias) | hours | per 24 h (95% interval) '
              '| down at 1.5x, s | UNKNOWN at 3x, s | bias 1.5: down, s | bias 3.0: down, s '
              '| run, s |')
        print('|---|---|---|---|---|---|---|---|---|')
        offsets = [float(o) for o in args.bias_tail.split(',') if o]
        for name in args.models.split(','):
            model = MODELS[name]
            started = time.monotonic()
            tail = {hb - o: 0 for o in offsets}
            count, by_bias, observed = false_episodes(policy, rng, model, hours, rate,
                                                      args.stream_hours, tail)
            if offsets:
                print(f'{name}: bias-only episodes in {observed:.1f} h by threshold: ' + ', '.join(
                    f'{threshold:.2f} nats {n} ({n / observed * 24:.2f} per 24 h, 95% <= '
                    f'{poisson_interval(n, observed / 24.0)[1]:.2f})'
                    for threshold, n in tail.items()), flush=True)
            low, high = poisson_interval(count, observed / 24.0)
            row = [name, f'{count} ({by_bias})', f'{observed:.1f}',
                   f'{count / observed * 24:.2f} ({low:.2f}-{high:.2f})']
            if rate <= 10 and not offsets:
                down, _ = detection(policy, rng, model, rate, args.streams, args.lead,
                                    args.horizon, k=1.5)
                _, unknown = detection(policy, rng, model, rate, args.streams, args.lead,
                                       args.horizon, k=3.0)
                # The bias channel reports from WARMUP_OUTCOMES on: the bias comes after it.
                lead = max(args.lead, WARMUP_OUTCOMES / rate + 30.0)
                bias15, _ = detection(policy, rng, model, rate, args.streams, lead,
                                      args.horizon, bias=1.5)
                bias30, _ = detection(policy, rng, model, rate, args.streams, lead,
                                      args.horizon, bias=3.0)
                row += [fmt_time(down, rng), fmt_time(unknown, rng), fmt_time(bias15, rng),
                        fmt_time(bias30, rng)]
            else:
                row += ['', '', '', '']
            row.append(f'{time.monotonic() - started:.0f}')
            print('| ' + ' | '.join(row) + ' |', flush=True)


if __name__ == '__main__':
    main()
