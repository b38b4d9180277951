# SPDX-License-Identifier: Apache-2.0
"""What the feedback node logs when its output's level changes: the data path's one log rule.

:func:`level_change` compares the (raw, calibrated) levels of an output with the last ones
logged and returns the line to log, if any (a downgrade at WARN, the return at OK).
"""

from __future__ import annotations

from ..core import NS_PER_S, SelfAssessmentLevel
from ..core.feedback import CalibratedSelfAssessment
from .calibration_status import OK, WARN

Levels = tuple[SelfAssessmentLevel, SelfAssessmentLevel]
"""``(raw level, calibrated level)`` of an output."""


def level_change(previous: Levels | None, calibrated: CalibratedSelfAssessment,
                 ) -> tuple[Levels, tuple[bytes, str] | None]:
    """Return ``(levels, change)``: the (raw, calibrated) levels now, and what to log, if any.

    ``change`` is None while the levels stay as they were (and for a first output that is not
    downgraded); otherwise ``(WARN, text)`` for a calibrated level below the raw one and
    ``(OK, text)`` for the return to the raw level. Times in seconds of the belief stamp.
    """
    raw = calibrated.raw_assessment
    levels = (raw.overall_level, calibrated.adjusted_overall_level)
    if levels == previous or (previous is None and not calibrated.was_downgraded):
        return levels, None
    at = f'at t={raw.belief_stamp_sim_ns / NS_PER_S:.3f} s'
    if calibrated.was_downgraded:
        return levels, (WARN, f'calibrated level {levels[1].name} (raw {levels[0].name}) {at}: '
                              f'{calibrated.adjustment_reason}')
    return levels, (OK, f'back to the raw level {levels[0].name} {at}: '
                        f'{calibrated.adjustment_reason}')
