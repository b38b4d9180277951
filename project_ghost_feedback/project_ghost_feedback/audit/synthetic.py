# SPDX-License-Identifier: Apache-2.0
"""Generated telemetry bags for tests, the benchmark and the docs: a small synthetic fleet.

Each bag is written by the project's own ``TelemetryRecorder`` (the feedback node's recorder)
from a seeded ``Scenario`` run through the pure core, exactly as the node would record it.
"""

from ..core.feedback import DEFAULT_MAX_HISTORY
from ..core.loop import FeedbackLoop, LoopConfig
from ..sim.outcome_model import Phase, Scenario

OUTCOME_BUFFER_SIZE = 1024


def scenario(assessments, *, rate_hz=10.0, overconfidence=1.0, fault_at=None):
    """Return a Scenario of ``assessments`` assessments at ``rate_hz``, calibrated by default.

    With ``fault_at`` (a fraction of the run) the errors become ``overconfidence`` x the claim
    from that point on; without it, the whole run has that factor.
    """
    duration = assessments / rate_hz
    if fault_at is None:
        phases = (Phase('steady', duration, overconfidence),)
    else:
        phases = (Phase('calibrated', duration * fault_at, 1.0),
                  Phase('overconfident', duration * (1 - fault_at), overconfidence))
    return Scenario(phases=phases, assessment_rate_hz=rate_hz, outcome_rate_hz=rate_hz)


def write_bag(path, *, seed, assessments=300, policy='calibrated_exceedance',
              max_history=DEFAULT_MAX_HISTORY, **scenario_options):
    """Write a bag at ``path`` (must not exist) as the node would record it; return ``path``."""
    from ..telemetry import TelemetryRecorder

    config = LoopConfig.make(policy, None, max_history, OUTCOME_BUFFER_SIZE)
    loop = FeedbackLoop(config)
    recorder = TelemetryRecorder(path, config, recorder='synthetic')
    try:
        for raw, outcomes in scenario(assessments, **scenario_options).steps(seed):
            for outcome in outcomes:
                loop.outcome(outcome)
                recorder.record_outcome(outcome)
            recorder.record_assessment(raw, loop.assessment(raw).calibrated)
    finally:
        recorder.close()
    if recorder.error is not None:
        raise recorder.error
    return path


def write_fleet(directory, bags, *, assessments=300, seed=0, **scenario_options):
    """Write ``bags`` bags ``robot_000``, ... under ``directory``; return their paths."""
    import os

    return [write_bag(os.path.join(directory, f'robot_{i:03d}'), seed=seed + i,
                      assessments=assessments, **scenario_options) for i in range(bags)]
