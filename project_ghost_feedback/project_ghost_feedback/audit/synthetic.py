# SPDX-License-Identifier: Apache-2.0
"""Generated telemetry bags for tests, the benchmark and the docs: a small synthetic fleet.

Each bag is written by the project's own ``TelemetryRecorder`` (the feedback node's recorder)
from a seeded ``Scenario`` run through the pure core, exactly as the node would record it.
"""

import os
import pathlib
from typing import Any, TypeVar

from ..core.feedback import DEFAULT_MAX_HISTORY
from ..core.loop import FeedbackLoop, LoopConfig
from ..sim.outcome_model import Phase, Scenario

OUTCOME_BUFFER_SIZE = 1024
_Path = TypeVar('_Path', str, pathlib.Path)


def scenario(assessments: int, *, rate_hz: float = 10.0, overconfidence: float = 1.0,
             fault_at: float | None = None) -> Scenario:
    """Return a Scenario of ``assessments`` assessments at ``rate_hz``, calibrated by default.

    With ``fault_at`` (a fraction of the run) the errors become ``overconfidence`` x the claim
    from that point on; without it, the whole run has that factor.
    """
    duration = assessments / rate_hz
    if fault_at is None:
        phases: tuple[Phase, ...] = (Phase('steady', duration, overconfidence),)
    else:
        phases = (Phase('calibrated', duration * fault_at, 1.0),
                  Phase('overconfident', duration * (1 - fault_at), overconfidence))
    return Scenario(phases=phases, assessment_rate_hz=rate_hz, outcome_rate_hz=rate_hz)


def write_bag(path: _Path, *, seed: int, assessments: int = 300,
              policy: str = 'calibrated_exceedance', max_history: int = DEFAULT_MAX_HISTORY,
              **scenario_options: Any) -> _Path:
    """Write a bag at ``path`` (must not exist) as the node would record it; return ``path``."""
    from ..telemetry import TelemetryRecorder
    from ..telemetry.loop_inputs import LoopFeeder

    config = LoopConfig.make(policy, None, max_history, OUTCOME_BUFFER_SIZE)
    recorder = TelemetryRecorder(path, config, recorder='synthetic')
    feeder = LoopFeeder(FeedbackLoop(config), recorder=recorder)
    try:
        for raw, outcomes in scenario(assessments, **scenario_options).steps(seed):
            for outcome in outcomes:
                feeder.feed(outcome)
            feeder.feed(raw)
    finally:
        recorder.close()
    if recorder.error is not None:
        raise recorder.error
    return path


def write_fleet(directory: str | os.PathLike[str], bags: int, *, assessments: int = 300,
                seed: int = 0, **scenario_options: Any) -> list[str]:
    """Write ``bags`` bags ``robot_000``, ... under ``directory``; return their paths."""
    import os

    return [write_bag(os.path.join(directory, f'robot_{i:03d}'), seed=seed + i,
                      assessments=assessments, **scenario_options) for i in range(bags)]
