# SPDX-License-Identifier: Apache-2.0
"""The one feedback loop (core/loop.py): stamp rules, holds, resets, configuration, replay.

The property test drives a loop with random event streams as the node does (with a node clock),
keeps what the node records (accepted inputs, events, outputs), and replays that record through a
fresh loop as ``ghost-feedback replay`` does (no clock): the outputs must be identical. A few of
the streams go through a real telemetry bag and :func:`replay_bag`.
"""

import ast
import pathlib

from hypothesis import given, HealthCheck, settings, strategies as st
from project_ghost_feedback.core import BeliefSelfAssessment, PredictionOutcome
from project_ghost_feedback.core import SelfAssessmentLevel
from project_ghost_feedback.core.loop import (
    CAUSE_CLOCK_JUMP,
    CAUSE_INPUT_STAMP_JUMP,
    CAUSE_SERVICE,
    CAUSE_START,
    CONFIGURATION,
    FeedbackLoop,
    FUTURE_STAMP,
    LoopConfig,
    LoopEvent,
    RESET,
)
from project_ghost_feedback.core.window import ADDED, DUPLICATE
import pytest

KNOWN = SelfAssessmentLevel.KNOWN
S = 1_000_000_000
TOLERANCE = 5 * S
PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'project_ghost_feedback'
BENCH = pathlib.Path(__file__).resolve().parents[3] / 'bench'


def _outcome(stamp, distance=1.0):
    return PredictionOutcome(max(stamp - 1, 0), stamp, (0.1, 0.0, 0.0), (0.0, 0.0, 0.01),
                             distance, distance)


def _raw(stamp):
    return BeliefSelfAssessment(stamp, KNOWN)


def _config(**overrides):
    values = {'policy': 'calibrated_exceedance', 'max_history': 8, 'outcome_buffer_size': 16,
              'time_jump_tolerance_ns': TOLERANCE, 'unverified_after_ns': 3 * S}
    values.update(overrides)
    return LoopConfig.make(values.pop('policy'), None, **values)


def test_a_future_stamp_is_refused_and_changes_nothing():
    loop = FeedbackLoop(_config())
    step = loop.outcome(_outcome(100 * S), now_ns=10 * S)
    assert step.refusal[0] == FUTURE_STAMP and not step.accepted
    assert loop.buffer_fill == (0, 16)
    step = loop.assessment(_raw(100 * S), now_ns=10 * S)
    assert step.refusal[0] == FUTURE_STAMP and step.calibrated is None
    assert loop.newest_belief_stamp is None
    # Within the tolerance, or without a clock (replay, or a clock at 0), it is taken.
    assert loop.outcome(_outcome(14 * S), now_ns=10 * S).status == ADDED
    assert loop.outcome(_outcome(100 * S)).status == ADDED


def test_a_stamp_going_back_beyond_the_tolerance_resets_then_counts():
    loop = FeedbackLoop(_config())
    for second in range(100, 110):
        loop.outcome(_outcome(second * S))
    loop.assessment(_raw(109 * S))
    step = loop.outcome(_outcome(3 * S))  # a restarted producer
    assert [e.cause for e in step.events] == [CAUSE_INPUT_STAMP_JUMP]
    assert step.status == ADDED and loop.buffer_fill[0] == 1
    assert loop.previous is None and loop.newest_belief_stamp is None
    # Going back by less than the tolerance is an out-of-order arrival, not a reset.
    assert loop.outcome(_outcome(1 * S)).events == ()
    step = loop.assessment(_raw(4 * S))
    assert step.events == () and step.calibrated.calibration_history.outcomes_considered == 2


def test_an_assessment_going_back_resets_too():
    loop = FeedbackLoop(_config())
    loop.outcome(_outcome(100 * S))
    loop.assessment(_raw(100 * S))
    step = loop.assessment(_raw(10 * S))
    assert [e.cause for e in step.events] == [CAUSE_INPUT_STAMP_JUMP]
    assert step.calibrated.calibration_history.outcomes_considered == 0


def test_duplicates_and_late_outcomes_are_reported():
    loop = FeedbackLoop(_config())
    loop.outcome(_outcome(2 * S))
    assert loop.outcome(_outcome(2 * S)).status == DUPLICATE
    loop.assessment(_raw(3 * S))
    assert loop.outcome(_outcome(1 * S)).late
    assert not loop.outcome(_outcome(4 * S)).late


