# SPDX-License-Identifier: Apache-2.0
"""The gate every /tf and /tf_static transform passes before tf2 (bridge/tf_gate.py), pure.

The engine (``PairingEngine.take_transforms``) runs it in the node and in ``evaluate``; here a
provider that records what it is given stands for tf2, so nothing of ROS is needed.
"""

from types import SimpleNamespace

import pytest

from project_ghost_feedback.bridge.engine_interface import EngineListener
from project_ghost_feedback.bridge.pairing import PairingEngine, RESET_TF_STAMPS
from project_ghost_feedback.bridge.parameters import config_from, engine_config, PARAMETERS
from project_ghost_feedback.bridge.tf_gate import (
    frame_prefix_refusal,
    prefixed,
    RESET,
    TF2_MAX_GRAPH_DEPTH,
    TfGate,
)
from project_ghost_feedback.bridge.transforms import TransformFailure
from project_ghost_feedback.core import NS_PER_S
from project_ghost_feedback.parameter_spec import ParameterError

S = NS_PER_S
TOLERANCE = 5 * S


def transform(stamp_ns, parent='odom', child='base', xyz=(0.0, 0.0, 0.0),
              xyzw=(0.0, 0.0, 0.0, 1.0), nanosec=None):
    sec, ns = divmod(stamp_ns, S)
    return SimpleNamespace(
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=ns if nanosec is None
                                                     else nanosec), frame_id=parent),
        child_frame_id=child,
        transform=SimpleNamespace(
            translation=SimpleNamespace(x=xyz[0], y=xyz[1], z=xyz[2]),
            rotation=SimpleNamespace(x=xyzw[0], y=xyzw[1], z=xyzw[2], w=xyzw[3])))


def message(*transforms):
    return SimpleNamespace(transforms=list(transforms))


class Recorder:
    """A transform provider that keeps what it is given (tf2 in the node and evaluate)."""

    def __init__(self, loop_detail=None):
        self.added, self.clears = [], 0
        self.loop_detail = loop_detail

    def lookup(self, target, source, stamp_ns):
        return TransformFailure('tf_unavailable', self.loop_detail or 'not connected')

    def add(self, transform, static):
        self.added.append((transform.child_frame_id, static))
        return None

    def clear(self):
        self.clears += 1


class Listener(EngineListener):
    def __init__(self):
        self.refused, self.resets = [], []

    def transform_refused(self, reason, detail):
        self.refused.append((reason, detail))

    def timeline_reset(self, cause, detail):
        self.resets.append(cause)


def engine(**values):
    params = {name: spec.default for name, spec in PARAMETERS.items()}
    params.update(values)
    provider, listener = Recorder(), Listener()
    return PairingEngine(engine_config(params), listener, transforms=provider), provider, listener


def test_a_far_future_transform_is_refused_and_never_reaches_tf2():
    """1e6 s ahead of the clock: future_stamp, counted; the next valid one goes in."""
    eng, provider, listener = engine()
    now = 100 * S
    eng.take_transforms(message(transform(now + 1_000_000 * S)), False, now)
    assert eng.transforms_refused == {'future_stamp': 1} and provider.added == []
    assert listener.refused[0][0] == 'future_stamp' and '1000000.000 s ahead' in \
        listener.refused[0][1]
    eng.take_transforms(message(transform(now)), False, now)
    assert provider.added == [('base', False)] and eng.transforms_accepted == 1


def test_offline_the_clock_is_the_newest_input_stamp():
    """Without a clock (evaluate) the newest accepted input stamp is the clock."""
    eng, provider, _ = engine()
    eng.take_transforms(message(transform(1_000_000 * S)), False)   # no input yet: no clock
    assert eng.transforms_accepted == 1
    eng.newest_input_ns = 100 * S
    eng.take_transforms(message(transform(1_000_000 * S, child='b2')), False)
    assert eng.transforms_refused == {'future_stamp': 1}


def test_a_stamp_going_back_clears_tf2_and_counts_a_reset():
    """Stamps of a frame going back beyond the tolerance start over: tf2 cleared, counted."""
    eng, provider, listener = engine()
    eng.take_transforms(message(transform(1_000_000 * S)), False)   # unknown clock: accepted
    eng.take_transforms(message(transform(10 * S)), False)
    assert provider.clears == 1 and eng.resets == {RESET_TF_STAMPS: 1}
    assert listener.resets == [RESET_TF_STAMPS]
    assert provider.added == [('base', False), ('base', False)]
    # Going back within the tolerance, or a static transform, is no reset.
    eng.take_transforms(message(transform(6 * S), transform(0, child='laser')), False)
    eng.take_transforms(message(transform(0, parent='base', child='imu')), True)
    assert provider.clears == 1 and eng.transforms_accepted == 5


