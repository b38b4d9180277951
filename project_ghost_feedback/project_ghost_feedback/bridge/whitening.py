# SPDX-License-Identifier: Apache-2.0
"""Prewhitening of the bridge's outcomes: every one kept, its serial correlation removed (no ROS).

The policies' false-alarm rates assume independent outcomes, but a filter's estimate-vs-reference
errors are serially correlated (a Kalman filter's error is an AR process). Instead of thinning the
stream (the :class:`~.decorrelation.OutcomePacer`, which throws away the evidence a test needs and
still leaves the kept outcomes correlated), each vec3's error is whitened twice:

1. **in space**, by the claimed covariance: ``z_t = L_t^-1 e_t`` with ``S_t = L_t L_t^T`` the
   Cholesky factor of the vec3's claimed covariance (estimate plus reference) at ``t``; under an
   honest claim ``z_t`` has identity covariance and ``|z_t| = d_t``, the Mahalanobis distance;
2. **in time**, by an AR(p) model of ``z`` fitted on past data only: ``v_t = (z_t - sum_j phi_j
   z_{t-j}) / s`` with ``phi`` from the Yule-Walker equations of the autocorrelations
   ``rho_1 .. rho_p`` of ``z`` (pooled over the vec3's components, exponential forgetting
   ``alpha``) and ``s^2 = 1 - sum_j phi_j rho_j`` the innovation variance relative to ``z``'s.
   ``s`` is a ratio of autocovariances, so an overconfidence ``k`` (``z`` scaled by ``k``) passes
   through unchanged: ``v`` is ``k`` times a white unit vector, ``|v|^2`` is ``k^2`` chi-square(m),
   independent from outcome to outcome -- what the policies are calibrated for.

Rules (``docs/bridge.md``, "Prewhitening"):

- the estimate used for ``v_t`` is the one *before* ``z_t`` updates it (past data only);
- warm-up: until ``warmup_samples`` pairs of consecutive samples have fed the estimate the vec3 is
  *not warm* and the engine withholds the outcome (a start, a reset, a configuration change);
- a chain break: a sample further than ``max_gap_factor`` times the usual spacing from the previous
  one (a dropped reference, a pause), or after a non-finite or unwhitenable sample, starts a new
  chain: its first samples are emitted with the lags they have (``v = z`` for the first: still a
  unit vector under an honest claim, uncorrelated with the next innovations);
- a sample whose covariance is not positive definite (``z`` unknown) or whose distance is ``+inf``
  passes through unwhitened (the distance as computed) and breaks the chain;
- the statistics restart on the bridge's resets (clock jump, stamp jump) and configuration changes;
- the guard (``guard_alpha``): a fast estimate beside the slow one, the one that leaves the larger
  innovation variance whitens, so an error that becomes less correlated is not over-whitened
  (``core/serial_whitening.py``).

The cost, measured in ``bench/whitening_bench.py``: a constant bias ``b`` of ``z`` reaches ``v``
attenuated by ``(1 - sum phi) / s`` (``sqrt((1 - phi) / (1 + phi))`` for AR(1): 0.23 at 0.9), as a
mean the scale test does not see. The bias channel: every emitted outcome's ``v`` of both vec3
also feeds a :class:`~..core.bias_evidence.BiasEvidence`, whose evidence the outcome carries
(``bias_evidence_nats``, ``bias_position_share``) for the feedback node to judge. Outcomes
withheld during the warm-up, unwhitenable, ``+inf`` or gross samples do not feed it; it restarts
with the whitening.
"""

import math
from collections.abc import Sequence
from typing import Any

from ..core.bias_evidence import BiasEvidence
from ..core.feedback.chi_square import chi_to_chi3
from ..core.innovation import InnovationRefused, norm, whiten
from ..core.serial_whitening import (
    DEFAULT_ALPHA, DEFAULT_GUARD_ALPHA, DEFAULT_MAX_GAP_FACTOR, DEFAULT_ORDER,
    DEFAULT_WARMUP_SAMPLES, SerialWhitener)


Block = tuple[Sequence[float], Sequence[Sequence[float]], float]
"""One vec3's ``(error, covariance, raw distance)`` over the components kept."""


def cholesky_whiten(error: Sequence[float], covariance: Sequence[Sequence[float]]
                    ) -> tuple[float, ...] | None:
    """Return ``L^-1 e`` for ``S = L L^T`` (``S`` symmetrised), or None if ``S`` is not PD."""
    m = len(error)
    flat = [0.5 * (covariance[i][j] + covariance[j][i]) for i in range(m) for j in range(m)]
    try:
        z = whiten(error, flat)
    except InnovationRefused:
        return None
    if not all(map(math.isfinite, z)):
        return None
    return tuple(z)


