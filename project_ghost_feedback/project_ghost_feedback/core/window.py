# SPDX-License-Identifier: Apache-2.0
"""A bounded window of PredictionOutcomes kept in observed-stamp order (pure, stdlib only).

The feedback node and ``ghost-feedback replay`` share it, so a replay reproduces the node exactly.
"""

import bisect

from .validation import require_int, require_instance
from .contracts import PredictionOutcome

_Vec3 = tuple[float, float, float]
_OrderKey = tuple[int, int, float, float, _Vec3, _Vec3]

ADDED = 'added'
DUPLICATE = 'duplicate'
TOO_OLD = 'too_old'

DEFAULT_OUTCOME_BUFFER_SIZE = 1024
"""Default capacity of the feedback node's outcome window (its ``outcome_buffer_size``)."""


def _order_key(outcome: PredictionOutcome) -> _OrderKey:
    """Total order on outcomes: observed stamp first, then every other field (ties are stable)."""
    return (
        outcome.observed_stamp_sim_ns,
        outcome.prediction_stamp_sim_ns,
        outcome.position_mahalanobis,
        outcome.orientation_mahalanobis,
        outcome.position_error_m,
        outcome.orientation_error_rad,
    )


class OutcomeWindow:
    """The ``capacity`` most recent outcomes by observed stamp, sorted, without duplicates.

    - An out-of-order arrival is inserted in order. Ties on the observed stamp are ordered by the
      remaining fields, so the order never depends on arrival order.
    - An exact duplicate (equal in every field) is not stored: :meth:`add` returns ``DUPLICATE``.
    - When full, the oldest outcome is evicted; an arrival older than everything kept in a full
      window is not stored (``TOO_OLD``).

    :meth:`causal_window` returns the last ``max_n`` outcomes observed at or before a stamp, which
    is what a belief at that stamp may causally be judged on.
    """

    __slots__ = ('_capacity', '_keys', '_outcomes', '_stamps')

    def __init__(self, capacity: int) -> None:
        self._capacity = require_int('OutcomeWindow', 'capacity', capacity, minimum=1)
        self._keys: list[_OrderKey] = []
        self._outcomes: list[PredictionOutcome] = []
        self._stamps: list[int] = []

    @property
    def capacity(self) -> int:
        """Return the maximum number of outcomes kept."""
        return self._capacity

    def __len__(self) -> int:
        return len(self._outcomes)

    @property
    def newest_stamp(self) -> int | None:
        """Return the largest observed stamp held, or None when empty."""
        return self._stamps[-1] if self._stamps else None

    def clear(self) -> None:
        """Forget every outcome (the node does so on a time jump or a reset request)."""
        self._keys.clear()
        self._outcomes.clear()
        self._stamps.clear()

    def resize(self, capacity: int) -> None:
        """Change the capacity, evicting the oldest outcomes if needed."""
        self._capacity = require_int('OutcomeWindow', 'capacity', capacity, minimum=1)
        self._trim()

    def add(self, outcome: PredictionOutcome) -> str:
        """Insert ``outcome`` in order; return ``ADDED``, ``DUPLICATE`` or ``TOO_OLD``."""
        require_instance('OutcomeWindow.add', 'outcome', outcome, PredictionOutcome)
        key = _order_key(outcome)
        keys = self._keys
        if not keys or key > keys[-1]:
            index = len(keys)
        else:
            index = bisect.bisect_left(keys, key)
            if index < len(keys) and keys[index] == key:
                return DUPLICATE
            if index == 0 and len(keys) >= self._capacity:
                return TOO_OLD
        keys.insert(index, key)
        self._outcomes.insert(index, outcome)
        self._stamps.insert(index, outcome.observed_stamp_sim_ns)
        self._trim()
        return ADDED

    def _trim(self) -> None:
        excess = len(self._keys) - self._capacity
        if excess > 0:
            del self._keys[:excess]
            del self._outcomes[:excess]
            del self._stamps[:excess]

    def causal_window(self, stamp_sim_ns: int, max_n: int) -> list[PredictionOutcome]:
        """Return the last ``max_n`` outcomes with ``observed_stamp_sim_ns <= stamp_sim_ns``."""
        end = bisect.bisect_right(self._stamps, stamp_sim_ns)
        return self._outcomes[max(0, end - max_n):end]
