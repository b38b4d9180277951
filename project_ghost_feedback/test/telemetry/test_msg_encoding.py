# SPDX-License-Identifier: Apache-2.0
"""msg_encoding.py: one table per written message, and everything that writes one held to it.

- the table is the interface: each message's fields, in order and type, are its ``.msg`` file's;
- its CDR writer is rosbags' serializer, byte for byte (rclpy's: test/ros/test_conversions.py);
- the fast paths are the table's writer, byte for byte, over contracts of every shape;
- what is written reads back (msg_decoding) to the contract it came from.
"""

import pathlib
import re

import numpy
import pytest

from project_ghost_feedback import msg_decoding, msg_encoding
from project_ghost_feedback.msg_encoding import (
    BELIEF, CALIBRATED, cdr_bytes, EVENT, FAST_PATHS, HEADER, LEVEL, MESSAGES, NAMED_LEVEL, OUTCOME,
    TIME)
from project_ghost_feedback.telemetry.msgdefs import typestore
from support.random_contracts import events, streams

MSG_DIR = pathlib.Path(__file__).resolve().parents[3] / 'project_ghost_feedback_msgs' / 'msg'
STANDARD = {  # the two standard messages the table spells (their .msg files are not here)
    TIME: [('sec', 'int32'), ('nanosec', 'uint32')],
    HEADER: [('stamp', 'builtin_interfaces/Time'), ('frame_id', 'string')],
}
TYPE_NAMES = {'builtin_interfaces/Time': TIME, 'std_msgs/Header': HEADER}


def _msg_fields(msgtype):
    """Return ``[(name, type)]`` of a message, from its .msg file: bounds dropped, types full."""
    if msgtype in STANDARD:
        lines = STANDARD[msgtype]
    else:
        text = (MSG_DIR / (msgtype.rsplit('/', 1)[1] + '.msg')).read_text(encoding='utf-8')
        lines = []
        for line in text.splitlines():
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            kind, name = line.split(None, 1)
            if '=' not in name:  # not a constant
                lines.append((name, kind))
    fields = []
    for name, kind in lines:
        kind = re.sub(r'<=\d+', '', kind)  # string<=64 -> string, X[<=64] -> X[]
        sequence = kind.endswith('[]')
        base = kind[:-2] if sequence else kind
        base = TYPE_NAMES.get(base, base)
        if base[0].isupper():
            base = msg_encoding.PACKAGE + base
        fields.append((name, base + ('[]' if sequence else '')))
    return fields


@pytest.mark.parametrize('msgtype', sorted(MESSAGES))
def test_each_table_is_its_message_field_by_field(msgtype):
    assert [(f.name, f.type) for f in MESSAGES[msgtype]] == _msg_fields(msgtype)


def _contracts():
    for outcomes, belief, calibrated in streams(11, 120):
        yield from outcomes
        yield belief
        if calibrated is not None:
            yield calibrated
    yield from events(12, 60)


def test_the_table_writes_what_rosbags_serializes_and_it_reads_back():
    store = typestore()
    decoders = {OUTCOME: msg_decoding.outcome_from_msg, BELIEF: msg_decoding.belief_from_msg,
                CALIBRATED: msg_decoding.calibrated_from_msg, EVENT: msg_decoding.event_from_msg}
    seen = dict.fromkeys(decoders, 0)
    for contract in _contracts():
        msgtype = msg_encoding.CONTRACT_MESSAGE[type(contract)]
        payload = cdr_bytes(msgtype, contract)
        message = msg_encoding.build(msgtype, contract, store.types,
                                     lambda v: numpy.array(v, dtype=numpy.float64))
        assert bytes(store.serialize_cdr(message, msgtype, little_endian=True)) == payload
        back = decoders[msgtype](store.deserialize_cdr(payload, msgtype))
        if msgtype == EVENT:  # the detail is cut to the message's bound
            assert (back.kind, back.cause, back.detail, back.config) == (
                contract.kind, contract.cause, contract.detail[:msg_encoding.EVENT_DETAIL_MAX],
                contract.config)
        else:
            assert back == contract
        seen[msgtype] += 1
    assert min(seen.values()) >= 50, seen


def test_every_fast_path_writes_the_tables_bytes():
    """outcome_bytes, belief_bytes and calibrated_bytes are the table's writer, faster."""
    checked = dict.fromkeys(FAST_PATHS, 0)
    for contract in _contracts():
        msgtype = msg_encoding.CONTRACT_MESSAGE[type(contract)]
        expected = cdr_bytes(msgtype, contract)
        assert msg_encoding.encode(contract) == expected
        if msgtype in FAST_PATHS:
            assert FAST_PATHS[msgtype](contract) == expected
            checked[msgtype] += 1
    assert min(checked.values()) >= 50, checked
    assert set(FAST_PATHS) == {OUTCOME, BELIEF, CALIBRATED}


def test_a_field_changed_in_the_table_but_not_in_a_fast_path_is_caught(monkeypatch):
    """The check above can fail: a table field changed alone gives other bytes."""
    outcome = next(c for c in _contracts() if msg_encoding.CONTRACT_MESSAGE[type(c)] == OUTCOME)
    changed = tuple(
        f._replace(value=lambda o: 7) if f.name == 'schema_version' else f
        for f in MESSAGES[OUTCOME])
    monkeypatch.setitem(msg_encoding.MESSAGES, OUTCOME, changed)
    monkeypatch.setattr(msg_encoding, '_WRITERS', {})
    assert msg_encoding.outcome_bytes(outcome) != cdr_bytes(OUTCOME, outcome)


def test_sub_message_tables_cover_every_type_they_name():
    for fields in MESSAGES.values():
        for field in fields:
            kind = field.type[:-2] if field.type.endswith('[]') else field.type
            assert kind in MESSAGES or kind in (
                'uint8', 'int32', 'uint32', 'int64', 'float64', 'float64[3]', 'string'), field
    assert {LEVEL, NAMED_LEVEL} <= set(MESSAGES)
