# SPDX-License-Identifier: Apache-2.0
"""Read telemetry bags back into contracts, and replay them through the pure core.

- ``_DECODERS`` maps a ROS 2 type name to a decoder ``bytes -> contract`` (rosbags' generated
  CDR deserializers, then the core's validating constructors).
- :func:`bag_info` and :func:`read_bag` open a rosbag2 bag directory (ours, or one recorded by
  ``ros2 bag record``) with rosbags' ``Reader`` and check that every message it announces is read.
- :func:`replay_bag` feeds the recorded outcomes and raw assessments, in recorded order, through
  the same :class:`OutcomeWindow` and :func:`assess_with_feedback` as the feedback node, and
  compares each recomputed calibrated assessment with the recorded one.

Order. ``order='recorded'`` (default) reads messages in the order they were written: for the
node's telemetry bag that is the order the node processed them, so replay reproduces even
outcomes that arrived late; for a ``ros2 bag record`` bag it is receive order. ``order='stamp'``
reads in log-time order (ties in write order). Any problem with the bag (missing, not a bag,
truncated, corrupt, inconsistent counts) raises :class:`BagError` with a one-line message.
"""

from collections import Counter, deque
import dataclasses
import json
import math
import os
import pathlib
import struct
from typing import NamedTuple

from ..msg_decoding import (
    belief_from_msg,
    calibrated_from_msg,
    history_from_msg,
    outcome_from_msg,
)
from ..core import SelfAssessmentLevel
from ..core.feedback import (
    assess_with_feedback,
    DEFAULT_MAX_HISTORY,
    DEFAULT_POLICY,
    make_policy,
    policy_names,
    policy_parameters,
)
from ..core.window import OutcomeWindow
from .channels import (
    CHANNEL_BY_TYPE,
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_PREDICTION_OUTCOME,
)
from .msgdefs import typestore

DEFAULT_OUTCOME_BUFFER_SIZE = 1024
"""The feedback node's default ``outcome_buffer_size``."""

ORDERS = ('recorded', 'stamp')

# metadata.yaml custom_data keys written by the node's recorder (telemetry.recorder).
CUSTOM_PREFIX = 'ghost_feedback.'
CUSTOM_RECORDER = CUSTOM_PREFIX + 'recorder'
CUSTOM_POLICY = CUSTOM_PREFIX + 'policy'
CUSTOM_POLICY_PARAMETERS = CUSTOM_PREFIX + 'policy_parameters'
CUSTOM_MAX_HISTORY = CUSTOM_PREFIX + 'max_history'
CUSTOM_OUTCOME_BUFFER_SIZE = CUSTOM_PREFIX + 'outcome_buffer_size'
CUSTOM_CONFIG_CHANGES = CUSTOM_PREFIX + 'config_changes'


class BagError(Exception):
    """A bag cannot be read: missing, not a rosbag2 bag, truncated, corrupt or inconsistent."""


# -- decoders -------------------------------------------------------------------------------------

# The decoders are the live path's (msg_decoding reads rclpy and rosbags messages alike).
_belief = belief_from_msg
_history = history_from_msg
_calibrated = calibrated_from_msg
_outcome = outcome_from_msg


class _Decoder:
    """Decoder of one type: CDR bytes -> rosbags message -> contract (validated).

    Little-endian payloads go straight to rosbags' generated ``deserialize_cdr_le`` on a view of
    the body (no copy); anything it does not accept as a whole message (big endian, a bad header,
    bad bytes, trailing data) goes through ``Typestore.deserialize_cdr``, which decides and raises
    rosbags' own error: the result is that of ``deserialize_cdr`` in every case.
    """

    def __init__(self, msgtype, to_contract):
        store = typestore()
        msgdef = store.get_msgdef(msgtype)
        self.msgtype = msgtype
        self.__doc__ = f'Decode CDR bytes of {msgtype} into its contract.'
        self._to_contract = to_contract
        self._store = store
        self._deserialize_le = msgdef.deserialize_cdr_le
        self._cls = msgdef.cls

    def decode_message(self, payload):
        """Return ``(rosbags message, exact)``; ``exact``: the body holds nothing after it."""
        if payload[:2] == b'\x00\x01' and len(payload) >= 4:
            try:
                message, pos = self._deserialize_le(
                    memoryview(payload)[4:], 0, self._cls, self._store)
            except Exception:  # noqa: BLE001 - rosbags' entry point below raises its own error
                message = None
            if message is not None and pos + 7 >= len(payload):
                return message, pos + 4 == len(payload)
        return self._store.deserialize_cdr(payload, self.msgtype), False

    def decode_all(self, payload):
        """Return ``(contract, rosbags message, exact)`` (see :meth:`decode_message`)."""
        message, exact = self.decode_message(payload)
        return self._to_contract(message), message, exact

    def __call__(self, payload):
        """Return the contract decoded from ``payload``."""
        return self._to_contract(self.decode_message(payload)[0])


