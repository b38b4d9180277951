# SPDX-License-Identifier: Apache-2.0
"""The feedback node's telemetry: its bag opened from its parameters, other topics recorded.

:func:`open_telemetry` opens the bag ``telemetry_bag`` / ``telemetry_dir`` ask for, with the
channels of the inputs and the output (recorded as the bytes taken and published), the
periodic derived data with ``record_diagnostics`` and the ``record_topics``; the writer runs on
a background thread with a bounded queue (``telemetry_queue_size`` / ``_bytes``).

:class:`TopicRecorder`: ``record_topics`` (e.g. the bridge's inputs) and, with
``record_diagnostics``, ``/diagnostics`` go into the node's own bag as the CDR bytes the
subscription took (nothing decoded), the log time the node clock at receipt. Each record_topics
subscription is best effort (it matches every publisher), as deep as the channel's recorded QoS,
but static transforms (``.../tf_static``) are taken reliable and transient local, as tf2 does, so
those latched before the node started are recorded; its losses are counted as the inputs' are:
sequence gaps (with message info) and the middleware's message_lost events, noted at WARN on the
node's /diagnostics (``record_topics_messages_missed`` / ``_lost``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import pathlib
import datetime
from typing import Any, NamedTuple, TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from .calibration_status import PeriodStatus, WARN
from .input_accounting import SequenceGaps
from .node_kit import message_class

if TYPE_CHECKING:
    from ..telemetry.channels import Channel

DIAGNOSTICS_TOPIC = '/diagnostics'
BAG_PREFIX = 'ghost_feedback'


class StartupError(ValueError):
    """The start-up configuration is invalid (run_node() logs it and exits 2)."""


def new_bag_path(parent: str | pathlib.Path) -> pathlib.Path:
    """Return a new ``<parent>/ghost_feedback_YYYY_MM_DD-HH_MM_SS[_N]`` path (rosbag2's naming)."""
    parent = pathlib.Path(parent)
    stamp = datetime.datetime.now().strftime('%Y_%m_%d-%H_%M_%S')
    candidate = parent / f'{BAG_PREFIX}_{stamp}'
    suffix = 1
    while candidate.exists():
        candidate = parent / f'{BAG_PREFIX}_{stamp}_{suffix}'
        suffix += 1
    return candidate


class OpenedTelemetry(NamedTuple):
    """What :func:`open_telemetry` opened: the recorder and the channels the node writes to."""

    recorder: Any
    channels: tuple[Any, Any, Any]
    """The bag's channels of the outcomes, raw and calibrated assessments (in that order)."""
    overconfidence_channel: str | None
    recorded_topics: tuple[tuple[Any, type], ...]
    """``(channel, message class)`` of each ``record_topics`` entry."""


def open_telemetry(param: Callable[[str], Any], loop_config: Any,
                   on_error: Callable[[str], None]) -> OpenedTelemetry | None:
    """Open the bag the parameters ask for (``param(name)``), or return None when none is.

    StartupError (one line) when the telemetry libraries are missing, the bag cannot be made
    or ``record_topics`` names a type that is not installed.
    """
    bag, parent = param('telemetry_bag'), param('telemetry_dir')
    if not bag and not parent:
        return None
    try:
        from ..telemetry.background import BackgroundRecorder
        from ..telemetry.channels import (
            CHANNEL_CALIBRATED_SELF_ASSESSMENT,
            CHANNEL_PREDICTION_OUTCOME,
            CHANNEL_RAW_SELF_ASSESSMENT,
            DIAGNOSTICS,
            OVERCONFIDENCE,
            recorded_topic,
        )
        from ..telemetry.recorder import TelemetryRecorder
    except ImportError as error:
        raise StartupError(
            f'telemetry needs the rosbags library ({error}); install it '
            '(pip install -r requirements/jazzy.txt) or leave telemetry_bag and '
            'telemetry_dir empty') from None
    # The bag's channels of the inputs and the output (its topic names, whatever the node's
    # remapping): recorded as the bytes taken and published.
    channels = (CHANNEL_PREDICTION_OUTCOME, CHANNEL_RAW_SELF_ASSESSMENT,
                CHANNEL_CALIBRATED_SELF_ASSESSMENT)
    try:
        if parent:
            pathlib.Path(parent).mkdir(parents=True, exist_ok=True)
            bag = new_bag_path(parent)
        # The periodic, derived data (for Foxglove and plots), on or off together.
        extra: tuple[Channel, ...]
        extra = (DIAGNOSTICS, OVERCONFIDENCE) if param('record_diagnostics') else ()
        overconfidence = OVERCONFIDENCE.topic if OVERCONFIDENCE in extra else None
        asked = [recorded_topic(entry) for entry in param('record_topics') if entry]
        recorded = tuple((channel, message_class(channel.msgtype)) for channel in asked)
        extra += tuple(channel for channel, _ in recorded)
        recorder = TelemetryRecorder(bag, loop_config, extra_channels=extra, on_error=on_error)
    except (ValueError, OSError) as error:
        raise StartupError(str(error)) from None
    return OpenedTelemetry(
        BackgroundRecorder(recorder, queue_size=param('telemetry_queue_size'),
                           queue_bytes=param('telemetry_queue_bytes'), on_error=on_error),
        channels, overconfidence, recorded)


def _subscription_qos(qos: Any) -> QoSProfile:
    """Return the subscription profile of a recorded topic's channel QoS.

    Best effort and volatile (matches every publisher), except a latched channel (static
    transforms: reliable, transient local, to get what was published before the node started).
    """
    if qos.durability == 'transient_local':
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=qos.depth,
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=qos.depth,
                      reliability=ReliabilityPolicy.BEST_EFFORT)


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
                _subscription_qos(channel.qos), raw=True,
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
