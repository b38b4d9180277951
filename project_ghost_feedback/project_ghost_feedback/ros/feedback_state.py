# SPDX-License-Identifier: Apache-2.0
"""What the feedback node keeps between callbacks, each in its own small object.

The node writes them on its data path; its /diagnostics task (``feedback_diagnostics.py``) is
handed them and reads them, never the node:

- :class:`FeedbackCounts`: the inputs received and what became of them, the outputs published,
  the resets by cause, when the last outcome came (steady time);
- :class:`LastVerdict`: the last calibrated assessment, the outcomes it was judged on and its
  severity (which lasts into each /diagnostics period until the next one);
- :class:`ClockWatch`: whether the node clock (sim time) still advances.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core import NS_PER_S

if TYPE_CHECKING:
    from ..core import PredictionOutcome
    from ..core.feedback import CalibratedSelfAssessment


@dataclass
class FeedbackCounts:
    """The feedback node's counts since it started (its faults are in its HealthLedger)."""

    start_steady_ns: int
    """When the node started (steady clock): outcomes are missed from then on."""
    received: collections.Counter[str] = field(default_factory=collections.Counter)
    """Messages taken, by input (``outcome``, ``assessment``), refused ones included."""
    published: int = 0
    underconfident_assessments: int = 0
    duplicates: int = 0
    too_old_outcomes: int = 0
    late_outcomes: int = 0
    resets: collections.Counter[str] = field(default_factory=collections.Counter)
    """Window resets, by cause."""
    last_reset_reason: str = ''
    last_outcome_steady_ns: int | None = None
    """When the last outcome the window took came (steady clock); None before any."""

    def reset(self, cause: str, detail: str) -> None:
        """Count a window reset and keep its reason."""
        self.resets[cause] += 1
        self.last_reset_reason = f'{cause}: {detail}'

    def starved_s(self, steady_ns: int) -> float:
        """Return the seconds since the last outcome (since the start before any)."""
        last = self.last_outcome_steady_ns or self.start_steady_ns
        return (steady_ns - last) / NS_PER_S


@dataclass
class LastVerdict:
    """The last calibrated assessment published, what it was judged on, its severity."""

    calibrated: CalibratedSelfAssessment | None = None
    judged: Sequence[PredictionOutcome] = ()
    """The outcomes the last calibrated assessment was judged on (its error on /diagnostics)."""
    severity: tuple[bytes, str] | None = None
    """``(level, message)`` the assessment gives /diagnostics, until the next one or a reset."""

    def clear(self) -> None:
        """Forget the verdict (a window reset)."""
        self.calibrated, self.judged, self.severity = None, (), None


class ClockWatch:
    """Say when the node clock has not advanced for a period (sim time paused)."""

    def __init__(self, clock_ns: int, steady_ns: int) -> None:
        self.last_clock_ns = clock_ns
        self._changed_steady_ns = steady_ns

    def note(self, clock_ns: int, steady_ns: int, period_s: float) -> str:
        """Take the node clock now; return a note when it has stood still for ``period_s``."""
        if clock_ns != self.last_clock_ns:
            self.last_clock_ns = clock_ns
            self._changed_steady_ns = steady_ns
            return ''
        stalled_s = (steady_ns - self._changed_steady_ns) / NS_PER_S
        if stalled_s >= period_s:
            return f'node clock stalled for {stalled_s:.1f} s (sim time paused?)'
        return ''
