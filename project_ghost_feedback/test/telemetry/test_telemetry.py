# SPDX-License-Identifier: Apache-2.0
"""Telemetry bags: adapters, rosbag2/MCAP format, round trips, determinism, clean failures.

Bags written by :mod:`project_ghost_feedback.telemetry` are checked by independent readers:
rosbags' ``Reader(dir)`` (exact message counts per topic) and mcap + mcap-ros2-support (decoding
from the schema text stored in the file). The schema text is compared with an independent
construction of rosbag2's rule from the installed .msg files, and the type hashes with the ones
rosidl generated at build time.
"""

import hashlib
import json
import math
import os
import pathlib
import subprocess
import sys
import textwrap

from ament_index_python.packages import get_package_share_directory
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
import numpy
from project_ghost_feedback.core.validation import STAMP_MAX_NS
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
)
from project_ghost_feedback.core.feedback import CalibratedSelfAssessment, CalibrationHistory
from project_ghost_feedback.core.loop import CONFIGURATION, LoopEvent, RESET
from project_ghost_feedback.telemetry import (
    BeliefSelfAssessmentToTelemetryAdapter,
    CalibratedSelfAssessmentToTelemetryAdapter,
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    decode,
    PredictionOutcomeToTelemetryAdapter,
    read_bag,
    TelemetryWriter,
    TelemetryWriterError,
    to_telemetry,
)
from project_ghost_feedback.telemetry.codecs import DECODERS
import pytest
from rosbags.interfaces import Nodetype
from rosbags.rosbag2 import Reader
from rosbags.typesys import get_types_from_msg, get_typestore, Stores
from ruamel.yaml import YAML
from support.telemetry_samples import (
    sample_belief,
    sample_outcome,
    write_sample_bag,
    KNOWN,
    sample_contracts,
    UNKNOWN,
)

PKG = 'project_ghost_feedback_msgs'
TYPES = {
    CHANNEL_PREDICTION_OUTCOME: f'{PKG}/msg/PredictionOutcome',
    CHANNEL_RAW_SELF_ASSESSMENT: f'{PKG}/msg/BeliefSelfAssessment',
    CHANNEL_CALIBRATED_SELF_ASSESSMENT: f'{PKG}/msg/CalibratedSelfAssessment',
    '/feedback_events': f'{PKG}/msg/FeedbackEvent',
}
CLI = [sys.executable, '-m', 'project_ghost_feedback.cli']
SUBPROCESS_TIMEOUT_S = 120


def _expected_counts(contracts):
    counts = {topic: 0 for topic in TYPES}
    for contract in contracts:
        counts[to_telemetry(contract).channel] += 1
    return counts


@pytest.fixture
def bag(tmp_path):
    """Return (bag directory, contracts written into it)."""
    contracts = sample_contracts()
    return write_sample_bag(tmp_path / 'bag', contracts), contracts


# -- adapters -------------------------------------------------------------------------------------

def test_adr_channel_name_and_log_times():
    """ADR-0026 s.6: channel names; log_time = the contract's sim stamp for every adapter."""
    assert CHANNEL_CALIBRATED_SELF_ASSESSMENT == '/self_assessment/calibrated'
    assert CHANNEL_RAW_SELF_ASSESSMENT == '/self_assessment/raw'
    assert CHANNEL_PREDICTION_OUTCOME == '/prediction_outcome'
    outcome, raw, calibrated = sample_contracts()[3], sample_contracts()[5], sample_contracts()[6]
    record = CalibratedSelfAssessmentToTelemetryAdapter()(calibrated)
    assert record.channel == CHANNEL_CALIBRATED_SELF_ASSESSMENT
    assert record.log_time == calibrated.raw_assessment.belief_stamp_sim_ns == 3_000
    record = BeliefSelfAssessmentToTelemetryAdapter()(raw)
    assert (record.channel, record.log_time) == (CHANNEL_RAW_SELF_ASSESSMENT, 3_000)
    record = PredictionOutcomeToTelemetryAdapter()(outcome)
    assert (record.channel, record.log_time) == (CHANNEL_PREDICTION_OUTCOME, 2_000)
    assert isinstance(record.payload, bytes) and record.payload[:4] == b'\x00\x01\x00\x00'


def test_adapter_rejects_the_wrong_contract():
    """An adapter given another contract type raises TypeError naming both."""
    with pytest.raises(TypeError, match='PredictionOutcome'):
        CalibratedSelfAssessmentToTelemetryAdapter()(sample_outcome(10))
    with pytest.raises(TypeError, match='no telemetry adapter'):
        to_telemetry('not a contract')


