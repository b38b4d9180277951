# SPDX-License-Identifier: Apache-2.0
"""What-if on recorded traffic: ``--inject K[@T]`` or ``--inject K@random --seed S``.

From the injection instant ``T`` on (outcomes observed at or after it), every recorded outcome's
two Mahalanobis distances and its error vectors are multiplied by ``K``: the estimator's true
errors become ``K`` times what it claims from ``T``. Each policy's first downgrade at or after
``T`` gives an empirical detection delay; downgrades before ``T`` (the untouched stretch) give an
empirical false-downgrade rate, valid as far as that stretch was calibrated.
"""

import dataclasses
import math
import random
from typing import Any

from ..core import NS_PER_S, PredictionOutcome

RANDOM = 'random'
RANDOM_SPAN = (0.25, 0.75)
"""A random injection instant is drawn uniformly in this fraction of the bag's time range."""
MAX_AT_S = (2**63 - 1) / NS_PER_S
"""Largest T: the stamps are signed 64-bit nanoseconds (about 292 years)."""
MAX_FACTOR = 1e6
"""Largest K: scaled errors and distances must stay finite whatever the recorded values."""


@dataclasses.dataclass(frozen=True)
class Injection:
    """``factor`` K, and ``at_s`` (seconds from the bag's first message), or random with seed."""

    factor: float
    at_s: float | None = 0.0
    seed: int | None = None

    @property
    def is_random(self) -> bool:
        """Return True for ``K@random``."""
        return self.at_s is None

    def describe(self) -> str:
        """Return the command-line form, e.g. ``10@5.0s`` or ``10@random(seed 3)``."""
        where = f'random(seed {self.seed})' if self.is_random else f'{self.at_s:g}s'
        return f'{self.factor:g}@{where}'

    def start_ns(self, bag_key: str, start_ns: int | None, end_ns: int | None) -> int:
        """Return the injection instant (sim ns) for a bag spanning ``[start_ns, end_ns]``.

        A random instant depends only on the seed and ``bag_key`` (the bag's path), so the same
        command gives the same instants whatever the order or place the bags are audited in.
        """
        start_ns = start_ns or 0
        if self.at_s is not None:  # not random
            return start_ns + round(self.at_s * NS_PER_S)
        span = max((end_ns or start_ns) - start_ns, 0)
        rng = random.Random(f'{self.seed}:{bag_key}')
        low, high = RANDOM_SPAN
        return start_ns + round(span * rng.uniform(low, high))

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {'factor': self.factor, 'at_s': self.at_s, 'random': self.is_random,
                'seed': self.seed}


def parse_injection(text: str, seed: int | None = None) -> Injection:
    """Parse ``K``, ``K@T`` (T in seconds from the bag start) or ``K@random`` (needs ``seed``)."""
    factor_text, _, at_text = text.partition('@')
    try:
        factor = float(factor_text)
    except ValueError:
        raise ValueError(f'--inject {text!r}: K must be a number') from None
    if not math.isfinite(factor) or factor <= 0 or factor > MAX_FACTOR:
        raise ValueError(f'--inject {text!r}: K must be > 0 and <= {MAX_FACTOR:g}')
    if at_text.strip().lower() == RANDOM:
        if seed is None:
            raise ValueError(f'--inject {text!r}: random injection points need --seed S')
        return Injection(factor, None, int(seed))
    at_s = 0.0
    if at_text:
        try:
            at_s = float(at_text.rstrip('s'))
        except ValueError:
            raise ValueError(f'--inject {text!r}: T must be seconds or "random"') from None
        if not math.isfinite(at_s) or at_s < 0 or at_s > MAX_AT_S:
            raise ValueError(f'--inject {text!r}: T must be >= 0 and <= {MAX_AT_S:.6g} s '
                             '(the range of a nanosecond stamp)')
    return Injection(factor, at_s, seed)


def scale_outcome(outcome: PredictionOutcome, factor: float) -> PredictionOutcome:
    """Return ``outcome`` with its distances and error vectors multiplied by ``factor``."""
    return dataclasses.replace(
        outcome,
        position_error_m=tuple(  # type: ignore[arg-type]  # three items in, three out
            v * factor for v in outcome.position_error_m),
        orientation_error_rad=tuple(  # type: ignore[arg-type]
            v * factor for v in outcome.orientation_error_rad),
        position_mahalanobis=outcome.position_mahalanobis * factor,
        orientation_mahalanobis=outcome.orientation_mahalanobis * factor)
