# SPDX-License-Identifier: Apache-2.0
"""Write the core contracts as project_ghost_feedback_msgs messages: one table per message.

:data:`MESSAGES` says, for every message the project writes, each field in the order of its
``.msg`` file, its type and how its value is read from the contract. Everything that writes one
of these messages is derived from it, so a field change is one edit here:

- :func:`fill` sets the fields of an rclpy message (the nodes' publishers);
- :func:`build` makes a message object of another library from its classes (the telemetry
  recorder's rosbags objects);
- :func:`cdr_bytes` serializes straight to little-endian CDR (XCDR1, what Fast DDS and rosbag2
  use), no message object at all: byte for byte what rclpy and rosbags write (tests check it
  against both libraries' serializers).

The three messages written on a hot path (the outcome bridge's two outputs, the feedback node's
output, each telemetry record) have a fast path spelled with :mod:`struct` (about 3-4x faster
than the table-driven writer, which walks one closure per field): :func:`outcome_bytes`,
:func:`belief_bytes`, :func:`calibrated_bytes`. They are not a second definition: every one is
checked against :func:`cdr_bytes` of the table (``test_msg_encoding.py``, over generated
contracts of every shape), so a field changed in the table and not in a fast path fails there.

No ROS import: the rclpy and rosbags classes are given by the caller. Reading goes the other way
(:mod:`.msg_decoding`).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping, Sequence
import struct
from typing import Any, NamedTuple

from .core import BeliefSelfAssessment, NamedLevel, NS_PER_S, PredictionOutcome
from .core.feedback import CalibratedSelfAssessment, CalibrationHistory
from .core.loop import LoopEvent
from .msg_decoding import (
    EVENT_KIND_WIRE, EVENT_SCHEMA_VERSION, HISTORY_MSG_SCHEMA_VERSION, MSG_SCHEMA_VERSION,
    OUTCOME_MSG_SCHEMA_VERSION)

PACKAGE = 'project_ghost_feedback_msgs/msg/'
TIME = 'builtin_interfaces/msg/Time'
HEADER = 'std_msgs/msg/Header'
LEVEL = PACKAGE + 'SelfAssessmentLevel'
NAMED_LEVEL = PACKAGE + 'NamedLevel'
OUTCOME = PACKAGE + 'PredictionOutcome'
BELIEF = PACKAGE + 'BeliefSelfAssessment'
HISTORY = PACKAGE + 'CalibrationHistory'
CALIBRATED = PACKAGE + 'CalibratedSelfAssessment'
EVENT = PACKAGE + 'FeedbackEvent'

EVENT_DETAIL_MAX = 1024
"""FeedbackEvent.detail is ``string<=1024``: a longer detail is cut to it."""

CDR_LE = b'\x00\x01\x00\x00'
"""The encapsulation header of little-endian plain CDR (what rclpy and rosbags write)."""


class Field(NamedTuple):
    """One field of a message: its name, its type (``.msg`` spelling) and its value's source."""

    name: str
    type: str  # a primitive ('uint32', 'string', 'float64[3]', 'float64[]', ...) or a message
    value: Callable[[Any], Any]


def _stamp(ns: int) -> tuple[int, int]:
    return divmod(ns, NS_PER_S)


def _constant(value: object) -> Callable[[Any], object]:
    return lambda _source: value


def _history_stamp(history: CalibrationHistory) -> int:
    stamp = history.most_recent_observed_stamp_sim_ns
    return 0 if stamp is None else stamp  # interface version 3: no outcome is a zero Time