def _decoder(msgtype, to_contract):
    return _Decoder(msgtype, to_contract)


class _LazyDecoders(dict):
    """``_DECODERS``: type name -> decoder, built on first use (the typestore reads .msg files)."""

    _FACTORIES = {
        TYPE_CALIBRATED_SELF_ASSESSMENT: _calibrated,
        TYPE_BELIEF_SELF_ASSESSMENT: _belief,
        TYPE_PREDICTION_OUTCOME: _outcome,
    }

    def __missing__(self, msgtype):
        to_contract = self._FACTORIES.get(msgtype)
        if to_contract is None:
            raise KeyError(msgtype)
        decoder = self[msgtype] = _decoder(msgtype, to_contract)
        return decoder

    def __contains__(self, msgtype):
        return dict.__contains__(self, msgtype) or msgtype in self._FACTORIES

    def get(self, msgtype, default=None):
        return self[msgtype] if msgtype in self else default

    def types(self):
        return sorted(set(self._FACTORIES) | set(dict.keys(self)))


_DECODERS = _LazyDecoders()
"""ROS 2 type name (``pkg/msg/Type``) -> decoder ``bytes -> contract`` (ADR-0026 section 6)."""


def register_decoder(msgtype, decoder):
    """Register ``decoder`` (``bytes -> contract``) for the type name ``msgtype``."""
    _DECODERS[normalize_type_name(msgtype)] = decoder


def normalize_type_name(msgtype):
    """Return ``pkg/msg/Type`` for ``pkg/Type`` or ``pkg/msg/Type``."""
    parts = msgtype.split('/')
    if len(parts) == 2:
        return f'{parts[0]}/msg/{parts[1]}'
    return msgtype


def decode(msgtype, payload):
    """Decode ``payload`` (CDR bytes) of type ``msgtype`` into its contract.

    KeyError for a type without decoder; rosbags' SerdeError for bytes that are not valid CDR of
    that type; the core's ContractTypeError/ContractValueError for values a contract refuses.
    """
    return _DECODERS[normalize_type_name(msgtype)](payload)


# -- reading bags ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TopicInfo:
    """One topic of a bag: name, ROS 2 type, message count, RIHS01 hash, offered QoS."""

    name: str
    msgtype: str
    message_count: int
    type_description_hash: str
    offered_qos_profiles: tuple


@dataclasses.dataclass(frozen=True)
class BagInfo:
    """What a bag holds, from its metadata.yaml (validated by rosbags' Reader)."""

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

    @property
    def duration_ns(self):
        """Return end - start (0 for an empty bag)."""
        if self.start_time_ns is None:
            return 0
        return self.end_time_ns - self.start_time_ns

    def topic(self, name):
        """Return the TopicInfo called ``name``, or None."""
        return next((t for t in self.topics if t.name == name), None)


class BagMessage(NamedTuple):
    """One raw message of a bag."""

    topic: str
    msgtype: str
    log_time: int
    payload: bytes


class BagContract(NamedTuple):
    """One decoded message of a bag."""

    topic: str
    msgtype: str
    log_time: int
    contract: object


def _one_line(error, limit=300):
    """Return the message of ``error`` on one line, at most ``limit`` characters."""
    text = ' '.join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _reader_errors():
    from mcap.exceptions import McapError
    from rosbags.rosbag2 import ReaderError
    from rosbags.serde import SerdeError

    return (ReaderError, McapError, SerdeError, OSError, EOFError, ValueError, KeyError,
            IndexError, TypeError, AssertionError, UnicodeDecodeError, RuntimeError, struct.error,
            OverflowError)


def _check_path(path):
    path = pathlib.Path(path)
    if not path.exists():
        raise BagError(f'{path}: no such bag directory')
    if not path.is_dir():
        raise BagError(f'{path}: not a bag directory (a rosbag2 bag is a directory)')
    if not (path / 'metadata.yaml').is_file():
        raise BagError(
            f'{path}: no metadata.yaml (not a rosbag2 bag, or a recording that was not closed)')
    return path


def _load_metadata(path):
    """Return metadata.yaml's ``rosbag2_bagfile_information`` (rosbags has validated it).

    PyYAML's C loader when available (fast), else ruamel.yaml (a rosbags dependency).
    """
    text = (path / 'metadata.yaml').read_text(encoding='utf-8')
    try:
        import yaml

        loaded = yaml.load(text, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))
    except ImportError:
        from ruamel.yaml import YAML

        loaded = YAML(typ='safe').load(text)
    return loaded['rosbag2_bagfile_information']


