# SPDX-License-Identifier: Apache-2.0
"""Open rosbag2 bag directories defensively and yield their raw messages.

Everything here uses only the public APIs of ``rosbags`` (``rosbags.rosbag2.Reader``) and
``mcap`` (``mcap.reader.SeekingReader``). Before any library opens a file, this module:

- refuses a path that is not a directory, a ``metadata.yaml`` or storage file that is not a
  regular file (a FIFO would block a reader forever), a ``metadata.yaml`` over 1 MiB;
- validates metadata.yaml: every key rosbag2 needs, with its type; ``version`` in
  :data:`SUPPORTED_VERSIONS`; non-empty topic names and types; non-negative counts and duration;
  ``custom_data`` a mapping of strings; the compression fields consistent with the files' magic
  bytes;
- checks every storage file against the size limits of :mod:`.bag_limits` (chunks, messages,
  bounded decompression, chunk CRCs) in one streaming pass;
- compares each recorded type of ours (RIHS01 hash in metadata.yaml, schema text in the MCAP)
  with our definition and reports a *different definition* instead of decoding with ours.

Any problem raises :class:`BagError` with a one-line message. :meth:`OpenBag.messages` checks,
after the last message, the per-topic counts of metadata.yaml against what the storage held.
"""

from collections import Counter
import dataclasses
import os
import pathlib
import stat
from typing import NamedTuple

from .msgdefs import recorded_definition, type_hash

ORDERS = ('recorded', 'stamp')

METADATA_MAX_BYTES = 1 << 20
"""Largest metadata.yaml read (1 MiB; rosbag2 writes a few kB per topic)."""

SUPPORTED_VERSIONS = range(1, 10)
"""metadata.yaml versions read (rosbag2 Jazzy writes 9 and reads 1 to 9)."""

STORAGE_MAGIC = {'mcap': b'\x89MCAP0\r\n', 'sqlite3': b'SQLite format 3\x00'}
ZSTD_MAGIC = b'\x28\xb5\x2f\xfd'


class BagError(Exception):
    """A bag cannot be read: missing, not a rosbag2 bag, truncated, corrupt or inconsistent."""


def normalize_type_name(msgtype):
    """Return ``pkg/msg/Type`` for ``pkg/Type`` or ``pkg/msg/Type``."""
    parts = msgtype.split('/')
    if len(parts) == 2:
        return f'{parts[0]}/msg/{parts[1]}'
    return msgtype


def one_line(error, limit=300):
    """Return the message of ``error`` on one line, at most ``limit`` characters."""
    text = ' '.join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + '...'


@dataclasses.dataclass(frozen=True)
class TopicInfo:
    """One topic of a bag: name, ROS 2 type, message count, RIHS01 hash, offered QoS.

    ``definition`` is ``'same'`` / ``'different'`` for a type of ours (compared by type hash and
    schema text), ``'legacy'`` for an earlier definition of ours that is still decoded
    (:data:`.msgdefs.LEGACY_MSG_TEXTS`: CalibrationHistory interface version 2), ``''`` for a type
    we do not define.
    """

    name: str
    msgtype: str
    message_count: int
    type_description_hash: str
    offered_qos_profiles: tuple
    definition: str = ''


@dataclasses.dataclass(frozen=True)
class BagInfo:
    """What a bag holds: metadata.yaml, validated, with its counts checked against the storage.

    ``counts_source`` says where the message counts come from: ``'storage'`` (every message was
    read and counted) or ``'metadata.yaml'`` (not checked: see :func:`bag_info`).
    """

    path: str
    version: int
    storage_identifier: str
    ros_distro: str
    files: tuple
    message_count: int
    start_time_ns: int | None
    end_time_ns: int | None
    topics: tuple
    custom_data: dict
    counts_source: str = 'metadata.yaml'

    @property
    def duration_ns(self):
        """Return end - start (0 for an empty bag)."""
        if self.start_time_ns is None:
            return 0
        return self.end_time_ns - self.start_time_ns


class BagMessage(NamedTuple):
    """One raw message of a bag."""

    topic: str
    msgtype: str
    log_time: int
    payload: bytes


# -- checks before any library opens a file ---------------------------------------------------