MESSAGES: Mapping[str, tuple[Field, ...]] = {
    # A Time's source is a stamp in ns; a Header's a (stamp ns, frame_id) pair.
    TIME: (Field('sec', 'int32', lambda ns: _stamp(ns)[0]),
           Field('nanosec', 'uint32', lambda ns: _stamp(ns)[1])),
    HEADER: (Field('stamp', TIME, lambda header: header[0]),
             Field('frame_id', 'string', lambda header: header[1])),
    LEVEL: (Field('value', 'uint8', lambda level: level.value),),
    NAMED_LEVEL: (Field('name', 'string', lambda named: named.name),
                  Field('level', LEVEL, lambda named: named.level)),
    OUTCOME: (
        Field('header', HEADER,
              lambda o: (o.observed_stamp_sim_ns, o.frame_id)),
        Field('prediction_stamp', TIME, lambda o: o.prediction_stamp_sim_ns),
        Field('position_error_m', 'float64[3]', lambda o: o.position_error_m),
        Field('orientation_error_rad', 'float64[3]', lambda o: o.orientation_error_rad),
        Field('position_mahalanobis', 'float64', lambda o: o.position_mahalanobis),
        Field('orientation_mahalanobis', 'float64', lambda o: o.orientation_mahalanobis),
        Field('bias_evidence_nats', 'float64', lambda o: o.bias_evidence_nats),
        Field('bias_position_share', 'float64', lambda o: o.bias_position_share),
        Field('schema_version', 'uint32', _constant(OUTCOME_MSG_SCHEMA_VERSION)),
    ),
    BELIEF: (
        Field('header', HEADER, lambda b: (b.belief_stamp_sim_ns, b.frame_id)),
        Field('overall_level', LEVEL, lambda b: b.overall_level),
        Field('axis_levels', NAMED_LEVEL + '[]', lambda b: b.axis_levels),
        Field('block_levels', NAMED_LEVEL + '[]', lambda b: b.block_levels),
        Field('schema_version', 'uint32', _constant(MSG_SCHEMA_VERSION)),
    ),
    HISTORY: (
        Field('outcomes_considered', 'uint32', lambda h: h.outcomes_considered),
        Field('count_within_1_std', 'uint32', lambda h: h.count_within_1_std),
        Field('count_beyond_1_std', 'uint32', lambda h: h.count_beyond_1_std),
        Field('count_beyond_3_std', 'uint32', lambda h: h.count_beyond_3_std),
        Field('count_beyond_5_std', 'uint32', lambda h: h.count_beyond_5_std),
        Field('worst_position_mahalanobis', 'float64', lambda h: h.worst_position_mahalanobis),
        Field('worst_orientation_mahalanobis', 'float64',
              lambda h: h.worst_orientation_mahalanobis),
        Field('position_squared_distances', 'float64[]', lambda h: h.position_squared_distances),
        Field('orientation_squared_distances', 'float64[]',
              lambda h: h.orientation_squared_distances),
        Field('most_recent_observed_stamp', TIME, _history_stamp),
        Field('history_schema_version', 'uint8', lambda h: h.schema_version),
        Field('schema_version', 'uint32', _constant(HISTORY_MSG_SCHEMA_VERSION)),
    ),
    CALIBRATED: (
        Field('header', HEADER,
              lambda c: (c.raw_assessment.belief_stamp_sim_ns, c.raw_assessment.frame_id)),
        Field('raw_assessment', BELIEF, lambda c: c.raw_assessment),
        Field('calibration_history', HISTORY, lambda c: c.calibration_history),
        Field('adjusted_overall_level', LEVEL, lambda c: c.adjusted_overall_level),
        Field('adjustment_policy_id', 'string', lambda c: c.adjustment_policy_id),
        Field('adjustment_reason', 'string', lambda c: c.adjustment_reason),
        Field('schema_version', 'uint32', _constant(MSG_SCHEMA_VERSION)),
    ),
    EVENT: (
        Field('header', HEADER, lambda e: (e.stamp_ns, '')),
        Field('kind', 'uint8', lambda e: EVENT_KIND_WIRE[e.kind]),
        Field('cause', 'string', lambda e: e.cause),
        Field('detail', 'string', lambda e: e.detail[:EVENT_DETAIL_MAX]),
        Field('policy', 'string', lambda e: e.config.policy),
        Field('parameter_names', 'string[]', lambda e: e.config.parameter_texts()[0]),
        Field('parameter_values', 'string[]', lambda e: e.config.parameter_texts()[1]),
        Field('max_history', 'uint32', lambda e: e.config.max_history),
        Field('outcome_buffer_size', 'uint32', lambda e: e.config.outcome_buffer_size),
        Field('time_jump_tolerance_ns', 'int64', lambda e: e.config.time_jump_tolerance_ns),
        Field('schema_version', 'uint32', _constant(EVENT_SCHEMA_VERSION)),
    ),
}
"""Every message the project writes (and its sub-messages), field by field, in ``.msg`` order."""

CONTRACT_MESSAGE: Mapping[type, str] = {
    PredictionOutcome: OUTCOME,
    BeliefSelfAssessment: BELIEF,
    CalibratedSelfAssessment: CALIBRATED,
    LoopEvent: EVENT,
}
"""The message type each written contract becomes."""

_PRIMITIVES = {  # type -> (struct format, size = alignment)
    'uint8': ('<B', 1), 'int32': ('<i', 4), 'uint32': ('<I', 4), 'int64': ('<q', 8),
    'float64': ('<d', 8),
}


