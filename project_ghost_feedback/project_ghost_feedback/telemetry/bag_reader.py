# SPDX-License-Identifier: Apache-2.0
"""Open rosbag2 bag directories defensively and yield their raw messages.

Everything here uses only the public APIs of ``rosbags`` (``rosbags.rosbag2.Reader``) and
``mcap`` (``mcap.reader.SeekingReader``). Before any library opens a file,
:func:`load_metadata` checks the bag's metadata.yaml and storage files
(:func:`.bag_metadata.read_metadata`) and every storage file against the size limits of
:mod:`.bag_limits` (chunks, messages, bounded decompression, chunk CRCs) in one streaming pass.
Then :class:`OpenBag` compares each recorded type of ours (RIHS01 hash in metadata.yaml, schema
text in the MCAP) with our definition and reports a *different definition* instead of decoding
with ours.

Any problem raises :class:`~.bag_metadata.BagError` with a one-line message.
:meth:`OpenBag.messages` checks, after the last message, the per-topic counts of metadata.yaml
against what the storage held.
"""

from collections import Counter
from collections.abc import Collection, Iterable, Iterator
import dataclasses
import os
import pathlib
from typing import Any, Literal, NamedTuple

from .bag_limits import check_storage, DEFAULT_LIMITS
from .bag_metadata import (
    BagError,
    compression_mode,
    normalize_type_name,
    one_line,
    parse_yaml,
    read_metadata,
    regular_file,
    storage_paths,
)
from .msgdefs import recorded_definition, type_hash

ORDERS = ('recorded', 'stamp')


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
    skipped: dict = dataclasses.field(default_factory=dict)
    """``{topic: messages}`` over the message limit on channels not the node's (bag_limits)."""

    @property
    def duration_ns(self) -> int:
        """Return end - start (0 for an empty bag)."""
        if self.start_time_ns is None or self.end_time_ns is None:
            return 0
        return self.end_time_ns - self.start_time_ns


class BagMessage(NamedTuple):
    """One raw message of a bag."""

    topic: str
    msgtype: str
    log_time: int
    payload: bytes


def load_metadata(path: str | os.PathLike[str],
                  ) -> tuple[pathlib.Path, dict[str, Any], dict[str, int]]:
    """Return ``(bag directory, validated rosbag2_bagfile_information, skipped)``.

    :func:`.bag_metadata.read_metadata`, then the storage files against :mod:`.bag_limits`:
    BagError when the bag is refused; ``skipped`` is ``{topic: messages}`` over the message limit
    on channels that are not the node's own (:func:`.bag_limits.check_storage`).
    """
    path, metadata = read_metadata(path)
    skipped = check_storage(path, metadata)
    return path, metadata, skipped


# -- the open bag -------------------------------------------------------------------------------

def _qos_profiles(topic_metadata: dict[str, Any]) -> tuple[Any, ...]:
    """Return the offered QoS profiles of a topic as metadata.yaml holds them (a tuple)."""
    value = topic_metadata.get('offered_qos_profiles') or ()
    if isinstance(value, str):  # versions before 9: a YAML document in a string
        try:
            value = parse_yaml(value) or ()
        except Exception:  # noqa: BLE001 - rosbags has parsed it already; keep what it holds
            value = ()
    return tuple(value) if isinstance(value, list) else ()


class OpenBag:
    """A bag opened once: validated metadata, a rosbags Reader, its info and its messages."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from rosbags.rosbag2 import Reader

        self.path, self.metadata, self.skipped = load_metadata(path)
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

    def _info(self) -> BagInfo:
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
            custom_data=dict(metadata.get('custom_data') or {}), skipped=dict(self.skipped))

    def close(self) -> None:
        """Close the reader."""
        self.reader.close()

    def __enter__(self) -> 'OpenBag':
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def check_definitions(self, msgtypes: Collection[str]) -> None:
        """Raise BagError when a topic of a type in ``msgtypes`` has a different definition."""
        for topic in self.info.topics:
            if topic.msgtype in msgtypes and topic.definition == 'different':
                raise BagError(
                    f'{self.path}: {topic.name}: recorded type {topic.msgtype} has a different '
                    f'definition than ours (type hash {topic.type_description_hash or "-"}, ours '
                    f'{type_hash(topic.msgtype)}); not decoding it with ours')

    def messages(self, order: str = 'recorded',
                 topics: Collection[str] | None = None) -> Iterator[BagMessage]:
        """Yield BagMessage in ``order``, then check the per-topic counts of metadata.yaml."""
        if order not in ORDERS:
            raise ValueError(f'order must be one of {ORDERS}, got {order!r}')
        expected = Counter[str]()
        for connection in self.reader.connections:
            if topics is None or connection.topic in topics:
                expected[connection.topic] += connection.msgcount
        types = {c.topic: normalize_type_name(c.msgtype) for c in self.reader.connections}
        seen = Counter[str]()
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

    def _iter(self, order: str, topics: Iterable[str] | None) -> Iterator[BagMessage]:
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


def _iter_mcap_file_order(file_path: pathlib.Path,
                          wanted: set[str] | None) -> Iterator[BagMessage]:
    """Yield BagMessage from one MCAP file in file order (mcap's public reader, CRCs checked)."""
    from mcap.reader import SeekingReader

    names: dict[int, tuple[str, str]] = {}
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


def count_messages(bag: OpenBag) -> tuple[Counter[str], int | None, int | None]:
    """Return ``(per-topic Counter, first log time, last log time)`` read from the storage."""
    counts = Counter[str]()
    first: int | None = None
    last: int | None = None
    for message in bag.messages():
        counts[message.topic] += 1
        log_time = message.log_time
        first = log_time if first is None else min(first, log_time)
        last = log_time if last is None else max(last, log_time)
    return counts, first, last


def bag_info(path: str | os.PathLike[str]) -> BagInfo:
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


def mcap_file_info(path: str | os.PathLike[str]) -> BagInfo:
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
    regular_file(file_path, 'the .mcap file')
    check_mcap_file(file_path)
    counts: Counter[int] = Counter()
    channels: dict[int, Any] = {}
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
            profiles = parse_yaml(qos) if qos else ()
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
