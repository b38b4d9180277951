# SPDX-License-Identifier: Apache-2.0
"""The feedback node's messages as the CDR bytes DDS carries: inputs decoded, the output encoded.

The node takes its inputs as serialized bytes (raw subscriptions) and publishes its output as
bytes, so that no message object is built for a message it only reads or writes once, and the
bytes it took and published are what it records. rclpy's own path would build nested
Python message objects for every input (~100 us each here) and convert the output back from
objects (~130 us): more than the node's own work.

- :func:`read_outcome` and :func:`read_belief` parse the little-endian CDR (XCDR1, the
  encapsulation Fast DDS and rosbag2 use for ROS 2) of PredictionOutcome and BeliefSelfAssessment
  into light views with the message's attribute names, then convert them with the one decoding
  of :mod:`..msg_decoding` (the same validation as for message objects and bags). Anything the
  parser cannot read exactly (a truncated payload or bytes after the last field, another
  encapsulation, a count beyond its bound) raises :class:`WireError`; the caller then uses
  rclpy's ``deserialize_message``, which reads every encapsulation, or counts the message as
  malformed. So bytes read here are also what rosbags reads back from a bag.
- :func:`outcome_bytes` and :func:`belief_bytes` encode the contracts the outcome bridge
  publishes;
- :func:`calibrated_bytes` encodes a CalibratedSelfAssessment around the raw assessment's own
  bytes (its header is copied, its body is embedded unchanged): byte for byte what rclpy's
  ``serialize_message`` gives for the same message (``test_wire.py`` checks it).

No rclpy here. Alignment: each primitive at a multiple of its size from the start of the body
(after the 4-byte encapsulation header); a sequence is a uint32 count and its elements.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
import struct
from typing import TYPE_CHECKING

from ..msg_decoding import belief_from_msg, HISTORY_MSG_SCHEMA_VERSION, MSG_SCHEMA_VERSION
from ..msg_decoding import NS_PER_S, outcome_from_msg

if TYPE_CHECKING:
    from ..core import BeliefSelfAssessment, PredictionOutcome
    from ..core import NamedLevel as ContractNamedLevel
    from ..core.feedback import CalibratedSelfAssessment

CDR_LE = b'\x00\x01\x00\x00'
"""Encapsulation header of little-endian plain CDR, options 0 (what Fast DDS writes)."""

MAX_LEVELS = 64          # NamedLevel[<=64] axis_levels, block_levels
MAX_NAME = 64            # string<=64 NamedLevel.name

Time = namedtuple('Time', 'sec nanosec')
Header = namedtuple('Header', 'stamp frame_id')
Level = namedtuple('Level', 'value')
NamedLevel = namedtuple('NamedLevel', 'name level')
OutcomeView = namedtuple('OutcomeView', (
    'header prediction_stamp position_error_m orientation_error_rad position_mahalanobis '
    'orientation_mahalanobis schema_version'))
BeliefView = namedtuple('BeliefView', 'header overall_level axis_levels block_levels '
                                      'schema_version')

_TIME = struct.Struct('<iI')
_U32 = struct.Struct('<I')
_OUTCOME_TAIL = struct.Struct('<8dI')
_HISTORY_COUNTS = struct.Struct('<5I')
_TWO_DOUBLES = struct.Struct('<2d')
_LEVELS = [Level(value) for value in range(256)]


class WireError(ValueError):
    """A payload this module cannot read as the expected message."""


class StringRefused(ValueError):
    """A string that readers would read differently: refused, never handed to rclpy instead.

    An unterminated string (rclpy keeps its last byte, rosbags drops it), an embedded null
    (rclpy stops at it, rosbags keeps it), invalid UTF-8 (rosbags and the project's readers
    cannot decode it), a length of 0 (no terminating null): accepting any of them would make
    the node see another frame_id than other subscribers, and record bytes that the project's
    readers or rosbags cannot read back. The callers count it as ``malformed``.
    """

    reason = 'malformed'


def read_string(body: bytes, offset: int, bound: int | None = None) -> tuple[str, int]:
    """Return (text, offset after it) of the CDR string at ``offset`` (4-aligned).

    WireError for a length past the payload or beyond ``bound``; :class:`StringRefused` for a
    string rclpy and rosbags would read differently.
    """
    (size,) = _U32.unpack_from(body, offset)
    offset += 4
    end = offset + size
    if end > len(body):
        raise WireError(f'string of {size} bytes at {offset - 4} overruns the payload')
    if size == 0:
        raise StringRefused(f'string at {offset - 4} has length 0 (no terminating null)')
    if bound is not None and size - 1 > bound:
        raise WireError(f'string of {size - 1} bytes at {offset - 4} exceeds its bound {bound}')
    if body[end - 1] != 0:
        raise StringRefused(f'string of {size} bytes at {offset - 4} is not null-terminated')
    raw = body[offset:end - 1]
    null = raw.find(0)
    if null >= 0:
        raise StringRefused(f'string of {size} bytes at {offset - 4} has a null byte at {null}')
    try:
        return raw.decode('utf-8'), end
    except UnicodeDecodeError as error:
        raise StringRefused(f'string of {size} bytes at {offset - 4} is not UTF-8 '
                            f'({error.reason} at {error.start})') from None


def read_header(body: bytes) -> tuple[Header, int]:
    """Return (Header, offset just after frame_id) of the header at the start of ``body``."""
    sec, nanosec = _TIME.unpack_from(body, 0)
    frame_id, end = read_string(body, 8)
    return Header(Time(sec, nanosec), frame_id), end


def cdr_body(data: bytes | memoryview) -> bytes:
    """Return the body of little-endian CDR ``data`` (after its encapsulation); else WireError."""
    if data[:4] != CDR_LE:
        raise WireError(f'encapsulation {bytes(data[:4]).hex()} is not little-endian CDR')
    return memoryview(data)[4:].tobytes() if not isinstance(data, bytes) else data[4:]


def outcome_view(data: bytes | memoryview) -> OutcomeView:
    """Return the PredictionOutcome view of ``data`` (serialized bytes); WireError if unreadable."""
    body = cdr_body(data)
    try:
        header, offset = read_header(body)
        offset = (offset + 3) & ~3
        prediction = Time(*_TIME.unpack_from(body, offset))
        offset = (offset + 8 + 7) & ~7
        values = _OUTCOME_TAIL.unpack_from(body, offset)
    except struct.error as error:
        raise WireError(f'PredictionOutcome payload of {len(body)} bytes: {error}') from None
    if offset + _OUTCOME_TAIL.size != len(body):
        raise WireError(f'PredictionOutcome payload has {len(body) - offset - _OUTCOME_TAIL.size}'
                        ' bytes after its last field')
    return OutcomeView(header, prediction, values[0:3], values[3:6], values[6], values[7],
                       values[8])


def read_outcome(data: bytes | memoryview) -> PredictionOutcome:
    """Return the PredictionOutcome contract of ``data`` (ContractViolation or WireError)."""
    return outcome_from_msg(outcome_view(data))


def _named_levels(body: bytes, offset: int) -> tuple[list[NamedLevel], int]:
    (count,) = _U32.unpack_from(body, offset)
    if count > MAX_LEVELS:
        raise WireError(f'{count} NamedLevel entries exceed the bound {MAX_LEVELS}')
    offset += 4
    levels = []
    for _ in range(count):
        offset = (offset + 3) & ~3
        name, offset = read_string(body, offset, MAX_NAME)
        levels.append(NamedLevel(name, _LEVELS[body[offset]]))
        offset += 1
    return levels, (offset + 3) & ~3


def belief_view(data: bytes | memoryview) -> tuple[BeliefView, int]:
    """Return (BeliefSelfAssessment view, header end) of ``data``; WireError if unreadable.

    ``header end`` is where the header's frame_id ends in the body: :func:`calibrated_bytes`
    copies the header from there.
    """
    body = cdr_body(data)
    try:
        header, header_end = read_header(body)
        overall = _LEVELS[body[header_end]]
        axis, offset = _named_levels(body, (header_end + 1 + 3) & ~3)
        block, offset = _named_levels(body, offset)
        (schema_version,) = _U32.unpack_from(body, offset)
    except (struct.error, IndexError) as error:
        raise WireError(f'BeliefSelfAssessment payload of {len(body)} bytes: {error}') from None
    if offset + 4 != len(body):
        raise WireError(f'BeliefSelfAssessment payload has {len(body) - offset - 4} bytes '
                        'after its last field')
    return BeliefView(header, overall, axis, block, schema_version), header_end


def read_belief(data: bytes | memoryview) -> tuple[BeliefSelfAssessment, int]:
    """Return (BeliefSelfAssessment contract, header end) of ``data``.

    ContractViolation for a message the contract refuses, WireError for unreadable bytes.
    """
    view, header_end = belief_view(data)
    return belief_from_msg(view), header_end


def _pad(parts: list[bytes], size: int, alignment: int) -> int:
    """Append zero padding so that ``size`` becomes a multiple of ``alignment``."""
    extra = -size % alignment
    if extra:
        parts.append(b'\0' * extra)
    return size + extra


def _doubles(parts: list[bytes], size: int, values: Sequence[float]) -> int:
    size = _pad(parts, size, 4)
    parts.append(_U32.pack(len(values)))
    size += 4
    if values:
        size = _pad(parts, size, 8)
        parts.append(struct.pack(f'<{len(values)}d', *values))
        size += 8 * len(values)
    return size


def _text(parts: list[bytes], size: int, text: str) -> int:
    size = _pad(parts, size, 4)
    raw = text.encode()
    parts.append(_U32.pack(len(raw) + 1))
    parts.append(raw + b'\0')
    return size + 4 + len(raw) + 1


def _header_parts(parts: list[bytes], stamp_ns: int, frame_id: str) -> int:
    """Append a std_msgs/Header at the start of a body; return the size written."""
    parts.append(_TIME.pack(*divmod(stamp_ns, NS_PER_S)))
    return _text(parts, 8, frame_id)


def outcome_bytes(outcome: PredictionOutcome) -> bytes:
    """Return the serialized PredictionOutcome of a core PredictionOutcome contract."""
    parts = [CDR_LE]
    size = _pad(parts, _header_parts(parts, outcome.observed_stamp_sim_ns, outcome.frame_id), 4)
    parts.append(_TIME.pack(*divmod(outcome.prediction_stamp_sim_ns, NS_PER_S)))
    _pad(parts, size + 8, 8)
    parts.append(_OUTCOME_TAIL.pack(
        *outcome.position_error_m, *outcome.orientation_error_rad, outcome.position_mahalanobis,
        outcome.orientation_mahalanobis, MSG_SCHEMA_VERSION))
    return b''.join(parts)


def _level_parts(parts: list[bytes], size: int, levels: Sequence[ContractNamedLevel]) -> int:
    size = _pad(parts, size, 4)
    parts.append(_U32.pack(len(levels)))
    size += 4
    for named in levels:
        size = _text(parts, size, named.name)
        parts.append(bytes((named.level.value,)))
        size += 1
    return size


def belief_bytes(belief: BeliefSelfAssessment) -> bytes:
    """Return the serialized BeliefSelfAssessment of a core BeliefSelfAssessment contract."""
    parts = [CDR_LE]
    size = _header_parts(parts, belief.belief_stamp_sim_ns, belief.frame_id)
    parts.append(bytes((belief.overall_level.value,)))
    size = _level_parts(parts, size + 1, belief.axis_levels)
    size = _level_parts(parts, size, belief.block_levels)
    _pad(parts, size, 4)
    parts.append(_U32.pack(MSG_SCHEMA_VERSION))
    return b''.join(parts)


def calibrated_bytes(raw_data: bytes, header_end: int,
                     calibrated: CalibratedSelfAssessment) -> bytes:
    """Return the serialized CalibratedSelfAssessment of ``calibrated`` (a core contract).

    ``raw_data`` is the serialized BeliefSelfAssessment that ``calibrated.raw_assessment`` was
    read from (:func:`read_belief`, which gave ``header_end``): its header becomes the output's
    header and its body the output's ``raw_assessment``, unchanged.
    """
    body = raw_data[4:]
    parts = [CDR_LE, body[:header_end]]
    size = _pad(parts, header_end, 4)
    parts.append(body)
    size += len(body)
    history = calibrated.calibration_history
    parts.append(_HISTORY_COUNTS.pack(
        history.outcomes_considered, history.count_within_1_std, history.count_beyond_1_std,
        history.count_beyond_3_std, history.count_beyond_5_std))
    size = _pad(parts, size + 20, 8)
    parts.append(_TWO_DOUBLES.pack(history.worst_position_mahalanobis,
                                   history.worst_orientation_mahalanobis))
    size = _doubles(parts, size + 16, history.position_squared_distances)
    size = _doubles(parts, size, history.orientation_squared_distances)
    size = _pad(parts, size, 4)
    stamp = history.most_recent_observed_stamp_sim_ns
    parts.append(_TIME.pack(*divmod(0 if stamp is None else stamp, NS_PER_S)))
    parts.append(bytes((history.schema_version,)))
    size = _pad(parts, size + 9, 4)
    parts.append(_U32.pack(HISTORY_MSG_SCHEMA_VERSION))
    parts.append(bytes((calibrated.adjusted_overall_level.value,)))
    size += 5
    size = _text(parts, size, calibrated.adjustment_policy_id)
    size = _text(parts, size, calibrated.adjustment_reason)
    _pad(parts, size, 4)
    parts.append(_U32.pack(MSG_SCHEMA_VERSION))
    return b''.join(parts)
