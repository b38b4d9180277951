# SPDX-License-Identifier: Apache-2.0
"""Differential fuzz of the nodes' byte readers against rclpy and rosbags.

ros/wire.py and ros/pose_wire.py against rclpy's ``deserialize_message`` and rosbags'
``deserialize_cdr``.

Seeded valid messages of every type the nodes take as bytes, then mutated where readers are
known to part ways: strings (unterminated, an embedded null, invalid UTF-8, a length of 0, a
length past the payload, lengths off by a few), plus random byte flips, cuts and tails. For every
payload:

- what the project's reader accepts, rclpy and rosbags both accept, with every value the same
  (so the node sees the frame_id every other subscriber sees, and the bytes it records are
  what rosbags and the project's own readers read back);
- what rclpy and rosbags read differently is refused (StringRefused: counted as malformed), or
  left to rclpy (WireError: another encapsulation, a bound), never read a third way;
- what the reader leaves to rclpy (WireError) is not refused as StringRefused for a reason
  rclpy and rosbags agree on.
"""

import random
import struct

from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.ros import wire
from project_ghost_feedback.ros.conversions import belief_to_msg, outcome_to_msg
from project_ghost_feedback.ros.pose_wire import VIEWS
from project_ghost_feedback.telemetry.msgdefs import typestore
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefMsg,
    PredictionOutcome as OutcomeMsg,
)
import pytest
from rclpy.serialization import deserialize_message, serialize_message

MS = 1_000_000
CASES_PER_TYPE = 1500
NAMES = ('', 'o', 'odom', 'robot1/base_link', 'ca\u00f1\u00f3n', 'map_' * 9)


def _f(value):
    return struct.pack('<d', float(value))  # NaN compares equal to itself by its bytes


def _stamp(stamp):
    return (int(stamp.sec), int(stamp.nanosec))


def _header(msg):
    return (_stamp(msg.header.stamp), msg.header.frame_id)


def _outcome_fields(msg):
    return (_header(msg), _stamp(msg.prediction_stamp),
            tuple(_f(v) for v in msg.position_error_m),
            tuple(_f(v) for v in msg.orientation_error_rad), _f(msg.position_mahalanobis),
            _f(msg.orientation_mahalanobis), int(msg.schema_version))


def _levels(levels):
    return tuple((n.name, int(n.level.value)) for n in levels)


def _belief_fields(msg):
    return (_header(msg), int(msg.overall_level.value), _levels(msg.axis_levels),
            _levels(msg.block_levels), int(msg.schema_version))


def _pose_fields(msg):
    pose, covariance = msg.pose, ()
    if hasattr(pose, 'covariance'):
        pose, covariance = pose.pose, tuple(_f(v) for v in msg.pose.covariance)
    p, o = pose.position, pose.orientation
    return (_header(msg), getattr(msg, 'child_frame_id', ''),
            tuple(_f(v) for v in (p.x, p.y, p.z, o.x, o.y, o.z, o.w)), covariance)


def _random_outcome(rng):
    predicted = rng.randrange(1, 10**6) * MS - 1
    return outcome_to_msg(PredictionOutcome(
        predicted, predicted + rng.randrange(0, 10**3) * MS,
        (rng.gauss(0, 1), 0.0, 1e300), (rng.random(), 0.0, -rng.random()), rng.random() * 4,
        rng.random() * 3, frame_id=rng.choice(NAMES)))


def _random_belief(rng):
    levels = list(SelfAssessmentLevel)
    return belief_to_msg(BeliefSelfAssessment(
        rng.randrange(1, 10**6) * MS, rng.choice(levels),
        tuple(NamedLevel(f'axis{k}{"n" * rng.randrange(4)}', rng.choice(levels))
              for k in range(rng.randrange(0, 4))),
        tuple(NamedLevel(f'block{k}', rng.choice(levels)) for k in range(rng.randrange(0, 3))),
        frame_id=rng.choice(NAMES)))


def _random_pose(cls):
    def make(rng):
        msg = cls()
        msg.header.stamp.sec = rng.randrange(2**31)
        msg.header.stamp.nanosec = rng.randrange(10**9)
        msg.header.frame_id = rng.choice(NAMES)
        if cls is Odometry:
            msg.child_frame_id = rng.choice(NAMES)
        pose = msg.pose if cls is PoseStamped else msg.pose.pose
        pose.position.x, pose.position.y = rng.gauss(0, 1e3), rng.gauss(0, 1)
        pose.orientation.w = 1.0
        if cls is not PoseStamped:
            msg.pose.covariance = [rng.gauss(0, 1) for _ in range(36)]
        return msg
    return make


def _wire_outcome(data):
    return wire.outcome_view(data)


def _wire_belief(data):
    return wire.belief_view(data)[0]


