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
