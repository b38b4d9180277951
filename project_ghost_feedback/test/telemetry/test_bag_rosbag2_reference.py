# SPDX-License-Identifier: Apache-2.0
"""The node's bags against a bag the real rosbag2 recorded (no rosbag2 build needed).

``data/rosbag2_0.26.5_reference/bag_with_topics_and_service_events`` is a test resource of
ros2/rosbag2 0.26.5 (Jazzy), unmodified (Apache-2.0; third_party/UPSTREAM.md has its source and
sha256): recorded by ``ros2 bag record`` with rosbag2's MCAP storage. The node's telemetry writer
must write the same records and fields: MCAP header profile, schema and channel encodings, the
channel metadata keys (``offered_qos_profiles``, ``topic_type_hash``), the ``rosbag2`` metadata
record, message sequence and publish time; metadata.yaml's keys at every level. The project's
reader reads the reference bag. test_rosbag2.py makes the same comparison live against ``ros2 bag
record`` where rosbag2 is built.
"""

import pathlib
import re

from mcap.reader import make_reader
import pytest
import yaml

from project_ghost_feedback.telemetry import bag_info, TelemetryWriter
from project_ghost_feedback.telemetry.adapters import to_telemetry
from support.contracts import build_outcome, build_raw

REFERENCE = (pathlib.Path(__file__).resolve().parents[1] / 'data' / 'rosbag2_0.26.5_reference'
             / 'bag_with_topics_and_service_events')
RIHS01 = re.compile(r'^RIHS01_[0-9a-f]{64}$')


def mcap_of(bag):
    """Return (header, schemas, channels, metadata records, messages) of a one-file bag."""
    (path,) = sorted(pathlib.Path(bag).glob('*.mcap'))
    with open(path, 'rb') as stream:
        reader = make_reader(stream)
        header = reader.get_header()
        summary = reader.get_summary()
        records = [(m.name, dict(m.metadata)) for m in reader.iter_metadata()]
        messages = [message for _, _, message in reader.iter_messages()]
    return (header, list(summary.schemas.values()), list(summary.channels.values()), records,
            messages)


def metadata_of(bag):
    """Return metadata.yaml's ``rosbag2_bagfile_information``."""
    text = (pathlib.Path(bag) / 'metadata.yaml').read_text(encoding='utf-8')
    return yaml.safe_load(text)['rosbag2_bagfile_information']


@pytest.fixture(scope='module')
def node_bag(tmp_path_factory):
    """Return a bag of the node's writer with outcomes and raw assessments."""
    bag = tmp_path_factory.mktemp('reference') / 'node'
    with TelemetryWriter(bag, custom_data={'ghost_feedback.recorder': 'test'}) as writer:
        for i in range(3):
            writer.write(to_telemetry(build_outcome((i + 1) * 10**9)))
            writer.write(to_telemetry(build_raw((i + 1) * 10**9)))
    return bag


def test_mcap_records_have_the_fields_rosbag2_writes(node_bag):
    ours, theirs = mcap_of(node_bag), mcap_of(REFERENCE)
    assert ours[0].profile == theirs[0].profile == 'ros2'
    assert {s.encoding for s in ours[1]} == {s.encoding for s in theirs[1]} == {'ros2msg'}
    for channels in (ours[2], theirs[2]):
        for channel in channels:
            assert channel.message_encoding == 'cdr', channel.topic
            assert sorted(channel.metadata) == ['offered_qos_profiles', 'topic_type_hash']
            assert RIHS01.match(channel.metadata['topic_type_hash']), channel.metadata
            assert isinstance(yaml.safe_load(channel.metadata['offered_qos_profiles']), list)
    for records in (ours[3], theirs[3]):
        assert records and {name for name, _ in records} == {'rosbag2'}
        assert all(sorted(data) == ['serialized_metadata'] for _, data in records)
    for messages in (ours[4], theirs[4]):
        assert messages and all(m.sequence == 0 and m.publish_time == m.log_time
                                for m in messages)


def test_channel_type_hash_equals_metadata_yaml(node_bag):
    """As in rosbag2's bags: the channel's topic_type_hash is metadata.yaml's hash."""
    for bag in (node_bag, REFERENCE):
        _, schemas, channels, _, _ = mcap_of(bag)
        hashes = {entry['topic_metadata']['name']: entry['topic_metadata']['type_description_hash']
                  for entry in metadata_of(bag)['topics_with_message_count']}
        for channel in channels:
            assert channel.metadata['topic_type_hash'] == hashes[channel.topic], (bag, channel)


def test_metadata_yaml_has_rosbag2s_keys_at_every_level(node_bag):
    ours, theirs = metadata_of(node_bag), metadata_of(REFERENCE)
    assert sorted(ours) == sorted(theirs)
    assert ours['version'] == 9 and theirs['version'] == 8  # v9: QoS a list, not a string
    assert ours['storage_identifier'] == theirs['storage_identifier'] == 'mcap'
    assert ours['compression_format'] == theirs['compression_format'] == ''
    assert ours['compression_mode'] == theirs['compression_mode'] == ''
    assert ours['ros_distro'] == 'jazzy'
    assert isinstance(theirs['ros_distro'], str)
    for key in ('duration', 'starting_time'):
        assert sorted(ours[key]) == sorted(theirs[key]), key
    assert [sorted(f) for f in ours['files']] == [sorted(f) for f in theirs['files']]
    for entries in (ours['topics_with_message_count'], theirs['topics_with_message_count']):
        for entry in entries:
            assert sorted(entry) == ['message_count', 'topic_metadata']
            assert sorted(entry['topic_metadata']) == [
                'name', 'offered_qos_profiles', 'serialization_format', 'type',
                'type_description_hash']
    qos = ours['topics_with_message_count'][0]['topic_metadata']['offered_qos_profiles']
    their_qos = yaml.safe_load(
        theirs['topics_with_message_count'][0]['topic_metadata']['offered_qos_profiles'])
    assert [sorted(q) for q in qos] == [sorted(q) for q in their_qos]


def test_the_project_reader_reads_rosbag2s_bag():
    info = bag_info(REFERENCE)
    counts = {entry['topic_metadata']['name']: entry['message_count']
              for entry in metadata_of(REFERENCE)['topics_with_message_count']}
    text = repr(info)
    for topic, count in counts.items():
        assert topic in text, (topic, text)
    assert sum(counts.values()) == 10
