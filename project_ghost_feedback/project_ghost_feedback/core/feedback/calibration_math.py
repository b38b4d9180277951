# SPDX-License-Identifier: Apache-2.0
"""Exact null distributions for calibration tests on bucketed outcomes (pure, stdlib only).

Everything here is a closed-form or exactly summed probability under a Gaussian error model: an
estimator whose true error covariance is ``k**2`` times the claimed one (``k = 1``: calibrated,
``k > 1``: overconfident). For a ``dof``-dimensional error vector the squared **unsquared**
Mahalanobis distance ``d**2`` is then ``k**2`` times a chi-square variate with ``dof`` degrees of
freedom. A PredictionOutcome carries one distance per vec3 (position, orientation) and is bucketed
by the larger one, so with ``vectors`` independent vectors per outcome
``P(max d > t) = 1 - (1 - P(d > t))**vectors``.

No numpy or scipy: the survival function of the chi distribution is
:func:`.chi_square.chi_survival` (the regularized incomplete gamma, the small tail computed
directly), binomial terms use ``math.lgamma``, and tails are summed from the far end so that small
probabilities keep their relative precision.
"""

from collections.abc import Iterator, Sequence
import math

from .chi_square import chi_survival

BUCKET_EDGES = (1.0, 3.0, 5.0)
"""Upper edges of the within_1 / beyond_1 / beyond_3 buckets (beyond_5 is open-ended)."""


def outcome_exceedance(t: float, dof: int, vectors: int, overconfidence: float = 1.0) -> float:
    """Return ``P(max of vectors distances > t)``, true errors ``overconfidence`` x the claimed.

    Computed as ``-expm1(vectors * log1p(-p))`` with ``p = chi_survival(t / overconfidence, dof)``
    so that tiny exceedance probabilities (``~3e-5`` beyond 5 std) stay exact to the last digits.
    """
    p = chi_survival(t / overconfidence, dof)
    if p >= 1.0:
        return 1.0
    return -math.expm1(vectors * math.log1p(-p))


def bucket_probabilities(
        dof: int, vectors: int, overconfidence: float = 1.0,
) -> tuple[float, float, float, float]:
    """Return the per-outcome probabilities of the four buckets (within_1, beyond_1, 3, 5).

    Buckets follow the contract: ``d <= 1``, ``1 < d <= 3``, ``3 < d <= 5``, ``d > 5`` for the worse
    of the outcome's ``vectors`` distances. The four values sum to 1 (up to rounding).
    """
    g1, g3, g5 = (outcome_exceedance(t, dof, vectors, overconfidence) for t in BUCKET_EDGES)
    return (1.0 - g1, g1 - g3, g3 - g5, g5)


def _log_binomial_pmf_terms(n: int, p: float) -> list[float]:
    """Return ``[log P(X = j) for j in 0..n]`` for ``X ~ Binomial(n, p)``, ``0 < p < 1``."""
    log_p = math.log(p)
    log_q = math.log1p(-p)
    log_n_fact = math.lgamma(n + 1)
    return [
        log_n_fact - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_p + (n - j) * log_q
        for j in range(n + 1)
    ]


def binomial_pmf(n: int, p: float) -> list[float]:
    """Return ``[P(X = j) for j in 0..n]`` for ``X ~ Binomial(n, p)``, ``0 < p < 1``."""
    return [math.exp(term) for term in _log_binomial_pmf_terms(n, p)]


def binomial_upper_tails(n: int, p: float) -> list[float]:
    """Return ``tails[k] = P(X >= k)`` for ``k`` in ``0..n+1`` (``tails[n+1] = 0``)."""
    pmf = binomial_pmf(n, p)
    tails = [0.0] * (n + 2)
    running = 0.0
    for j in range(n, -1, -1):
        running += pmf[j]
        tails[j] = running
    return tails


def smallest_count_with_tail_at_most(tails: Sequence[float], alpha: float) -> int:
    """Return the smallest ``k`` with ``tails[k] <= alpha`` (``tails`` non-increasing, last 0).

    With ``tails`` from :func:`binomial_upper_tails`, ``k = n + 1`` means that no count is rare
    enough: even ``X = n`` has probability above ``alpha``.
    """
    k = len(tails) - 1
    while k > 0 and tails[k - 1] <= alpha:
        k -= 1
    return k


TAIL_SPAN_STD = 40.0
"""Upper-tail terms of a binomial beyond ``mean + 40 std + 40`` are below ``exp(-745)``: zero."""


