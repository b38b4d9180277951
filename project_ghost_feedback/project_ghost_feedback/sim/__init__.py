# SPDX-License-Identifier: Apache-2.0
"""Synthetic estimator for the demo and the honesty bench (pure, stdlib only, seeded)."""

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