@pytest.mark.parametrize('bad, reason', [
    (dict(xyz=(float('nan'), 0.0, 0.0)), 'position_not_finite'),
    (dict(xyzw=(float('nan'), 0.0, 0.0, 1.0)), 'quaternion_not_finite'),
    (dict(xyzw=(0.0, 0.0, 0.0, 0.0)), 'quaternion_zero'),
    (dict(xyzw=(0.0, 0.0, 0.0, 2.0)), 'quaternion_not_unit'),
    (dict(parent=''), 'tf_bad_frame'),
    (dict(child='/base'), 'tf_bad_frame'),
    (dict(child='odom'), 'tf_bad_frame'),
    (dict(child='x' * 300), 'tf_bad_frame'),
    (dict(nanosec=S), 'bad_stamp'),
])
def test_what_tf2_would_refuse_with_a_line_per_message_is_refused_before_it(bad, reason):
    eng, provider, _ = engine()
    eng.take_transforms(message(*[transform(S, **bad)] * 3), False, S)
    assert eng.transforms_refused == {reason: 3} and provider.added == []


def test_frames_are_bounded_and_the_rest_refused():
    """100,000 distinct frames: tf2 is given tf.max_frames names, the rest are counted."""
    eng, provider, _ = engine(**{'tf.max_frames': 50})
    eng.take_transforms(message(*[transform(S, child=f'f{i}') for i in range(100_000)]), True, S)
    assert len(eng.tf_gate.frames) == 50 and eng.transforms_accepted == 49  # odom + 49 children
    assert eng.transforms_refused == {'tf_too_many_frames': 100_000 - 49}
    assert len(eng.tf_gate.parents) == 49
    # Known frames still go in.
    eng.take_transforms(message(transform(S, child='f3')), False, S)
    assert eng.transforms_accepted == 50


def test_transforms_per_frame_within_the_cache_are_bounded():
    """A flood of one frame: at most tf.max_transforms_per_frame within tf.cache_s."""
    eng, provider, _ = engine(**{'tf.max_transforms_per_frame': 100, 'tf.cache_s': 1.0})
    flood = [transform(10 * S + i * S // 1000) for i in range(500)]   # 1 kHz for 0.5 s
    eng.take_transforms(message(*flood), False, 10 * S)
    assert eng.transforms_accepted == 100
    assert eng.transforms_refused == {'tf_frame_full': 400}
    # Once the cache has moved on, the frame takes transforms again; another frame always did.
    eng.take_transforms(message(transform(12 * S), transform(10 * S, child='laser')), False,
                        12 * S)
    assert eng.transforms_accepted == 102


def test_a_long_chain_is_not_called_a_loop():
    """tf2 says 'contains a loop' for a chain past its depth; the gate says what it is."""
    gate = TfGate(max_frames=20_000)
    frames = [f'f{i}' for i in range(TF2_MAX_GRAPH_DEPTH + 500)]
    for parent, child in zip(frames, frames[1:]):
        assert gate.check(transform(S, parent, child), True, S, TOLERANCE) == (None, '')
    explained = gate.explain_unreachable(frames[0], frames[-1])
    assert 'no loop' in explained and f'{len(frames) - 1} frames long' in explained
    looped = TfGate()
    for parent, child in (('a', 'b'), ('b', 'c'), ('c', 'a')):
        looped.check(transform(S, parent, child), True, S, TOLERANCE)
    assert 'contains a loop' in looped.explain_unreachable('x', 'a')
    assert TfGate().explain_unreachable('a', 'b') is None


def pose_msg(stamp_ns, frame_id):
    """Return an Odometry alike at the origin with a small covariance."""
    sec, ns = divmod(stamp_ns, S)
    return SimpleNamespace(
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=ns), frame_id=frame_id),
        child_frame_id='',
        pose=SimpleNamespace(
            pose=SimpleNamespace(position=SimpleNamespace(x=0.0, y=0.0, z=0.0),
                                 orientation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0)),
            covariance=[0.01 if i % 7 == 0 else 0.0 for i in range(36)]))


