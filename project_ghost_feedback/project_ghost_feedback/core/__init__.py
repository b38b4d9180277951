# SPDX-License-Identifier: Apache-2.0
"""Pure core of project_ghost_feedback: stdlib only, no ROS, MCAP or CLI imports.

The closed-loop feedback contracts of ADR-0026 live in :mod:`project_ghost_feedback.core.feedback`.
"""

from .contracts import (
    BeliefSelfAssessment,
    bucket_of_distance,
    BUCKET_BEYOND_1_STD,
    BUCKET_BEYOND_3_STD,
    BUCKET_BEYOND_5_STD,
    BUCKET_WITHIN_1_STD,
    ContractTypeError,
    ContractValueError,
    ContractViolation,
    NamedLevel,
    PredictionOutcome,
    NS_PER_S,
    SCHEMA_VERSION,
    SelfAssessmentLevel,
)

__all__ = [
    'BUCKET_BEYOND_1_STD',
    'BUCKET_BEYOND_3_STD',
    'BUCKET_BEYOND_5_STD',
    'BUCKET_WITHIN_1_STD',
    'BeliefSelfAssessment',
    'ContractTypeError',
    'ContractValueError',
    'ContractViolation',
    'NamedLevel',
    'PredictionOutcome',
    'NS_PER_S',
    'SCHEMA_VERSION',
    'SelfAssessmentLevel',
    'bucket_of_distance',
]