def _open_reader(path):
    """Return ``(path, open rosbags Reader, metadata dict)`` or raise BagError."""
    from rosbags.rosbag2 import Reader

    path = _check_path(path)
    try:
        reader = Reader(path)
        reader.open()
    except _reader_errors() as error:
        raise BagError(f'{path}: cannot open bag: {_one_line(error)}') from None
    try:
        metadata = _load_metadata(path)
    except _reader_errors() as error:
        reader.close()
        raise BagError(f'{path}: invalid metadata.yaml: {_one_line(error)}') from None
    return path, reader, metadata


def _info_from_reader(path, reader, metadata):
    from rosbags.rosbag2.metadata import dump_qos_v9

    connections = sorted(reader.connections, key=lambda c: c.id)
    topics = tuple(
        TopicInfo(c.topic, normalize_type_name(c.msgtype), c.msgcount, c.digest,
                  tuple(dump_qos_v9(list(c.ext.offered_qos_profiles))))
        for c in connections)
    count = reader.message_count
    files = tuple(
        (str(item['path']), int(item.get('message_count', 0)))
        for item in metadata.get('files') or ())
    return BagInfo(
        path=str(path), version=int(metadata['version']),
        storage_identifier=str(metadata['storage_identifier']),
        ros_distro=reader.ros_distro or '', files=files, message_count=count,
        start_time_ns=reader.start_time if count else None,
        end_time_ns=reader.end_time - 1 if count else None,
        topics=topics, custom_data={
            str(k): str(v) for k, v in (metadata.get('custom_data') or {}).items()})


class _OpenBag:
    """A bag opened once: rosbags Reader (validates metadata.yaml and storage), info, messages."""

    def __init__(self, path):
        self.path, self.reader, self.metadata = _open_reader(path)
        try:
            self.info = _info_from_reader(self.path, self.reader, self.metadata)
        except _reader_errors() as error:
            self.reader.close()
            raise BagError(f'{self.path}: invalid bag metadata: {_one_line(error)}') from None

    def close(self):
        self.reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def messages(self, order='recorded', topics=None):
        """Yield BagMessage in ``order``, then check the per-topic counts (see iter_bag)."""
        if order not in ORDERS:
            raise ValueError(f'order must be one of {ORDERS}, got {order!r}')
        path = self.path
        expected = Counter()
        for connection in self.reader.connections:
            if topics is None or connection.topic in topics:
                expected[connection.topic] += connection.msgcount
        seen = Counter()
        try:
            for message in _iter_messages(path, self.reader, self.metadata, order, topics):
                seen[message.topic] += 1
                yield message
        except BagError:
            raise
        except _reader_errors() as error:
            raise BagError(
                f'{path}: corrupt or truncated bag after {sum(seen.values())} messages: '
                f'{_one_line(error)}') from None
        if +seen != +expected:
            diffs = ', '.join(
                f'{topic}: metadata.yaml {expected[topic]}, storage {seen[topic]}'
                for topic in sorted(set(seen) | set(expected)) if seen[topic] != expected[topic])
            raise BagError(f'{path}: inconsistent bag: message counts differ ({diffs})')


def bag_info(path):
    """Return the BagInfo of the bag directory ``path`` (BagError when it cannot be read)."""
    with _OpenBag(path) as bag:
        return bag.info


def _file_order_paths(path, metadata):
    """Return the MCAP files to read in file order, or None when rosbags must read the bag."""
    if metadata.get('storage_identifier') != 'mcap':
        return None
    if (metadata.get('compression_mode') or '').lower() not in ('', 'none'):
        return None  # file or message compression: rosbags decompresses (log-time order)
    return [path / pathlib.PurePath(name).name for name in metadata['relative_file_paths']]


def _iter_mcap_file_order(path, file_path, wanted):
    """Yield BagMessage from one MCAP file in file order (the mcap library's stream reader)."""
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader

    schemas = {}
    channels = {}
    with open(file_path, 'rb') as stream:
        for record in StreamReader(stream, validate_crcs=True).records:
            if isinstance(record, Message):
                channel = channels.get(record.channel_id)
                if channel is None:
                    raise BagError(
                        f'{path}: message on unknown channel id {record.channel_id} in '
                        f'{os.path.basename(file_path)}')
                if channel[2]:
                    yield BagMessage(channel[0], channel[1], record.log_time, record.data)
            elif isinstance(record, Schema):
                schemas[record.id] = record.name
            elif isinstance(record, Channel):
                msgtype = normalize_type_name(schemas.get(record.schema_id, ''))
                channels[record.id] = (
                    record.topic, msgtype, wanted is None or record.topic in wanted)


