# SPDX-License-Identifier: Apache-2.0
"""Write telemetry bags: rosbag2 bag directories (MCAP storage) from adapter records.

rosbags' rosbag2 ``Writer`` (``version=9``, MCAP storage; needs only the ``rosbags`` package)
writes the directory, ``metadata.yaml`` (every v9 key) and the MCAP file (profile ``ros2``, one
``ros2msg`` schema per type, ``cdr`` channels whose ``offered_qos_profiles`` metadata equals
metadata.yaml's, the ``rosbag2`` metadata record). This module hands it the schema text built as
rosbag2 builds it (:mod:`.msgdefs`) and the RIHS01 hash; it writes no MCAP or YAML itself. Output
is byte-deterministic: the same records in the same order, into a directory of the same name, give
identical files. (rosbag2_py is not used: it is not on PyPI and could not be tested here.)

Messages are written in the order given; log times need not be monotonic (rosbags indexes any
order; readers in log-time order sort, readers in file order see the write order).
"""

from collections.abc import Iterable, Mapping
import pathlib
from types import TracebackType
from typing import Any, Literal

from .adapters import TelemetryRecord, to_telemetry
from .channels import Channel, CHANNELS, QosProfile
from .msgdefs import full_definition, type_hash


class TelemetryWriterError(RuntimeError):
    """A telemetry bag cannot be created or written."""


def _rosbags_qos(profile: QosProfile) -> Any:
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )

    return Qos(
        QosHistory[profile.history.upper()], profile.depth,
        QosReliability[profile.reliability.upper()], QosDurability[profile.durability.upper()],
        QosTime(*profile.deadline), QosTime(*profile.lifespan),
        QosLiveliness[profile.liveliness.upper()], QosTime(*profile.liveliness_lease_duration),
        profile.avoid_ros_namespace_conventions)


class _RosbagsBackend:
    def __init__(self, path: str | pathlib.Path, channels: tuple[Channel, ...],
                 custom_data: dict[str, str]) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer, WriterError

        self._error = WriterError
        try:
            self._writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
            for key, value in custom_data.items():
                self._writer.set_custom_data(key, value)
            self._writer.open()
        except (WriterError, OSError) as error:
            raise TelemetryWriterError(f'cannot create telemetry bag {str(path)!r}: {error}')
        self._connections: dict[str, Any] = {}
        try:
            for channel in channels:
                self._connections[channel.topic] = self._writer.add_connection(
                    channel.topic, channel.msgtype, msgdef=full_definition(channel.msgtype),
                    rihs01=type_hash(channel.msgtype), serialization_format='cdr',
                    offered_qos_profiles=[_rosbags_qos(channel.qos)])
        except Exception:
            self._writer.abort()
            raise
        self._write = self._writer.write

    def set_custom_data(self, key: str, value: str) -> None:
        self._writer.set_custom_data(key, value)

    def write(self, topic: str, log_time: int, payload: bytes) -> None:
        self._write(self._connections[topic], log_time, payload)

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        self._writer.abort()


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
        self._backend = _RosbagsBackend(path, tuple(channels), custom_data)
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

    def __enter__(self) -> 'TelemetryWriter':
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        self.close()
        return False
