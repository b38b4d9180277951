# SPDX-License-Identifier: Apache-2.0
"""ADR-0026 section 4: MahalanobisDowngradePolicy, the reference policy, exactly as written."""

from dataclasses import dataclass

from ..validation import require_instance, require_int
from ..contracts import BeliefSelfAssessment
from .types import CalibratedSelfAssessment, CalibrationHistory

REASON_NO_OUTCOMES_YET = 'no_outcomes_yet'
REASON_DOWNGRADE_FROM_CALIBRATION = 'downgrade_from_calibration'
REASON_CALIBRATION_WITHIN_TOLERANCE = 'calibration_within_tolerance'


@dataclass(frozen=True, slots=True)
class MahalanobisDowngradePolicy:
    """Downgrade one level when enough recent outcomes were beyond 3 standard deviations.

    Rules, in order (ADR-0026 section 4):

    1. ``count_beyond_3_std + count_beyond_5_std >= downgrade_threshold`` and
       ``outcomes_considered >= min_outcomes``: one step down (KNOWN -> UNCERTAIN -> UNKNOWN,
       UNKNOWN stays), reason ``downgrade_from_calibration``.
    2. ``outcomes_considered == 0``: passthrough, reason ``no_outcomes_yet``.
    3. Otherwise: passthrough, reason ``calibration_within_tolerance``.

    Both parameters are ints ``>= 1`` (defaults 4 and 2, the ADR's conservative choice).

    False-alarm rate, for the record (see ``docs/policies.md``): for a calibrated 3-D estimator
    an outcome's d exceeds 3 with probability 0.0293 per vec3, so with a full window of 32 this
    policy fires on about a quarter to a half of windows. It is kept exactly as the ADR specifies.
    """

    min_outcomes: int = 4
    downgrade_threshold: int = 2

    def __post_init__(self) -> None:
        require_int('MahalanobisDowngradePolicy', 'min_outcomes', self.min_outcomes, minimum=1)
        require_int(
            'MahalanobisDowngradePolicy', 'downgrade_threshold', self.downgrade_threshold,
            minimum=1)

    @property
    def policy_id(self) -> str:
        """Return ``mahalanobis_downgrade``."""
        return 'mahalanobis_downgrade'

    def adjust(
        self, raw: BeliefSelfAssessment, history: CalibrationHistory,
    ) -> CalibratedSelfAssessment:
        """Apply the ADR-0026 reference rules to ``raw`` given ``history``."""
        require_instance('MahalanobisDowngradePolicy.adjust', 'raw', raw, BeliefSelfAssessment)
        require_instance(
            'MahalanobisDowngradePolicy.adjust', 'history', history, CalibrationHistory)
        level = raw.overall_level
        beyond_3 = history.count_beyond_3_std + history.count_beyond_5_std
        if (beyond_3 >= self.downgrade_threshold
                and history.outcomes_considered >= self.min_outcomes):
            level = level.downgraded()
            reason = REASON_DOWNGRADE_FROM_CALIBRATION
        elif history.outcomes_considered == 0:
            reason = REASON_NO_OUTCOMES_YET
        else:
            reason = REASON_CALIBRATION_WITHIN_TOLERANCE
        return CalibratedSelfAssessment(raw, history, level, self.policy_id, reason)
