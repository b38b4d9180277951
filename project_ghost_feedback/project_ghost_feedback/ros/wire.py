# SPDX-License-Identifier: Apache-2.0
"""The feedback node's inputs read from the CDR bytes DDS carries, without message objects.

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
- the outputs are encoded by :mod:`..msg_encoding` (``outcome_bytes``, ``belief_bytes``,
  ``calibrated_bytes``: the one table of each message, and its fast paths checked against it).

No rclpy here. Alignment: each primitive at a multiple of its size from the start of the body
(after the 4-byte encapsulation header); a sequence is a uint32 count and its elements.
"""

from __future__ import annotations

from collections import namedtuple
import struct
from typing import TYPE_CHECKING

from ..msg_decoding import belief_from_msg, outcome_from_msg
from ..msg_encoding import CDR_LE

if TYPE_CHECKING:
    from ..core import BeliefSelfAssessment, PredictionOutcome


MAX_LEVELS = 64          # NamedLevel[<=64] axis_levels, block_levels
MAX_NAME = 64            # string<=64 NamedLevel.name

Time = namedtuple('Time', 'sec nanosec')
Header = namedtuple('Header', 'stamp frame_id')
Level = namedtuple('Level', 'value')
NamedLevel = namedtuple('NamedLevel', 'name level')
OutcomeView = namedtuple('OutcomeView', (
    'header prediction_stamp position_error_m orientation_error_rad position_mahalanobis '
    'orientation_mahalanobis bias_evidence_nats bias_position_share schema_version'))
BeliefView = namedtuple('BeliefView', 'header overall_level axis_levels block_levels '
                                      'schema_version')

_TIME = struct.Struct('<iI')
_U32 = struct.Struct('<I')
_OUTCOME_TAIL = struct.Struct('<10dI')
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
    return OutcomeView(header, prediction, values[0:3], values[3:6], *values[6:])


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