def test_the_engine_reports_the_chain_in_its_drop_detail():
    """A reference behind a 1,199-frame chain: dropped as tf_unavailable, 'no loop' said."""
    params = {name: spec.default for name, spec in PARAMETERS.items()}
    params['tf.max_frames'] = 2000
    provider = Recorder(loop_detail='The tf tree is invalid because it contains a loop.')
    dropped = []

    class Drops(EngineListener):
        def reference_dropped(self, reason, detail):
            dropped.append((reason, detail))

    eng = PairingEngine(engine_config(params), Drops(), transforms=provider)
    frames = [f'f{i}' for i in range(1200)]
    eng.take_transforms(message(*[transform(S, p, c) for p, c in zip(frames, frames[1:])]),
                        True, S)
    eng.take_estimate(pose_msg(S, 'f0'), S)
    eng.take_reference(pose_msg(S, 'f1199'), S)
    eng.flush()
    ((reason, detail),) = dropped
    assert reason == 'tf_unavailable' and 'no loop' in detail and '1199 frames long' in detail


def test_child_frame_map_is_bounded():
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    with pytest.raises(ParameterError, match='at most 64'):
        config_from({**values, 'child_frame_map': [f'a{i}:b{i}' for i in range(10_000)]})
    with pytest.raises(ParameterError, match='characters'):
        config_from({**values, 'child_frame_map': ['a:' + 'b' * 1_000_000]})
    config = config_from({**values, 'child_frame_map': ['base_link:robot1/base_link']})
    assert config['child_frame_map'] == {('base_link', 'robot1/base_link')}


def test_gate_answers_reset_then_accepts():
    gate = TfGate()
    assert gate.check(transform(100 * S), False, None, TOLERANCE) == (None, '')
    verdict, detail = gate.check(transform(S), False, None, TOLERANCE)
    assert verdict == RESET and 'went back by 99.000 s' in detail


@pytest.mark.parametrize('prefix', ['', 'robot1/', 'fleet/robot_1/', 'r-2.a/'])
def test_frame_prefix_accepts_a_namespace_ending_with_a_slash(prefix):
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    assert frame_prefix_refusal(prefix) is None
    assert config_from({**values, 'frame_prefix': prefix})['frame_prefix'] == prefix


@pytest.mark.parametrize('prefix, words', [
    ('robot1', "must end with '/'"), ('/robot1/', "start with '/'"), ('a//b/', "'//'"),
    ('robot 1/', 'character'), ('robot1/\n', 'character'), ('r' * 300 + '/', 'longer')])
def test_frame_prefix_refuses_what_no_tf_frame_prefix_looks_like(prefix, words):
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    with pytest.raises(ParameterError, match='frame_prefix') as error:
        config_from({**values, 'frame_prefix': prefix})
    assert words in str(error.value)


def test_prefixed_keeps_empty_and_already_prefixed_names():
    assert prefixed('robot1/', 'odom') == 'robot1/odom'
    assert prefixed('robot1/', 'robot1/odom') == 'robot1/odom'
    assert prefixed('robot1/', '') == ''
    assert prefixed('', 'odom') == 'odom'


def test_the_engine_prefixes_both_inputs_frames_and_bodies():
    """frame_prefix robot1/: estimates and references in odom pair as robot1/odom (no tf)."""
    params = {name: spec.default for name, spec in PARAMETERS.items()}
    params.update({'frame_prefix': 'robot1/', 'use_tf': False,
                   'whitening.warmup_samples': 0, 'max_reference_gap_s': 5.0,
                   'child_frame_map': ['robot1/base_link:robot1/body']})
    outcomes = []

    class Outcomes(EngineListener):
        def outcome_ready(self, outcome, estimate):
            outcomes.append((outcome.frame_id, estimate.child_frame_id))

    eng = PairingEngine(engine_config(params), Outcomes())
    reference = pose_msg(0, 'odom')
    reference.child_frame_id = 'body'
    eng.take_reference(reference, S)
    later = pose_msg(2 * S, 'robot1/odom')  # already prefixed: kept as it is
    later.child_frame_id = 'robot1/body'
    eng.take_reference(later, S)
    estimate = pose_msg(S, 'odom')
    estimate.child_frame_id = 'base_link'
    eng.take_estimate(estimate, S)
    assert outcomes == [('robot1/odom', 'robot1/base_link')]
    assert eng.reference_frame_id == 'robot1/odom' and eng.dropped == {}
