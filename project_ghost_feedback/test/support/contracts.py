# SPDX-License-Identifier: Apache-2.0
"""Valid contracts and messages from a stamp and a level or distance: the shared builders."""


def build_outcome(observed_ns, distance=1.0, orientation=None):
    """Return a valid PredictionOutcome observed at ``observed_ns``, predicted 10 ms before.

    Fixed, non-zero error vectors; ``distance`` is the position Mahalanobis distance, and the
    orientation one too unless ``orientation`` is given.
    """
    from project_ghost_feedback.core import PredictionOutcome

    return PredictionOutcome(
        max(observed_ns - 10_000_000, 0), observed_ns, (0.1, -0.2, 0.05), (0.0, 0.01, 0.0),
        distance, distance if orientation is None else orientation)


def build_raw(stamp_ns, level=None):
    """Return a BeliefSelfAssessment at ``stamp_ns`` of ``level`` (KNOWN by default).

    One axis level (``position_x``) and one block level (``pose``), both ``level`` too.
    """
    from project_ghost_feedback.core import BeliefSelfAssessment, NamedLevel, SelfAssessmentLevel

    level = SelfAssessmentLevel.KNOWN if level is None else level
    return BeliefSelfAssessment(stamp_ns, level, (NamedLevel('position_x', level),),
                                (NamedLevel('pose', level),))


def zero_error_outcomes(distance_pairs, observed_lag_ns=0):
    """Return PredictionOutcomes with zero error vectors, one per ``(position, orientation)``.

    Outcome ``i`` is predicted at ``i`` ns and observed at ``i + observed_lag_ns`` ns.
    """
    from project_ghost_feedback.core import PredictionOutcome

    return [PredictionOutcome(i, i + observed_lag_ns, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), p, o)
            for i, (p, o) in enumerate(distance_pairs)]


def named_level_msg(name, level):
    """Return a project_ghost_feedback_msgs/NamedLevel message of ``name`` at wire ``level``."""
    from project_ghost_feedback_msgs.msg import NamedLevel, SelfAssessmentLevel

    return NamedLevel(name=name, level=SelfAssessmentLevel(value=level))
