# SPDX-License-Identifier: Apache-2.0
"""The feedback node logs level changes only, in seconds, with the reason (issue 21)."""

from project_ghost_feedback.core import BeliefSelfAssessment, SelfAssessmentLevel
from project_ghost_feedback.core.feedback import CalibratedSelfAssessment, CalibrationHistory
from project_ghost_feedback.ros.calibration_status import OK, WARN
from project_ghost_feedback.ros.level_log import level_change

KNOWN = SelfAssessmentLevel.KNOWN
UNCERTAIN = SelfAssessmentLevel.UNCERTAIN
UNKNOWN = SelfAssessmentLevel.UNKNOWN


def _calibrated(stamp_ns, raw, adjusted, reason):
    return CalibratedSelfAssessment(BeliefSelfAssessment(stamp_ns, raw), CalibrationHistory.empty(),
                                    adjusted, 'overconfidence_scale', reason)


def test_a_run_logs_each_change_once_and_the_return_to_raw():
    stream = [
        _calibrated(1_000_000_000, KNOWN, KNOWN, 'calibration_within_tolerance'),
        _calibrated(1_100_000_000, KNOWN, KNOWN, 'calibration_within_tolerance'),
        _calibrated(151_400_000_000, KNOWN, UNCERTAIN, 'significant_overconfidence'),
        _calibrated(151_500_000_000, KNOWN, UNCERTAIN, 'significant_overconfidence'),
        _calibrated(152_000_000_000, KNOWN, UNKNOWN, 'gross_overconfidence'),
        _calibrated(152_100_000_000, KNOWN, UNKNOWN, 'gross_overconfidence'),
        _calibrated(200_250_000_000, KNOWN, KNOWN, 'calibration_within_tolerance'),
        _calibrated(200_350_000_000, KNOWN, KNOWN, 'calibration_within_tolerance'),
    ]
    levels, logged = None, []
    for calibrated in stream:
        levels, change = level_change(levels, calibrated)
        if change is not None:
            logged.append(change)
    assert logged == [
        (WARN, 'calibrated level UNCERTAIN (raw KNOWN) at t=151.400 s: '
               'significant_overconfidence'),
        (WARN, 'calibrated level UNKNOWN (raw KNOWN) at t=152.000 s: gross_overconfidence'),
        (OK, 'back to the raw level KNOWN at t=200.250 s: calibration_within_tolerance'),
    ]


def test_a_first_downgraded_output_is_logged_and_a_raw_change_too():
    levels, change = level_change(None, _calibrated(5, KNOWN, UNKNOWN, 'gross_overconfidence'))
    assert change[0] == WARN and 'UNKNOWN' in change[1]
    levels, change = level_change(levels, _calibrated(6, UNCERTAIN, UNKNOWN, 'gross'))
    assert change == (WARN, 'calibrated level UNKNOWN (raw UNCERTAIN) at t=0.000 s: gross')


def test_the_window_evidence_is_said_in_words():
    from project_ghost_feedback.core import PredictionOutcome
    from project_ghost_feedback.core.feedback import assess_with_feedback, make_policy
    from project_ghost_feedback.ros.feedback_diagnostics import window_evidence

    outcomes = [PredictionOutcome(i, i, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), d, 0.5)
                for i, d in enumerate((0.5, 2.0, 4.0, 7.0, 0.25), start=1)]
    calibrated = assess_with_feedback(BeliefSelfAssessment(10, KNOWN), outcomes,
                                      make_policy('overconfidence_scale'), 32)
    assert window_evidence(calibrated) == (
        '2 within 1 std, 1 1-3, 1 3-5, 1 beyond 5; worst d position 7.00, orientation 0.50')
    assert window_evidence(None) == ''
