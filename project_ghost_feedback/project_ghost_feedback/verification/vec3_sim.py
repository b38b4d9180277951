# SPDX-License-Identifier: Apache-2.0
"""Vectorised mirror of ``vec3_scale`` (``core/feedback/vec3_scale_policy.py``) for the benches.

Bench helper (numpy, never imported by the pure core). :func:`levels` computes, for many
independent streams at once, the level the policy gives after every outcome, from the two
vec3's squared distances of each outcome, with the loop's ``previous`` (hysteresis) carried
from one outcome to the next exactly as the feedback loop does. The window statistics are
computed for every time step at once (prefix sums and sliding minima); only the hysteresis is a
loop over time (vectorised over streams). ``honesty_bench.self_check_vec3`` checks this mirror
against the policy's own ``adjust_following`` outcome by outcome.

Streams (:func:`squared_distances`): i.i.d. Gaussian errors with true/claimed scale ``k`` per
vec3 (a constant, or one value per time step for a drift), one axis scaled inside a vec3,
AR(1) errors, multivariate Student-t, planar (2-D) errors.
"""

from collections.abc import Callable, Iterable
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.contracts import BeliefSelfAssessment
from ..core.feedback import CalibrationAdjustmentPolicy, CalibrationHistory
from ..core.feedback.vec3_scale_policy import BIAS_EXIT_FRACTION, Vec3ScalePolicy
from ..core.loop import RATE_MIN_OUTCOMES

_FloatArray = NDArray[np.float64]
_Levels = NDArray[np.int8]
"""Level values per stream and time step (0 UNKNOWN, 1 UNCERTAIN, 2 KNOWN)."""
_Estimate = tuple[float, float]
"""A mean (or share) and its standard error."""

UNKNOWN, UNCERTAIN, KNOWN = 0, 1, 2


def squared_distances(rng: np.random.Generator, streams: int, length: int, *,
                      scale: ArrayLike = 1.0, position_scale: ArrayLike | None = None,
                      dim: int = 3, axis_scale: float | None = None, ar1: float | None = None,
                      student_nu: float | None = None) -> tuple[_FloatArray, _FloatArray]:
    """Return ``(xp, xo)``, each ``(streams, length)``: squared distances of both vec3.

    ``scale`` is a float or an array of ``length`` (a drift); ``position_scale`` overrides it for
    the position vec3; ``axis_scale`` multiplies the first position axis only.
    """
    z = rng.standard_normal((streams, length, 2, dim))
    if ar1 is not None:
        e = np.empty_like(z)
        e[:, 0] = z[:, 0]
        c = math.sqrt(1.0 - ar1 * ar1)
        for t in range(1, length):
            e[:, t] = ar1 * e[:, t - 1] + c * z[:, t]
        z = e
    if student_nu is not None:
        w = rng.chisquare(student_nu, (streams, length, 2, 1))
        z = z * np.sqrt((student_nu - 2.0) / w)
    if axis_scale is not None:
        z[:, :, 0, 0] *= axis_scale
    x = (z * z).sum(axis=3)
    s = np.broadcast_to(np.asarray(scale, dtype=float), (length,))
    xp = x[:, :, 0] * (s if position_scale is None else np.broadcast_to(
        np.asarray(position_scale, dtype=float), (length,))) ** 2
    xo = x[:, :, 1] * s ** 2
    return xp, xo


def _window_sum(a: NDArray[Any], window: int) -> NDArray[Any]:
    """Return the sum of the last ``window`` values (fewer at the start) at every time step."""
    c = np.cumsum(a, axis=1)
    out = c.copy()
    out[:, window:] -= c[:, :-window]
    return out


def _suffix_max(increments: _FloatArray, window: int) -> _FloatArray:
    """Return max(0, max over suffixes of at most ``window`` increments) at every time step."""
    prefix = np.cumsum(increments, axis=1)
    padded = np.concatenate([np.zeros((prefix.shape[0], 1)), prefix], axis=1)
    low = padded[:, 1:].copy()
    for shift in range(1, min(window, prefix.shape[1]) + 1):
        low[:, shift - 1:] = np.minimum(low[:, shift - 1:], padded[:, :padded.shape[1] - shift])
    return prefix - low


