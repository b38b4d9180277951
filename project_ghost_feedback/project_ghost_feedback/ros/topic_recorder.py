# SPDX-License-Identifier: Apache-2.0
"""The feedback node's recording of other topics into its telemetry bag, as received.

``record_topics`` (e.g. the bridge's inputs) and, with ``record_diagnostics``, ``/diagnostics``
go into the node's own bag as the CDR bytes the subscription took (nothing decoded), the log
time the node clock at receipt. Each record_topics subscription is best effort (it matches every
publisher), as deep as the channel's recorded QoS; its losses are counted as the inputs' are:
sequence gaps (with message info) and the middleware's message_lost events, noted at WARN on
the node's /diagnostics (``record_topics_messages_missed`` / ``_lost``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from .calibration_status import PeriodStatus, WARN
from .input_accounting import SequenceGaps

DIAGNOSTICS_TOPIC = '/diagnostics'


class TopicRecorder:
    """Subscribe ``topics`` (``(channel, message class)`` pairs) and record what they receive.

    ``telemetry`` is the node's background recorder (``record_serialized(topic, log_time,
    payload)``), ``clock_ns()`` the node clock, ``period`` the node's diagnostics period;
    ``message_info`` says whether the executor passes message info (sequence gaps).
    """

    def __init__(self, node: Node, telemetry: Any, topics: Sequence[tuple[Any, type]],
                 clock_ns: Callable[[], int], period: PeriodStatus, message_info: bool,
                 record_diagnostics: bool) -> None:
        self._telemetry = telemetry
        self._clock_ns = clock_ns
        self._period = period
        self._message_info = message_info
        self.recorded = 0  # messages of record_topics handed to the recorder
        self.lost = 0      # the RMW's message_lost events
        self._gaps: dict[str, SequenceGaps] = {}
        self.subscriptions = []
        if record_diagnostics:
            # Every publisher's arrays, this node's too.
            self.subscriptions.append(node.create_subscription(
                DiagnosticArray, DIAGNOSTICS_TOPIC, self._record_diagnostics, 100, raw=True))
        for channel, message_type in topics:
            subscription = node.create_subscription(
                message_type, channel.topic, self._recorder_of(channel.topic),
                QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=channel.qos.depth,
                           reliability=ReliabilityPolicy.BEST_EFFORT), raw=True,
                event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_message_lost))
            self._gaps[channel.topic] = SequenceGaps(subscription.get_publisher_count)
            self.subscriptions.append(subscription)

    @property
    def missed(self) -> int:
        """Return the record_topics messages missing from their publication sequences."""
        return sum(gaps.missed for gaps in self._gaps.values())

    def _record_diagnostics(self, payload: bytes) -> None:
        self._telemetry.record_serialized(DIAGNOSTICS_TOPIC, self._clock_ns(), payload)

    def _recorder_of(self, topic: str) -> Callable[..., None]:
        def record(payload: bytes) -> None:
            self.recorded += 1
            self._telemetry.record_serialized(topic, self._clock_ns(), payload)

        if not self._message_info:
            return record

        def record_with_info(payload: bytes, info: Any) -> None:
            missed = self._gaps[topic].note(info)
            if missed:
                self._period.note(WARN, f'{missed} {topic} messages missing from the '
                                        'publication sequence (not recorded)')
            record(payload)
        return record_with_info

    def _on_message_lost(self, status: Any) -> None:
        self.lost += status.total_count_change
        self._period.note(WARN, f'{status.total_count_change} record_topics messages lost in '
                                'the middleware (not recorded)')
