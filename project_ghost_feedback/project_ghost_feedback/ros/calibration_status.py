# SPDX-License-Identifier: Apache-2.0
"""The severity the feedback node reports on /diagnostics: the worst of a period, with its reason.

Per calibrated assessment: OK when the calibrated level equals the raw one; WARN when calibration
took one level off; ERROR when calibration made the estimator UNKNOWN, or the window holds an
infinite distance (a claim contradicted by a zero or singular covariance). Per period also: WARN
while inputs are rejected, lost in the middleware, or after a time-jump reset; STALE when no
outcome arrived for ``stale_after_s``. A period reports its worst status (not its last sample),
then starts over; the first reason seen at that worst level is the message.

Underconfidence (the policy's reason ``underconfident_calibration``: errors much smaller than the
claim, e.g. an over-tuned process noise) is reported, not escalated: the assessment stays OK (or
whatever the rest says) and the message names it (:func:`is_underconfident`).
"""

import math

from diagnostic_msgs.msg import DiagnosticStatus

from ..core import SelfAssessmentLevel
from ..core.feedback import CalibratedSelfAssessment, REASON_UNDERCONFIDENT_CALIBRATION

OK = DiagnosticStatus.OK
WARN = DiagnosticStatus.WARN
ERROR = DiagnosticStatus.ERROR
STALE = DiagnosticStatus.STALE
_SEVERITY = {OK: 0, WARN: 1, ERROR: 2, STALE: 3}


def assessment_severity(calibrated: CalibratedSelfAssessment) -> tuple[bytes, str]:
    """Return ``(level, message)`` of one calibrated assessment."""
    history = calibrated.calibration_history
    adjusted = calibrated.adjusted_overall_level
    raw = calibrated.raw_assessment.overall_level
    if math.isinf(history.worst_position_mahalanobis) or math.isinf(
            history.worst_orientation_mahalanobis):
        return ERROR, 'an infinite Mahalanobis distance in the window (claim contradicted)'
    if calibrated.was_downgraded and adjusted is SelfAssessmentLevel.UNKNOWN:
        return ERROR, (f'calibrated UNKNOWN below raw {raw.name} '
                       f'({calibrated.adjustment_reason})')
    if calibrated.was_downgraded:
        return WARN, (f'calibrated {adjusted.name} below raw {raw.name} '
                      f'({calibrated.adjustment_reason})')
    if is_underconfident(calibrated):
        return OK, UNDERCONFIDENT_MESSAGE
    return OK, 'calibration within tolerance'


UNDERCONFIDENT_MESSAGE = ('underconfident: errors much smaller than claimed (over-tuned process '
                          'noise?), level kept')
"""The status message of an underconfident assessment (severity OK)."""


def is_underconfident(calibrated: CalibratedSelfAssessment) -> bool:
    """Return True when the policy reported ``underconfident_calibration`` (level unchanged)."""
    return calibrated.adjustment_reason == REASON_UNDERCONFIDENT_CALIBRATION


class PeriodStatus:
    """The worst status noted since the last :meth:`take`."""

    def __init__(self) -> None:
        self._level = OK
        self._message = 'no assessment yet'
        self._noted = False

    def note(self, level: bytes, message: str) -> None:
        """Note a status; the worse one (first at equal severity) wins the period."""
        if not self._noted or _SEVERITY[level] > _SEVERITY[self._level]:
            self._level, self._message = level, message
            self._noted = True

    def take(self, carry: tuple[bytes, str] | None = None) -> tuple[bytes, str]:
        """Return the period's ``(level, message)`` and start a new period.

        ``carry`` (a ``(level, message)``) seeds the new period, so a state that lasts (the last
        assessment's severity) is reported in every period until something replaces it.
        """
        result = (self._level, self._message)
        self._noted = False
        self._level, self._message = OK, 'no assessment yet'
        if carry is not None:
            self.note(*carry)
        return result
