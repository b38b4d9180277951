# SPDX-License-Identifier: Apache-2.0
"""A rosbag2 bag's metadata.yaml and storage files, checked before any library opens them.

- :func:`read_metadata` refuses a path that is not a directory, a ``metadata.yaml`` or storage
  file that is not a regular file (a FIFO would block a reader forever), a ``metadata.yaml`` over
  1 MiB; validates every key rosbag2 needs, with its type (:func:`validate_metadata`); and checks
  that the storage files exist and that their magic bytes match the compression fields.
- :class:`BagError` is the one error of the bag layer, with a one-line message (:func:`one_line`).

The size limits of the storage's content are :mod:`.bag_limits`'; opening and reading a bag is
:mod:`.bag_reader`'s.
"""

import os
import pathlib
import stat
from typing import Any, NoReturn

METADATA_MAX_BYTES = 1 << 20
"""Largest metadata.yaml read (1 MiB; rosbag2 writes a few kB per topic)."""

SUPPORTED_VERSIONS = range(1, 10)
"""metadata.yaml versions read (rosbag2 Jazzy writes 9 and reads 1 to 9)."""

STORAGE_MAGIC = {'mcap': b'\x89MCAP0\r\n', 'sqlite3': b'SQLite format 3\x00'}
ZSTD_MAGIC = b'\x28\xb5\x2f\xfd'


class BagError(Exception):
    """A bag cannot be read: missing, not a rosbag2 bag, truncated, corrupt or inconsistent."""


def normalize_type_name(msgtype: str) -> str:
    """Return ``pkg/msg/Type`` for ``pkg/Type`` or ``pkg/msg/Type``."""
    parts = msgtype.split('/')
    if len(parts) == 2:
        return f'{parts[0]}/msg/{parts[1]}'
    return msgtype


def one_line(error: object, limit: int = 300) -> str:
    """Return the message of ``error`` on one line, at most ``limit`` characters."""
    text = ' '.join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + '...'


# -- checks before any library opens a file ---------------------------------------------------

def regular_file(path: str | os.PathLike[str], what: str) -> None:
    """Raise BagError unless ``path`` is a regular file (stat only: a FIFO is never opened)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise BagError(f'{path}: cannot read {what}: {one_line(error)}') from None
    if not stat.S_ISREG(mode):
        raise BagError(f'{path}: {what} is not a regular file')


def _check_path(path: str | os.PathLike[str]) -> pathlib.Path:
    path = pathlib.Path(path)
    if not path.exists():
        raise BagError(f'{path}: no such bag directory')
    if not path.is_dir():
        raise BagError(f'{path}: not a bag directory (a rosbag2 bag is a directory)')
    metadata = path / 'metadata.yaml'
    if not metadata.exists():
        raise BagError(
            f'{path}: no metadata.yaml (not a rosbag2 bag, or a recording that was not closed)')
    regular_file(metadata, 'metadata.yaml')
    return path


def _read_metadata_text(path: pathlib.Path) -> str:
    with open(path / 'metadata.yaml', 'rb') as stream:
        data = stream.read(METADATA_MAX_BYTES + 1)
    if len(data) > METADATA_MAX_BYTES:
        raise BagError(f'{path}: metadata.yaml is larger than {METADATA_MAX_BYTES} bytes')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as error:
        raise BagError(f'{path}: metadata.yaml is not UTF-8: {one_line(error)}') from None


def parse_yaml(text: str) -> Any:
    """Return the YAML ``text`` loaded safely (libyaml's loader when available)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))


class _Checker:
    """Type checks of metadata.yaml values, each failing with the key path in the message."""

    def __init__(self, path: object) -> None:
        self.path = path

    def fail(self, key: str, text: str) -> NoReturn:
        raise BagError(f'{self.path}: invalid metadata.yaml: {key} {text}')

    def mapping(self, value: Any, key: str) -> Any:
        if not isinstance(value, dict):
            self.fail(key, f'must be a mapping, got {type(value).__name__}')
        return value

    def get(self, mapping: Any, name: str, key: str, required: bool = True) -> Any:
        if name not in mapping:
            if required:
                self.fail(f'{key}.{name}' if key else name, 'is missing')
            return None
        return mapping[name]

    def integer(self, value: Any, key: str, minimum: int | None = None) -> Any:
        if type(value) is not int:
            self.fail(key, f'must be an integer, got {value!r:.60}')
        if minimum is not None and value < minimum:
            self.fail(key, f'must be >= {minimum}, got {value}')
        return value

    def string(self, value: Any, key: str, empty: bool = True) -> Any:
        if not isinstance(value, str):
            self.fail(key, f'must be a string, got {value!r:.60}')
        if not empty and not value.strip():
            self.fail(key, 'must not be empty')
        return value

    def sequence(self, value: Any, key: str) -> Any:
        if not isinstance(value, list):
            self.fail(key, f'must be a list, got {type(value).__name__}')
        return value


def validate_metadata(path: object, loaded: object) -> dict[str, Any]:
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


def compression_mode(metadata: dict[str, Any]) -> str:
    """Return ``'file'``, ``'message'`` or ``''`` (none)."""
    mode = (metadata.get('compression_mode') or '').lower()
    return '' if mode == 'none' else mode


def storage_paths(path: pathlib.Path, metadata: dict[str, Any]) -> list[pathlib.Path]:
    """Return the storage files of the bag (as rosbag2 resolves relative_file_paths)."""
    return [path / pathlib.PurePath(name).name for name in metadata['relative_file_paths']]


def _check_storage_files(path: pathlib.Path, metadata: dict[str, Any]) -> None:
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
        regular_file(file_path, f'storage file {file_path.name}')
        with open(file_path, 'rb') as stream:
            head = stream.read(len(magic))
        if head != magic:
            what = ('zstd-compressed (compression_mode file)' if mode == 'file'
                    else f'a {metadata["storage_identifier"]} file')
            raise BagError(f'{path}: storage file {file_path.name} is not {what}')


def read_metadata(path: str | os.PathLike[str]) -> tuple[pathlib.Path, dict[str, Any]]:
    """Return ``(bag directory, validated metadata)``: the checks above, storage content aside.

    BagError with one line otherwise. :func:`.bag_reader.load_metadata` adds the storage's size
    limits (:mod:`.bag_limits`).
    """
    path = _check_path(path)
    text = _read_metadata_text(path)
    try:
        loaded = parse_yaml(text)
    except Exception as error:  # noqa: BLE001 - any YAML error is one line
        raise BagError(f'{path}: metadata.yaml is not valid YAML: {one_line(error)}') from None
    metadata = validate_metadata(path, loaded)
    _check_storage_files(path, metadata)
    return path, metadata