def _regular_file(path, what):
    """Raise BagError unless ``path`` is a regular file (stat only: a FIFO is never opened)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise BagError(f'{path}: cannot read {what}: {one_line(error)}') from None
    if not stat.S_ISREG(mode):
        raise BagError(f'{path}: {what} is not a regular file')


def _check_path(path):
    path = pathlib.Path(path)
    if not path.exists():
        raise BagError(f'{path}: no such bag directory')
    if not path.is_dir():
        raise BagError(f'{path}: not a bag directory (a rosbag2 bag is a directory)')
    metadata = path / 'metadata.yaml'
    if not metadata.exists():
        raise BagError(
            f'{path}: no metadata.yaml (not a rosbag2 bag, or a recording that was not closed)')
    _regular_file(metadata, 'metadata.yaml')
    return path


def _read_metadata_text(path):
    with open(path / 'metadata.yaml', 'rb') as stream:
        data = stream.read(METADATA_MAX_BYTES + 1)
    if len(data) > METADATA_MAX_BYTES:
        raise BagError(f'{path}: metadata.yaml is larger than {METADATA_MAX_BYTES} bytes')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as error:
        raise BagError(f'{path}: metadata.yaml is not UTF-8: {one_line(error)}') from None


def _parse_yaml(text):
    import yaml

    return yaml.load(text, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))


class _Checker:
    """Type checks of metadata.yaml values, each failing with the key path in the message."""

    def __init__(self, path):
        self.path = path

    def fail(self, key, text):
        raise BagError(f'{self.path}: invalid metadata.yaml: {key} {text}')

    def mapping(self, value, key):
        if not isinstance(value, dict):
            self.fail(key, f'must be a mapping, got {type(value).__name__}')
        return value

    def get(self, mapping, name, key, required=True):
        if name not in mapping:
            if required:
                self.fail(f'{key}.{name}' if key else name, 'is missing')
            return None
        return mapping[name]

    def integer(self, value, key, minimum=None):
        if type(value) is not int:
            self.fail(key, f'must be an integer, got {value!r:.60}')
        if minimum is not None and value < minimum:
            self.fail(key, f'must be >= {minimum}, got {value}')
        return value

    def string(self, value, key, empty=True):
        if not isinstance(value, str):
            self.fail(key, f'must be a string, got {value!r:.60}')
        if not empty and not value.strip():
            self.fail(key, 'must not be empty')
        return value

    def sequence(self, value, key):
        if not isinstance(value, list):
            self.fail(key, f'must be a list, got {type(value).__name__}')
        return value


def validate_metadata(path, loaded):
    """Return metadata.yaml's ``rosbag2_bagfile_information``, checked (BagError otherwise)."""
    check = _Checker(path)
    info = check.mapping(check.get(
        check.mapping(loaded, 'metadata.yaml'), 'rosbag2_bagfile_information', ''),
        'rosbag2_bagfile_information')
    version = check.integer(check.get(info, 'version', ''), 'version')
    if version not in SUPPORTED_VERSIONS:
        check.fail('version', f'{version} is not one rosbag2 reads '
                   f'({SUPPORTED_VERSIONS.start} to {SUPPORTED_VERSIONS.stop - 1})')
    storage = check.string(check.get(info, 'storage_identifier', ''), 'storage_identifier')
    if storage not in STORAGE_MAGIC:
        check.fail('storage_identifier', f'{storage!r:.60} is not mcap or sqlite3')
    files = check.sequence(check.get(info, 'relative_file_paths', ''), 'relative_file_paths')
    if not files:
        check.fail('relative_file_paths', 'is empty')
    for i, name in enumerate(files):
        check.string(name, f'relative_file_paths[{i}]', empty=False)
    duration = check.mapping(check.get(info, 'duration', ''), 'duration')
    check.integer(check.get(duration, 'nanoseconds', 'duration'), 'duration.nanoseconds', 0)
    start = check.mapping(check.get(info, 'starting_time', ''), 'starting_time')
    check.integer(check.get(start, 'nanoseconds_since_epoch', 'starting_time'),
                  'starting_time.nanoseconds_since_epoch', 0)
    check.integer(check.get(info, 'message_count', ''), 'message_count', 0)
    topics = check.sequence(
        check.get(info, 'topics_with_message_count', ''), 'topics_with_message_count')
    for i, item in enumerate(topics):
        key = f'topics_with_message_count[{i}]'
        check.mapping(item, key)
        check.integer(check.get(item, 'message_count', key), f'{key}.message_count', 0)
        meta = check.mapping(check.get(item, 'topic_metadata', key), f'{key}.topic_metadata')
        for name in ('name', 'type'):
            check.string(check.get(meta, name, f'{key}.topic_metadata'),
                         f'{key}.topic_metadata.{name}', empty=False)
        check.string(check.get(meta, 'serialization_format', f'{key}.topic_metadata'),
                     f'{key}.topic_metadata.serialization_format')
        for name in ('type_description_hash', 'offered_qos_profiles'):
            value = meta.get(name)
            if value is not None and not isinstance(value, (str, list)):
                check.fail(f'{key}.topic_metadata.{name}', 'must be a string or a list')
    total = sum(item['message_count'] for item in topics)
    if total != info['message_count']:
        check.fail('message_count', f'{info["message_count"]} is not the sum of the topics\' '
                   f'message counts ({total})')
    for name in ('compression_format', 'compression_mode', 'ros_distro'):
        value = info.get(name)
        if value is not None:
            check.string(value, name)
    custom = info.get('custom_data')
    if custom is not None:
        check.mapping(custom, 'custom_data')
        for key, value in custom.items():
            if not isinstance(key, str) or not isinstance(value, str):
                check.fail('custom_data', f'must map strings to strings, got {key!r:.40}: '
                           f'{value!r:.40}')
    entries = info.get('files')
    if entries is not None:
        for i, entry in enumerate(check.sequence(entries, 'files')):
            check.mapping(entry, f'files[{i}]')
            check.string(check.get(entry, 'path', f'files[{i}]'), f'files[{i}].path')
            check.integer(check.get(entry, 'message_count', f'files[{i}]'),
                          f'files[{i}].message_count', 0)
    return info