def statistics(policy: Vec3ScalePolicy, xp: _FloatArray, xo: _FloatArray, window: int
               ) -> dict[str, NDArray[Any]]:
    """Return the per-time-step window statistics of ``policy`` for the streams ``xp, xo``."""
    worst = np.maximum(xp, xo)
    gross_d = policy.gross_distance
    if gross_d > 0.0:
        gross_count = _window_sum((worst > gross_d * gross_d).astype(float), window)
    else:
        gross_count = np.zeros_like(worst)
    cap = policy.winsorize_distance
    if cap > 0.0:
        xp = np.minimum(xp, cap * cap)
        xo = np.minimum(xo, cap * cap)
    a1, b1 = policy.llr_coefficients
    n = np.minimum(np.arange(1, xp.shape[1] + 1), window)
    rows = np.array([policy.thresholds(int(m)) for m in range(window + 1)])
    gross_in, gross_out, joint_out, under = rows[n, 0], rows[n, 1], rows[n, 2], rows[n, 3]
    cusum = _suffix_max(a1 * (xp + xo) - b1, window)
    a2, b2 = policy.gross_llr_coefficients
    gross_cusum = _suffix_max(a2 * (xp + xo) - b2, window)
    sp = _window_sum(xp, window)
    so = _window_sum(xo, window)
    return {
        'cusum': cusum, 'block': np.maximum(sp, so), 'joint': sp + so,
        'gross_in': gross_in, 'gross_out': gross_out, 'joint_out': joint_out,
        'under': (sp + so) <= under,
        'gross': (gross_count > 0.5) | (gross_cusum >= policy.gross_cusum_threshold),
    }


def thresholds_in_use(policy: Vec3ScalePolicy, length: int, window: int,
                      rate_hz: float | None = None, start: int = 0,
                      which: str = 'threshold_in_use') -> _FloatArray:
    """Return the one-step threshold at each of ``length`` steps after a reset (``start`` in).

    A policy with a false-alarm budget in time and a measured rate spends it as
    ``core/loop.py`` does: at the most conservative rate until the window holds
    ``RATE_MIN_OUTCOMES`` outcomes, then at ``rate_hz`` (regular sampling). ``which``:
    ``'bias_threshold'`` for the bias channel's (``inf`` for a policy without one).
    """
    if not hasattr(policy, 'at_rate'):
        fixed = policy.significant_threshold if which == 'threshold_in_use' else np.inf
        return np.full(length, fixed)
    early = getattr(policy.at_rate(None), which)
    late = getattr(policy.at_rate(rate_hz), which)
    n = np.minimum(np.arange(start + 1, start + length + 1), window)
    return np.where(n < RATE_MIN_OUTCOMES, early, late)


def bias_thresholds_in_use(policy: Vec3ScalePolicy, length: int, window: int,
                           rate_hz: float | None = None, start: int = 0) -> _FloatArray:
    """Return the bias channel's threshold at each step, as :func:`thresholds_in_use`."""
    return thresholds_in_use(policy, length, window, rate_hz, start, which='bias_threshold')


def levels(policy: Vec3ScalePolicy, xp: _FloatArray, xo: _FloatArray, window: int = 32,
           start_previous: _Levels | None = None,
           underconfident: list[NDArray[np.bool_]] | None = None, rate_hz: float | None = None,
           start: int = 0, bias: _FloatArray | None = None,
           biased: list[NDArray[np.bool_]] | None = None) -> _Levels:
    """Return the ``(streams, length)`` levels (0 UNKNOWN, 1 UNCERTAIN, 2 KNOWN) of the stream.

    ``underconfident``, a list, receives the boolean array "reason underconfident_calibration".
    ``rate_hz``: the outcome rate a budgeted policy spends its budget at (None: the most
    conservative); ``start``: outcomes already in the window (a continued stream). ``bias``: the
    outcomes' ``bias_evidence_nats`` (``(streams, length)``), judged as ``core/loop.py`` does
    (one step where the scale test took none, held above ``BIAS_EXIT_FRACTION`` of the
    threshold, and a bias downgrade is no previous step for the scale test's hysteresis);
    ``biased``, a list, receives the boolean array "reason biased_*".
    """
    st = statistics(policy, xp, xo, window)
    h_in = thresholds_in_use(policy, xp.shape[1], window, rate_hz, start)
    h_out = policy.significant_exit_threshold
    streams, length = xp.shape
    h_bias = bias_thresholds_in_use(policy, length, window, rate_hz, start)
    out = np.empty((streams, length), dtype=np.int8)
    by_bias = np.zeros((streams, length), dtype=bool)
    prev = np.full(streams, KNOWN, dtype=np.int8) if start_previous is None else start_previous
    prev_bias = np.zeros(streams, dtype=bool)
    cusum, block, joint, gross = st['cusum'], st['block'], st['joint'], st['gross']
    gin, gout, jout = st['gross_in'], st['gross_out'], st['joint_out']
    for t in range(length):
        scale_prev = np.where(prev_bias, KNOWN, prev)
        was_unknown = scale_prev == UNKNOWN
        unknown = gross[:, t] | (block[:, t] >= gin[t]) | (was_unknown & (block[:, t] > gout[t]))
        stay = (scale_prev != KNOWN) & ((cusum[:, t] > h_out) | (joint[:, t] > jout[t]))
        uncertain = (cusum[:, t] >= h_in[t]) | stay
        level = np.where(unknown, UNKNOWN, np.where(uncertain, UNCERTAIN, KNOWN)).astype(np.int8)
        if bias is not None:
            e = bias[:, t]
            fired = (level == KNOWN) & ((e >= h_bias[t]) | (
                prev_bias & (e > BIAS_EXIT_FRACTION * h_bias[t])))
            level = np.where(fired, UNCERTAIN, level).astype(np.int8)
            by_bias[:, t] = fired
            prev_bias = fired
        out[:, t] = level
        prev = level
    if biased is not None:
        biased.append(by_bias)
    if underconfident is not None:
        underconfident.append(st['under'] & (out == KNOWN))
    return out


