# SPDX-License-Identifier: Apache-2.0
"""Ceilings on everything read from a bag, checked in one bounded pass before any library reads it.

rosbags and mcap decompress a chunk (rosbags also a message) in one call whose output is as large
as the compressed *data* says (a zstd frame header's content size, or every frame of the data),
whatever the record declared: a 65 kB file can demand a GiB. :func:`check_storage` reads every
storage file once, as a stream, and refuses the bag with a one-line :class:`BagLimitError`
(a :class:`~.bag_metadata.BagError`) when

- a record declares more than :attr:`BagLimits.chunk_bytes` (mcap's ``record_size_limit``), or a
  record inside a chunk more than :attr:`BagLimits.message_bytes`;
- a chunk declares more than ``chunk_bytes`` uncompressed, its zstd / lz4 frame header claims more
  than the chunk declares, or its data decompress to another size than declared (decompressed in a
  stream capped at the declared size: zstandard's ``stream_reader``, ``lz4.frame.open``), or its
  CRC (when not 0) does not match; mcap's data-section CRC is checked as well;
- a message is larger than ``message_bytes`` (declared and actual; with ``compression_mode:
  message``, after a decompression capped the same way) on one of the node's own channels (the
  ones replay reads: :data:`~.channels.CHANNELS`). On any other channel (``/diagnostics``, a
  ``record_topics`` topic, a topic of another recorder) such a message is skipped and counted
  per topic (:func:`check_storage` returns the counts; ``info`` shows them): the chunk limit still
  bounds what a reader holds, and a bag is not refused whole for a topic that is not the node's;
- with ``compression_mode: file``, the decompressed file is larger than ``file_bytes``.

A truncated file is left to the readers (they report it); only what is complete is checked.
A bag that passes is then read by the libraries within these bounds: ``info``, ``replay`` and
``audit`` stay within a few times ``chunk_bytes`` above their own footprint whatever a bag claims.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pathlib
import sqlite3
import struct
from typing import Any, BinaryIO
import zlib

from .bag_metadata import BagError, compression_mode, one_line, storage_paths

MCAP_CHANNEL = 0x04
MCAP_MESSAGE = 0x05
MCAP_MESSAGE_HEADER = 22
"""channel_id (2), sequence (4), log_time (8), publish_time (8) before a message's data."""
READ_PIECE = 1 << 20


@dataclasses.dataclass(frozen=True)
class BagLimits:
    """Largest sizes read from a bag, in bytes.

    The project's messages are below 5 kB (schemas included) and its writers' chunks about 1 MiB:
    the defaults leave a margin of 30x and more.
    """

    chunk_bytes: int = 32 << 20
    message_bytes: int = 1 << 20
    file_bytes: int = 2 << 30

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or value < 1:
                raise ValueError(f'BagLimits.{field.name} must be an integer >= 1, got {value!r}')

    @property
    def record_bytes(self) -> int:
        """Return the largest MCAP record read (a chunk and its header)."""
        return self.chunk_bytes + 64


DEFAULT_LIMITS = BagLimits()


class BagLimitError(BagError):
    """A bag declares or holds more than a limit of :class:`BagLimits`."""


class _Capped:
    """A read-only stream that refuses a read above ``read_limit`` or a total above ``cap``."""

    def __init__(self, raw: Any, cap: int, what: str, read_limit: int | None = None) -> None:
        self.raw, self.cap, self.what, self.read_limit = raw, cap, what, read_limit
        self.count = 0
        self.crc = 0

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0 or (self.read_limit is not None and size > self.read_limit):
            raise BagLimitError(f'{self.what}: a record declares {size} bytes, over the limit of '
                                f'{self.read_limit}')
        data = self.raw.read(size)
        self.count += len(data)
        if self.count > self.cap:
            raise BagLimitError(f'{self.what}: decompresses to more than {self.cap} bytes')
        self.crc = zlib.crc32(data, self.crc)
        return data


def _decompressed(data: bytes, compression: str, cap: int, what: str) -> _Capped:
    """Return a capped stream of ``data`` decompressed (zstd or lz4), after checking its header."""
    if compression == 'zstd':
        import zstandard

        try:
            claimed = zstandard.frame_content_size(data)
        except zstandard.ZstdError as error:
            raise BagError(f'{what}: invalid zstd data: {one_line(error)}') from None
        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    elif compression == 'lz4':
        import lz4.frame

        try:
            claimed = lz4.frame.get_frame_info(data)['content_size'] or -1
        except RuntimeError as error:
            raise BagError(f'{what}: invalid lz4 data: {one_line(error)}') from None
        raw = lz4.frame.open(io.BytesIO(data), 'rb')
    else:
        raise BagError(f'{what}: unknown compression {compression!r:.40}')
    if claimed > cap:
        raise BagLimitError(f'{what}: its {compression} frame claims {claimed} bytes, over the '
                            f'limit of {cap}')
    return _Capped(raw, cap, what, READ_PIECE)


