# SPDX-License-Identifier: Apache-2.0
"""telemetry/loop_inputs.py: the one rule that feeds inputs to a loop (replay, audit, evaluate)."""

from support.contracts import build_outcome, build_raw
import pytest

from project_ghost_feedback.core.loop import (
    CAUSE_INPUT_STAMP_JUMP,
    CAUSE_PARAMETERS,
    CAUSE_SERVICE,
    CONFIGURATION,
    FeedbackLoop,
    LoopConfig,
    LoopEvent,
    RESET,
)
from project_ghost_feedback.telemetry.loop_inputs import LoopFeeder

MS = 1_000_000


def _loop_with_outcomes(count=5):
    loop = FeedbackLoop(LoopConfig.make('calibrated_exceedance', max_history=8))
    feeder_steps = [loop.outcome(build_outcome((i + 1) * 10 * MS)) for i in range(count)]
    assert all(step.status == 'added' for step in feeder_steps)
    return loop


def test_each_input_type_goes_to_its_loop_handler():
    loop = FeedbackLoop(LoopConfig.make('calibrated_exceedance', max_history=8))
    feeder = LoopFeeder(loop)
    assert feeder.feed(build_outcome(10 * MS)).status == 'added'
    step = feeder.feed(build_raw(20 * MS))
    assert step.calibrated is not None
    assert step.calibrated.calibration_history.outcomes_considered == 1
    with pytest.raises(TypeError, match='not a loop input: str'):
        feeder.feed('outcome')


def test_a_recorded_reset_clears_the_window_but_a_derived_one_is_not_applied_again():
    loop = _loop_with_outcomes()
    feeder = LoopFeeder(loop)
    config = loop.config
    derived = LoopEvent(60 * MS, RESET, CAUSE_INPUT_STAMP_JUMP, 'back', config)
    assert feeder.feed(derived) is False
    assert feeder.feed(build_raw(70 * MS)).calibrated.calibration_history.outcomes_considered == 5
    assert feeder.feed(LoopEvent(80 * MS, RESET, CAUSE_SERVICE, 'asked', config)) is True
    assert feeder.feed(build_raw(90 * MS)).calibrated.calibration_history.outcomes_considered == 0


def test_a_recorded_configuration_goes_through_configure_or_is_skipped():
    recorded = LoopConfig.make('overconfidence_scale', max_history=8)
    event = LoopEvent(60 * MS, CONFIGURATION, CAUSE_PARAMETERS, 'policy', recorded)
    fixed = LoopFeeder(_loop_with_outcomes())
    assert fixed.feed(event) is False
    assert fixed.loop.config.policy == 'calibrated_exceedance'
    seen = []
    replayed = LoopFeeder(_loop_with_outcomes(),
                          configure=lambda e: seen.append(e) or e.config)
    assert replayed.feed(event) is True
    assert seen == [event]
    assert replayed.loop.config == recorded


def test_with_a_recorder_every_input_and_output_is_recorded_and_replays_identically(tmp_path):
    from project_ghost_feedback.telemetry import TelemetryRecorder
    from project_ghost_feedback.telemetry.replay import replay_bag

    config = LoopConfig.make('calibrated_exceedance', max_history=8)
    recorder = TelemetryRecorder(str(tmp_path / 'bag'), config, recorder='test')
    feeder = LoopFeeder(FeedbackLoop(config), recorder=recorder)
    outputs = []
    for i in range(12):
        feeder.feed(build_outcome((2 * i + 1) * 10 * MS))
        outputs.append(feeder.feed(build_raw((2 * i + 2) * 10 * MS)).calibrated)
    recorder.close()
    assert recorder.error is None
    report = replay_bag(tmp_path / 'bag')
    assert (report.outcomes, report.assessments, report.recorded_outputs) == (12, 12, 12)
    assert report.identical is True and report.differences == 0
    assert outputs[-1].calibration_history.outcomes_considered == 8
