# SPDX-License-Identifier: Apache-2.0
"""Closed-loop feedback v1 (ADR-0026): contracts, protocol, reference policy, orchestration."""

from .calibrated_policies import (
    CalibratedExceedancePolicy,
    REASON_GROSS_MISCALIBRATION,
    REASON_INFINITE_MAHALANOBIS,
    REASON_SIGNIFICANT_MISCALIBRATION,
)
from .likelihood_ratio_policy import BucketLikelihoodRatioPolicy
from .graded_policy import (
    OverconfidenceScalePolicy,
    REASON_GROSS_OVERCONFIDENCE,
    REASON_SIGNIFICANT_OVERCONFIDENCE,
    REASON_UNDERCONFIDENT_CALIBRATION,
)
from .episodes import (
    downgrade_episodes,
    Episode,
    EpisodeTracker,
    PoseErrorStatistics,
    RunOverconfidence,
    time_origin,
    TransformStep,
    verdict_line,
)
from .orchestration import assess_with_feedback, build_calibration_history, DEFAULT_MAX_HISTORY
from .overconfidence import (
    chi2_quantile,
    estimate_overconfidence,
    format_overconfidence,
    OverconfidenceEstimate,
    overconfidence_as_dict,
)
from .protocols import CalibrationAdjustmentPolicy, HysteresisPolicy
from .registry import (
    coerce_parameters,
    DEFAULT_POLICY,
    make_policy,
    PARAMETERS_ADDED,
    parse_policy,
    POLICIES,
    PolicySpec,
    policy_names,
    policy_parameter_ranges,
    parse_setting,
    policy_parameters,
)
from .reference_policy import (
    MahalanobisDowngradePolicy,
    REASON_CALIBRATION_WITHIN_TOLERANCE,
    REASON_DOWNGRADE_FROM_CALIBRATION,
    REASON_NO_OUTCOMES_YET,
)
from .types import (
    CalibratedSelfAssessment,
    CalibrationHistory,
    HISTORY_SCHEMA_COUNTS,
    HISTORY_SCHEMA_SQUARED_DISTANCES,
)
from .vec3_scale_policy import (
    REASON_BIASED_ORIENTATION,
    REASON_BIASED_POSITION,
    REASON_GROSSLY_OVERCONFIDENT_ORIENTATION,
    REASON_GROSSLY_OVERCONFIDENT_POSITION,
    REASON_OVERCONFIDENT_ORIENTATION,
    REASON_OVERCONFIDENT_POSITION,
    Vec3ScalePolicy,
)

__all__ = [
    'BucketLikelihoodRatioPolicy',
    'CalibratedExceedancePolicy',
    'REASON_GROSS_MISCALIBRATION',
    'REASON_INFINITE_MAHALANOBIS',
    'REASON_SIGNIFICANT_MISCALIBRATION',
    'OverconfidenceScalePolicy',
    'REASON_GROSS_OVERCONFIDENCE',
    'REASON_SIGNIFICANT_OVERCONFIDENCE',
    'REASON_UNDERCONFIDENT_CALIBRATION',
    'DEFAULT_POLICY',
    'PARAMETERS_ADDED',
    'POLICIES',
    'coerce_parameters',
    'parse_setting',
    'parse_policy',
    'PolicySpec',
    'make_policy',
    'policy_names',
    'policy_parameter_ranges',
    'policy_parameters',
    'DEFAULT_MAX_HISTORY',
    'REASON_CALIBRATION_WITHIN_TOLERANCE',
    'REASON_DOWNGRADE_FROM_CALIBRATION',
    'REASON_NO_OUTCOMES_YET',
    'CalibratedSelfAssessment',
    'CalibrationAdjustmentPolicy',
    'HysteresisPolicy',
    'CalibrationHistory',
    'MahalanobisDowngradePolicy',
    'assess_with_feedback',
    'build_calibration_history',
    'downgrade_episodes',
    'Episode',
    'EpisodeTracker',
    'TransformStep',
    'PoseErrorStatistics',
    'RunOverconfidence',
    'time_origin',
    'verdict_line',
    'chi2_quantile',
    'estimate_overconfidence',
    'format_overconfidence',
    'HISTORY_SCHEMA_COUNTS',
    'HISTORY_SCHEMA_SQUARED_DISTANCES',
    'OverconfidenceEstimate',
    'overconfidence_as_dict',
    'REASON_BIASED_ORIENTATION',
    'REASON_BIASED_POSITION',
    'REASON_GROSSLY_OVERCONFIDENT_ORIENTATION',
    'REASON_GROSSLY_OVERCONFIDENT_POSITION',
    'REASON_OVERCONFIDENT_ORIENTATION',
    'REASON_OVERCONFIDENT_POSITION',
    'Vec3ScalePolicy',
]