def error_blocks(error: Any, estimate_covariance: Any, reference_covariance: Any,
                 kept: Sequence[bool]) -> list[tuple[list[float], list[list[float]], float]]:
    """Return per vec3 ``(error, covariance, raw distance)`` over the components ``kept``.

    ``error``: a :class:`~.geometry.PoseError`; the covariances are 6x6 (array-likes with
    ``tolist``, the reference's None when it has none or it is not used); ``kept``: six booleans
    (AXES order), False for an ignored axis. The covariance is the estimate's plus the
    reference's, as the raw distance was taken.
    """
    rows = estimate_covariance.tolist()
    if reference_covariance is not None:
        rows = [[a + b for a, b in zip(row, other)]
                for row, other in zip(rows, reference_covariance.tolist())]
    result = []
    for offset, vector, raw in ((0, error.position_error_m, error.position_mahalanobis),
                                (3, error.orientation_error_rad, error.orientation_mahalanobis)):
        index = [offset + i for i in range(3) if kept[offset + i]]
        result.append(([float(vector[i - offset]) for i in index],
                       [[float(rows[i][j]) for j in index] for i in index], float(raw)))
    return result


class OutcomeWhitening:
    """Both vec3 of the bridge's outcomes whitened in space and time (module documentation).

    :meth:`distances` takes one paired estimate's two error vectors with the claimed covariance
    blocks (estimate plus reference) and the raw distances, and returns the distances the
    outcome carries: ``|v|`` of each vec3 mapped from ``chi(m)`` onto ``chi(3)`` when the vec3
    keeps ``m < 3`` components (ignored axes), ``+inf`` kept, a vec3 with no component 0.
    """

    __slots__ = ('position', 'orientation', 'settings', 'bias')

    def __init__(self, order: int = DEFAULT_ORDER, alpha: float = DEFAULT_ALPHA,
                 warmup_samples: int = DEFAULT_WARMUP_SAMPLES,
                 max_gap_factor: float = DEFAULT_MAX_GAP_FACTOR,
                 guard_alpha: float = DEFAULT_GUARD_ALPHA) -> None:
        self.settings = (order, float(alpha), warmup_samples, float(max_gap_factor),
                         float(guard_alpha))
        self.position = SerialWhitener(order, alpha, warmup_samples, max_gap_factor, guard_alpha)
        self.orientation = SerialWhitener(order, alpha, warmup_samples, max_gap_factor,
                                          guard_alpha)
        self.bias = BiasEvidence()
        """The bias channel's evidence over the emitted outcomes (module documentation)."""

    def reset(self) -> None:
        """Forget both estimates and the bias evidence (a bridge reset, a new configuration)."""
        self.position.reset()
        self.orientation.reset()
        self.bias.reset()

    @property
    def warm(self) -> bool:
        """Return True once every vec3 that has had a whitenable sample is warm.

        Before any sample it is warm only without a warm-up (``warmup_samples`` 0: the first
        sample passes unwhitened, as every young chain's does).
        """
        fed = [w for w in (self.position, self.orientation) if w.samples]
        if not fed:
            return self.position.warmup_samples == 0
        return all(w.warm for w in fed)

    @property
    def pairs(self) -> int:
        """Return the fewer consecutive pairs of the two vec3 that have fed their estimates."""
        fed = [w.pairs for w in (self.position, self.orientation) if w.samples]
        return min(fed) if fed else 0

    def distances(self, stamp_ns: int, blocks: Sequence[Block]) -> tuple[float, float]:
        """Return the whitened (position, orientation) distances of one paired estimate.

        ``blocks``: per vec3 ``(error, covariance, raw_distance)`` over the components kept
        (ignored axes removed; ``error`` may be empty). A raw distance of ``+inf`` or a
        covariance that is not positive definite passes the raw distance on (mapped to chi(3))
        and breaks that vec3's chain. When the whitening was warm before this sample (the outcome
        is emitted), both ``v`` feed the bias evidence unless one is missing or gross
        (:attr:`bias` ``.last`` is then the evidence the outcome carries).
        """
        emitted = self.warm
        result = []
        vectors: list[tuple[float, ...] | None] = []
        for whitener, (error, covariance, raw) in zip((self.position, self.orientation), blocks):
            m = len(error)
            if m == 0:
                result.append(0.0)
                vectors.append(())
                continue
            z = None if raw == math.inf else cholesky_whiten(error, covariance)
            gross = whitener.gross
            v = whitener.whiten(stamp_ns, z)
            distance = raw if v is None else norm(v)
            result.append(chi_to_chi3(distance, m))
            vectors.append(None if whitener.gross != gross else v)
        if emitted:
            self.bias.add(vectors[0], vectors[1])
        return result[0], result[1]