def test_payload_decodes_back_for_every_channel_and_matches_mcap_ros2():
    """decode(encode(c)) == c for every sample (+inf, empty lists, None stamp, int64 max)."""
    for contract in sample_contracts():
        record = to_telemetry(contract)
        assert decode(TYPES[record.channel], record.payload) == contract
    assert sorted(DECODERS) == sorted(TYPES.values())


def test_long_names_take_the_exact_size_path():
    """A message larger than the encoder's scratch buffer still encodes and round-trips."""
    levels = tuple(NamedLevel(f'axis_{i:03d}_' + 'x' * 50, KNOWN) for i in range(40))
    raw = BeliefSelfAssessment(7, KNOWN, levels, levels[:5])
    record = to_telemetry(raw)
    assert len(record.payload) > 1024
    assert decode(TYPES[CHANNEL_RAW_SELF_ASSESSMENT], record.payload) == raw


def _reference_store():
    """Return a fresh rosbags typestore built from the installed .msg files (not telemetry's)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    for path in sorted(_msg_dir().glob('*.msg')):
        text = path.read_text(encoding='utf-8')
        store.register(get_types_from_msg(text, f'{PKG}/msg/{path.stem}'))
    return store


def _reference_payload(store, contract):
    """Return rosbags' ``Typestore.serialize_cdr`` of ``contract``, converted independently."""
    types = store.types

    def level(value):
        return types[f'{PKG}/msg/SelfAssessmentLevel'](value.value)

    def time(ns):
        return types['builtin_interfaces/msg/Time'](ns // 10**9, ns % 10**9)

    def header(ns, frame_id):
        return types['std_msgs/msg/Header'](time(ns), frame_id)

    def levels(items):
        return [types[f'{PKG}/msg/NamedLevel'](i.name, level(i.level)) for i in items]

    def belief(raw):
        return types[f'{PKG}/msg/BeliefSelfAssessment'](
            header(raw.belief_stamp_sim_ns, raw.frame_id), level(raw.overall_level),
            levels(raw.axis_levels), levels(raw.block_levels), 2)

    if isinstance(contract, PredictionOutcome):
        message = types[f'{PKG}/msg/PredictionOutcome'](
            header(contract.observed_stamp_sim_ns, contract.frame_id),
            time(contract.prediction_stamp_sim_ns),
            numpy.array(contract.position_error_m), numpy.array(contract.orientation_error_rad),
            contract.position_mahalanobis, contract.orientation_mahalanobis,
            contract.bias_evidence_nats, contract.bias_position_share, 3)
    elif isinstance(contract, BeliefSelfAssessment):
        message = belief(contract)
    elif isinstance(contract, LoopEvent):
        config = contract.config
        # The policy's parameters, then the loop's own settings as 'loop.<field>' entries.
        entries = list(config.parameters) + [
            ('loop.unverified_after_ns', config.unverified_after_ns),
            ('loop.unverified_max_level', config.unverified_max_level),
            ('loop.vec3_components', list(config.vec3_components))]
        message = types[f'{PKG}/msg/FeedbackEvent'](
            header(contract.stamp_ns, ''), {RESET: 1, CONFIGURATION: 2}[contract.kind],
            contract.cause, contract.detail, config.policy,
            [name for name, _ in entries],
            [json.dumps(value) for _, value in entries], config.max_history,
            config.outcome_buffer_size, config.time_jump_tolerance_ns, 1)
    else:
        history = contract.calibration_history
        stamp = history.most_recent_observed_stamp_sim_ns
        raw = belief(contract.raw_assessment)
        message = types[f'{PKG}/msg/CalibratedSelfAssessment'](
            raw.header, raw, types[f'{PKG}/msg/CalibrationHistory'](
                history.outcomes_considered, history.count_within_1_std,
                history.count_beyond_1_std, history.count_beyond_3_std,
                history.count_beyond_5_std, history.worst_position_mahalanobis,
                history.worst_orientation_mahalanobis,
                numpy.array(history.position_squared_distances, dtype=numpy.float64),
                numpy.array(history.orientation_squared_distances, dtype=numpy.float64),
                time(stamp or 0), history.schema_version, 3),
            level(contract.adjusted_overall_level), contract.adjustment_policy_id,
            contract.adjustment_reason, 2)
    return bytes(store.serialize_cdr(message, TYPES[to_telemetry(contract).channel],
                                     little_endian=True))


def _varied_contracts():
    """Return sample contracts plus extreme outcomes and beliefs recorded in several orders."""
    contracts = sample_contracts()
    outcomes = [
        PredictionOutcome(0, 0, (0.0, -0.0, 5e-324), (1e300, -1e-300, 2.5), 0.0, math.inf),
        PredictionOutcome(0, STAMP_MAX_NS, (-1.5, 2.0, 3.25), (0.0, 0.0, 0.0), 1e308, 0.5),
        PredictionOutcome(7, 9, (0.1, 0.2, 0.3), (0.4, 0.5, 0.6), math.inf, math.inf, 1),
    ]
    raw_a, raw_b = sample_belief(5_000), sample_belief(6_000, UNKNOWN, axes=False)
    history = CalibrationHistory(3, 1, 1, 1, 0, 4.5, math.inf, 4_999)
    calibrated_a = CalibratedSelfAssessment(raw_a, history, UNKNOWN, 'some_policy', 'reason_a')
    calibrated_b = CalibratedSelfAssessment(
        raw_b, CalibrationHistory.empty(), UNKNOWN, 'p', 'r')
    # raw then its calibrated (the memo case), a calibrated whose raw was not the last one,
    # a calibrated before its raw, and the same calibrated twice.
    return contracts + outcomes + [
        raw_a, raw_b, calibrated_a, calibrated_b, raw_a, calibrated_b, calibrated_a, calibrated_a]


def test_payloads_equal_the_rosbags_reference_serializer():
    """Every payload equals rosbags' Typestore.serialize_cdr of an independently built message.

    Covers the calibrated encoding that reuses the raw assessment's serialized body, in every
    recording order.
    """
    store = _reference_store()
    for contract in _varied_contracts():
        assert to_telemetry(contract).payload == _reference_payload(store, contract), contract


def test_decoder_refuses_bad_cdr_with_rosbags_errors():
    """A decoder is rosbags' public deserialize_cdr: bad bytes raise rosbags' own SerdeError."""
    from rosbags.serde import SerdeError

    decoder = DECODERS[TYPES[CHANNEL_RAW_SELF_ASSESSMENT]]
    raw = sample_belief(42)
    payload = to_telemetry(raw).payload
    assert decoder(payload) == raw
    with pytest.raises(SerdeError, match='size mismatch'):
        decoder(payload + b'\x00' * 4)
    with pytest.raises(SerdeError, match='encapsulation'):
        decoder(b'\x02' + payload[1:])
    big_endian = _reference_store().serialize_cdr(
        _reference_store().deserialize_cdr(payload, TYPES[CHANNEL_RAW_SELF_ASSESSMENT]),
        TYPES[CHANNEL_RAW_SELF_ASSESSMENT], little_endian=False)
    assert decoder(bytes(big_endian)) == raw


# -- round trip through a bag ---------------------------------------------------------------------

def test_round_trip_every_channel(bag):
    """Write, read, decode gives the originals, in write order, with each record's log time."""
    path, contracts = bag
    read = list(read_bag(path))
    assert [item.contract for item in read] == contracts
    assert [item.topic for item in read] == [to_telemetry(c).channel for c in contracts]
    assert [item.log_time for item in read] == [to_telemetry(c).log_time for c in contracts]
    assert math.isinf(read[3].contract.position_mahalanobis)
    assert math.isinf(read[6].contract.calibration_history.worst_position_mahalanobis)


def test_file_order_scan_equals_the_mcap_stream_reader(bag):
    """Recorded order is the order of the records in the file (mcap's stream reader).

    Int64 max included; the decoded contracts are the ones written.
    """
    from project_ghost_feedback.telemetry import replay

    path, contracts = bag
    scanned = list(replay.iter_bag(path))
    from mcap.records import Channel as McapChannel, Message as McapMessage
    from mcap.stream_reader import StreamReader

    topics = {}
    expected = []
    with open(path / 'bag.mcap', 'rb') as stream:  # every record, as it lies in the file
        for record in StreamReader(stream).records:
            if isinstance(record, McapChannel):
                topics[record.id] = record.topic
            elif isinstance(record, McapMessage):
                expected.append((topics[record.channel_id], record.log_time, record.data))
    assert [(m.topic, m.log_time, m.payload) for m in scanned] == expected
    assert scanned[-1].log_time == STAMP_MAX_NS
    assert [item.contract for item in read_bag(path)] == contracts


def test_replay_with_padded_raw_payloads_compares_by_value(tmp_path):
    """Raw payloads with trailing bytes (allowed by CDR readers) are not reused byte for byte.

    Replay then encodes the recomputed assessment itself; the bag still verifies, and a
    tampered calibrated payload is still found.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from project_ghost_feedback.core.feedback import assess_with_feedback, make_policy
    from project_ghost_feedback.core.window import OutcomeWindow
    from project_ghost_feedback.telemetry import replay_bag
    from project_ghost_feedback.telemetry.msgdefs import full_definition, type_hash

    policy = make_policy('mahalanobis_downgrade')
    window = OutcomeWindow(64)
    records = []
    for i in range(12):
        stamp = (i + 1) * 1_000
        outcome = sample_outcome(stamp - 1, position=0.5 + 2 * i)
        window.add(outcome)
        raw = sample_belief(stamp)
        calibrated = assess_with_feedback(raw, window.causal_window(stamp, 32), policy, 32)
        records += [to_telemetry(outcome), to_telemetry(raw), to_telemetry(calibrated)]
    for tamper in (False, True):
        path = tmp_path / f'padded_{tamper}'
        with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
            connections = {
                topic: writer.add_connection(
                    topic, msgtype, msgdef=full_definition(msgtype), rihs01=type_hash(msgtype))
                for topic, msgtype in TYPES.items()}
            for index, (topic, log_time, payload) in enumerate(records):
                if topic == CHANNEL_RAW_SELF_ASSESSMENT:
                    payload += b'\x00' * (1 + index % 3)
                if tamper and index == 3 * 7 + 2:  # the 8th calibrated assessment
                    original = decode(TYPES[topic], payload)
                    payload = to_telemetry(CalibratedSelfAssessment(
                        original.raw_assessment, original.calibration_history, UNKNOWN,
                        'mahalanobis_downgrade', 'tampered')).payload
                writer.write(connections[topic], log_time, payload)
        report = replay_bag(path)
        assert report.compared == 12
        assert report.identical is (not tamper)
        if tamper:
            assert (report.first_difference.index, report.differences) == (7, 1)


def test_stamp_order_reads_in_log_time_order(bag):
    """order='stamp' yields the same messages sorted by log time (ties in write order)."""
    path, contracts = bag
    by_stamp = list(read_bag(path, order='stamp'))
    expected = sorted(
        enumerate(contracts), key=lambda item: (to_telemetry(item[1]).log_time, item[0]))
    assert [item.contract for item in by_stamp] == [c for _, c in expected]


def test_rosbags_reader_counts_every_message(bag):
    """The rosbags Reader(dir) sees every topic with its exact count (metadata and messages)."""
    path, contracts = bag
    expected = _expected_counts(contracts)
    with Reader(path) as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == expected
        assert {c.topic: c.msgtype for c in reader.connections} == TYPES
        read = {topic: 0 for topic in TYPES}
        for connection, _, _ in reader.messages():
            read[connection.topic] += 1
        assert read == expected
        assert reader.message_count == len(contracts)


def test_mcap_ros2_support_decodes_the_bag(bag):
    """The mcap + mcap-ros2-support readers decode every message from the stored schema."""
    path, contracts = bag
    with open(path / 'bag.mcap', 'rb') as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        header = reader.get_header()
        assert header.profile == 'ros2'
        summary = reader.get_summary()
        assert {s.name: s.encoding for s in summary.schemas.values()} == {
            t: 'ros2msg' for t in TYPES.values()}
        assert {c.message_encoding for c in summary.channels.values()} == {'cdr'}
        assert [m.name for m in reader.iter_metadata()] == ['rosbag2']
        decoded = [
            (channel.topic, message.log_time, value)
            for _, channel, message, value in reader.iter_decoded_messages(log_time_order=False)
        ]
    assert len(decoded) == len(contracts)
    for (topic, log_time, value), contract in zip(decoded, contracts):
        assert topic == to_telemetry(contract).channel
        assert log_time == to_telemetry(contract).log_time
        if isinstance(contract, PredictionOutcome):
            stamp = value.header.stamp
            assert stamp.sec * 10**9 + stamp.nanosec == contract.observed_stamp_sim_ns
            assert value.header.frame_id == contract.frame_id
            assert list(value.position_error_m) == list(contract.position_error_m)
            assert value.position_mahalanobis == contract.position_mahalanobis
            assert value.orientation_mahalanobis == contract.orientation_mahalanobis
        elif isinstance(contract, BeliefSelfAssessment):
            _assert_belief(value, contract)
        elif isinstance(contract, LoopEvent):
            assert (value.kind, value.cause, value.detail) == (
                {RESET: 1, CONFIGURATION: 2}[contract.kind], contract.cause, contract.detail)
            assert (value.policy, value.max_history) == (
                contract.config.policy, contract.config.max_history)
        else:
            _assert_belief(value.raw_assessment, contract.raw_assessment)
            history = contract.calibration_history
            stamp = history.most_recent_observed_stamp_sim_ns
            assert value.calibration_history.outcomes_considered == history.outcomes_considered
            assert (value.calibration_history.worst_position_mahalanobis
                    == history.worst_position_mahalanobis)
            decoded_stamp = value.calibration_history.most_recent_observed_stamp
            assert decoded_stamp.sec * 10**9 + decoded_stamp.nanosec == (stamp or 0)
            assert value.calibration_history.history_schema_version == history.schema_version
            assert list(value.calibration_history.position_squared_distances) == list(
                history.position_squared_distances)
            assert value.adjusted_overall_level.value == contract.adjusted_overall_level.value
            assert value.header == value.raw_assessment.header
            assert value.adjustment_reason == contract.adjustment_reason


def _assert_belief(value, contract):
    stamp = value.header.stamp
    assert stamp.sec * 10**9 + stamp.nanosec == contract.belief_stamp_sim_ns
    assert value.header.frame_id == contract.frame_id
    assert value.overall_level.value == contract.overall_level.value
    assert [(n.name, n.level.value) for n in value.axis_levels] == [
        (n.name, n.level.value) for n in contract.axis_levels]
    assert [(n.name, n.level.value) for n in value.block_levels] == [
        (n.name, n.level.value) for n in contract.block_levels]


# -- format details -------------------------------------------------------------------------------

def _msg_dir():
    return pathlib.Path(get_package_share_directory(PKG)) / 'msg'


def _independent_full_text(msgtype):
    """Return rosbag2's ros2msg text, built from a fresh rosbags typestore's field graph.

    Top-level .msg text verbatim; each dependency once, depth-first, sorted by ``pkg/Type``,
    after a newline, a line of 80 ``=`` and a line ``MSG: pkg/Type``.
    """
    texts = {
        f'{PKG}/msg/{p.stem}': p.read_text(encoding='utf-8') for p in _msg_dir().glob('*.msg')}
    store = get_typestore(Stores.ROS2_JAZZY)
    for name, text in texts.items():
        store.register(get_types_from_msg(text, name))

    def short(name):
        package, _, type_name = name.split('/')
        return f'{package}/{type_name}'

    def text_of(name):
        if name not in texts:  # another package's type: its installed .msg file
            package, _, type_name = name.split('/')
            share = pathlib.Path(get_package_share_directory(package))
            texts[name] = (share / 'msg' / f'{type_name}.msg').read_text(encoding='utf-8')
        return texts[name]

    def nested(name):
        found = set()
        for _, (kind, detail) in store.fielddefs[name][1]:
            if kind == Nodetype.NAME:
                found.add(detail)
            elif kind in (Nodetype.ARRAY, Nodetype.SEQUENCE) and detail[0][0] == Nodetype.NAME:
                found.add(detail[0][1])
        return sorted(found, key=short)

    seen = set()

    def build(name):
        text = text_of(name)
        for dependency in nested(name):
            if dependency not in seen:
                seen.add(dependency)
                text += '\n' + '=' * 80 + '\nMSG: ' + short(dependency) + '\n' + build(dependency)
        return text

    return build(msgtype)


def test_schema_text_is_rosbag2_construction(bag):
    """Each schema equals rosbag2's construction (comments kept); nested order checked by name."""
    path, _ = bag
    with open(path / 'bag.mcap', 'rb') as stream:
        schemas = {s.name: s.data.decode() for s in make_reader(stream).get_summary().schemas
                   .values()}
    for msgtype, text in schemas.items():
        assert text == _independent_full_text(msgtype), msgtype
    calibrated = schemas[f'{PKG}/msg/CalibratedSelfAssessment']
    assert calibrated.startswith((_msg_dir() / 'CalibratedSelfAssessment.msg').read_text())
    assert [line for line in calibrated.splitlines() if line.startswith('MSG: ')] == [
        f'MSG: {PKG}/BeliefSelfAssessment', f'MSG: {PKG}/NamedLevel',
        f'MSG: {PKG}/SelfAssessmentLevel', 'MSG: std_msgs/Header', 'MSG: builtin_interfaces/Time',
        f'MSG: {PKG}/CalibrationHistory']
    assert '\n\n' + '=' * 80 + '\nMSG: ' in calibrated
    assert schemas[f'{PKG}/msg/PredictionOutcome'].startswith(
        (_msg_dir() / 'PredictionOutcome.msg').read_text())


def test_type_hashes_equal_rosidl(bag):
    """type_description_hash in metadata.yaml equals the RIHS01 rosidl generated at build time."""
    path, _ = bag
    metadata = YAML(typ='safe').load((path / 'metadata.yaml').read_text())
    for item in metadata['rosbag2_bagfile_information']['topics_with_message_count']:
        topic = item['topic_metadata']
        generated = json.loads((_msg_dir() / (topic['type'].split('/')[-1] + '.json')).read_text())
        expected = next(h['hash_string'] for h in generated['type_hashes']
                        if h['type_name'] == topic['type'])
        assert topic['type_description_hash'] == expected


V9_KEYS = {
    'version', 'storage_identifier', 'duration', 'starting_time', 'message_count',
    'topics_with_message_count', 'compression_format', 'compression_mode', 'relative_file_paths',
    'files', 'custom_data', 'ros_distro',
}


def test_metadata_yaml_version_9_with_every_key(bag):
    """metadata.yaml v9: every key rosbag2 requires; QoS a YAML list equal to the channel's."""
    path, contracts = bag
    info = YAML(typ='safe').load((path / 'metadata.yaml').read_text())
    info = info['rosbag2_bagfile_information']
    assert V9_KEYS <= set(info)
    assert info['version'] == 9
    assert info['storage_identifier'] == 'mcap'
    assert info['relative_file_paths'] == ['bag.mcap']
    assert info['message_count'] == len(contracts)
    assert info['starting_time']['nanoseconds_since_epoch'] == 500
    assert info['duration']['nanoseconds'] == STAMP_MAX_NS - 500
    file_info = info['files'][0]
    assert set(file_info) == {'path', 'starting_time', 'duration', 'message_count'}
    assert file_info['message_count'] == len(contracts)
    with open(path / 'bag.mcap', 'rb') as stream:
        channels = {c.topic: c for c in make_reader(stream).get_summary().channels.values()}
    for item in info['topics_with_message_count']:
        topic = item['topic_metadata']
        assert set(topic) == {
            'name', 'type', 'serialization_format', 'offered_qos_profiles',
            'type_description_hash'}
        assert topic['serialization_format'] == 'cdr'
        assert isinstance(topic['offered_qos_profiles'], list)
        in_channel = YAML(typ='safe').load(
            channels[topic['name']].metadata['offered_qos_profiles'])
        assert in_channel == topic['offered_qos_profiles']
        assert topic['offered_qos_profiles'][0]['reliability'] == 'reliable'
        assert item['message_count'] == _expected_counts(contracts)[topic['name']]


TEST_ROOT = pathlib.Path(__file__).resolve().parents[1]
_WRITER_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[2])
    from support.telemetry_samples import write_sample_bag, sample_contracts
    write_sample_bag(sys.argv[1], sample_contracts() * 50)
