# SPDX-License-Identifier: Apache-2.0
"""What the outcome bridge counts of its inputs and outputs, in one small object.

The bridge's callbacks and its engine listener write :class:`BridgeCounts`; its /diagnostics task
(``bridge_diagnostics.py``) is handed it and reads it, never the node. The pairing engine keeps
its own counts (paired, dropped by reason, resets); the bridge's faults are in its HealthLedger.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..bridge.pairing import ESTIMATE, REFERENCE

if TYPE_CHECKING:
    from ..bridge.pairing import PairingEngine


@dataclass
class BridgeCounts:
    """The outcome bridge's counts since it started."""

    message_info: bool = True
    """Whether the inputs' callbacks take the message info (sequence gaps counted)."""
    tf_state: str = 'off (use_tf false)'
    """``on``, ``off (use_tf false)`` or ``unavailable: <why>``."""
    received: collections.Counter[str] = field(default_factory=collections.Counter)
    """Input messages taken, by input (``estimate``, ``reference``), malformed ones included."""
    tf_received: collections.Counter[str] = field(default_factory=collections.Counter)
    """/tf and /tf_static messages taken, by topic."""
    incompatible_qos: collections.Counter[str] = field(default_factory=collections.Counter)
    outcomes_published: int = 0
    assessments_published: int = 0
    transform_steps: int = 0
    """Distances that crossed at a /tf change (``bridge/frame_steps.py``)."""
    last_transform_step: str = ''
    last_drop_reason: str = ''
    last_reset_reason: str = ''
    period_counts: collections.Counter[str] = field(default_factory=collections.Counter)
    """Drops by reason this diagnostics period (the diagnostics take them each period)."""

    def take_period_counts(self) -> collections.Counter[str]:
        """Return this period's drops by reason and start counting the next period's."""
        counts, self.period_counts = self.period_counts, collections.Counter()
        return counts

    def unaccounted(self, engine: PairingEngine) -> dict[str, int]:
        """Return ``{input: messages received but in no bucket}`` (always 0 unless a bug).

        Estimates: received = paired + dropped (by reason) + pending. References: received =
        used (put in the buffer) + dropped (by reason) + waiting for their transform.
        """
        return {
            ESTIMATE: (self.received[ESTIMATE] - engine.paired - sum(engine.dropped.values())
                       - len(engine.pending)),
            REFERENCE: (self.received[REFERENCE] - engine.references_used
                        - sum(engine.references_dropped.values()) - len(engine.tf_waiting)),
        }