def fill(message: Any, msgtype: str, source: Any, classes: Mapping[str, type],
         skip: tuple[str, ...] = ()) -> Any:
    """Set every field of the rclpy ``message`` (of ``msgtype``) from ``source``; return it.

    Sub-messages are filled in place; a sequence of sub-messages is built from ``classes``
    (``{msgtype: rclpy class}``); a float64 sequence goes in as ``array('d')`` (rclpy's fast
    path). The fields named in ``skip`` are left as they are (the caller has set them).
    """
    for field in MESSAGES[msgtype]:
        if field.name in skip:
            continue
        value = field.value(source)
        kind = field.type
        if kind in MESSAGES:
            fill(getattr(message, field.name), kind, value, classes)
        elif kind.endswith('[]') and kind[:-2] in MESSAGES:
            item_type = kind[:-2]
            cls = classes[item_type]
            value = [fill(cls(), item_type, item, classes) for item in value]
            setattr(message, field.name, value)
        elif kind == 'float64[]':
            setattr(message, field.name, array('d', value))
        elif kind == 'string[]':
            setattr(message, field.name, list(value))
        else:
            setattr(message, field.name, value)
    return message


def build(msgtype: str, source: Any, classes: Mapping[str, Callable[..., Any]],
          float_array: Callable[[Sequence[float]], Any] = list) -> Any:
    """Return a message object of ``msgtype`` from ``source``, built by keyword from ``classes``.

    ``classes``: ``{msgtype: class}`` of the library (e.g. a rosbags typestore's ``types``);
    ``float_array`` makes a float64 array or sequence (rosbags: a numpy float64 array).
    """
    values = {}
    for field in MESSAGES[msgtype]:
        value = field.value(source)
        kind = field.type
        if kind in MESSAGES:
            value = build(kind, value, classes, float_array)
        elif kind.endswith('[]') and kind[:-2] in MESSAGES:
            value = [build(kind[:-2], item, classes, float_array) for item in value]
        elif kind.startswith('float64['):
            value = float_array(value)
        elif kind == 'string[]':
            value = list(value)
        values[field.name] = value
    return classes[msgtype](**values)


def cdr_bytes(msgtype: str, source: Any) -> bytes:
    """Return the little-endian CDR serialization of ``source`` as a ``msgtype`` message."""
    out = bytearray(CDR_LE)
    _writer(msgtype)(out, source)
    return bytes(out)


Writer = Callable[[bytearray, Any], None]
_WRITERS: dict[str, Writer] = {}


def _writer(msgtype: str) -> Writer:
    """Return the CDR writer of ``msgtype``, compiled once from its table (one closure a field)."""
    writer = _WRITERS.get(msgtype)
    if writer is None:
        steps = tuple(_field_writer(field) for field in MESSAGES[msgtype])

        def writer(out: bytearray, source: Any) -> None:
            for step in steps:
                step(out, source)

        _WRITERS[msgtype] = writer
    return writer


def _pad(out: bytearray, alignment: int) -> None:
    """Pad ``out`` so the body (after the 4-byte encapsulation header) is ``alignment``-aligned."""
    extra = -(len(out) - 4) % alignment
    if extra:
        out += bytes(extra)


_U32 = struct.Struct('<I')


def _write_string(out: bytearray, text: str) -> None:
    raw = text.encode()
    _pad(out, 4)
    out += _U32.pack(len(raw) + 1)
    out += raw
    out += b'\0'


def _field_writer(field: Field) -> Writer:  # noqa: C901 - one branch per kind of field
    value, kind = field.value, field.type
    if kind in _PRIMITIVES:
        fmt, size = _PRIMITIVES[kind]
        pack = struct.Struct(fmt).pack

        def primitive(out: bytearray, source: Any) -> None:
            _pad(out, size)
            out += pack(value(source))
        return primitive
    if kind == 'string':
        return lambda out, source: _write_string(out, value(source))
    if kind in MESSAGES:
        return lambda out, source: _writer(kind)(out, value(source))
    if kind == 'float64[3]':
        pack3 = struct.Struct('<3d').pack

        def triple(out: bytearray, source: Any) -> None:
            _pad(out, 8)
            out += pack3(*value(source))
        return triple
    item_type = kind[:-2]  # a sequence: its length, then its items

    def sequence(out: bytearray, source: Any) -> None:
        items = value(source)
        _pad(out, 4)
        out += _U32.pack(len(items))
        if item_type == 'float64':
            if items:
                _pad(out, 8)
                out += struct.pack(f'<{len(items)}d', *items)
        elif item_type == 'string':
            for text in items:
                _write_string(out, text)
        else:
            write = _writer(item_type)
            for item in items:
                write(out, item)
    return sequence