def test_held_assessments_wait_and_a_reset_drops_them():
    loop = FeedbackLoop(_config(), hold_ns=100)
    assert loop.hold(_raw(1 * S), arrival_ns=1000)
    assert loop.hold(_raw(2 * S), arrival_ns=1050)
    assert loop.release(1099) == []
    steps = loop.release(1100)
    assert [s.calibrated.raw_assessment.belief_stamp_sim_ns for s in steps] == [1 * S]
    loop.reset(CAUSE_SERVICE, 'test', 0)
    assert loop.held == 0 and loop.release(10**6) == []
    loop.hold_ns = 0
    assert not loop.hold(_raw(3 * S), arrival_ns=0)  # nothing waits: judge it now


def test_a_clock_jump_resets_only_state_left_in_the_future():
    loop = FeedbackLoop(_config())
    loop.outcome(_outcome(100 * S))
    assert loop.clock_jumped(delta_ns=S, now_ns=101 * S) is None  # forward
    assert loop.clock_jumped(delta_ns=-2 * S, now_ns=99 * S) is None  # within the tolerance
    event = loop.clock_jumped(delta_ns=-100 * S, now_ns=0)
    assert (event.kind, event.cause) == (RESET, CAUSE_CLOCK_JUMP)
    assert loop.buffer_fill[0] == 0
    # The inputs went back first (their own reset): the state is already on the new timeline.
    loop.outcome(_outcome(1 * S))
    assert loop.clock_jumped(delta_ns=-50 * S, now_ns=1 * S) is None


def test_configure_resizes_changes_policy_and_forgets_the_previous_output():
    loop = FeedbackLoop(_config())
    for second in range(1, 13):
        loop.outcome(_outcome(second * S))
    loop.assessment(_raw(12 * S))
    assert loop.previous is not None
    assert loop.configure(_config(), 0) is None  # unchanged: no event
    event = loop.configure(_config(outcome_buffer_size=4, max_history=4), 5)
    assert (event.kind, event.stamp_ns, event.config.max_history) == (CONFIGURATION, 5, 4)
    assert loop.buffer_fill == (4, 4) and loop.previous is not None  # same policy
    event = loop.configure(_config(policy='mahalanobis_downgrade', outcome_buffer_size=4,
                                   max_history=4), 6)
    assert loop.policy.policy_id == 'mahalanobis_downgrade' and loop.previous is None
    step = loop.assessment(_raw(12 * S))
    assert step.calibrated.adjustment_policy_id == 'mahalanobis_downgrade'
    assert len(step.judged) == 4


def test_apply_replays_recorded_events_but_derives_input_resets_itself():
    loop = FeedbackLoop(_config())
    loop.outcome(_outcome(S))
    derived = LoopEvent(0, RESET, CAUSE_INPUT_STAMP_JUMP, '', _config())
    assert not loop.apply(derived) and loop.buffer_fill[0] == 1
    assert loop.apply(LoopEvent(0, RESET, CAUSE_SERVICE, '', _config()))
    assert loop.buffer_fill[0] == 0
    assert loop.apply(LoopEvent(0, CONFIGURATION, 'parameters', '', _config(max_history=3)))
    assert loop.config.max_history == 3


def test_loop_config_round_trips_through_text_and_refuses_bad_values():
    config = LoopConfig.make('overconfidence_scale', {'min_outcomes': 2}, 16, 64, 2 * S)
    names, values = config.parameter_texts()
    assert LoopConfig.from_texts(config.policy, names, values, 16, 64, 2 * S) == config
    with pytest.raises(ValueError, match='max_history'):
        LoopConfig.make(max_history=0)
    with pytest.raises(ValueError, match='time_jump_tolerance_ns'):
        LoopConfig.make(time_jump_tolerance_ns=0)
    with pytest.raises(ValueError):
        LoopConfig.from_texts('calibrated_exceedance', ('alpha',), ('not json',), 8, 8, 1)
    with pytest.raises(TypeError):
        FeedbackLoop('not a config')
    with pytest.raises(ValueError):
        LoopEvent(-1, RESET, CAUSE_SERVICE, '', config)