def _skip(stream: Any, size: int) -> None:
    """Read and drop ``size`` bytes of ``stream`` in pieces."""
    while size > 0:
        piece = stream.read(min(size, READ_PIECE))
        if not piece:
            return
        size -= len(piece)


def _drain(stream: _Capped) -> None:
    """Read ``stream`` to its end in pieces (the cap of a :class:`_Capped` applies)."""
    while stream.read(READ_PIECE):
        pass


class _Scan:
    """What one pass learns beyond the limits: channel id -> topic, oversized messages skipped."""

    def __init__(self) -> None:
        from .channels import CHANNELS  # the node's own: replay reads them

        self.own = frozenset(channel.topic for channel in CHANNELS)
        self.topics: dict[int, str] = {}
        self.skipped: dict[str, int] = {}

    def channel(self, body: bytes) -> None:
        """Note a Channel record's ``(id, topic)`` (a malformed one is left to the readers)."""
        try:
            channel_id, _, length = struct.unpack_from('<HHI', body)
            self.topics[channel_id] = body[8:8 + length].decode('utf-8', 'replace')
        except struct.error:
            pass

    def skips(self, channel_id: int, size: int, limits: BagLimits) -> bool:
        """Return True (and count it) for an oversized message on a channel not the node's."""
        topic = self.topics.get(channel_id)
        if size <= limits.message_bytes or topic is None or topic in self.own:
            return False
        self.skipped[topic] = self.skipped.get(topic, 0) + 1
        return True


def _check_message(data: bytes, mode: str, limits: BagLimits, what: str) -> None:
    if len(data) > limits.message_bytes:
        raise BagLimitError(f'{what}: a message of {len(data)} bytes, over the limit of '
                            f'{limits.message_bytes}')
    if mode == 'message':
        _drain(_decompressed(data, 'zstd', limits.message_bytes, f'{what}: a message'))


def _check_chunk(chunk: Any, mode: str, limits: BagLimits, what: str, scan: _Scan) -> None:
    declared = chunk.uncompressed_size
    if declared > limits.chunk_bytes or len(chunk.data) > limits.chunk_bytes:
        raise BagLimitError(f'{what}: a chunk declares {max(declared, len(chunk.data))} bytes, '
                            f'over the limit of {limits.chunk_bytes}')
    if chunk.compression:
        stream = _decompressed(chunk.data, chunk.compression, declared, f'{what}: a chunk')
    else:
        stream = _Capped(io.BytesIO(chunk.data), declared, f'{what}: a chunk')
    record_limit = limits.message_bytes + MCAP_MESSAGE_HEADER
    try:
        while True:
            head = stream.read(9)
            if len(head) < 9:
                break
            opcode, length = struct.unpack('<BQ', head)
            if length > record_limit and opcode != MCAP_MESSAGE:
                raise BagLimitError(f'{what}: a record in a chunk declares {length} bytes, over '
                                    f'the limit of {record_limit}')
            if length > record_limit:  # a message: skipped if its channel is not the node's
                channel_id = struct.unpack('<H', stream.read(2).ljust(2, b'\0'))[0]
                if not scan.skips(channel_id, length - MCAP_MESSAGE_HEADER, limits):
                    raise BagLimitError(f'{what}: a record in a chunk declares {length} bytes, '
                                        f'over the limit of {record_limit}')
                _skip(stream, length - 2)  # read in pieces, within the chunk's cap
                continue
            body = stream.read(length)
            if opcode == MCAP_CHANNEL:
                scan.channel(body)
            elif opcode == MCAP_MESSAGE and len(body) == length:
                _check_message(body[MCAP_MESSAGE_HEADER:], mode, limits, what)
        _drain(stream)
    except BagError:
        raise
    except Exception as error:  # noqa: BLE001 - a corrupt compressed stream is one line
        raise BagError(f'{what}: corrupt chunk: {one_line(error)}') from None
    if stream.count != declared:
        raise BagLimitError(f'{what}: a chunk declares {declared} bytes uncompressed and holds '
                            f'{stream.count}')
    if chunk.uncompressed_crc and stream.crc != chunk.uncompressed_crc:
        raise BagError(f'{what}: chunk CRC mismatch (recorded {chunk.uncompressed_crc}, computed '
                       f'{stream.crc})')


def _check_mcap(stream: Any, mode: str, limits: BagLimits, what: str, scan: _Scan) -> None:
    from mcap.exceptions import EndOfFile, RecordLengthLimitExceeded
    from mcap.records import Channel, Chunk, Message
    from mcap.stream_reader import StreamReader

    reader = StreamReader(stream, skip_magic=False, emit_chunks=True, validate_crcs=True,
                          record_size_limit=limits.record_bytes)
    try:
        for record in reader.records:
            if isinstance(record, Chunk):
                _check_chunk(record, mode, limits, what, scan)
            elif isinstance(record, Channel):
                scan.topics[record.id] = record.topic
            elif isinstance(record, Message):
                if not scan.skips(record.channel_id, len(record.data), limits):
                    _check_message(record.data, mode, limits, what)
    except BagError:
        raise
    except RecordLengthLimitExceeded as error:
        raise BagLimitError(f'{what}: {one_line(error)}') from None
    except EndOfFile:
        return  # truncated: the readers say so
    except Exception as error:  # noqa: BLE001 - every library error is one line
        raise BagError(f'{what}: corrupt MCAP file: {one_line(error)}') from None