def _scan_storages(reader, file_paths):
    """Return the rosbags MCAP storages of ``file_paths`` that can scan in file order, or None.

    rosbags' ``Reader`` has already opened (and validated) every file of the bag; its MCAP storage
    reader's ``messages_scan`` yields the messages of a file in file order, ~6x faster than the
    mcap library's stream reader. None (then the stream reader is used) when this rosbags does
    not expose that, or when its files are not the bag's files in order.
    """
    storages = getattr(getattr(reader, 'storage', None), 'storages', None)
    if not isinstance(storages, list) or len(storages) != len(file_paths):
        return None
    for storage, file_path in zip(storages, file_paths):
        if (not callable(getattr(storage, 'messages_scan', None))
                or pathlib.Path(getattr(storage, 'path', '')).name != file_path.name):
            return None
    return storages


def _iter_storage_file_order(storage, wanted):
    """Yield BagMessage from one rosbags MCAP storage in file order (its ``messages_scan``)."""
    connections = [c for c in storage.connections if wanted is None or c.topic in wanted]
    if not connections:
        return
    names = {c.id: (c.topic, normalize_type_name(c.msgtype)) for c in connections}
    new = tuple.__new__
    # Explicit bounds: the default stop (sys.maxsize) would drop a message at log time 2**63 - 1.
    for connection, log_time, payload in storage.messages_scan(connections, 0, 2**64):
        topic, msgtype = names[connection.id]
        yield new(BagMessage, (topic, msgtype, log_time, payload))


def _iter_messages(path, reader, metadata, order, topics):
    wanted = None if topics is None else set(topics)
    file_paths = _file_order_paths(path, metadata) if order == 'recorded' else None
    if file_paths is not None:
        storages = _scan_storages(reader, file_paths)
        if storages is not None:
            for storage in storages:
                yield from _iter_storage_file_order(storage, wanted)
            return
        for file_path in file_paths:
            yield from _iter_mcap_file_order(path, file_path, wanted)
        return
    connections = [c for c in reader.connections if wanted is None or c.topic in wanted]
    if not connections:
        return
    for connection, log_time, payload in reader.messages(connections=connections):
        yield BagMessage(
            connection.topic, normalize_type_name(connection.msgtype), log_time, payload)


def iter_bag(path, *, order='recorded', topics=None):
    """Yield every BagMessage of the bag ``path`` (optionally only ``topics``) in ``order``.

    After the last message the per-topic counts are checked against metadata.yaml: a bag whose
    storage holds fewer or more messages than it announces raises BagError (this also catches
    rosbags' silent skip of a channel whose QoS differs between metadata.yaml and the MCAP).
    """
    with _OpenBag(path) as bag:
        yield from bag.messages(order, topics)


def read_bag(path, *, order='recorded', topics=None, skip_unknown=True):
    """Yield a BagContract for every message of a type with a decoder, in ``order``.

    Messages of other types are skipped (``skip_unknown``) or raise BagError. A message that
    does not decode, or that a contract refuses, raises BagError naming topic, index and stamp.
    """
    for index, message in enumerate(iter_bag(path, order=order, topics=topics)):
        decoder = _DECODERS[message.msgtype] if message.msgtype in _DECODERS else None
        if decoder is None:
            if skip_unknown:
                continue
            raise BagError(f'{path}: no decoder for type {message.msgtype} on {message.topic}')
        try:
            contract = decoder(message.payload)
        except _reader_errors() as error:
            raise BagError(
                f'{path}: message {index} on {message.topic} (log time {message.log_time}) does '
                f'not decode as {message.msgtype}: {_one_line(error)}') from None
        yield BagContract(message.topic, message.msgtype, message.log_time, contract)


# -- replay ---------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """What the node's output depends on: policy, its parameters, window sizes."""

    policy: str = DEFAULT_POLICY
    parameters: tuple = ()
    max_history: int = DEFAULT_MAX_HISTORY
    outcome_buffer_size: int = DEFAULT_OUTCOME_BUFFER_SIZE

    @classmethod
    def make(cls, policy, parameters=None, max_history=DEFAULT_MAX_HISTORY,
             outcome_buffer_size=DEFAULT_OUTCOME_BUFFER_SIZE):
        """Return a validated config (ValueError/TypeError naming the bad value)."""
        full = policy_parameters(policy)
        unknown = sorted(set(parameters or {}) - set(full))
        if unknown:
            raise ValueError(
                f'policy {policy!r} has no parameter(s) {", ".join(unknown)} '
                f'(it takes: {", ".join(sorted(full)) or "none"})')
        full.update(parameters or {})
        config = cls(policy, tuple(sorted(full.items())), max_history, outcome_buffer_size)
        config.make_policy()
        for name in ('max_history', 'outcome_buffer_size'):
            value = getattr(config, name)
            if type(value) is not int or value < 1:
                raise ValueError(f'{name} must be an int >= 1, got {value!r}')
        if outcome_buffer_size < max_history:
            raise ValueError(
                f'outcome_buffer_size ({outcome_buffer_size}) must be >= max_history '
                f'({max_history})')
        return config

    def make_policy(self):
        """Return the policy object."""
        return make_policy(self.policy, dict(self.parameters))

    def describe(self):
        """Return e.g. ``mahalanobis_downgrade(downgrade_threshold=2, min_outcomes=4)``."""
        parameters = ', '.join(f'{k}={v!r}' for k, v in self.parameters)
        return (f'{self.policy}({parameters}), max_history {self.max_history}, '
                f'outcome_buffer_size {self.outcome_buffer_size}')

    def to_dict(self):
        """Return a JSON-ready dict."""
        return {
            'policy': self.policy, 'parameters': dict(self.parameters),
            'max_history': self.max_history, 'outcome_buffer_size': self.outcome_buffer_size,
        }