# -- unverified: assessments without outcomes ---------------------------------------------------

def _levels(loop, stamps_s):
    steps = [loop.assessment(_raw(int(t * S))).calibrated for t in stamps_s]
    return [(c.adjusted_overall_level.name, c.adjustment_reason) for c in steps]


def test_assessments_without_any_outcome_become_unverified_after_the_stated_time():
    loop = FeedbackLoop(_config(unverified_after_ns=10 * S))
    assert _levels(loop, (0, 5, 10, 10.5, 30)) == [
        ('KNOWN', 'no_outcomes_yet'), ('KNOWN', 'no_outcomes_yet'), ('KNOWN', 'no_outcomes_yet'),
        ('UNCERTAIN', 'unverified_no_outcomes'), ('UNCERTAIN', 'unverified_no_outcomes')]
    # An outcome verifies again; once it is older than the time, the claim is unverified again.
    loop.outcome(_outcome(31 * S))
    assert _levels(loop, (31, 41, 41.5)) == [
        ('KNOWN', 'calibration_within_tolerance'), ('KNOWN', 'calibration_within_tolerance'),
        ('UNCERTAIN', 'unverified_no_recent_outcomes')]
    # A reset starts the clock of "none yet" over.
    loop.reset(CAUSE_SERVICE, 'test', 42 * S)
    assert _levels(loop, (50, 60, 60.5))[1:] == [
        ('KNOWN', 'no_outcomes_yet'), ('UNCERTAIN', 'unverified_no_outcomes')]


@pytest.mark.parametrize('cap, level', [('UNKNOWN', 'UNKNOWN'), ('KNOWN', 'KNOWN')])
def test_the_unverified_level_is_at_most_the_configured_one(cap, level):
    loop = FeedbackLoop(_config(unverified_after_ns=1 * S, unverified_max_level=cap))
    assert _levels(loop, (0, 2)) == [('KNOWN', 'no_outcomes_yet'),
                                     (level, 'unverified_no_outcomes')]


def test_the_unverified_rule_off_keeps_the_claim_as_before():
    loop = FeedbackLoop(_config(unverified_after_ns=0))
    assert set(_levels(loop, (0, 100, 1000))) == {('KNOWN', 'no_outcomes_yet')}


def test_a_configuration_recorded_before_the_rule_reads_with_the_rule_off():
    """Texts and custom data without the loop's own entries: the values of the old outputs."""
    from types import SimpleNamespace

    from project_ghost_feedback.telemetry.config import custom_data_for_config, recorded_config

    config = _config(unverified_after_ns=7 * S, unverified_max_level='UNKNOWN')
    names, values = config.parameter_texts()
    assert 'loop.unverified_after_ns' in names
    assert LoopConfig.from_texts(config.policy, names, values, 8, 16, TOLERANCE) == config
    old = [(n, v) for n, v in zip(names, values) if not n.startswith('loop.')]
    read = LoopConfig.from_texts(config.policy, *zip(*old), 8, 16, TOLERANCE)
    assert (read.unverified_after_ns, read.policy) == (0, config.policy)
    custom = custom_data_for_config(config)
    info = SimpleNamespace(path='bag', custom_data=custom)
    assert recorded_config(info)[0] == config
    for key in ('ghost_feedback.unverified_after_ns', 'ghost_feedback.unverified_max_level'):
        del custom[key]
    assert recorded_config(info)[0].unverified_after_ns == 0
    with pytest.raises(ValueError, match='unverified_max_level'):
        LoopConfig.make(unverified_max_level='MAYBE')
    with pytest.raises(ValueError, match='unverified_after_ns'):
        LoopConfig.make(unverified_after_ns=-1)


# -- one loop only --------------------------------------------------------------------------------