def bias_episodes(evidence: _FloatArray, threshold: float) -> int:
    """Return the bias channel's own episodes in ``(streams, length)`` evidence at ``threshold``.

    The rule of ``Vec3ScalePolicy.bias_step`` (tested equal to it): an episode enters at or
    above ``threshold`` and lasts while the evidence stays above ``BIAS_EXIT_FRACTION`` of it.
    The scale test is left aside (unlike :func:`levels`): an upper bound of what the channel adds
    to the policy's episodes at that threshold. Vectorised over time, for the long honest runs.
    """
    above = evidence >= threshold
    below = evidence <= BIAS_EXIT_FRACTION * threshold
    index = np.arange(evidence.shape[1])[None, :]
    last_above = np.maximum.accumulate(np.where(above, index, -1), axis=1)
    last_below = np.maximum.accumulate(np.where(below, index, -1), axis=1)
    # Before sample t the channel is out when no entry came yet or an exit came after it.
    out_before = np.ones_like(above)
    out_before[:, 1:] = (last_above[:, :-1] < 0) | (last_below[:, :-1] > last_above[:, :-1])
    return int((above & out_before).sum())


# -- graded policy v3's design targets, measured with standard errors -----------------------------

FLAP_FACTORS = tuple(round(1.0 + 0.1 * i, 1) for i in range(21)) + (4.0, 5.0, 10.0)


def binomial_se(p: float, n: int) -> float:
    """Return the binomial standard error of a share ``p`` of ``n``."""
    return math.sqrt(max(p * (1.0 - p), 0.0) / max(n, 1))


def _median_se(values: ArrayLike, rng: np.random.Generator) -> tuple[float, float]:
    """Return (median, bootstrap s.e.) of ``values`` (inf allowed)."""
    values = np.asarray(values, dtype=float)
    boots = [np.median(rng.choice(values, len(values))) for _ in range(200)]
    return float(np.median(values)), float(np.std(boots))


def calibrated_stream_figures(policy: Vec3ScalePolicy, rng: np.random.Generator, streams: int,
                              length: int, window: int = 32, **model: Any
                              ) -> dict[str, _Estimate]:
    """Return false downgrade / UNKNOWN fractions per full window and the entry rate, with s.e."""
    xp, xo = squared_distances(rng, streams, length, **model)
    flags: list[NDArray[np.bool_]] = []
    lv = levels(policy, xp, xo, window, underconfident=flags)[:, window - 1:]
    under = flags[0][:, window - 1:].mean(axis=1)
    down = (lv != KNOWN).mean(axis=1)
    unknown = (lv == UNKNOWN).mean(axis=1)
    changes = (np.diff(lv, axis=1) != 0).sum(axis=1) / (lv.shape[1] - 1) * 1000
    return {
        'false': (down.mean(), down.std(ddof=1) / math.sqrt(streams)),
        'unknown': (unknown.mean(), unknown.std(ddof=1) / math.sqrt(streams)),
        'changes': (changes.mean(), changes.std(ddof=1) / math.sqrt(streams)),
        'under': (under.mean(), under.std(ddof=1) / math.sqrt(streams)),
    }