def compression_mode(metadata):
    """Return ``'file'``, ``'message'`` or ``''`` (none)."""
    mode = (metadata.get('compression_mode') or '').lower()
    return '' if mode == 'none' else mode


def storage_paths(path, metadata):
    """Return the storage files of the bag (as rosbag2 resolves relative_file_paths)."""
    return [path / pathlib.PurePath(name).name for name in metadata['relative_file_paths']]


def _check_storage_files(path, metadata):
    """Check the storage files exist, are regular and match the compression fields."""
    mode = compression_mode(metadata)
    compression = metadata.get('compression_format') or ''
    if mode not in ('', 'file', 'message'):
        raise BagError(f'{path}: invalid metadata.yaml: compression_mode {mode!r:.40} is not '
                       'none, file or message')
    if mode and compression != 'zstd':
        raise BagError(f'{path}: invalid metadata.yaml: compression_mode {mode} needs '
                       f'compression_format zstd, got {compression!r:.40}')
    magic = ZSTD_MAGIC if mode == 'file' else STORAGE_MAGIC[metadata['storage_identifier']]
    for file_path in storage_paths(path, metadata):
        if not os.path.lexists(file_path):
            raise BagError(f'{path}: storage file {file_path.name} is missing')
        _regular_file(file_path, f'storage file {file_path.name}')
        with open(file_path, 'rb') as stream:
            head = stream.read(len(magic))
        if head != magic:
            what = ('zstd-compressed (compression_mode file)' if mode == 'file'
                    else f'a {metadata["storage_identifier"]} file')
            raise BagError(f'{path}: storage file {file_path.name} is not {what}')


def load_metadata(path):
    """Return ``(bag directory, validated rosbag2_bagfile_information)`` (BagError otherwise)."""
    path = _check_path(path)
    text = _read_metadata_text(path)
    try:
        loaded = _parse_yaml(text)
    except Exception as error:  # noqa: BLE001 - any YAML error is one line
        raise BagError(f'{path}: metadata.yaml is not valid YAML: {one_line(error)}') from None
    metadata = validate_metadata(path, loaded)
    _check_storage_files(path, metadata)
    from .bag_limits import check_storage  # bag_limits imports this module

    check_storage(path, metadata)
    return path, metadata


# -- the open bag -------------------------------------------------------------------------------

def _qos_profiles(topic_metadata):
    """Return the offered QoS profiles of a topic as metadata.yaml holds them (a tuple)."""
    value = topic_metadata.get('offered_qos_profiles') or ()
    if isinstance(value, str):  # versions before 9: a YAML document in a string
        try:
            value = _parse_yaml(value) or ()
        except Exception:  # noqa: BLE001 - rosbags has parsed it already; keep what it holds
            value = ()
    return tuple(value) if isinstance(value, list) else ()