TYPES = {
    'PredictionOutcome': (OutcomeMsg, 'project_ghost_feedback_msgs/msg/PredictionOutcome',
                          _random_outcome, _wire_outcome, _outcome_fields),
    'BeliefSelfAssessment': (BeliefMsg, 'project_ghost_feedback_msgs/msg/BeliefSelfAssessment',
                             _random_belief, _wire_belief, _belief_fields),
    'Odometry': (Odometry, 'nav_msgs/msg/Odometry', _random_pose(Odometry),
                 VIEWS['odometry'], _pose_fields),
    'PoseWithCovarianceStamped': (
        PoseWithCovarianceStamped, 'geometry_msgs/msg/PoseWithCovarianceStamped',
        _random_pose(PoseWithCovarianceStamped), VIEWS['pose_with_covariance'], _pose_fields),
    'PoseStamped': (PoseStamped, 'geometry_msgs/msg/PoseStamped', _random_pose(PoseStamped),
                    VIEWS['pose'], _pose_fields),
}


def _string_offsets(data):
    """Offsets (in data) of the length of every string the reader passed, found by probing."""
    body = data[4:]
    found, offset = [], 8
    # The header's frame_id is at body offset 8 in every type here; an Odometry's child_frame_id
    # follows it, 4-aligned.
    (size,) = struct.unpack_from('<I', body, offset)
    found.append(4 + offset)
    after = (offset + 4 + size + 3) & ~3
    if after + 4 <= len(body):
        found.append(4 + after)
    return found


def _mutations(data, rng):
    """Yield payloads mutated from a valid one (strings first, then bytes)."""
    for at in _string_offsets(data):
        if at + 4 > len(data):
            continue
        (size,) = struct.unpack_from('<I', data, at)
        start, end = at + 4, at + 4 + size
        if size >= 1 and end <= len(data):
            text = bytearray(data)
            text[end - 1] = ord('x')                       # unterminated
            yield bytes(text)
            if size >= 3:
                text = bytearray(data)
                text[start + (size - 1) // 2] = 0          # an embedded null
                yield bytes(text)
                text = bytearray(data)
                text[start] = 0xff                          # invalid UTF-8
                yield bytes(text)
                text = bytearray(data)
                text[start:start + 2] = b'\xc3\x28'         # a broken two-byte sequence
                yield bytes(text)
        for new_size in (0, size - 1, size + 1, size + 4, len(data), 2**31, 2**32 - 1):
            if new_size >= 0:
                yield data[:at] + struct.pack('<I', new_size) + data[at + 4:]
    for _ in range(6):
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            flipped[rng.randrange(4, len(data))] = rng.randrange(256)
        yield bytes(flipped)
    yield data[:rng.randrange(4, len(data))]
    yield data + bytes(rng.randrange(1, 9))


def _read(reader, data):
    try:
        return 'ok', reader(data)
    except wire.StringRefused:
        return 'refused', None
    except wire.WireError:
        return 'rclpy', None


def _outside(read):
    try:
        return 'ok', read()
    except Exception:  # noqa: BLE001 - any error is a refusal
        return 'error', None


@pytest.mark.parametrize('name', sorted(TYPES))
def test_the_readers_agree_with_rclpy_and_rosbags(name):
    cls, msgtype, make, reader, fields = TYPES[name]
    store = typestore()
    rng = random.Random(hash(name) & 0xffff)
    tally = {'ok': 0, 'refused': 0, 'rclpy': 0, 'disagree': 0}
    cases = 0
    while cases < CASES_PER_TYPE:
        valid = serialize_message(make(rng))
        for data in [valid, *_mutations(valid, rng)]:
            cases += 1
            ours, view = _read(reader, data)
            by_rclpy, rclpy_msg = _outside(lambda: deserialize_message(data, cls))
            by_rosbags, rosbags_msg = _outside(lambda: store.deserialize_cdr(data, msgtype))
            rclpy_fields = fields(rclpy_msg) if by_rclpy == 'ok' else None
            rosbags_fields = fields(rosbags_msg) if by_rosbags == 'ok' else None
            agree = by_rclpy == by_rosbags == 'ok' and rclpy_fields == rosbags_fields
            tally[ours] += 1
            tally['disagree'] += not agree and (by_rclpy == 'ok' or by_rosbags == 'ok')
            if ours == 'ok':
                assert agree, (name, data.hex(), rclpy_fields, rosbags_fields)
                assert fields(view) == rclpy_fields, (name, data.hex())
            elif ours == 'refused':
                # Refused for a string rclpy and rosbags read differently (or one refuses).
                assert not agree, (name, data.hex(), rclpy_fields)
    print(f'{name}: {cases} cases, {tally}')
    assert tally['ok'] > CASES_PER_TYPE // 10 and tally['refused'] > 20
    assert tally['disagree'] > 20   # the mutations do reach what the readers disagree on


@pytest.mark.parametrize('text, reason', [
    (b'map', 'not null-terminated'), (b'ma\x00mapm\x00', 'null byte'),
    (b'\xff\xfe\x00', 'not UTF-8'), (b'', 'length 0'),
])
def test_each_string_rclpy_and_rosbags_disagree_on_is_refused_with_its_reason(text, reason):
    header = struct.pack('<iI', 1, 0) + struct.pack('<I', len(text)) + text
    header += b'\0' * (-len(header) % 8)
    data = wire.CDR_LE + header + struct.pack('<iI', 0, 0) + struct.pack('<8dI', *[0.0] * 8, 1)
    with pytest.raises(wire.StringRefused, match=reason):
        wire.outcome_view(data)
