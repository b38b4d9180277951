# SPDX-License-Identifier: Apache-2.0
"""CDR read (ros/wire.py) and written (msg_encoding.py) against rclpy's and rosbags' codecs.

Seeded random messages: what rclpy serializes, wire reads to the same contracts as rclpy's
deserialization + conversion; what wire encodes, rclpy and rosbags both read back to the message
rclpy would have published. Malformed payloads raise WireError, never anything else.
"""

import random

from project_ghost_feedback import msg_encoding
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.ros import wire
from project_ghost_feedback.ros.conversions import (
    belief_from_msg,
    belief_to_msg,
    calibrated_from_msg,
    fill_calibrated_msg,
    outcome_from_msg,
    outcome_to_msg,
)
from project_ghost_feedback.telemetry.msgdefs import typestore
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefMsg,
    CalibratedSelfAssessment as CalibratedMsg,
    PredictionOutcome as OutcomeMsg,
)
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from support.random_contracts import LEVELS, MS, named_levels, streams


def test_reading_equals_rclpy_deserialization():
    """Outcomes and beliefs read from rclpy's bytes equal their contracts."""
    for outcomes, belief, _ in streams(1, 150):
        for outcome in outcomes:
            assert wire.read_outcome(serialize_message(outcome_to_msg(outcome))) == outcome
        data = serialize_message(belief_to_msg(belief))
        read, header_end = wire.read_belief(data)
        assert read == belief
        assert read == belief_from_msg(deserialize_message(data, BeliefMsg))
        assert header_end == 12 + len(belief.frame_id) + 1


def test_encoded_output_reads_back_as_rclpy_and_rosbags_read_it():
    """The encoded CalibratedSelfAssessment is the message rclpy would publish, to both readers."""
    store = typestore()
    checked = 0
    for _, belief, calibrated in streams(2, 200):
        if calibrated is None:
            continue
        belief_msg = belief_to_msg(belief)
        data = serialize_message(belief_msg)
        _, header_end = wire.read_belief(data)
        payload = msg_encoding.calibrated_bytes(data, header_end, calibrated)
        expected = fill_calibrated_msg(CalibratedMsg(), calibrated, raw_msg=belief_msg)
        assert deserialize_message(payload, CalibratedMsg) == expected
        assert calibrated_from_msg(store.deserialize_cdr(
            payload, 'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment')) == calibrated
        checked += 1
    assert checked > 100


def test_malformed_payloads_raise_wire_error():
    """Truncations, another encapsulation and over-long sequences are WireError."""
    belief = BeliefSelfAssessment(MS, SelfAssessmentLevel.KNOWN,
                                  (NamedLevel('position_x', SelfAssessmentLevel.KNOWN),))
    data = serialize_message(belief_to_msg(belief))
    outcome = serialize_message(outcome_to_msg(PredictionOutcome(
        MS - 1, MS, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, 1.0)))
    for cut in range(0, len(data) - 4):
        with pytest.raises(wire.WireError):
            wire.belief_view(data[:cut])
    for cut in range(0, 84):
        with pytest.raises(wire.WireError):
            wire.outcome_view(outcome[:cut])
    with pytest.raises(wire.WireError):
        wire.belief_view(b'\x00\x00\x00\x00' + data[4:])   # big-endian encapsulation
    too_many = bytearray(data)
    count_at = 4 + 12 + len(belief.frame_id) + 1 + 1 + 3   # axis_levels count, 4-aligned
    count_at -= (count_at - 4) % 4
    too_many[count_at:count_at + 4] = (65).to_bytes(4, 'little')
    with pytest.raises(wire.WireError):
        wire.belief_view(bytes(too_many))