def binomial_threshold(n: int, p: float, alpha: float) -> int:
    """Return the smallest ``k`` with ``P(Binomial(n, p) >= k) <= alpha``, ``0 < p < 1``.

    The same value as ``smallest_count_with_tail_at_most(binomial_upper_tails(n, p), alpha)``,
    in time bounded by ``O(sqrt(n))`` rather than ``O(n)``: the tail is summed from the far end
    as there, but starting at ``mean + 40 std + 40``, beyond which every term underflows to
    zero in double precision (so the sum is the same). A window of 100,000 outcomes costs
    about 3,000 terms.
    """
    mean = n * p
    top = min(n, int(mean + TAIL_SPAN_STD * math.sqrt(mean * (1.0 - p)) + TAIL_SPAN_STD) + 1)
    log_p = math.log(p)
    log_q = math.log1p(-p)
    log_n_fact = math.lgamma(n + 1)
    tail = 0.0
    k = top + 1
    while k > 0:
        j = k - 1
        term = math.exp(log_n_fact - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                        + j * log_p + (n - j) * log_q)
        if tail + term > alpha:
            break
        tail += term
        k = j
    return k if k <= n else n + 1


def binomial_thresholds(max_n: int, p: float, alpha: float) -> tuple[int, ...]:
    """Return ``t`` with ``t[n]`` the smallest ``k`` such that ``P(X >= k | n, p) <= alpha``.

    Indexed by ``n`` in ``0..max_n``; ``t[n] = n + 1`` means that the test cannot fire for ``n``.
    """
    return tuple(
        smallest_count_with_tail_at_most(binomial_upper_tails(n, p), alpha)
        for n in range(max_n + 1))


def exceedance_alarm_probability(n: int, p_beyond_3: float, p_beyond_5: float,
                                 k_significant: int, k_gross: int) -> float:
    """Return ``P(B3 >= k_significant or B5 >= k_gross)`` over ``n`` independent outcomes.

    ``B3`` counts outcomes beyond 3 std (beyond_5 included) and ``B5`` those beyond 5 std; each
    outcome is beyond 5 with ``p_beyond_5`` and in ``(3, 5]`` with ``p_beyond_3 - p_beyond_5``.
    Exact trinomial sum: ``P(B3 >= k_s) + P(B5 >= k_g and B3 < k_s)``, all terms positive.
    """
    total = binomial_upper_tails(n, p_beyond_3)[min(k_significant, n + 1)]
    if p_beyond_5 <= 0.0:
        return total
    p_mid = p_beyond_3 - p_beyond_5
    p_low = 1.0 - p_beyond_3
    log_n_fact = math.lgamma(n + 1)
    for c in range(k_gross, min(k_significant, n + 1)):
        for b in range(0, min(k_significant - c, n - c + 1)):
            a = n - b - c
            log_term = (log_n_fact - math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(c + 1)
                        + a * math.log(p_low) + c * math.log(p_beyond_5))
            if b:
                log_term += b * math.log(p_mid)
            total += math.exp(log_term)
    return total


def integer_sum_distribution(
        max_n: int, values: Sequence[int], probabilities: Sequence[float],
) -> Iterator[tuple[int, list[float]]]:
    """Yield, for ``n`` in ``0..max_n``, ``(offset, pmf)`` of a sum of ``n`` i.i.d. integer scores.

    Each summand takes ``values[i]`` (ints) with ``probabilities[i]``. ``pmf[j]`` is
    ``P(sum == offset + j)``. Exact convolution (dynamic programming over the support), no
    approximation beyond float rounding.
    """
    low, high = min(values), max(values)
    moves = [(value - low, prob) for value, prob in zip(values, probabilities) if prob > 0.0]
    pmf = [1.0]
    yield 0, pmf
    for n in range(1, max_n + 1):
        nxt = [0.0] * (len(pmf) + high - low)
        for shift, prob in moves:
            for j, mass in enumerate(pmf):
                if mass:
                    nxt[j + shift] += mass * prob
        pmf = nxt
        yield n * low, pmf


def upper_tail_threshold(offset: int, pmf: Sequence[float], alpha: float) -> tuple[int, float]:
    """Return ``(s, tail)``: the smallest integer ``s`` with ``P(S >= s) <= alpha``, and that tail.

    ``s`` may be one past the largest possible sum (the test cannot fire), with tail 0.
    """
    tail = 0.0
    j = len(pmf)
    while j > 0 and tail + pmf[j - 1] <= alpha:
        tail += pmf[j - 1]
        j -= 1
    return offset + j, tail
