# SPDX-License-Identifier: Apache-2.0
"""Write telemetry bags: rosbag2 bag directories (MCAP storage) from adapter records.

What rosbag2 Jazzy's MCAP storage writes (test_rosbag2.py compares it field by field with a bag
of the real ``ros2 bag record``): the directory, the MCAP file written with the ``mcap`` package
(profile ``ros2``, one ``ros2msg`` schema per type with the text built as rosbag2 builds it,
:mod:`.msgdefs`; ``cdr`` channels with ``offered_qos_profiles`` and ``topic_type_hash`` metadata;
the ``rosbag2`` metadata record) and ``metadata.yaml`` (version 9, every key; ``ros_distro``
``jazzy``). Output is byte-deterministic: the same records in the same order, into a directory of
the same name, give identical files (with the pinned ``mcap`` and PyYAML).
Differences from rosbag2 that are by design (docs/telemetry.md): the file is ``<name>.mcap``
(rosbag2: ``<name>_0.mcap``); log and publish times are the contracts' stamps, not receive times;
the header's library names the ``mcap`` package.

Messages are written in the order given; log times need not be monotonic (rosbags indexes any
order; readers in log-time order sort, readers in file order see the write order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import pathlib
from types import TracebackType
from typing import Any, Literal

from .adapters import TelemetryRecord, to_telemetry
from .channels import Channel, CHANNELS, QosProfile
from .msgdefs import full_definition, type_hash


class TelemetryWriterError(RuntimeError):
    """A telemetry bag cannot be created or written."""


ROS_DISTRO = 'jazzy'
"""metadata.yaml's ``ros_distro``: rosbag2 writes the recording environment's ``ROS_DISTRO``; the
telemetry types and their RIHS01 hashes are Jazzy's."""

CHUNK_SIZE = 1 << 20
"""Bytes of messages per MCAP chunk: what an unfinished bag (a killed process) can lose at most."""


def qos_dict(profile: QosProfile) -> dict[str, Any]:
    """Return ``profile`` as an entry of rosbag2's ``offered_qos_profiles`` (metadata v9)."""
    def duration(value: tuple[int, int]) -> dict[str, int]:
        return {'sec': value[0], 'nsec': value[1]}

    return {
        'history': profile.history, 'depth': profile.depth,
        'reliability': profile.reliability, 'durability': profile.durability,
        'deadline': duration(profile.deadline), 'lifespan': duration(profile.lifespan),
        'liveliness': profile.liveliness,
        'liveliness_lease_duration': duration(profile.liveliness_lease_duration),
        'avoid_ros_namespace_conventions': profile.avoid_ros_namespace_conventions,
    }


def _dump_yaml(data: object) -> str:
    import yaml

    return yaml.safe_dump(data, default_flow_style=False, sort_keys=True, allow_unicode=True)


