# SPDX-License-Identifier: Apache-2.0
"""Telemetry: rosbag2-compatible MCAP bags of the feedback contracts, and deterministic replay.

Needs only ``rosbags`` and ``mcap`` (no rclpy): the CDR codecs come from a rosbags typestore built
from the package's .msg files. See ``docs/telemetry.md``.

- :mod:`.channels`: topics, ROS 2 types, offered QoS (``CHANNEL_CALIBRATED_SELF_ASSESSMENT``).
- :mod:`.adapters`: contract -> ``TelemetryRecord(channel, log_time, payload)``.
- :mod:`.writer`: :class:`TelemetryWriter` (a rosbag2 bag directory, MCAP storage).
- :mod:`.bag_reader`: open and validate a bag (:class:`BagError`), :func:`bag_info`.
- :mod:`.codecs`: ``DECODERS`` (CDR -> contract); :mod:`.config`: the recorded
  configuration (:func:`recorded_config`, a core ``LoopConfig``); :mod:`.replay_report`:
  :class:`ReplayReport`.
- :mod:`.replay`: the engine, :func:`replay_bag`, :func:`verify_bag`, :func:`read_bag`: the
  recorded run through the core's one feedback loop (``core.loop.FeedbackLoop``).
- :mod:`.recorder`: the feedback node's :class:`TelemetryRecorder`.
"""

from .adapters import (
    adapter_for,
    ADAPTERS,
    BeliefSelfAssessmentToTelemetryAdapter,
    CalibratedSelfAssessmentToTelemetryAdapter,
    PredictionOutcomeToTelemetryAdapter,
    TelemetryRecord,
    to_telemetry,
)
from .channels import (
    Channel,
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    CHANNEL_TYPES,
    CHANNELS,
    QosProfile,
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_PREDICTION_OUTCOME,
)
from .bag_metadata import BagError
from .bag_reader import bag_info, BagInfo
from .codecs import decode, register_decoder
from .config import recorded_config
from .recorder import TelemetryRecorder
from .replay import iter_bag, read_bag, replay_bag, verify_bag
from .replay_report import ReplayReport, summary_line
from .writer import TelemetryWriter, TelemetryWriterError

__all__ = [
    'ADAPTERS',
    'BagError',
    'BagInfo',
    'BeliefSelfAssessmentToTelemetryAdapter',
    'CHANNELS',
    'CHANNEL_CALIBRATED_SELF_ASSESSMENT',
    'CHANNEL_PREDICTION_OUTCOME',
    'CHANNEL_RAW_SELF_ASSESSMENT',
    'CHANNEL_TYPES',
    'CalibratedSelfAssessmentToTelemetryAdapter',
    'Channel',
    'PredictionOutcomeToTelemetryAdapter',
    'QosProfile',
    'ReplayReport',
    'TYPE_BELIEF_SELF_ASSESSMENT',
    'TYPE_CALIBRATED_SELF_ASSESSMENT',
    'TYPE_PREDICTION_OUTCOME',
    'TelemetryRecord',
    'TelemetryRecorder',
    'TelemetryWriter',
    'TelemetryWriterError',
    'adapter_for',
    'bag_info',
    'decode',
    'iter_bag',
    'read_bag',
    'recorded_config',
    'register_decoder',
    'replay_bag',
    'summary_line',
    'to_telemetry',
    'verify_bag',
]