class OpenBag:
    """A bag opened once: validated metadata, a rosbags Reader, its info and its messages."""

    def __init__(self, path):
        from rosbags.rosbag2 import Reader

        self.path, self.metadata = load_metadata(path)
        try:
            self.reader = Reader(self.path)
            self.reader.open()
        except Exception as error:  # noqa: BLE001 - every library error is one line
            raise BagError(f'{self.path}: cannot open bag: {one_line(error)}') from None
        try:
            self.info = self._info()
        except Exception as error:  # noqa: BLE001
            self.reader.close()
            if isinstance(error, BagError):
                raise
            raise BagError(f'{self.path}: invalid bag metadata: {one_line(error)}') from None

    def _info(self):
        reader, metadata = self.reader, self.metadata
        # rosbags numbers the connections 1.. in the order of topics_with_message_count.
        entries = metadata['topics_with_message_count']
        connections = sorted(reader.connections, key=lambda c: c.id)
        topics = tuple(
            TopicInfo(c.topic, normalize_type_name(c.msgtype), c.msgcount, c.digest or '',
                      _qos_profiles(entries[c.id - 1]['topic_metadata']),
                      recorded_definition(normalize_type_name(c.msgtype), c.digest or '',
                                          c.msgdef.data or ''))
            for c in connections)
        count = metadata['message_count']
        start = metadata['starting_time']['nanoseconds_since_epoch']
        duration = metadata['duration']['nanoseconds']
        return BagInfo(
            path=str(self.path), version=metadata['version'],
            storage_identifier=metadata['storage_identifier'],
            ros_distro=metadata.get('ros_distro') or '',
            files=tuple((str(item['path']), item['message_count'])
                        for item in metadata.get('files') or ()),
            message_count=count, start_time_ns=start if count else None,
            end_time_ns=start + duration if count else None, topics=topics,
            custom_data=dict(metadata.get('custom_data') or {}))

    def close(self):
        """Close the reader."""
        self.reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def check_definitions(self, msgtypes):
        """Raise BagError when a topic of a type in ``msgtypes`` has a different definition."""
        for topic in self.info.topics:
            if topic.msgtype in msgtypes and topic.definition == 'different':
                raise BagError(
                    f'{self.path}: {topic.name}: recorded type {topic.msgtype} has a different '
                    f'definition than ours (type hash {topic.type_description_hash or "-"}, ours '
                    f'{type_hash(topic.msgtype)}); not decoding it with ours')

    def messages(self, order='recorded', topics=None):
        """Yield BagMessage in ``order``, then check the per-topic counts of metadata.yaml."""
        if order not in ORDERS:
            raise ValueError(f'order must be one of {ORDERS}, got {order!r}')
        expected = Counter()
        for connection in self.reader.connections:
            if topics is None or connection.topic in topics:
                expected[connection.topic] += connection.msgcount
        types = {c.topic: normalize_type_name(c.msgtype) for c in self.reader.connections}
        seen = Counter()
        try:
            for message in self._iter(order, topics):
                topic = message.topic
                if not seen[topic] and types.get(topic, message.msgtype) != message.msgtype:
                    raise BagError(
                        f'{self.path}: inconsistent bag: {topic} is {types[topic]} in '
                        f'metadata.yaml, {message.msgtype or "no schema"} in the storage')
                seen[topic] += 1
                yield message
        except BagError:
            raise
        except Exception as error:  # noqa: BLE001 - every library error is one line
            raise BagError(
                f'{self.path}: corrupt or truncated bag after {sum(seen.values())} messages: '
                f'{one_line(error)}') from None
        if +seen != +expected:
            diffs = ', '.join(
                f'{topic}: metadata.yaml {expected[topic]}, storage {seen[topic]}'
                for topic in sorted(set(seen) | set(expected)) if seen[topic] != expected[topic])
            raise BagError(f'{self.path}: inconsistent bag: message counts differ ({diffs})')

    def _iter(self, order, topics):
        wanted = None if topics is None else set(topics)
        metadata = self.metadata
        if (order == 'recorded' and metadata['storage_identifier'] == 'mcap'
                and not compression_mode(metadata)):
            for file_path in storage_paths(self.path, metadata):
                yield from _iter_mcap_file_order(file_path, wanted)
            return
        connections = [c for c in self.reader.connections if wanted is None or c.topic in wanted]
        if not connections:
            return
        for connection, log_time, payload in self.reader.messages(connections=connections):
            yield BagMessage(
                connection.topic, normalize_type_name(connection.msgtype), log_time, payload)


