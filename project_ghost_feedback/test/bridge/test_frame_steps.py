# SPDX-License-Identifier: Apache-2.0
"""Frames named: distances that jump at a /tf change (bridge/frame_steps.py), in the engine, pure.

A provider that answers a scripted ``odom <- map`` stands for tf2; estimates (10 Hz, in
``odom``) and references (50 Hz, in ``map``) of a robot standing at the origin of ``map``.
"""

from types import SimpleNamespace

import pytest

from project_ghost_feedback.bridge.engine_interface import EngineListener
from project_ghost_feedback.bridge.frame_steps import (
    COINCIDENCE_NS,
    FrameStepMonitor,
    JUMP_DISTANCE,
    rotation_between_deg,
)
from project_ghost_feedback.bridge.pairing import PairingEngine
from project_ghost_feedback.bridge.parameters import engine_config, PARAMETERS
from project_ghost_feedback.bridge.transforms import Transform
from project_ghost_feedback.core import NS_PER_S
from project_ghost_feedback.core.feedback.episodes import FALL, JUMP

S = NS_PER_S
STD_M = 0.1


def pose_msg(stamp_ns, frame_id, x=0.0, y=0.0, covariance=True):
    sec, ns = divmod(stamp_ns, S)
    return SimpleNamespace(
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=ns), frame_id=frame_id),
        child_frame_id='',
        pose=SimpleNamespace(
            pose=SimpleNamespace(position=SimpleNamespace(x=x, y=y, z=0.0),
                                 orientation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0)),
            covariance=[STD_M ** 2 if i % 7 == 0 and covariance else 0.0 for i in range(36)]))


class Scripted:
    """A transform provider: ``odom <- map`` is a translation ``published(stamp)`` along x."""

    def __init__(self, published):
        self.published = published

    def lookup(self, target, source, stamp_ns):
        return Transform((self.published(stamp_ns), 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))

    def add(self, transform, static):
        return None

    def clear(self):
        pass


class Steps(EngineListener):
    def __init__(self):
        self.steps, self.outcomes = [], 0

    def transform_step(self, step):
        self.steps.append(step)

    def outcome_ready(self, outcome, estimate):
        self.outcomes += 1


def run(published, estimate_x, seconds=14):
    """Feed ``seconds`` of the stream; return the listener (notes and outcome count)."""
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    values.update({'whitening.warmup_samples': 0, 'max_reference_gap_s': 5.0})
    listener = Steps()
    engine = PairingEngine(engine_config(values), listener, transforms=Scripted(published))
    wobble = (0.05, -0.08, 0.02, 0.11, -0.04)  # a small honest error, metres
    for tick in range(seconds * 50 + 1):
        stamp = tick * S // 50
        engine.take_reference(pose_msg(stamp, 'map'), stamp)
        if tick % 5 == 0:
            engine.take_estimate(pose_msg(stamp, 'odom', x=estimate_x(stamp)
                                          + wobble[tick // 5 % 5]), stamp)
    engine.flush()
    assert listener.outcomes == seconds * 10 + 1
    return listener


def test_a_frame_error_is_named_where_it_starts_and_where_it_ends():
    """The map -> odom published 2 m off from 5 s to 9 s: a jump and a fall, naming the step."""
    def wrong(stamp):
        return 2.0 if 5 * S <= stamp < 9 * S else 0.0

    listener = run(wrong, estimate_x=lambda stamp: 0.0)
    jump, fall = listener.steps
    assert (jump.kind, fall.kind) == (JUMP, FALL)
    for step, at in ((jump, 5 * S), (fall, 9 * S)):
        assert (step.target_frame, step.source_frame, step.vec3) == ('odom', 'map', 'position')
        assert step.step_m == pytest.approx(2.0) and step.step_deg == pytest.approx(0.0)
        assert step.step_stamp_ns == at and 0 <= at - step.stamp_ns <= COINCIDENCE_NS
    assert jump.distance_before < JUMP_DISTANCE < jump.distance_after
    # 2 m against the estimate's and the reference's std of 0.1 m each
    assert jump.distance_after == pytest.approx(2.0 / (STD_M * 2 ** 0.5), rel=0.1)
    text = jump.describe(0)
    assert 'position distance jumped' in text and 'odom <- map stepped 2.000 m' in text
    assert 'at 5.00 s' in text and 'frame error' in text


def test_a_correction_the_estimate_follows_is_not_named():
    """The map -> odom steps 0.3 m every 2 s and the estimate (in odom) moves with it: no note."""
    def correction(stamp):
        return 0.3 * (stamp // (2 * S))

    assert run(correction, estimate_x=correction).steps == []


def test_a_jump_without_a_transform_step_is_not_named():
    """The estimate itself jumps 2 m at 5 s under a constant transform: no note."""
    listener = run(lambda stamp: 1.0,
                   estimate_x=lambda stamp: 1.0 + (2.0 if stamp >= 5 * S else 0.0))
    assert listener.steps == []


def test_a_rotation_step_is_measured_in_degrees_and_a_reset_forgets():
    monitor = FrameStepMonitor()
    quarter = (0.0, 0.0, 0.7071067811865476, 0.7071067811865476)
    monitor.transform_used(S, 'odom', 'map', (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    zero = (0.0, 0.0, 0.0)
    monitor.distances(S, 1.0, 1.0, zero, zero)
    monitor.transform_used(2 * S, 'odom', 'map', (0.0, 0.0, 0.0), quarter)
    step = monitor.distances(2 * S, 1.0, 30.0, zero, (0.0, 0.0, 1.5))
    assert step is not None and step.vec3 == 'orientation' and step.kind == JUMP
    assert step.step_deg == pytest.approx(90.0) and step.step_m == 0.0
    assert rotation_between_deg(quarter, quarter) == pytest.approx(0.0, abs=1e-5)
    monitor.reset()
    assert monitor.distances(3 * S, 30.0, 1.0, zero, zero) is None  # no step kept
    assert monitor.notes == 1


def test_a_chance_crossing_at_a_correction_is_named_only_if_the_step_explains_it():
    """A step names a crossing only when it explains the change of the error.

    A 0.29 m correction at the stamp where d crosses 4 (3.6 -> 4.2, the error moved 0.08 m):
    not named; the same crossing with the error moved by the step (0.29 m): named.
    """
    zero = (0.0, 0.0, 0.0)
    for moved, named in ((0.08, False), (0.29, True)):
        monitor = FrameStepMonitor()
        monitor.transform_used(7_980_000_000, 'odom', 'map', zero, (0.0, 0.0, 0.0, 1.0))
        monitor.distances(7_900_000_000, 3.6, 1.0, (0.51, 0.0, 0.0), zero)
        monitor.transform_used(8 * S, 'odom', 'map', (0.29, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
        step = monitor.distances(8 * S, 4.2, 1.0, (0.51 + moved, 0.0, 0.0), zero)
        assert (step is not None) == named
        if named:
            assert step.step_m == pytest.approx(0.29) and step.kind == JUMP
    # A step before the previous paired estimate belongs to it, not to this crossing.
    monitor = FrameStepMonitor()
    monitor.transform_used(7 * S, 'odom', 'map', zero, (0.0, 0.0, 0.0, 1.0))
    monitor.transform_used(7_500_000_000, 'odom', 'map', (2.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    monitor.distances(7_900_000_000, 3.6, 1.0, zero, zero)
    assert monitor.distances(8 * S, 30.0, 1.0, (2.0, 0.0, 0.0), zero) is None
