# SPDX-License-Identifier: Apache-2.0
"""Simulated estimators for the demos and benches, seeded.

The outcome model is stdlib only; the localization stack (a Kalman filter) uses numpy.
"""

from .outcome_model import (
    default_scenario,
    NS_PER_S,
    OutcomeModel,
    Phase,
    PhaseSpan,
    Scenario,
    ScenarioStep,
)

__all__ = [
    'NS_PER_S',
    'OutcomeModel',
    'Phase',
    'PhaseSpan',
    'Scenario',
    'ScenarioStep',
    'default_scenario',
]