def _iter_mcap_file_order(file_path, wanted):
    """Yield BagMessage from one MCAP file in file order (mcap's public reader, CRCs checked)."""
    from mcap.reader import SeekingReader

    from .bag_limits import DEFAULT_LIMITS

    names = {}
    with open(file_path, 'rb') as stream:
        reader = SeekingReader(stream, validate_crcs=True,
                               record_size_limit=DEFAULT_LIMITS.record_bytes)
        for schema, channel, message in reader.iter_messages(
                topics=None if wanted is None else sorted(wanted), log_time_order=False):
            name = names.get(channel.id)
            if name is None:
                msgtype = normalize_type_name(schema.name if schema is not None else '')
                name = names[channel.id] = (channel.topic, msgtype)
            yield BagMessage(name[0], name[1], message.log_time, message.data)


def count_messages(bag):
    """Return ``(per-topic Counter, first log time, last log time)`` read from the storage."""
    counts = Counter()
    first = last = None
    for message in bag.messages():
        counts[message.topic] += 1
        log_time = message.log_time
        first = log_time if first is None else min(first, log_time)
        last = log_time if last is None else max(last, log_time)
    return counts, first, last


def bag_info(path):
    """Return the BagInfo of the bag directory ``path`` (BagError when it cannot be read).

    Every message is read (not decoded) and counted: metadata.yaml's per-topic counts must equal
    the storage's (BagError otherwise), and the time range is the storage's (metadata.yaml's
    ``starting_time`` and ``duration`` must agree with it).
    """
    with OpenBag(path) as bag:
        info = bag.info
        counts, first, last = count_messages(bag)
        total = sum(counts.values())
        if total != info.message_count:
            raise BagError(f'{bag.path}: inconsistent bag: metadata.yaml message_count '
                           f'{info.message_count}, storage {total}')
        if total and (first, last) != (info.start_time_ns, info.end_time_ns):
            raise BagError(
                f'{bag.path}: inconsistent bag: metadata.yaml time range {info.start_time_ns}'
                f'..{info.end_time_ns}, storage {first}..{last}')
        return dataclasses.replace(info, counts_source='storage')


def mcap_file_info(path):
    """Return the BagInfo of a bare ``.mcap`` file (no metadata.yaml), as evaluate accepts one.

    Bounded as evaluate's read is: :func:`.bag_limits.check_mcap_file` checks every record
    against the limits before mcap's reader walks it; then every message is counted (not
    decoded). ``version`` is 0 and ``storage_identifier`` ``'mcap'``; type hashes and offered
    QoS come from the channels' metadata when a rosbag2 writer put them there.
    """
    from mcap.reader import SeekingReader

    from .bag_limits import check_mcap_file, DEFAULT_LIMITS

    file_path = pathlib.Path(path)
    if not file_path.exists():
        raise BagError(f'{file_path}: no such file')
    _regular_file(file_path, 'the .mcap file')
    check_mcap_file(file_path)
    counts, channels = Counter(), {}
    first = last = None
    try:
        with open(file_path, 'rb') as stream:
            reader = SeekingReader(stream, validate_crcs=True,
                                   record_size_limit=DEFAULT_LIMITS.record_bytes)
            for schema, channel, message in reader.iter_messages(log_time_order=False):
                if channel.id not in channels:
                    channels[channel.id] = (channel, schema)
                counts[channel.id] += 1
                first = message.log_time if first is None else min(first, message.log_time)
                last = message.log_time if last is None else max(last, message.log_time)
            summary = reader.get_summary()
    except BagError:
        raise
    except Exception as error:  # noqa: BLE001 - every library error is one line
        raise BagError(f'{file_path}: corrupt or unreadable: {one_line(error)}') from None
    if summary is not None:  # channels without messages too
        for channel_id, channel in summary.channels.items():
            if channel_id not in channels:
                channels[channel_id] = (channel, summary.schemas.get(channel.schema_id))
    topics = []
    for channel_id, (channel, schema) in sorted(channels.items()):
        msgtype = normalize_type_name(schema.name if schema is not None else '')
        digest = channel.metadata.get('topic_type_hash', '')
        text = schema.data.decode('utf-8', 'replace') if schema is not None else ''
        qos = channel.metadata.get('offered_qos_profiles', '')
        try:
            profiles = _parse_yaml(qos) if qos else ()
        except Exception:  # noqa: BLE001 - QoS text we cannot read is left out
            profiles = ()
        topics.append(TopicInfo(channel.topic, msgtype, counts[channel_id], digest,
                                tuple(profiles) if isinstance(profiles, list) else (),
                                recorded_definition(msgtype, digest, text)))
    total = sum(counts.values())
    return BagInfo(path=str(file_path), version=0, storage_identifier='mcap', ros_distro='',
                   files=((file_path.name, total),), message_count=total,
                   start_time_ns=first, end_time_ns=last, topics=tuple(topics), custom_data={},
                   counts_source='storage')
