# SPDX-License-Identifier: Apache-2.0
"""What goes into and out of the bridge's engine (:mod:`.pairing`), apart from its rules.

- the input messages' accessors: :func:`pose_and_covariance`, :func:`child_frame_id` (messages
  read by attribute, an rclpy message or a rosbags one);
- :class:`Estimate`: an accepted estimate as the engine keeps it;
- :class:`EngineListener`: what the engine hands over (outputs ready, drops, resets), the
  interface its two drivers implement (the bridge node, ``bridge_inputs`` for evaluate and audit).
"""

from __future__ import annotations

from typing import Any

from ..core import BeliefSelfAssessment, PredictionOutcome
from ..core.feedback.episodes import TransformStep
from .geometry import FloatArray


def child_frame_id(msg: Any) -> str:
    """Return the body an input is the pose of (Odometry's ``child_frame_id``; '' unknown)."""
    child = getattr(msg, 'child_frame_id', '')
    return child if isinstance(child, str) else ''


def pose_and_covariance(msg: Any) -> tuple[Any, Any]:
    """Return ``(pose, covariance or None)`` of an estimate or a reference message."""
    pose = msg.pose
    if hasattr(pose, 'covariance'):
        return pose.pose, pose.covariance
    return pose, None


class EngineListener:
    """What the engine hands over; subclass it and override what you need (all no-ops here)."""

    def outcome_ready(self, outcome: PredictionOutcome, estimate: Estimate) -> None:
        """Take a PredictionOutcome paired and paced in (``estimate``: its :class:`Estimate`)."""

    def raw_outcome(self, outcome: PredictionOutcome, estimate: Estimate) -> None:
        """Take every paired estimate's outcome with its raw (unwhitened) distances."""

    def paced_out(self, outcome: PredictionOutcome, estimate: Estimate) -> None:
        """Note a PredictionOutcome paired but paced out (not published; its error is real)."""

    def assessment_ready(self, belief: BeliefSelfAssessment, estimate: Estimate) -> None:
        """Take the BeliefSelfAssessment of an estimate (always after its outcome, if any)."""

    def estimate_dropped(self, reason: str, detail: str) -> None:
        """Note an estimate refused or dropped with ``reason`` (``detail`` for a log line)."""

    def reference_dropped(self, reason: str, detail: str) -> None:
        """Note a reference refused or dropped with ``reason``."""

    def timeline_reset(self, cause: str, detail: str) -> None:
        """Note a reset of the time-ordered state (``cause``: one of the RESET_* values)."""

    def transform_refused(self, reason: str, detail: str) -> None:
        """Note a /tf or /tf_static transform refused before tf2 (or by it) with ``reason``."""

    def transform_step(self, step: TransformStep) -> None:
        """Note distances that jumped or fell back at a /tf change (bridge/frame_steps.py)."""

    def invalid_assessment(self, error: Exception) -> None:
        """Note an assessment that failed its contract (a bug upstream of the contract)."""


class Estimate:
    """An accepted estimate: stamp (ns), frame, position, unit quaternion, 6x6 covariance."""

    __slots__ = ('stamp_ns', 'frame_id', 'position', 'quaternion', 'covariance', 'message',
                 'child_frame_id')

    def __init__(self, stamp_ns: int, frame_id: str, position: tuple[float, float, float],
                 quaternion: tuple[float, float, float, float], covariance: FloatArray,
                 message: Any = None, child_frame_id: str = '') -> None:
        self.stamp_ns = stamp_ns
        self.child_frame_id = child_frame_id
        self.frame_id = frame_id
        self.position = position
        self.quaternion = quaternion
        self.covariance = covariance
        self.message = message