def test_encoded_inputs_read_back_as_rclpy_reads_them():
    """outcome_bytes and belief_bytes (the bridge's outputs) give rclpy's messages, both readers."""
    store = typestore()
    for outcomes, belief, _ in streams(3, 100):
        for outcome in outcomes:
            payload = msg_encoding.outcome_bytes(outcome)
            assert deserialize_message(payload, OutcomeMsg) == outcome_to_msg(outcome)
            assert wire.read_outcome(payload) == outcome
            assert outcome_from_msg(store.deserialize_cdr(
                payload, 'project_ghost_feedback_msgs/msg/PredictionOutcome')) == outcome
        payload = msg_encoding.belief_bytes(belief)
        assert deserialize_message(payload, BeliefMsg) == belief_to_msg(belief)
        assert wire.read_belief(payload)[0] == belief
        assert belief_from_msg(store.deserialize_cdr(
            payload, 'project_ghost_feedback_msgs/msg/BeliefSelfAssessment')) == belief


def test_node_records_the_bytes_it_took_and_published(rclpy_context, tmp_path):
    """Recording (issue 32.2): inputs as taken, the output as published, nothing encoded again.

    Inputs fed as serialized bytes through the node's subscription callbacks; the bag read back
    raw by rosbags' reader holds exactly those bytes for the inputs, and for the output bytes
    that decode (rosbags) to the node's published CalibratedSelfAssessments. Big-endian inputs
    (read by rclpy instead) are recorded re-encoded and read back the same.
    """
    from project_ghost_feedback.ros.feedback_node import FeedbackNode
    from rclpy.parameter import Parameter
    from rosbags.rosbag2 import Reader

    store = typestore()
    outcome_type = 'project_ghost_feedback_msgs/msg/PredictionOutcome'
    bag = tmp_path / 'bag'
    node = FeedbackNode(node_name='wire_recording', context=rclpy_context, parameter_overrides=[
        Parameter('telemetry_bag', value=str(bag)), Parameter('record_diagnostics', value=False),
        Parameter('max_history', value=4)])
    rng = random.Random(5)
    sent = {'/prediction_outcome': [], '/self_assessment/raw': []}
    outputs, contracts = [], []
    try:
        on_outcome, on_assessment = node.input_handlers()
        for i in range(1, 61):
            outcome = PredictionOutcome(i * MS - MS // 2, i * MS, (rng.random(), 0.0, -1.0),
                                        (0.0, rng.random(), 0.0), rng.random() * 3, 1.0)
            data = serialize_message(outcome_to_msg(outcome))
            if i % 10 == 0:   # big endian: rclpy reads it, the contract is recorded
                data = bytes(store.serialize_cdr(store.deserialize_cdr(data, outcome_type),
                                                 outcome_type, little_endian=False))
            on_outcome(data)
            sent['/prediction_outcome'].append(data)
            contracts.append(outcome)
            if i % 3 == 0:
                belief = BeliefSelfAssessment(i * MS, rng.choice(LEVELS),
                                              named_levels(rng, 'axis', rng.randrange(0, 4)))
                data = serialize_message(belief_to_msg(belief))
                on_assessment(data)
                sent['/self_assessment/raw'].append(data)
                outputs.append(node.verdict.calibrated)
    finally:
        node.destroy_node()
    recorded = {topic: [] for topic in (*sent, '/self_assessment/calibrated')}
    with Reader(bag) as reader:
        for connection, _, payload in reader.messages():
            if connection.topic in recorded:
                recorded[connection.topic].append(
                    (bytes(payload), store.deserialize_cdr(payload, connection.msgtype)))
    assert [data for data, _ in recorded['/self_assessment/raw']] == sent['/self_assessment/raw']
    outcomes = recorded['/prediction_outcome']
    assert len(outcomes) == len(sent['/prediction_outcome']) == 60
    for (data, msg), taken, outcome in zip(outcomes, sent['/prediction_outcome'], contracts):
        assert outcome_from_msg(msg) == outcome
        cdr_le = msg_encoding.CDR_LE
        assert data == taken if taken[:4] == cdr_le else data[:4] == cdr_le
    assert [calibrated_from_msg(msg) for _, msg in recorded['/self_assessment/calibrated']] == (
        outputs)