def custom_data_for_config(policy_name, parameters, max_history, outcome_buffer_size):
    """Return the metadata.yaml custom_data entries recording a node configuration."""
    return {
        CUSTOM_POLICY: policy_name,
        CUSTOM_POLICY_PARAMETERS: json.dumps(dict(parameters), sort_keys=True),
        CUSTOM_MAX_HISTORY: str(max_history),
        CUSTOM_OUTCOME_BUFFER_SIZE: str(outcome_buffer_size),
    }


def coerce_parameters(policy, parameters):
    """Return ``parameters`` with string values converted to the type of the policy's default.

    ``{'downgrade_threshold': '3'}`` -> ``{'downgrade_threshold': 3}``; a value that does not
    convert, or an unknown parameter, is a ValueError naming it.
    """
    defaults = policy_parameters(policy)
    values = {}
    for key, value in (parameters or {}).items():
        if key not in defaults:
            raise ValueError(
                f'policy {policy!r} has no parameter {key!r} '
                f'(it takes: {", ".join(sorted(defaults)) or "none"})')
        default = defaults[key]
        if not isinstance(value, str) or isinstance(default, str):
            values[key] = value
            continue
        text = value.strip()
        try:
            if isinstance(default, bool):
                if text.lower() not in ('true', 'false'):
                    raise ValueError(text)
                values[key] = text.lower() == 'true'
            elif isinstance(default, int):
                values[key] = int(text)
            else:
                values[key] = float(text)
        except ValueError:
            raise ValueError(
                f'{key}={value}: expected {type(default).__name__} like the default '
                f'{default!r}') from None
    return values


def recorded_config(info, first_calibrated=None):
    """Return ``(ReplayConfig, source, warnings)`` for the configuration that recorded the bag.

    ``source`` is ``'recorded'`` when the bag's custom_data holds the node configuration (the
    node's recorder writes it); otherwise the defaults are assumed, with the policy named by the
    first recorded calibrated assessment when it is registered (``'assumed'``).
    """
    custom = info.custom_data
    warnings = []
    if CUSTOM_POLICY in custom:
        try:
            config = ReplayConfig.make(
                custom[CUSTOM_POLICY], json.loads(custom.get(CUSTOM_POLICY_PARAMETERS, '{}')),
                int(custom.get(CUSTOM_MAX_HISTORY, DEFAULT_MAX_HISTORY)),
                int(custom.get(CUSTOM_OUTCOME_BUFFER_SIZE, DEFAULT_OUTCOME_BUFFER_SIZE)))
        except (TypeError, ValueError) as error:
            warnings.append(f'recorded configuration unusable ({_one_line(error)}); '
                            'assuming defaults')
        else:
            changes = int(custom.get(CUSTOM_CONFIG_CHANGES, '0') or 0)
            if changes:
                warnings.append(
                    f'the node changed its parameters {changes} time(s) while recording; the '
                    'configuration above is the one at the start')
            return config, 'recorded', warnings
    else:
        warnings.append('the bag does not record the node configuration; assuming defaults')
    policy = DEFAULT_POLICY
    if first_calibrated is not None:
        recorded_policy = first_calibrated.adjustment_policy_id
        if recorded_policy in policy_names():
            policy = recorded_policy
        else:
            warnings.append(f'recorded policy {recorded_policy!r} is not registered here')
    return ReplayConfig.make(policy), 'assumed', warnings