def _window_calls(path):
    """Return the lines of ``path`` that call .causal_window or construct an OutcomeWindow."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(
            function, 'id', None)
        if name in ('causal_window', 'OutcomeWindow'):
            found.append(f'{path.name}:{node.lineno}')
    return found


def test_only_the_loop_module_runs_the_window():
    """No second copy of the loop: only core/loop.py builds a window and judges on it."""
    allowed = {PACKAGE / 'core' / 'loop.py', PACKAGE / 'core' / 'window.py'}
    offenders = []
    for path in sorted(PACKAGE.rglob('*.py')) + sorted(BENCH.rglob('*.py')):
        if path not in allowed:
            offenders += _window_calls(path)
    assert offenders == []


def test_the_scan_sees_a_copy_of_the_loop(tmp_path):
    copy = tmp_path / 'copy.py'
    copy.write_text('w = OutcomeWindow(8)\nw.add(o)\nx = w.causal_window(1, 8)\n')
    assert _window_calls(copy) == ['copy.py:1', 'copy.py:3']


# -- record and replay: the property ---------------------------------------------------------------

_stamps = st.integers(0, 40).map(lambda tenth: tenth * S // 2)
_events = st.lists(st.one_of(
    st.tuples(st.just('outcome'), _stamps, st.sampled_from((0.5, 2.0, 4.0, 7.0, float('inf')))),
    st.tuples(st.just('assessment'), _stamps, st.just(None)),
    st.tuples(st.just('reset'), st.just(0), st.just(None)),
    st.tuples(st.just('clock'), st.integers(-30, 3).map(lambda s: s * S), st.just(None)),
    st.tuples(st.just('configure'), st.sampled_from((
        ('calibrated_exceedance', 8, 16), ('mahalanobis_downgrade', 4, 8),
        ('overconfidence_scale', 8, 32), ('calibrated_exceedance', 3, 3))), st.just(None)),
    st.tuples(st.just('tick'), st.integers(-5, 20).map(lambda s: s * S), st.just(None)),
), max_size=60)


def _live(events, config):
    """Drive a loop as the node does; return (record, outputs) where record is what it writes."""
    loop = FeedbackLoop(config)
    now = 0
    record = [LoopEvent(0, CONFIGURATION, CAUSE_START, '', config)]
    outputs = []
    for kind, value, extra in events:
        if kind == 'tick':
            now = max(now + value, 0)
        elif kind == 'clock':
            now = max(now + value, 0)
            event = loop.clock_jumped(value, now)
            if event is not None:
                record.append(event)
        elif kind == 'reset':
            record.append(loop.reset(CAUSE_SERVICE, 'test', now))
        elif kind == 'configure':
            policy, history, buffer = value
            event = loop.configure(LoopConfig.make(policy, None, history, buffer, TOLERANCE,
                                                   3 * S), now)
            if event is not None:
                record.append(event)
        else:
            contract = _outcome(value, extra) if kind == 'outcome' else _raw(value)
            step = (loop.outcome if kind == 'outcome' else loop.assessment)(contract, now)
            if not step.accepted:
                continue
            record.extend(step.events)
            record.append(contract)
            if step.calibrated is not None:
                record.append(step.calibrated)
                outputs.append(step.calibrated)
    return record, outputs


def _replayed(record, config):
    """Replay a record as ``ghost-feedback replay`` does: no clock, events applied."""
    loop = FeedbackLoop(config)
    outputs = []
    for item in record:
        if isinstance(item, LoopEvent):
            loop.apply(item)
        elif isinstance(item, PredictionOutcome):
            loop.outcome(item)
        elif isinstance(item, BeliefSelfAssessment):
            outputs.append(loop.assessment(item).calibrated)
    return outputs


@settings(max_examples=300, deadline=None)
@given(_events)
def test_replaying_the_record_reproduces_every_output(events):
    config = _config()
    record, outputs = _live(events, config)
    assert _replayed(record, config) == outputs


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=_events)
def test_replaying_the_recorded_bag_gives_zero_differences(tmp_path_factory, events):
    from project_ghost_feedback.telemetry import TelemetryRecorder, replay_bag

    config = _config()
    record, outputs = _live(events, config)
    bag = tmp_path_factory.mktemp('bags') / 'bag'
    recorder = TelemetryRecorder(bag, config)
    for item in record:
        if isinstance(item, LoopEvent):
            recorder.record_event(item)
        elif isinstance(item, PredictionOutcome):
            recorder.record_outcome(item)
        elif isinstance(item, BeliefSelfAssessment):
            pending = item
        else:
            recorder.record_assessment(pending, item)
    recorder.close()
    report = replay_bag(bag)
    assert report.assessments == len(outputs)
    assert report.differences == 0 and report.identical is not False, report.first_difference
    assert not any('differ' in warning for warning in report.warnings), report.warnings