""")


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_two_processes_write_byte_identical_bags(tmp_path):
    """Same input, two processes (different hash seeds): identical .mcap and metadata.yaml."""
    digests = []
    for seed in ('1', '2'):
        path = tmp_path / seed / 'run'
        path.parent.mkdir()
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run(
            [sys.executable, '-c', _WRITER_SCRIPT, str(path), str(TEST_ROOT)],
            check=True, env=env, timeout=SUBPROCESS_TIMEOUT_S)
        digests.append((_sha256(path / 'run.mcap'), _sha256(path / 'metadata.yaml')))
    assert digests[0] == digests[1]


def test_usable_without_rclpy_and_without_the_ament_index(tmp_path):
    """The telemetry package writes, reads and replays with rclpy and ament_index unimportable.

    The package's .msg files then come from the source tree and the dependencies' definitions
    (std_msgs/Header, builtin_interfaces/Time) from rosbags' Jazzy store, without their comments:
    the payloads and type hashes equal those of a bag written with the installed definitions.
    """
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[2])
        # imports ament_index_python:
        from support.telemetry_samples import write_sample_bag, sample_contracts

        from support.no_ros import block_imports, loaded, ROS_PACKAGES

        block_imports(ROS_PACKAGES)
        from project_ghost_feedback.telemetry import read_bag, replay_bag
        from project_ghost_feedback.telemetry.msgdefs import msg_dir
        path = write_sample_bag(sys.argv[1], sample_contracts())
        assert [c.contract for c in read_bag(path)] == sample_contracts()
        replay_bag(path)
        assert not loaded(ROS_PACKAGES)
        print(msg_dir())
    """)
    path = tmp_path / 'a' / 'bag'
    path.parent.mkdir()
    result = subprocess.run(
        [sys.executable, '-c', script, str(path), str(TEST_ROOT)],
        capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert pathlib.Path(result.stdout.strip()).parts[-2:] == (PKG, 'msg')
    assert 'install' not in pathlib.Path(result.stdout.strip()).parts
    reference = write_sample_bag(tmp_path / 'b' / 'bag', sample_contracts())
    with Reader(path) as without, Reader(reference) as installed:
        assert [(c.topic, c.digest) for c in without.connections] == [
            (c.topic, c.digest) for c in installed.connections]
        assert [(c.topic, t, raw) for c, t, raw in without.messages()] == [
            (c.topic, t, raw) for c, t, raw in installed.messages()]


def test_writer_refuses_an_existing_path_and_unknown_channels(tmp_path):
    """rosbag2 never overwrites: an existing path is refused; a foreign channel is a ValueError."""
    (tmp_path / 'exists').mkdir()
    with pytest.raises(TelemetryWriterError, match='exists'):
        TelemetryWriter(tmp_path / 'exists')
    with TelemetryWriter(tmp_path / 'new') as writer:
        with pytest.raises(ValueError, match='not in this bag'):
            writer.write(('/elsewhere', 0, b'\x00\x01\x00\x00'))
    assert writer.closed


def test_cli_info_lists_topics_counts_and_time_range(bag):
    """ghost-feedback info: every topic with its type and count, and the time range."""
    path, contracts = bag
    result = subprocess.run(CLI + ['info', str(path)], capture_output=True, text=True,
                            timeout=SUBPROCESS_TIMEOUT_S, check=True)
    counts = _expected_counts(contracts)
    for topic, msgtype in TYPES.items():
        line = next(line for line in result.stdout.splitlines() if line.strip().startswith(topic))
        assert msgtype in line and line.split()[-1] == str(counts[topic])
    assert f'messages:    {len(contracts)}' in result.stdout
    assert '500 ns' in result.stdout and str(STAMP_MAX_NS) in result.stdout
    result = subprocess.run(CLI + ['info', str(path), '--json'], capture_output=True, text=True,
                            timeout=SUBPROCESS_TIMEOUT_S, check=True)
    info = json.loads(result.stdout)
    assert {t['name']: t['message_count'] for t in info['topics']} == counts
    assert (info['start_time_ns'], info['end_time_ns']) == (500, STAMP_MAX_NS)


def test_cli_help_and_demo_and_console_script():
    """--help of every subcommand works; demo without its module is a clean exit 2."""
    for args in ([], ['info'], ['replay'], ['echo']):
        result = subprocess.run(CLI + args + ['--help'], capture_output=True, text=True,
                                timeout=SUBPROCESS_TIMEOUT_S)
        assert result.returncode == 0, result.stderr
        assert 'usage: ghost-feedback' in result.stdout
    result = subprocess.run(CLI + ['demo', '--anything'], capture_output=True, text=True,
                            timeout=SUBPROCESS_TIMEOUT_S)
    try:
        import project_ghost_feedback.demo  # noqa: F401
    except ModuleNotFoundError:
        assert result.returncode == 2
        assert 'project_ghost_feedback.demo' in result.stderr
        assert 'Traceback' not in result.stderr
    import shutil
    script = shutil.which('ghost-feedback')
    if script is None:
        pytest.skip('the ghost-feedback console script is not on PATH (run scripts/setup.sh)')
    result = subprocess.run([script, '--help'], capture_output=True, text=True,
                            timeout=SUBPROCESS_TIMEOUT_S)
    assert result.returncode == 0 and 'replay' in result.stdout


def test_decoders_are_registered_eagerly_in_a_fresh_interpreter():
    """``replay.DECODERS`` lists every type right after import (ADR-0026 section 6)."""
    result = subprocess.run(
        [sys.executable, '-c', 'from project_ghost_feedback.telemetry.codecs import DECODERS; '
         'print(" ".join(sorted(DECODERS)))'],
        capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == sorted(TYPES.values())


def test_not_recorded_is_not_a_loss_while_a_write_is_under_way(tmp_path, monkeypatch):
    """Report no loss while a write is under way.

    /diagnostics read ``not_recorded`` during a write: the records offered but not yet counted
    by the writer showed as ``write_error`` although the bag lost nothing.
    """
    import threading

    from project_ghost_feedback.core.loop import LoopConfig
    from project_ghost_feedback.telemetry import recorder as recorder_module
    from project_ghost_feedback.telemetry.background import BackgroundRecorder
    from project_ghost_feedback.telemetry.channels import recorded_topic

    entered, release = threading.Event(), threading.Event()

    class SlowDisk(recorder_module.TelemetryWriter):
        def write(self, record):
            entered.set()
            release.wait(60)
            super().write(record)

    monkeypatch.setattr(recorder_module, 'TelemetryWriter', SlowDisk)
    channel = recorded_topic('/marker:std_msgs/msg/String')
    recorder = recorder_module.TelemetryRecorder(str(tmp_path / 'bag'), LoopConfig.make(),
                                                 extra_channels=(channel,))
    background = BackgroundRecorder(recorder, queue_size=10, on_error=print)
    seen = {}
    try:
        background.record_serialized('/marker', 1, b'\x00\x01\x00\x00\x01\x00\x00\x00\x00')
        assert entered.wait(60)
        reader = threading.Thread(target=lambda: seen.update(
            not_recorded=background.not_recorded, losses=background.losses))
        reader.start()
        reader.join(0.5)   # before the fix it read here, mid-write
        release.set()
        reader.join(60)
    finally:
        release.set()
        background.close()
    assert seen == {'not_recorded': 0, 'losses': {}}
    assert background.recorded == 1 and background.not_recorded == 0


def test_bytes_recorded_as_received_are_checked_as_the_inputs_are(tmp_path):
    """record_topics and /diagnostics bytes: recorded only if rosbags decodes them as rclpy does.

    They were recorded unchecked: a string without its terminator, with an embedded null, in
    invalid UTF-8 or longer than the payload went into the node's bag, where rosbags (and so
    info, replay, evaluate) could not decode it or read another string than rclpy did.
    """
    from mcap_ros2.reader import read_ros2_messages

    from project_ghost_feedback.core.loop import LoopConfig
    from project_ghost_feedback.telemetry.background import BackgroundRecorder
    from project_ghost_feedback.telemetry.channels import recorded_topic
    from project_ghost_feedback.telemetry.recorder import TelemetryRecorder
    from support.telemetry_samples import recorded_strings, string_cdr as _string_cdr

    channel = recorded_topic('/marker:std_msgs/msg/String')
    bag = tmp_path / 'bag'
    recorder = TelemetryRecorder(str(bag), LoopConfig.make(), extra_channels=(channel,))
    background = BackgroundRecorder(recorder, queue_size=20, on_error=print)
    payloads = {
        'good': _string_cdr(4, b'map\x00'),
        'unterminated': _string_cdr(3, b'map'),
        'embedded_null': _string_cdr(8, b'ma\x00mapm\x00'),
        'invalid_utf8': _string_cdr(3, b'\xff\xfe\x00'),
        'length_past_payload': _string_cdr(100, b'map\x00'),
        'not_cdr': b'\x07\x07\x00\x00' + _string_cdr(4, b'map\x00')[4:],
        'too_large': _string_cdr(2_000_001, b'x' * 2_000_000 + b'\x00'),
        'good_too': _string_cdr(5, b'odom\x00'),
    }
    try:
        for log_time, payload in enumerate(payloads.values(), start=1):
            background.record_serialized('/marker', log_time, payload)
    finally:
        background.close()
    assert background.losses == {'malformed': 4, 'string_with_null': 1, 'too_large': 1}
    assert background.not_recorded == 6 and background.recorded == 2
    # An independent reader: rosbags decodes every message recorded, exact count.
    assert recorded_strings(bag, '/marker') == ['map', 'odom']
    mcap_file = next(bag.glob('*.mcap'))
    assert [m.ros_msg.data for m in read_ros2_messages(str(mcap_file), topics=['/marker'])] == [
        'map', 'odom']


def test_a_recorded_topic_type_that_cannot_be_checked_is_refused_at_start(tmp_path):
    """A record_topics type without a definition cannot be checked: refused, no bag made."""
    from project_ghost_feedback.core.loop import LoopConfig
    from project_ghost_feedback.telemetry.channels import recorded_topic
    from project_ghost_feedback.telemetry.recorder import TelemetryRecorder

    channel = recorded_topic('/x:no_such_pkg/msg/Nope')
    with pytest.raises(ValueError, match='no_such_pkg/msg/Nope'):
        TelemetryRecorder(str(tmp_path / 'bag'), LoopConfig.make(), extra_channels=(channel,))
    assert not (tmp_path / 'bag').exists()