def _check_sqlite(file_path: pathlib.Path, mode: str, limits: BagLimits, what: str,
                  scan: _Scan) -> None:
    uri = file_path.resolve().as_uri() + '?mode=ro'
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as connection:
            scan.topics.update(connection.execute('SELECT id, name FROM topics'))
            if mode == 'message':
                for topic_id, data in connection.execute('SELECT topic_id, data FROM messages'):
                    if not scan.skips(topic_id, len(data), limits):
                        _check_message(bytes(data), mode, limits, what)
            else:
                for topic_id, largest, count in connection.execute(
                        'SELECT topic_id, max(length(data)), count(*) FROM messages '
                        'WHERE length(data) > ? GROUP BY topic_id', (limits.message_bytes,)):
                    if not scan.skips(topic_id, largest, limits):
                        raise BagLimitError(f'{what}: a message of {largest} bytes, over the '
                                            f'limit of {limits.message_bytes}')
                    name = scan.topics[topic_id]
                    scan.skipped[name] += count - 1  # skips() counted the first
    except sqlite3.Error as error:
        raise BagError(f'{what}: corrupt sqlite3 file: {one_line(error)}') from None


def check_storage(path: pathlib.Path, metadata: dict[str, Any],
                  limits: BagLimits = DEFAULT_LIMITS) -> dict[str, int]:
    """Check every storage file of the bag ``path`` against ``limits`` (BagLimitError otherwise).

    ``metadata`` is the validated ``rosbag2_bagfile_information``; the files were checked to be
    regular files with the right magic bytes. Return ``{topic: messages}`` skipped: over
    ``message_bytes`` on channels that are not the node's own (module documentation).
    """
    scan = _Scan()
    mode = compression_mode(metadata)
    storage = metadata['storage_identifier']
    for file_path in storage_paths(path, metadata):
        what = f'{path}: {file_path.name}'
        try:
            with open(file_path, 'rb') as raw:
                if mode == 'file':
                    stream = _file_stream(raw, limits, what)
                    if storage == 'mcap':
                        _check_mcap(stream, mode, limits, what, scan)
                    else:
                        _drain(stream)
                elif storage == 'mcap':
                    _check_mcap(raw, mode, limits, what, scan)
            if storage == 'sqlite3' and mode != 'file':
                _check_sqlite(file_path, mode, limits, what, scan)
        except BagError:
            raise
        except Exception as error:  # noqa: BLE001 - a corrupt compressed stream, an I/O error
            raise BagError(f'{what}: corrupt or unreadable: {one_line(error)}') from None
    return dict(scan.skipped)


def check_mcap_file(file_path: str | os.PathLike[str], limits: BagLimits = DEFAULT_LIMITS) -> None:
    """Check a bare ``.mcap`` file (no metadata.yaml) against ``limits`` (BagError otherwise)."""
    what = str(file_path)
    try:
        with open(file_path, 'rb') as raw:
            _check_mcap(raw, '', limits, what, _Scan())
    except BagError:
        raise
    except Exception as error:  # noqa: BLE001 - a corrupt compressed stream, an I/O error
        raise BagError(f'{what}: corrupt or unreadable: {one_line(error)}') from None


def _file_stream(raw: BinaryIO, limits: BagLimits, what: str) -> _Capped:
    import zstandard

    decompressed = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return _Capped(decompressed, limits.file_bytes, what, limits.record_bytes)


def readable_message_counts(file_path: str | os.PathLike[str],
                            limits: BagLimits = DEFAULT_LIMITS) -> dict[str, int]:
    """Return ``{topic: messages}`` readable from the start of an MCAP file, however it ends.

    For a file a failed write left without summary or footer (a full disk): mcap's stream
    reader reads records in file order and stops at the first incomplete one (or one over the
    limits), so this counts the messages of every complete chunk, what any reader can recover.
    """
    from collections import Counter

    from mcap.records import Channel, Message
    from mcap.stream_reader import StreamReader

    topics, counts = dict[int, str](), Counter[str]()
    with open(file_path, 'rb') as stream:
        try:
            for record in StreamReader(stream, skip_magic=False,
                                       record_size_limit=limits.record_bytes).records:
                if isinstance(record, Channel):
                    topics[record.id] = record.topic
                elif isinstance(record, Message):
                    counts[topics[record.channel_id]] += 1
        except Exception:  # noqa: BLE001,S110 - any reader error ends the readable prefix
            pass
    return dict(counts)