# -- fast paths (checked against the table) -------------------------------------------------------
_TIME = struct.Struct('<iI')
_OUTCOME_TAIL = struct.Struct('<10dI')
_HISTORY_COUNTS = struct.Struct('<5I')
_TWO_DOUBLES = struct.Struct('<2d')


def _pad_parts(parts: list[bytes], size: int, alignment: int) -> int:
    """Append zero padding so that ``size`` becomes a multiple of ``alignment``."""
    extra = -size % alignment
    if extra:
        parts.append(b'\0' * extra)
    return size + extra


def _doubles(parts: list[bytes], size: int, values: Sequence[float]) -> int:
    size = _pad_parts(parts, size, 4)
    parts.append(_U32.pack(len(values)))
    size += 4
    if values:
        size = _pad_parts(parts, size, 8)
        parts.append(struct.pack(f'<{len(values)}d', *values))
        size += 8 * len(values)
    return size


def _text(parts: list[bytes], size: int, text: str) -> int:
    size = _pad_parts(parts, size, 4)
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
    size = _pad_parts(
        parts, _header_parts(parts, outcome.observed_stamp_sim_ns, outcome.frame_id), 4)
    parts.append(_TIME.pack(*divmod(outcome.prediction_stamp_sim_ns, NS_PER_S)))
    _pad_parts(parts, size + 8, 8)
    parts.append(_OUTCOME_TAIL.pack(
        *outcome.position_error_m, *outcome.orientation_error_rad, outcome.position_mahalanobis,
        outcome.orientation_mahalanobis, outcome.bias_evidence_nats, outcome.bias_position_share,
        OUTCOME_MSG_SCHEMA_VERSION))
    return b''.join(parts)


def _level_parts(parts: list[bytes], size: int, levels: Sequence[NamedLevel]) -> int:
    size = _pad_parts(parts, size, 4)
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
    _pad_parts(parts, size, 4)
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
    size = _pad_parts(parts, header_end, 4)
    parts.append(body)
    size += len(body)
    history = calibrated.calibration_history
    parts.append(_HISTORY_COUNTS.pack(
        history.outcomes_considered, history.count_within_1_std, history.count_beyond_1_std,
        history.count_beyond_3_std, history.count_beyond_5_std))
    size = _pad_parts(parts, size + 20, 8)
    parts.append(_TWO_DOUBLES.pack(history.worst_position_mahalanobis,
                                   history.worst_orientation_mahalanobis))
    size = _doubles(parts, size + 16, history.position_squared_distances)
    size = _doubles(parts, size, history.orientation_squared_distances)
    size = _pad_parts(parts, size, 4)
    stamp = history.most_recent_observed_stamp_sim_ns
    parts.append(_TIME.pack(*divmod(0 if stamp is None else stamp, NS_PER_S)))
    parts.append(bytes((history.schema_version,)))
    size = _pad_parts(parts, size + 9, 4)
    parts.append(_U32.pack(HISTORY_MSG_SCHEMA_VERSION))
    parts.append(bytes((calibrated.adjusted_overall_level.value,)))
    size += 5
    size = _text(parts, size, calibrated.adjustment_policy_id)
    size = _text(parts, size, calibrated.adjustment_reason)
    _pad_parts(parts, size, 4)
    parts.append(_U32.pack(MSG_SCHEMA_VERSION))
    return b''.join(parts)


def calibrated_contract_bytes(calibrated: CalibratedSelfAssessment) -> bytes:
    """Return the serialized CalibratedSelfAssessment of a contract (no raw bytes at hand)."""
    raw = calibrated.raw_assessment
    header_end = 8 + 4 + len(raw.frame_id.encode()) + 1  # Time, the frame_id's length and bytes
    return calibrated_bytes(belief_bytes(raw), header_end, calibrated)


FAST_PATHS: Mapping[str, Callable[[Any], bytes]] = {
    OUTCOME: outcome_bytes,
    BELIEF: belief_bytes,
    CALIBRATED: calibrated_contract_bytes,
}
"""The fast encoder of each message that has one; the others go through :func:`cdr_bytes`."""


def encode(contract: object) -> bytes:
    """Return the CDR payload of a written contract (its fast path, else the table's writer)."""
    msgtype = CONTRACT_MESSAGE[type(contract)]
    fast = FAST_PATHS.get(msgtype)
    return fast(contract) if fast is not None else cdr_bytes(msgtype, contract)