class _McapBackend:
    """The bag directory: ``<name>.mcap`` written with the ``mcap`` package, then metadata.yaml.

    Records as rosbag2's MCAP storage plugin writes them (rosbag2_storage_mcap 0.26): header
    profile ``ros2``; one ``ros2msg`` schema per type; ``cdr`` channels with metadata
    ``offered_qos_profiles`` (YAML) and ``topic_type_hash`` (RIHS01); messages with sequence 0;
    a ``rosbag2`` metadata record holding ``serialized_metadata`` (metadata.yaml's content).
    """

    def __init__(self, path: str | pathlib.Path, channels: tuple[Channel, ...],
                 custom_data: dict[str, str]) -> None:
        import pathlib

        from mcap.writer import CompressionType, Writer

        self.path = pathlib.Path(path)
        self._custom_data = dict(custom_data)
        try:
            self.path.mkdir(mode=0o755, parents=True)
        except FileExistsError:
            raise TelemetryWriterError(
                f'cannot create telemetry bag {str(path)!r}: {path} exists already, '
                'not overwriting') from None
        except OSError as error:
            raise TelemetryWriterError(f'cannot create telemetry bag {str(path)!r}: {error}')
        self._file_name = f'{self.path.name}.mcap'
        try:
            self._stream = open(self.path / self._file_name, 'xb')
        except OSError as error:
            raise TelemetryWriterError(f'cannot create telemetry bag {str(path)!r}: {error}')
        try:
            self._writer = Writer(self._stream, chunk_size=CHUNK_SIZE,
                                  compression=CompressionType.NONE)
            self._writer.start(profile='ros2')
            self._channels = tuple(channels)
            self._ids = {}
            schema_ids = {}
            for channel in self._channels:
                if channel.msgtype not in schema_ids:
                    schema_ids[channel.msgtype] = self._writer.register_schema(
                        channel.msgtype, 'ros2msg',
                        full_definition(channel.msgtype).encode('utf-8'))
                self._ids[channel.topic] = self._writer.register_channel(
                    channel.topic, 'cdr', schema_ids[channel.msgtype], {
                        'offered_qos_profiles': _dump_yaml([qos_dict(channel.qos)]).strip(),
                        'topic_type_hash': type_hash(channel.msgtype),
                    })
        except Exception:
            self._stream.close()
            raise
        self._counts = {channel.topic: 0 for channel in self._channels}
        self._start = 2**63 - 1
        self._end = 0

    def set_custom_data(self, key: str, value: str) -> None:
        self._custom_data[key] = value

    def write(self, topic: str, log_time: int, payload: bytes) -> None:
        self._writer.add_message(self._ids[topic], log_time, payload, log_time, 0)
        self._counts[topic] += 1
        if log_time < self._start:
            self._start = log_time
        if log_time > self._end:
            self._end = log_time

    def _metadata(self) -> dict[str, Any]:
        duration = max(0, self._end - self._start)
        count = sum(self._counts.values())
        return {
            'version': 9,
            'storage_identifier': 'mcap',
            'relative_file_paths': [self._file_name],
            'duration': {'nanoseconds': duration},
            'starting_time': {'nanoseconds_since_epoch': self._start},
            'message_count': count,
            'topics_with_message_count': [{
                'topic_metadata': {
                    'name': channel.topic, 'type': channel.msgtype,
                    'serialization_format': 'cdr',
                    'offered_qos_profiles': [qos_dict(channel.qos)],
                    'type_description_hash': type_hash(channel.msgtype),
                },
                'message_count': self._counts[channel.topic],
            } for channel in self._channels],
            'compression_format': '',
            'compression_mode': '',
            'files': [{
                'path': self._file_name,
                'starting_time': {'nanoseconds_since_epoch': self._start},
                'duration': {'nanoseconds': duration},
                'message_count': count,
            }],
            'custom_data': dict(self._custom_data) or None,
            'ros_distro': ROS_DISTRO,
        }

    def close(self) -> None:
        metadata = self._metadata()
        self._writer.add_metadata('rosbag2', {'serialized_metadata': _dump_yaml(metadata).strip()})
        self._writer.finish()
        self._stream.close()
        text = _dump_yaml({'rosbag2_bagfile_information': metadata})
        temporary = self.path / 'metadata.yaml.tmp'
        temporary.write_text(text, encoding='utf-8')
        temporary.replace(self.path / 'metadata.yaml')

    def abort(self) -> None:
        self._stream.close()


class TelemetryWriter:
    """A rosbag2 bag directory being written (MCAP storage, metadata.yaml version 9).

    ``path`` must not exist (rosbag2 never overwrites a bag). Every channel of ``channels`` is
    registered at open, in order, so the connection ids never depend on the data. ``custom_data``
    (str -> str) goes to metadata.yaml's ``custom_data``. Use as a context manager, or call
    :meth:`close`: the MCAP summary and metadata.yaml are written only at close.
    """

    def __init__(self, path: str | pathlib.Path, *, channels: Iterable[Channel] = CHANNELS,
                 custom_data: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.counts = {channel.topic: 0 for channel in channels}
        custom_data = dict(custom_data or {})
        for key, value in custom_data.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f'custom_data must map str to str, got {key!r}: {value!r}')
        self._backend = _McapBackend(path, tuple(channels), custom_data)
        self._backend_write = self._backend.write
        self._closed = False

    @property
    def closed(self) -> bool:
        """Return True once the bag is closed (or aborted)."""
        return self._closed

    def set_custom_data(self, key: str, value: str) -> None:
        """Set ``custom_data[key] = value`` (strings) in metadata.yaml, before close."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f'custom_data must map str to str, got {key!r}: {value!r}')
        self._backend.set_custom_data(key, value)

    def write(self, record: TelemetryRecord) -> None:
        """Write a TelemetryRecord ``(channel, log_time, payload)``."""
        channel, log_time, payload = record
        if self._closed:
            raise TelemetryWriterError(f'telemetry bag {str(self.path)!r} is closed')
        counts = self.counts
        if channel not in counts:
            raise ValueError(
                f'channel {channel!r} is not in this bag (channels: {", ".join(counts)})')
        self._backend_write(channel, log_time, payload)
        counts[channel] += 1

    def write_contract(self, contract: object) -> None:
        """Adapt ``contract`` (see :mod:`.adapters`) and write it."""
        self.write(to_telemetry(contract))

    def close(self) -> None:
        """Finish the bag: MCAP summary, footer and metadata.yaml. Idempotent."""
        if not self._closed:
            self._closed = True
            try:
                self._backend.close()
            except BaseException:
                # E.g. a full disk: release the file; the bag stays unfinished.
                try:
                    self._backend.abort()
                except Exception:  # noqa: BLE001,S110 - the close error is the one to raise
                    pass
                raise

    def abort(self) -> None:
        """Stop without finishing the bag (it will not be readable). Idempotent."""
        if not self._closed:
            self._closed = True
            self._backend.abort()

    def __enter__(self) -> TelemetryWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        self.close()
        return False
