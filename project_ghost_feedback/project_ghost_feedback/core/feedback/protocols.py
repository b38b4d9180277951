# SPDX-License-Identifier: Apache-2.0
"""ADR-0026 section 3: the CalibrationAdjustmentPolicy protocol."""

from typing import Protocol, runtime_checkable

from ..contracts import BeliefSelfAssessment
from .types import CalibratedSelfAssessment, CalibrationHistory


@runtime_checkable
class CalibrationAdjustmentPolicy(Protocol):
    """A pure adjustment policy: same input, same output; no clock, no randomness, no globals.

    ``policy_id`` is a taxonomy string (``^[a-z][a-z0-9_]*$``, 1-64 characters) that the policy
    writes into every CalibratedSelfAssessment it returns.
    """

    @property
    def policy_id(self) -> str:
        """Return the policy's taxonomy identifier."""
        ...

    def adjust(
        self,
        raw: BeliefSelfAssessment,
        history: CalibrationHistory,
    ) -> CalibratedSelfAssessment:
        """Return the calibrated assessment of ``raw`` given the evidence ``history``."""
        ...


@runtime_checkable
class HysteresisPolicy(CalibrationAdjustmentPolicy, Protocol):
    """An optional extension: a pure policy that also looks at the level it gave last.

    ``adjust_following(raw, history, previous)`` is pure in all three arguments; ``previous`` is
    the CalibratedSelfAssessment the feedback loop published last since its last reset, or None.
    ``adjust(raw, history)`` must equal ``adjust_following(raw, history, None)``.
    """

    def adjust_following(
        self,
        raw: BeliefSelfAssessment,
        history: CalibrationHistory,
        previous: CalibratedSelfAssessment | None,
    ) -> CalibratedSelfAssessment:
        """Return the calibrated assessment of ``raw`` given ``history`` and the last output."""
        ...
