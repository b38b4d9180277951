# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's calibrated estimate: each accepted estimate again, covariance inflated.

With ``calibrated_estimate.enabled`` the bridge subscribes the feedback node's
``self_assessment/calibrated`` and republishes every accepted estimate on
``estimate/calibrated`` with its pose covariance scaled by the inflation factors of the latest
calibration history (:mod:`..bridge.calibrated_estimate`: the pure rules, docs/bridge.md). A
covariance the rules refuse to publish (not finite, a positive variance lost) is counted by
reason and noted at WARN on the bridge's /diagnostics.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Any

from project_ghost_feedback_msgs.msg import CalibratedSelfAssessment as CalibratedSelfAssessmentMsg
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from ..bridge.calibrated_estimate import calibrated_covariance, inflation_factors
from ..bridge.geometry import vec3_components
from ..core.feedback import CalibrationHistory
from .node_kit import NO_PUBLISHER_EVENTS
from ..msg_decoding import history_from_msg
from .calibration_status import PeriodStatus, WARN
from .pose_wire import PoseInputView

INPUT_TOPIC = 'self_assessment/calibrated'
OUTPUT_TOPIC = 'estimate/calibrated'


class CalibratedEstimatePublisher:
    """Subscribe the calibrated self-assessment; republish estimates with inflated covariance.

    ``config()`` returns the bridge's configuration in effect (its ``calibrated_*`` keys);
    ``on_error(error)`` counts an exception of the subscription's callback (the bridge's
    ``note_callback_error``).
    """

    def __init__(self, node: Node, estimate_class: type, output_qos: QoSProfile,
                 period: PeriodStatus, config: Callable[[], Mapping[str, Any]],
                 on_error: Callable[[BaseException], None]) -> None:
        self._period = period
        self._config = config
        self._on_error = on_error
        self.history: CalibrationHistory | None = None
        """The latest calibration history received (None before the first)."""
        self.published = 0
        self.refused: collections.Counter[str] = collections.Counter()
        self.factors = (1.0, 1.0)
        """``(position, orientation)`` factors applied to the next estimate."""
        self._publisher = node.create_publisher(
            estimate_class, OUTPUT_TOPIC, output_qos, event_callbacks=NO_PUBLISHER_EVENTS)
        node.create_subscription(
            CalibratedSelfAssessmentMsg, INPUT_TOPIC, self._on_calibrated,
            QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                       reliability=ReliabilityPolicy.RELIABLE))

    def _on_calibrated(self, msg: Any) -> None:
        try:
            self.history = history_from_msg(msg.calibration_history)
            self.update_factors()
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self._on_error(error)

    def update_factors(self) -> None:
        """Recompute the factors from the latest history and the configuration in effect."""
        if self.history is not None:
            config = self._config()
            self.factors = inflation_factors(
                self.history, config['calibrated_allow_deflation'],
                config['calibrated_max_factor'], config['calibrated_confidence'],
                vec3_components(config['ignored_axes']))

    def publish(self, msg: Any) -> None:
        """Publish ``msg`` (an accepted estimate) with its pose covariance inflated.

        ``msg`` is the bridge's view of the estimate's bytes (published as those bytes with the
        new covariance) or a message object (changed in place).

        An inflated covariance that is not finite or loses a positive variance is not published:
        counted by reason, WARN on /diagnostics.
        """
        covariance, reason = calibrated_covariance(msg.pose.covariance, *self.factors)
        if covariance is None:
            self.refused[reason] += 1
            self._period.note(WARN, f'calibrated estimate not published ({reason})')
            return
        if isinstance(msg, PoseInputView):
            self._publisher.publish(msg.with_covariance(covariance))
        else:
            msg.pose.covariance = covariance
            self._publisher.publish(msg)
        self.published += 1