def first_passage(policy: Vec3ScalePolicy, rng: np.random.Generator, streams: int,
                  window: int = 32, chunk: int = 4096, max_length: int = 200_000
                  ) -> tuple[float, float, int]:
    """Return (mean, s.e.) of outcomes to the first downgrade from an empty window, calibrated.

    Each stream runs until its first downgrade; streams are advanced in blocks of ``chunk``
    outcomes, the window carried over between blocks (the last ``window`` outcomes are prepended).
    """
    times = np.full(streams, np.nan)
    alive = np.arange(streams)
    hist_p = np.zeros((streams, 0))
    hist_o = np.zeros((streams, 0))
    offset = 0
    prev = np.full(streams, KNOWN, dtype=np.int8)
    while alive.size and offset < max_length:
        xp, xo = squared_distances(rng, alive.size, chunk)
        full_p = np.concatenate([hist_p[alive], xp], axis=1)
        full_o = np.concatenate([hist_o[alive], xo], axis=1)
        lv = levels(policy, full_p, full_o, window, start_previous=prev[alive])
        lv = lv[:, full_p.shape[1] - chunk:]
        hit = (lv != KNOWN)
        any_hit = hit.any(axis=1)
        first = hit.argmax(axis=1)
        times[alive[any_hit]] = offset + first[any_hit] + 1
        keep = ~any_hit
        new_hist_p = np.zeros((streams, min(window, full_p.shape[1])))
        new_hist_o = np.zeros_like(new_hist_p)
        new_hist_p[alive] = full_p[:, -new_hist_p.shape[1]:]
        new_hist_o[alive] = full_o[:, -new_hist_o.shape[1]:]
        hist_p, hist_o = new_hist_p, new_hist_o
        alive = alive[keep]
        offset += chunk
    censored = np.isnan(times)
    times[censored] = offset
    mean = times.sum() / max((~censored).sum(), 1)
    return mean, times.std(ddof=1) / math.sqrt(streams), int(censored.sum())


def reset_starts(policy: Vec3ScalePolicy, rng: np.random.Generator, starts: int,
                 window: int = 32, chunk: int = 200_000, **model: Any) -> dict[str, Any]:
    """Return what the first ``window`` outcomes after a reset (an empty window) do.

    ``{'unknown': (p, s.e.), 'downgrade': (p, s.e.), 'starts': starts}``: the share of starts
    with a level UNKNOWN (respectively below KNOWN) at any of those outcomes, with its binomial
    standard error; the window is empty at the start as after a reset or a start of the node.
    """
    unknown = downgrade = 0
    done = 0
    while done < starts:
        size = min(chunk, starts - done)
        xp, xo = squared_distances(rng, size, window, **model)
        lv = levels(policy, xp, xo, window)
        unknown += int((lv == UNKNOWN).any(axis=1).sum())
        downgrade += int((lv != KNOWN).any(axis=1).sum())
        done += size
    return {'unknown': (unknown / starts, binomial_se(unknown / starts, starts)),
            'downgrade': (downgrade / starts, binomial_se(downgrade / starts, starts)),
            'starts': starts, 'unknown_count': unknown}


def from_reset(policy: Vec3ScalePolicy, rng: np.random.Generator, streams: int,
               factor_model: dict[str, Any], window: int = 32, cap: int = 128
               ) -> tuple[_FloatArray, _FloatArray]:
    """Return arrays (to first downgrade, to UNKNOWN) of streams overconfident from a reset."""
    xp, xo = squared_distances(rng, streams, cap, **factor_model)
    lv = levels(policy, xp, xo, window)
    down = lv != KNOWN
    unk = lv == UNKNOWN
    return (np.where(down.any(1), down.argmax(1) + 1, np.inf),
            np.where(unk.any(1), unk.argmax(1) + 1, np.inf))


