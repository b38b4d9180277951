#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Assumptions bench: false downgrades per full window when the null model's assumptions break.

Every stated rate assumes independent outcomes, Gaussian errors and 3 degrees of freedom per
vec3. This bench measures each calibrated policy's fraction of full sliding windows (32) that
are downgraded on a stream whose errors still have *exactly the claimed covariance* (so an ideal
policy would stay at its stated rate), under:

- ``iid``: the null model itself (a sanity row; must reproduce the exact rates);
- ``ar1 phi``: each error component an AR(1) process ``e_t = phi e_{t-1} + sqrt(1 - phi^2) z_t``
  (unit variance, lag-1 correlation ``phi``), position and orientation independent;
- ``student-t nu=5``: multivariate Student-t per vec3, ``e = z * sqrt((nu - 2) / W)``,
  ``W ~ chi-square(nu)`` (covariance = the claim; heavier tails);
- ``planar``: the true error is 2-D (z, roll, pitch not estimated, d^2 chi-square(2)) while the
  policy assumes ``degrees_of_freedom`` 3 (its default) or is set to 2.

``mahalanobis_downgrade`` has no ``degrees_of_freedom`` (its rule does not depend on it).
``vec3_scale`` (stateful, on squared distances) is measured by ``bench/honesty_bench.py``.
Each policy decides a window by its own ``adjust()`` (a lookup table over every bucket-count
vector, verification/arl_chain.py). Standard errors from the spread across independent streams. Also
printed: for ``overconfidence_scale``, the fraction of full windows with the reason
``underconfident_calibration``. Run ``python3 bench/assumptions_bench.py [--quick]``.
"""

import argparse
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from project_ghost_feedback.verification import arl_chain
from project_ghost_feedback.core.feedback import (
    make_policy,
    policy_parameters,
    REASON_UNDERCONFIDENT_CALIBRATION,
)

POLICIES = ('mahalanobis_downgrade', 'calibrated_exceedance', 'bucket_likelihood_ratio',
            'overconfidence_scale')
WINDOW = 32


def _distances(rng: np.random.Generator, scenario: tuple[str, float],
               length: int) -> NDArray[np.float64]:
    """Return (length, 2) unsquared distances of position and orientation for ``scenario``."""
    kind, value = scenario
    dim = 2 if kind == 'planar' else 3
    z = rng.standard_normal((length, 2, dim))
    if kind == 'ar1':
        phi = value
        e = np.empty_like(z)
        e[0] = z[0]
        scale = math.sqrt(1.0 - phi * phi)
        for t in range(1, length):
            e[t] = phi * e[t - 1] + scale * z[t]
        z = e
    elif kind == 'student':
        nu = value
        w = rng.chisquare(nu, (length, 2, 1))
        z = z * np.sqrt((nu - 2.0) / w)
    return np.sqrt((z * z).sum(axis=2))


def _buckets(distances: NDArray[np.float64]) -> NDArray[np.int64]:
    worst = distances.max(axis=1)
    return np.searchsorted(np.array([1.0, 3.0, 5.0]), worst, side='left').astype(np.int64)


def _window_counts(buckets: NDArray[np.int64]) -> NDArray[np.int64]:
    """Return (windows, 4) bucket counts of every full sliding window."""
    onehot = np.zeros((len(buckets) + 1, 4), dtype=np.int64)
    onehot[np.arange(1, len(buckets) + 1), buckets] = 1
    cumulative = np.cumsum(onehot, axis=0)
    return cumulative[WINDOW:] - cumulative[:-WINDOW]


def _is_underconfident(calibrated: Any) -> bool:
    return calibrated.adjustment_reason == REASON_UNDERCONFIDENT_CALIBRATION


def measure(scenario: tuple[str, float], streams: int, length: int, seed: int, dof: int = 3,
            index: int = 0) -> tuple[dict[str, tuple[float, float]], float]:
    """Return {policy: (rate, standard error)} and the underconfident fraction for a scenario."""
    policies = [make_policy(name, {'degrees_of_freedom': dof}
                            if 'degrees_of_freedom' in policy_parameters(name) else {})
                for name in POLICIES]
    tables = [arl_chain.decision_table(p, WINDOW)[WINDOW] for p in policies]
    under = arl_chain.decision_table(policies[-1], WINDOW, _is_underconfident)[WINDOW]
    rates = np.zeros((len(policies), streams))
    under_rates = np.zeros(streams)
    for s in range(streams):
        rng = np.random.default_rng((seed, index, s))
        counts = _window_counts(_buckets(_distances(rng, scenario, length)))
        c1, c2, c3 = counts[:, 1], counts[:, 2], counts[:, 3]
        for i, table in enumerate(tables):
            rates[i, s] = table[c1, c2, c3].mean()
        under_rates[s] = under[c1, c2, c3].mean()
    result = {name: (float(r.mean()), float(r.std(ddof=1) / math.sqrt(streams)))
              for name, r in zip(POLICIES, rates)}
    return result, float(under_rates.mean())


def main(argv: list[str] | None = None) -> None:
    """Run every scenario and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--streams', type=int, default=40, help='independent streams (40)')
    parser.add_argument('--length', type=int, default=25_000, help='outcomes per stream (25000)')
    parser.add_argument('--seed', type=int, default=2026)
    parser.add_argument('--quick', action='store_true', help='8 streams of 10000')
    args = parser.parse_args(argv)
    if args.quick:
        args.streams, args.length = 8, 10_000
    scenarios = [(('iid', 0), 3, 'i.i.d. Gaussian (null model)'),
                 (('ar1', 0.3), 3, 'AR(1) phi = 0.3'),
                 (('ar1', 0.6), 3, 'AR(1) phi = 0.6'),
                 (('ar1', 0.9), 3, 'AR(1) phi = 0.9'),
                 (('student', 5.0), 3, 'Student-t nu = 5 (covariance = claim)'),
                 (('planar', 0), 3, 'planar (true dim 2), degrees_of_freedom = 3'),
                 (('planar', 0), 2, 'planar (true dim 2), degrees_of_freedom = 2')]
    print(f'Assumptions bench: {args.streams} streams x {args.length} outcomes per scenario, '
          f'window {WINDOW}, seed {args.seed}; % of full sliding windows downgraded '
          '(+- s.e. across streams); errors always have the claimed covariance.\n')
    print('| errors | ' + ' | '.join(f'`{n}`' for n in POLICIES)
          + ' | `overconfidence_scale` underconfident_calibration |')
    print('|---' * (len(POLICIES) + 2) + '|')
    for index, (scenario, dof, label) in enumerate(scenarios):
        result, under = measure(scenario, args.streams, args.length, args.seed, dof, index)
        cells = ' | '.join(f'{100 * m:.3f}% +- {100 * e:.3f}' for m, e in result.values())
        print(f'| {label} | {cells} | {100 * under:.2f}% |')


if __name__ == '__main__':
    main()
