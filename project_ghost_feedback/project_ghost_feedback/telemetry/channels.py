# SPDX-License-Identifier: Apache-2.0
"""Telemetry channels: the topics of a telemetry bag, their ROS 2 types and offered QoS.

Topic names are the feedback node's default topics, so a bag recorded by the node's own recorder
and one recorded with ``ros2 bag record`` of the live topics have the same channels.
"""

from dataclasses import dataclass

from ..msg_encoding import BELIEF, CALIBRATED, EVENT, OUTCOME

MSGS_PACKAGE = 'project_ghost_feedback_msgs'

CHANNEL_CALIBRATED_SELF_ASSESSMENT = '/self_assessment/calibrated'
"""ADR-0026 section 6: the channel of CalibratedSelfAssessment."""
CHANNEL_RAW_SELF_ASSESSMENT = '/self_assessment/raw'
"""The channel of the raw BeliefSelfAssessment (the node's ``assessment_topic`` default)."""
CHANNEL_PREDICTION_OUTCOME = '/prediction_outcome'
"""The channel of PredictionOutcome (the node's ``outcome_topic`` default)."""

CHANNEL_FEEDBACK_EVENTS = '/feedback_events'
"""The channel of FeedbackEvent: resets and configuration changes (the node's events topic)."""

# The channels' types, as the one encoding table names them (msg_encoding).
TYPE_CALIBRATED_SELF_ASSESSMENT = CALIBRATED
TYPE_BELIEF_SELF_ASSESSMENT = BELIEF
TYPE_PREDICTION_OUTCOME = OUTCOME
TYPE_FEEDBACK_EVENT = EVENT

# rmw's "infinite" duration (RMW_DURATION_INFINITE), as rosbag2 records it for a default profile.
INFINITE_DURATION = (9223372036, 854775807)


@dataclass(frozen=True)
class QosProfile:
    """The offered QoS of a channel, as stored in ``offered_qos_profiles`` (rosbag2 names).

    Durations are ``(sec, nsec)``. The default is the feedback node's publisher profile:
    reliable, volatile, keep_last 10, automatic liveliness, no deadline or lifespan.
    """

    history: str = 'keep_last'
    depth: int = 10
    reliability: str = 'reliable'
    durability: str = 'volatile'
    deadline: tuple = INFINITE_DURATION
    lifespan: tuple = INFINITE_DURATION
    liveliness: str = 'automatic'
    liveliness_lease_duration: tuple = INFINITE_DURATION
    avoid_ros_namespace_conventions: bool = False


DEFAULT_QOS = QosProfile()
INPUT_QOS = QosProfile(reliability='best_effort', depth=100)
"""How the node subscribes to the topics of ``record_topics``: best effort matches every
publisher, reliable or not."""
LATCHED_INPUT_QOS = QosProfile(durability='transient_local', depth=100)
"""How the node subscribes to a ``record_topics`` entry of static transforms (a topic named
``tf_static`` or ending in ``/tf_static``, type ``tf2_msgs/msg/TFMessage``): reliable and
transient local, as tf2's static listener, so transforms latched before the node started are
recorded too (a volatile subscriber receives none of them)."""
TF_TYPE = 'tf2_msgs/msg/TFMessage'
EVENTS_QOS = QosProfile(durability='transient_local')
"""The events publisher's profile: a late ``ros2 bag record`` still gets the recent events."""


@dataclass(frozen=True)
class Channel:
    """One channel of a telemetry bag: topic, ROS 2 type name and offered QoS."""

    topic: str
    msgtype: str
    qos: QosProfile = DEFAULT_QOS


CHANNELS = (
    Channel(CHANNEL_PREDICTION_OUTCOME, TYPE_PREDICTION_OUTCOME),
    Channel(CHANNEL_RAW_SELF_ASSESSMENT, TYPE_BELIEF_SELF_ASSESSMENT),
    Channel(CHANNEL_CALIBRATED_SELF_ASSESSMENT, TYPE_CALIBRATED_SELF_ASSESSMENT),
    Channel(CHANNEL_FEEDBACK_EVENTS, TYPE_FEEDBACK_EVENT, EVENTS_QOS),
)
"""Every channel of a telemetry bag, in the order the writer registers them (fixed: determinism)."""

CHANNEL_TYPES = {channel.topic: channel.msgtype for channel in CHANNELS}
"""Topic -> ROS 2 type name."""

CHANNEL_BY_TYPE = {channel.msgtype: channel for channel in CHANNELS}
"""ROS 2 type name -> the default Channel of that type."""

CHANNEL_DIAGNOSTICS = '/diagnostics'
TYPE_DIAGNOSTIC_ARRAY = 'diagnostic_msgs/msg/DiagnosticArray'
DIAGNOSTICS = Channel(CHANNEL_DIAGNOSTICS, TYPE_DIAGNOSTIC_ARRAY)
"""/diagnostics as the node records it (``record_diagnostics``): every publisher's arrays, as
received (CDR bytes), log time the node clock at receipt (what ``ros2 bag record`` does). For
Foxglove's Diagnostics panel; replay does not read it."""

CHANNEL_OVERCONFIDENCE = '/self_assessment/overconfidence'
TYPE_OVERCONFIDENCE_ESTIMATE = f'{MSGS_PACKAGE}/msg/OverconfidenceEstimate'
OVERCONFIDENCE = Channel(CHANNEL_OVERCONFIDENCE, TYPE_OVERCONFIDENCE_ESTIMATE)
"""The node's OverconfidenceEstimate, once per diagnostics period (log time the node clock): the
continuous estimate as numbers, for plots (``record_diagnostics``). Derived from the calibrated
outputs; replay does not read it."""


def recorded_topic(entry: object) -> Channel:
    """Return the Channel of a ``record_topics`` entry ``'/topic:pkg/msg/Type'``.

    The topic must be absolute and not one of the bag's own channels; the type is a ROS 2
    interface name. ValueError with a one-line reason otherwise.
    """
    topic, separator, msgtype = str(entry).rpartition(':')
    parts = msgtype.split('/')
    if not separator or not topic.startswith('/') or len(topic) < 2:
        raise ValueError(f"record_topics entry {entry!r} is not '/topic:pkg/msg/Type'")
    if len(parts) != 3 or parts[1] != 'msg' or not all(parts):
        raise ValueError(f'record_topics entry {entry!r}: the type must read pkg/msg/Type')
    if topic in CHANNEL_TYPES or topic in (CHANNEL_DIAGNOSTICS, CHANNEL_OVERCONFIDENCE):
        raise ValueError(f'record_topics entry {entry!r}: {topic} is recorded already')
    latched = msgtype == TF_TYPE and topic.rsplit('/', 1)[-1] == 'tf_static'
    return Channel(topic, msgtype, LATCHED_INPUT_QOS if latched else INPUT_QOS)
