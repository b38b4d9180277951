# SPDX-License-Identifier: Apache-2.0
"""Sample contracts of every kind and a telemetry bag written from them."""

import math
from project_ghost_feedback.core.validation import STAMP_MAX_NS
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import CalibratedSelfAssessment, CalibrationHistory
from project_ghost_feedback.core.loop import CONFIGURATION, LoopConfig, LoopEvent, RESET
from project_ghost_feedback.telemetry import (
    TelemetryWriter,
)


KNOWN = SelfAssessmentLevel.KNOWN


UNCERTAIN = SelfAssessmentLevel.UNCERTAIN


UNKNOWN = SelfAssessmentLevel.UNKNOWN


def sample_belief(stamp, level=KNOWN, axes=True):
    axis_levels = (NamedLevel('position_x', KNOWN), NamedLevel('yaw', UNKNOWN)) if axes else ()
    return BeliefSelfAssessment(stamp, level, axis_levels, (NamedLevel('pose', UNCERTAIN),))


def sample_outcome(observed, position=0.5, orientation=0.25):
    return PredictionOutcome(
        observed - 5, observed, (0.5, -1.25, 3.0), (0.0, 1e-9, -0.1), position, orientation)


def sample_contracts():
    """Return contracts of every channel: +inf distances, empty history, out-of-order stamps."""
    empty = CalibrationHistory.empty()
    full = CalibrationHistory(10, 4, 3, 2, 1, math.inf, 4.25, STAMP_MAX_NS)
    squares = CalibrationHistory(  # schema 2 (ADR-0026a): +inf and an overflowing square
        3, 0, 1, 0, 2, math.inf, 1e200, 7_000, 2, (0.25, math.inf, 4.0), (1e200 * 1e200, 0.0, 0.0))
    raw1 = sample_belief(1_000)
    raw2 = sample_belief(3_000, UNCERTAIN, axes=False)
    return [
        sample_outcome(900),
        raw1,
        CalibratedSelfAssessment(raw1, empty, KNOWN, 'mahalanobis_downgrade', 'no_outcomes_yet'),
        sample_outcome(2_000, position=math.inf),
        sample_outcome(500, orientation=math.inf),  # arrived late: log time goes back
        raw2,
        CalibratedSelfAssessment(
            raw2, full, UNKNOWN, 'mahalanobis_downgrade', 'downgrade_from_calibration'),
        LoopEvent(2_500, RESET, 'service', 'requested through ~/reset', LoopConfig.make()),
        LoopEvent(2_600, CONFIGURATION, 'parameters', 'a change', LoopConfig.make(
            'mahalanobis_downgrade', {'downgrade_threshold': 3}, 16, 64, 10**9)),
        CalibratedSelfAssessment(
            raw2, squares, UNKNOWN, 'overconfidence_scale', 'infinite_mahalanobis'),
        CalibratedSelfAssessment(
            raw1, CalibrationHistory.empty(2), KNOWN, 'overconfidence_scale', 'no_outcomes_yet'),
        # the largest stamp a builtin_interfaces/Time carries
        sample_outcome(STAMP_MAX_NS, position=0.0, orientation=0.0),
    ]


def write_sample_bag(path, contracts):
    with TelemetryWriter(path) as writer:
        for contract in contracts:
            writer.write_contract(contract)
    return path


def string_cdr(length, data):
    """Return CDR bytes of a std_msgs/String whose length field and data are given as they are."""
    import struct

    return b'\x00\x01\x00\x00' + struct.pack('<I', length) + data


def recorded_strings(bag, topic):
    """Return the std_msgs/String data of ``topic`` in ``bag``, read by rosbags (exact list)."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_JAZZY)
    with Reader(bag) as reader:
        connections = [c for c in reader.connections if c.topic == topic]
        return [store.deserialize_cdr(raw, 'std_msgs/msg/String').data
                for _, _, raw in reader.messages(connections=connections)]