def detection(policy: Vec3ScalePolicy, rng: np.random.Generator, streams: int,
              factor_model: dict[str, Any], window: int = 32, cap: int = 128, burn: int = 96
              ) -> tuple[_FloatArray, _FloatArray]:
    """Return arrays (to first downgrade, to UNKNOWN) after a switch at a KNOWN calibrated state.

    ``factor_model`` is the keyword arguments of :func:`squared_distances` after the switch.
    Runs whose level is not KNOWN at the switch are dropped (and redrawn).
    """
    firsts: list[float] = []
    unknowns: list[float] = []
    while len(firsts) < streams:
        bp, bo = squared_distances(rng, streams, burn)
        ap, ao = squared_distances(rng, streams, cap, **factor_model)
        lv = levels(policy, np.concatenate([bp, ap], 1), np.concatenate([bo, ao], 1), window)
        ok = lv[:, burn - 1] == KNOWN
        after = lv[ok, burn:]
        down = after != KNOWN
        unk = after == UNKNOWN
        f = np.where(down.any(1), down.argmax(1) + 1, np.inf)
        u = np.where(unk.any(1), unk.argmax(1) + 1, np.inf)
        firsts.extend(f.tolist())
        unknowns.extend(u.tolist())
    return np.array(firsts[:streams]), np.array(unknowns[:streams])


def _levels_of(policy: Vec3ScalePolicy | _Levels, xp: _FloatArray, xo: _FloatArray,
               window: int) -> _Levels:
    """Return the levels of ``policy``: a stateful mirrored policy, or a level table (array)."""
    if isinstance(policy, np.ndarray):
        return count_policy_levels(policy, xp, xo, window)
    return levels(policy, xp, xo, window)


def steady_state(policy: Vec3ScalePolicy | _Levels, rng: np.random.Generator, streams: int,
                 length: int, window: int = 32, burn: int = 256, **model: Any
                 ) -> dict[str, _Estimate]:
    """Return per-level fractions and level changes per 1000 outcomes, each (mean, s.e.).

    ``policy`` is a mirrored policy or the level table of a count-based one (:func:`level_table`).
    """
    xp, xo = squared_distances(rng, streams, burn + length, **model)
    lv = _levels_of(policy, xp, xo, window)[:, burn:]
    out: dict[str, _Estimate] = {}
    for name, code in (('known', KNOWN), ('uncertain', UNCERTAIN), ('unknown', UNKNOWN)):
        f = (lv == code).mean(axis=1)
        out[name] = (f.mean(), f.std(ddof=1) / math.sqrt(streams))
    ch = (np.diff(lv, axis=1) != 0).sum(axis=1) * 1000.0 / (length - 1)
    out['changes'] = (ch.mean(), ch.std(ddof=1) / math.sqrt(streams))
    return out


def drift(policy: Vec3ScalePolicy | _Levels, rng: np.random.Generator, streams: int,
          length: int = 2000, window: int = 32, burn: int = 64
          ) -> tuple[NDArray[np.int64], _FloatArray, _FloatArray]:
    """Return per-run (level changes, k at first downgrade, k at first UNKNOWN), k 1 -> 3."""
    k = np.concatenate([np.ones(burn), 1.0 + 2.0 * np.arange(1, length + 1) / length])
    xp, xo = squared_distances(rng, streams, burn + length, scale=k)
    lv = _levels_of(policy, xp, xo, window)
    changes = (np.diff(lv[:, burn - 1:], axis=1) != 0).sum(axis=1)
    after = lv[:, burn:]
    kk = k[burn:]
    down = after != KNOWN
    unk = after == UNKNOWN
    k_first = np.where(down.any(1), kk[down.argmax(1)], np.inf)
    k_unknown = np.where(unk.any(1), kk[unk.argmax(1)], np.inf)
    return changes, k_first, k_unknown


# -- the count-based policies on the same streams ------------------------------------------------

_EDGES = np.array([1.0, 9.0, 25.0])


def level_table(policy: CalibrationAdjustmentPolicy, window: int, raw: BeliefSelfAssessment,
                histories: Callable[[int], Iterable[tuple[tuple[int, int, int],
                                                          CalibrationHistory]]]) -> _Levels:
    """Return ``table[n, c1, c2, c3]``: the level value ``policy.adjust`` gives that window."""
    size = window + 1
    table = np.full((size, size, size, size), KNOWN, dtype=np.int8)
    for n in range(1, size):
        for counts, history in histories(n):
            table[(n,) + counts] = policy.adjust(raw, history).adjusted_overall_level.value
    return table


def count_policy_levels(table: _Levels, xp: _FloatArray, xo: _FloatArray,
                        window: int = 32) -> _Levels:
    """Return the levels of a stateless count-based policy (``table``) on the streams."""
    buckets = np.searchsorted(_EDGES, np.maximum(xp, xo), side='left')
    streams, length = buckets.shape
    n = np.minimum(np.arange(1, length + 1), window)
    counts = [_window_sum((buckets == b).astype(np.int64), window) for b in (1, 2, 3)]
    return table[n[None, :], counts[0], counts[1], counts[2]]