@dataclasses.dataclass
class LevelSummary:
    """Calibrated levels of a sequence of assessments: counts, downgrades, first downgrade."""

    assessments: int = 0
    levels: dict = dataclasses.field(
        default_factory=lambda: {level.name: 0 for level in SelfAssessmentLevel})
    downgrades: int = 0
    first_downgrade_stamp_sim_ns: int | None = None

    def add(self, calibrated):
        """Count one calibrated assessment."""
        self.assessments += 1
        adjusted = calibrated.adjusted_overall_level
        raw = calibrated.raw_assessment.overall_level
        self.levels[adjusted.name] += 1
        if adjusted is not raw and adjusted < raw:  # members are singletons: skip __lt__ if same
            self.downgrades += 1
            if self.first_downgrade_stamp_sim_ns is None:
                self.first_downgrade_stamp_sim_ns = calibrated.raw_assessment.belief_stamp_sim_ns

    def to_dict(self):
        """Return a JSON-ready dict."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Difference:
    """The first field in which a recorded and a recomputed assessment differ."""

    index: int
    belief_stamp_sim_ns: int | None
    field: str
    recorded: object
    recomputed: object

    def to_dict(self):
        """Return a JSON-ready dict (non-finite floats as strings)."""
        return {
            'index': self.index, 'belief_stamp_sim_ns': self.belief_stamp_sim_ns,
            'field': self.field, 'recorded': _jsonable(self.recorded),
            'recomputed': _jsonable(self.recomputed),
        }


def _jsonable(value):
    if isinstance(value, SelfAssessmentLevel):
        return value.name
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if dataclasses.is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def first_field_difference(recorded, recomputed, path=''):
    """Return ``(field_path, recorded_value, recomputed_value)`` of the first difference, or None.

    Dataclasses are compared field by field and tuples item by item, depth first, so the path
    names the innermost differing value (e.g. ``calibration_history.count_beyond_3_std``).
    """
    if recorded == recomputed:
        return None
    if dataclasses.is_dataclass(recorded) and type(recorded) is type(recomputed):
        for field in dataclasses.fields(recorded):
            found = first_field_difference(
                getattr(recorded, field.name), getattr(recomputed, field.name),
                f'{path}.{field.name}' if path else field.name)
            if found is not None:
                return found
    if (isinstance(recorded, tuple) and isinstance(recomputed, tuple)
            and len(recorded) == len(recomputed)):
        for i, (a, b) in enumerate(zip(recorded, recomputed)):
            found = first_field_difference(a, b, f'{path}[{i}]')
            if found is not None:
                return found
    return (path or '(whole)', recorded, recomputed)


@dataclasses.dataclass
class ReplayReport:
    """Result of :func:`replay_bag`."""

    bag: str
    order: str
    mode: str
    recorded_config: ReplayConfig
    config_source: str
    replay_config: ReplayConfig
    outcomes: int = 0
    assessments: int = 0
    recorded_outputs: int = 0
    compared: int = 0
    differences: int = 0
    first_difference: Difference | None = None
    changed_levels: int = 0
    more_confident: int = 0
    less_confident: int = 0
    first_change: Difference | None = None
    recorded: LevelSummary = dataclasses.field(default_factory=LevelSummary)
    recomputed: LevelSummary = dataclasses.field(default_factory=LevelSummary)
    warnings: list = dataclasses.field(default_factory=list)

    @property
    def identical(self):
        """Return True/False when recorded outputs exist, None when there is nothing to compare."""
        if self.recorded_outputs == 0:
            return None
        return self.differences == 0 and self.recorded_outputs == self.assessments

    def to_dict(self):
        """Return a JSON-ready dict (the ``--json`` output of ``ghost-feedback replay``)."""
        return {
            'bag': self.bag, 'order': self.order, 'mode': self.mode,
            'recorded_config': self.recorded_config.to_dict(),
            'config_source': self.config_source,
            'replay_config': self.replay_config.to_dict(),
            'outcomes': self.outcomes, 'assessments': self.assessments,
            'recorded_outputs': self.recorded_outputs, 'compared': self.compared,
            'identical': self.identical, 'differences': self.differences,
            'first_difference': self.first_difference.to_dict()
            if self.first_difference else None,
            'changed_levels': self.changed_levels, 'more_confident': self.more_confident,
            'less_confident': self.less_confident,
            'first_change': self.first_change.to_dict() if self.first_change else None,
            'recorded': self.recorded.to_dict() if self.recorded_outputs else None,
            'recomputed': self.recomputed.to_dict(),
            'warnings': list(self.warnings),
        }


def _first_recorded_calibrated(bag):
    """Return the first recorded calibrated assessment (log-time order), or None."""
    topics = [t.name for t in bag.info.topics if t.msgtype == TYPE_CALIBRATED_SELF_ASSESSMENT]
    connections = [c for c in bag.reader.connections if c.topic in topics and c.msgcount]
    if not connections:
        return None
    try:
        for _, _, payload in bag.reader.messages(connections=connections):
            return decode(TYPE_CALIBRATED_SELF_ASSESSMENT, payload)
    except _reader_errors():
        return None  # the full read reports the problem
    return None


def _select_topics(info, warnings):
    """Return {msgtype: topic} for the three contract types (the default topic wins a tie)."""
    selected = {}
    for msgtype in (TYPE_PREDICTION_OUTCOME, TYPE_BELIEF_SELF_ASSESSMENT,
                    TYPE_CALIBRATED_SELF_ASSESSMENT):
        names = sorted(t.name for t in info.topics if normalize_type_name(t.msgtype) == msgtype)
        if not names:
            continue
        default = CHANNEL_BY_TYPE[msgtype].topic
        chosen = default if default in names else names[0]
        if len(names) > 1:
            warnings.append(f'several topics of type {msgtype} ({", ".join(names)}); '
                            f'replaying {chosen}')
        selected[msgtype] = chosen
    return selected


def replay_bag(path, *, policy=None, parameters=None, max_history=None,
               outcome_buffer_size=None, order='recorded'):
    """Replay the bag ``path`` through the pure core and compare with its recorded output.

    With no overrides the configuration is the recorded one (``mode='verify'``): every recomputed
    calibrated assessment must equal the recorded one. ``policy`` / ``parameters`` (merged over
    the recorded parameters when the policy is the recorded one) / ``max_history`` /
    ``outcome_buffer_size`` replay another configuration; parameter values given as strings are
    converted to the type of the parameter's default (``mode='compare'`` when it differs):
    the report then says what would have changed. Raise BagError for an unreadable bag and
    ValueError/TypeError for an invalid configuration.
    """
    if order not in ORDERS:
        raise ValueError(f'order must be one of {ORDERS}, got {order!r}')
    with _OpenBag(path) as bag:
        return _replay(bag, policy, parameters, max_history, outcome_buffer_size, order)


def _replay(bag, policy, parameters, max_history, outcome_buffer_size, order):
    info = bag.info
    warnings = []
    topics = _select_topics(info, warnings)
    if TYPE_BELIEF_SELF_ASSESSMENT not in topics:
        raise BagError(f'{info.path}: no {TYPE_BELIEF_SELF_ASSESSMENT} topic to replay')
    first = _first_recorded_calibrated(bag)
    base, source, config_warnings = recorded_config(info, first)
    warnings.extend(config_warnings)
    policy_name = base.policy if policy is None else policy
    merged = dict(base.parameters) if policy_name == base.policy else {}
    merged.update(coerce_parameters(policy_name, parameters))
    config = ReplayConfig.make(
        policy_name, merged, base.max_history if max_history is None else max_history,
        base.outcome_buffer_size if outcome_buffer_size is None else outcome_buffer_size)
    report = ReplayReport(
        bag=info.path, order=order, mode='verify' if config == base else 'compare',
        recorded_config=base, config_source=source, replay_config=config, warnings=warnings)

    policy_object = config.make_policy()
    history_size = config.max_history
    window = OutcomeWindow(config.outcome_buffer_size)
    add_outcome = window.add
    causal_window = window.causal_window
    decode_outcome = _DECODERS[TYPE_PREDICTION_OUTCOME]
    decode_raw = _DECODERS[TYPE_BELIEF_SELF_ASSESSMENT]
    comparer = _Comparer(report, fast=config.policy == base.policy)
    recomputed_queue = deque()
    recorded_queue = deque()
    recomputed_summary = report.recomputed
    outcome_topic = topics.get(TYPE_PREDICTION_OUTCOME)
    raw_topic = topics[TYPE_BELIEF_SELF_ASSESSMENT]
    calibrated_topic = topics.get(TYPE_CALIBRATED_SELF_ASSESSMENT)
    wanted = [t for t in (outcome_topic, raw_topic, calibrated_topic) if t is not None]
    # Fast comparison: the encoding of a recomputed assessment reuses the exact recorded body of
    # its raw assessment (adapters._BeliefMemo) instead of serializing it again.
    remember_belief = comparer.remember_belief
    decode_raw_all = None if remember_belief is None else getattr(decode_raw, 'decode_all', None)
    for index, (topic, msgtype, log_time, payload) in enumerate(bag.messages(order, wanted)):
        if topic == calibrated_topic:
            report.recorded_outputs += 1
            recorded_queue.append((index, log_time, payload))
        elif topic == outcome_topic:
            try:
                contract = decode_outcome(payload)
            except _reader_errors() as error:
                raise _decode_error(info.path, index, topic, log_time, msgtype, error) from None
            report.outcomes += 1
            add_outcome(contract)
            continue
        else:
            try:
                if decode_raw_all is None:
                    contract = decode_raw(payload)
                else:
                    contract, message, exact = decode_raw_all(payload)
                    if exact:
                        remember_belief(contract, message, memoryview(payload)[4:])
            except _reader_errors() as error:
                raise _decode_error(info.path, index, topic, log_time, msgtype, error) from None
            report.assessments += 1
            calibrated = assess_with_feedback(
                contract, causal_window(contract.belief_stamp_sim_ns, history_size),
                policy_object, history_size)
            recomputed_summary.add(calibrated)
            recomputed_queue.append(calibrated)
        while recomputed_queue and recorded_queue:
            comparer.compare(recorded_queue.popleft(), recomputed_queue.popleft(), calibrated_topic)
    if report.recorded_outputs and report.recorded_outputs != report.assessments:
        report.warnings.append(
            f'{report.recorded_outputs} recorded calibrated assessments for '
            f'{report.assessments} raw assessments; compared the first {report.compared}')
        for index, log_time, payload in recorded_queue:  # still count what was recorded
            report.recorded.add(comparer.decode(index, log_time, payload, calibrated_topic))
        if report.first_difference is None:
            report.first_difference = Difference(
                report.compared, None, '(count)', report.recorded_outputs, report.assessments)
    return report


def _decode_error(path, index, topic, log_time, msgtype, error):
    return BagError(
        f'{path}: message {index} on {topic} (log time {log_time}) does not decode as '
        f'{msgtype}: {_one_line(error)}')


class _Comparer:
    """Compare recorded calibrated payloads with recomputed contracts, into a ReplayReport.

    Fast path (``fast``: the replayed policy is the recorded one): when the recorded payload is
    byte-identical to the encoding of the recomputed assessment the two are equal (the encoding
    is deterministic and decoding is a function) and nothing is decoded. Otherwise the payload is
    decoded and compared field by field.
    """

    def __init__(self, report, fast):
        from .adapters import _get_codec, CalibratedSelfAssessmentToTelemetryAdapter

        self.report = report
        self.encode = CalibratedSelfAssessmentToTelemetryAdapter().encode if fast else None
        self.remember_belief = _get_codec().remember_decoded_belief if fast else None
        self.decoder = _DECODERS[TYPE_CALIBRATED_SELF_ASSESSMENT]
        self.index = 0

    def decode(self, index, log_time, payload, topic):
        try:
            return self.decoder(payload)
        except _reader_errors() as error:
            raise _decode_error(
                self.report.bag, index, topic, log_time, TYPE_CALIBRATED_SELF_ASSESSMENT,
                error) from None

    def compare(self, recorded_item, recomputed, topic):
        report = self.report
        index = self.index
        self.index += 1
        report.compared += 1
        if self.encode is not None and self.encode(recomputed) == recorded_item[2]:
            report.recorded.add(recomputed)
            return
        recorded = self.decode(*recorded_item, topic)
        report.recorded.add(recorded)
        _compare(report, index, recorded, recomputed)


def _compare(report, index, recorded, recomputed):
    if recorded == recomputed:
        return
    report.differences += 1
    stamp = recomputed.raw_assessment.belief_stamp_sim_ns
    if report.first_difference is None:
        field, a, b = first_field_difference(recorded, recomputed)
        report.first_difference = Difference(index, stamp, field, a, b)
    if recorded.adjusted_overall_level != recomputed.adjusted_overall_level:
        report.changed_levels += 1
        if recomputed.adjusted_overall_level > recorded.adjusted_overall_level:
            report.more_confident += 1
        else:
            report.less_confident += 1
        if report.first_change is None:
            report.first_change = Difference(
                index, stamp, 'adjusted_overall_level', recorded.adjusted_overall_level,
                recomputed.adjusted_overall_level)


def summary_line(report):
    """Return a one-line verdict of a verify-mode ReplayReport."""
    if report.identical is None:
        return (f'replay: {report.assessments} assessments recomputed, nothing recorded to '
                'compare with')
    if report.identical:
        return (f'replay OK: {report.compared} calibrated assessments recomputed from '
                f'{report.outcomes} outcomes equal the recorded ones '
                f'({report.replay_config.describe()})')
    first = report.first_difference
    where = ''
    if first is not None:
        where = (f'; first at assessment #{first.index} (belief stamp '
                 f'{first.belief_stamp_sim_ns}): {first.field} recorded '
                 f'{_jsonable(first.recorded)!r}, recomputed {_jsonable(first.recomputed)!r}')
    return (f'replay MISMATCH: {report.differences} of {report.compared} recomputed calibrated '
            f'assessments differ from the recorded ones{where}')


def verify_bag(path, *, order='recorded'):
    """Replay ``path`` with its recorded configuration; return ``(ok, one-line text)``.

    ``ok`` is True only when every recorded calibrated assessment was recomputed identically
    (and there was at least one). A bag that cannot be read gives ``(False, the BagError text)``.
    """
    try:
        report = replay_bag(path, order=order)
    except BagError as error:
        return False, f'replay failed: {error}'
    return report.identical is True, summary_line(report)
