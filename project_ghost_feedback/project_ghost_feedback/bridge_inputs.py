# SPDX-License-Identifier: Apache-2.0
"""An ordinary rosbag2 bag -> the bridge's outcomes and assessments, offline.

:func:`bridge_outputs` reads an estimate topic and a reference topic of any rosbag2 bag (MCAP or
sqlite3, with rosbags' public ``AnyReader``), feeds them in recorded order through the bridge's
own engine (:class:`~..bridge.pairing.PairingEngine`, the one the live node drives), and yields
what the bridge would have published: ``('outcome', PredictionOutcome)`` and
``('assessment', BeliefSelfAssessment)``, an outcome always before the assessment of its stamp.

Time offline: the engine's clock is each message's own header stamp (the bag's receive times
say when the recorder saw a message, not when the bridge would have). So no input is refused as
``future_stamp`` and no backward clock jump happens; every other rule (pairing, waits, gaps,
stamp resets, frames, pacing) is the live bridge's.

Frames: with ``use_tf`` (the default) the bag's /tf and /tf_static (tf2_msgs/TFMessage) go, in
recorded order with the inputs, into tf2's ``BufferCore`` (no ROS graph), which answers the
engine's lookups as the live bridge's tf2_ros Buffer does (bridge/tf2_transforms.py): the same
rule, the same waits (in input time), the same counts. Without tf2 importable a bag with /tf is
an error (one line); a bag without it is evaluated without tf, as the live bridge would run.

The bridge's parameters come from the same YAML file the bridge launch uses
(config/outcome_bridge.yaml): :func:`bridge_parameters`. :func:`add_input_arguments` adds the
options that choose these inputs (``--estimate``, ``--reference``, ``--params-file``) to the
command lines that read them (``ghost-feedback evaluate`` and ``audit``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
import os
import pathlib
from typing import Any, cast, TYPE_CHECKING
from .core import NS_PER_S

if TYPE_CHECKING:
    import argparse

    from .bridge.engine_interface import Estimate
    from .core import BeliefSelfAssessment, PredictionOutcome
    from .core.feedback import PoseErrorStatistics, TransformStep

Output = tuple[str, Any]
"""``(OUTCOME, PredictionOutcome)`` or ``(ASSESSMENT, BeliefSelfAssessment)``."""

OUTCOME, ASSESSMENT = 'outcome', 'assessment'
TF_TOPICS = {'/tf': False, '/tf_static': True}   # topic -> static
TF_TYPE = 'tf2_msgs/msg/TFMessage'


class BagInputError(Exception):
    """A bag or an option whose bridge inputs cannot be read; the message is one line."""


def flatten_parameters(values: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
    """Flatten nested ROS parameters of a parameter file (``a: {b: 1}`` -> ``{'a.b': 1}``)."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(flatten_parameters(value, f'{prefix}{key}.'))
        else:
            flat[f'{prefix}{key}'] = value
    return flat


def read_parameter_file(params_file: str | os.PathLike[str], node_name: str,
                        table: Mapping[str, Any], what: str) -> dict[str, Any]:
    """Return the values a ROS 2 parameter file sets for ``node_name`` (checked against ``table``).

    Sections ``/**``, ``node_name`` and ``/node_name`` (``ros__parameters``; nested keys dotted).
    ``table`` maps each known name to its ParameterSpec: an unknown key or a value of another
    type than the default's is a BagInputError naming it (``what``: e.g. 'bridge parameter');
    an int is taken for a float; ``use_sim_time`` and ``qos_overrides.*`` are ignored.
    """
    import yaml

    try:
        loaded = yaml.safe_load(pathlib.Path(params_file).read_text(encoding='utf-8'))
    except (OSError, yaml.YAMLError) as error:
        raise BagInputError(f'{params_file}: {" ".join(str(error).split())}') from None
    if not isinstance(loaded, dict):
        raise BagInputError(f'{params_file}: not a ROS 2 parameter file')
    values: dict[str, Any] = {}
    for node in ('/**', node_name, f'/{node_name}'):
        section = loaded.get(node)
        if not (isinstance(section, dict) and isinstance(section.get('ros__parameters'), dict)):
            continue
        for name, value in flatten_parameters(section['ros__parameters']).items():
            if name == 'use_sim_time' or name.startswith('qos_overrides.'):
                continue
            if name not in table:
                raise BagInputError(f'{params_file}: unknown {what} {name!r}')
            default = table[name].default
            if isinstance(default, float) and isinstance(value, int) \
                    and not isinstance(value, bool):
                value = float(value)
            if type(value) is not type(default) and not (
                    isinstance(default, list) and isinstance(value, list)):
                raise BagInputError(
                    f'{params_file}: {name} must be a {type(default).__name__}, got {value!r}')
            values[name] = value
    return values


def bridge_parameters(params_file: str | os.PathLike[str] | None = None,
                      node_name: str = 'outcome_bridge') -> dict[str, Any]:
    """Return the bridge's parameter values: its defaults, overridden by ``params_file``.

    ``params_file`` is a ROS 2 parameter file (``/**:`` or the node name, then
    ``ros__parameters``; nested keys are dotted: ``decorrelation.adaptive``), as the launch uses.
    Unknown keys, values of the wrong type and out-of-range values are a BagInputError naming
    them; ``use_sim_time`` is ignored.
    """
    from .bridge.parameters import config_from, PARAMETERS
    from .parameter_spec import ParameterError

    values = {name: spec.default for name, spec in PARAMETERS.items()}
    if params_file is not None:
        values.update(read_parameter_file(params_file, node_name, PARAMETERS,
                                          'bridge parameter'))
    try:
        config_from(values)
    except ParameterError as error:
        raise BagInputError(f'{params_file or "bridge parameters"}: {error}') from None
    return values


def _topic(path: object, reader: Any, name: str, kind: str,
           allowed: tuple[str, ...]) -> list[Any]:
    connections = [c for c in reader.connections if c.topic == name]
    if not connections:
        topics = ', '.join(sorted({c.topic for c in reader.connections})) or 'none'
        raise BagInputError(f'{path}: no {kind} topic {name} in the bag '
                            f'(topics: {topics})')
    types = {c.msgtype for c in connections}
    wrong = types - set(allowed)
    if wrong:
        raise BagInputError(f'{path}: {kind} topic {name} has type '
                            f'{", ".join(sorted(wrong))}; expected one of {", ".join(allowed)}')
    return connections


def open_reader(path: str | os.PathLike[str]) -> Any:
    """Return an opened rosbags ``AnyReader`` of a bag directory or an .mcap file."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import get_typestore, Stores

    path = pathlib.Path(path)
    if path.is_dir() and not (path / 'metadata.yaml').is_file():
        raise BagInputError(f'{path}: not a rosbag2 bag directory (no metadata.yaml)')
    if not path.is_dir() and not (path.is_file() and path.suffix == '.mcap'):
        raise BagInputError(f'{path}: neither a rosbag2 bag directory nor an .mcap file')
    # Every read has a ceiling, as for info/replay/audit: metadata.yaml validated and every
    # storage file checked in one bounded pass (chunk and message sizes, capped decompression,
    # CRCs) before rosbags opens anything.
    from .telemetry.bag_limits import check_mcap_file
    from .telemetry.bag_metadata import BagError
    from .telemetry.bag_reader import load_metadata

    try:
        if path.is_dir():
            load_metadata(path)
        else:
            check_mcap_file(path)
    except BagError as error:
        raise BagInputError(str(error)) from None
    try:
        reader = AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY))
        reader.open()
    except Exception as error:  # noqa: BLE001 - every library error is one line
        raise BagInputError(f'{path}: cannot open bag: {" ".join(str(error).split())}') \
            from None
    return reader


class StampRange:
    """First and last header stamp (ns) of one input."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.last: int | None = None
        self.count = 0

    def add(self, stamp_ns: int) -> None:
        """Note one stamp."""
        self.count += 1
        self.first = stamp_ns if self.first is None else min(self.first, stamp_ns)
        self.last = stamp_ns if self.last is None else max(self.last, stamp_ns)

    def overlaps(self, other: StampRange) -> bool:
        """Return True when both ranges exist and intersect."""
        return (self.first is not None and self.last is not None and other.first is not None
                and other.last is not None and self.first <= other.last
                and other.first <= self.last)

    def text(self) -> str:
        """Return ``[first, last] s`` or ``no message``."""
        if self.first is None or self.last is None:
            return 'no message'
        return f'[{self.first / NS_PER_S:.3f}, {self.last / NS_PER_S:.3f}] s'


def _collector() -> Any:
    from .bridge.engine_interface import EngineListener
    from .core.feedback import PoseErrorStatistics

    class Collect(EngineListener):
        """The engine listener of an offline run: keeps the outputs in the order handed over.

        ``errors``: the pose error of every paired estimate, paced out or not (evo's APE).
        """

        def __init__(self) -> None:
            self.events: list[Output] = []
            self.errors = PoseErrorStatistics()
            self.transform_steps: list[TransformStep] = []

        def transform_step(self, step: TransformStep) -> None:
            self.transform_steps.append(step)

        def outcome_ready(self, outcome: PredictionOutcome, estimate: Estimate) -> None:
            self.events.append((OUTCOME, outcome))
            self.errors.add(outcome.position_error_m, outcome.orientation_error_rad)

        def paced_out(self, outcome: PredictionOutcome, estimate: Estimate) -> None:
            self.errors.add(outcome.position_error_m, outcome.orientation_error_rad)

        def assessment_ready(self, belief: BeliefSelfAssessment, estimate: Estimate) -> None:
            self.events.append((ASSESSMENT, belief))

    return Collect()


class BridgeRun:
    """One offline bridge run over a bag: iterate it for the outputs, then read the counts."""

    def __init__(self, path: str | os.PathLike[str], estimate_topic: str, reference_topic: str,
                 values: Mapping[str, Any],
                 tf_topics: Mapping[str, bool] | None = None) -> None:
        from .bridge.pairing import PairingEngine
        from .bridge.parameters import engine_config

        self.path = str(path)
        self.tf_topics = dict(TF_TOPICS if tf_topics is None else tf_topics)
        """The bag's tf topics -> static (``/robot1/tf``: False, ``/robot1/tf_static``: True)."""
        self.estimate_topic, self.reference_topic = estimate_topic, reference_topic
        self._listener = _collector()
        self.engine = PairingEngine(
            cast(dict[str, Any], engine_config(values)), self._listener,
            reference_buffer_size=values['reference_buffer_size'],
            pending_capacity=values['pending_capacity'])
        self.ranges = {'estimate': StampRange(), 'reference': StampRange()}
        self.undecodable = {'estimate': 0, 'reference': 0}
        """Messages of each input that did not decode (a cut CDR): skipped, counted."""
        self.estimate_type = self.reference_type = None
        self.bag_start_ns = self.bag_end_ns = None
        self._use_tf = values['use_tf']
        self._tf_cache_s = values['tf.cache_s']
        self.tf_state = 'off (use_tf false)'
        self.tf_messages = 0
        self.oversized = {'estimate': 0, 'reference': 0, 'tf': 0}
        """Messages over the readers' 1 MiB message limit (``info``'s): skipped, counted."""

    def take_transform_steps(self) -> list[TransformStep]:
        """Return the engine's transform steps (bridge/frame_steps.py) since the last call.

        A step is handed over while its estimate is paired, so before that estimate's outputs.
        """
        steps, self._listener.transform_steps = self._listener.transform_steps, []
        return steps

    @property
    def errors(self) -> PoseErrorStatistics:
        """Return the PoseErrorStatistics of every paired estimate so far."""
        return self._listener.errors

    def _tf_connections(self, reader: Any) -> list[Any]:
        """Return the bag's tf connections (``tf_topics``) and start tf (or raise why not)."""
        connections = [c for c in reader.connections
                       if c.topic in self.tf_topics and c.msgtype == TF_TYPE]
        if not self._use_tf:
            return []
        from .bridge.tf2_transforms import tf2_missing

        missing = tf2_missing()
        if missing is not None:
            if connections:
                raise BagInputError(f'{self.path}: the bag has /tf but {missing} (or set '
                                    'use_tf: false in --params-file)')
            self.tf_state = f'unavailable: {missing}'
            return []
        from .bridge.tf2_transforms import offline_buffer, Tf2Transforms

        self._tf_core = offline_buffer(self._tf_cache_s)
        self.engine.transforms = Tf2Transforms(self._tf_core)
        self.tf_state = 'on'
        return connections

    def __iter__(self) -> Iterator[Output]:
        from .bridge.parameters import ESTIMATE_TYPE_CHOICES, REFERENCE_TYPE_CHOICES
        from .msg_decoding import stamp_to_ns
        from .telemetry.bag_limits import DEFAULT_LIMITS

        reader = open_reader(self.path)
        try:
            estimates = _topic(self.path, reader, self.estimate_topic, 'estimate',
                               tuple(ESTIMATE_TYPE_CHOICES.values()))
            references = _topic(self.path, reader, self.reference_topic, 'reference',
                                tuple(REFERENCE_TYPE_CHOICES.values()))
            self.estimate_type = estimates[0].msgtype
            self.reference_type = references[0].msgtype
            self.bag_start_ns, self.bag_end_ns = reader.start_time, reader.end_time
            kinds = {c.id: 'estimate' for c in estimates}
            kinds.update({c.id: 'reference' for c in references})
            tf = self._tf_connections(reader)
            kinds.update({c.id: 'tf' for c in tf})
            engine = self.engine
            events = self._listener.events
            for connection, _, rawdata in reader.messages(
                    connections=estimates + references + tf):
                kind = kinds[connection.id]
                if len(rawdata) > DEFAULT_LIMITS.message_bytes:
                    self.oversized[kind] += 1  # what ``info`` skips is not decoded here either
                    continue
                try:
                    msg = reader.deserialize(rawdata, connection.msgtype)
                except Exception:  # noqa: BLE001 - any decoder error: counted, skipped
                    self.undecodable[kind] = self.undecodable.get(kind, 0) + 1  # + 'tf'
                    continue
                if kind == 'tf':
                    # The node's rule: the engine's gate, then tf2; its clock offline is the
                    # newest accepted input stamp.
                    self.tf_messages += 1
                    engine.take_transforms(msg, self.tf_topics[connection.topic])
                    continue
                try:
                    clock_ns = stamp_to_ns(msg.header.stamp, kind, 'header.stamp')
                except ValueError:
                    clock_ns = None
                if clock_ns is not None:
                    self.ranges[kind].add(clock_ns)
                if kind == 'estimate':
                    engine.take_estimate(msg, clock_ns)
                else:
                    engine.take_reference(msg, clock_ns)
                yield from events
                events.clear()
            engine.flush()
            yield from events
            events.clear()
        finally:
            reader.close()

    def why_nothing_paired(self) -> str | None:
        """Return why no estimate paired with a reference (one line), or None when some did.

        Names the inputs' counts, the drop reasons by count and, when references waited for tf
        that the bag does not hold, which tf topics were read.
        """
        engine = self.engine
        if engine.paired:
            return None

        def reasons(counter: Mapping[str, int]) -> str:
            ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
            return ', '.join(f'{reason} {count}' for reason, count in ranked) or 'none'
        estimates, references = self.ranges['estimate'].count, self.ranges['reference'].count
        line = (f'{self.path}: 0 of {estimates} estimates paired with a reference '
                f'({references} references); estimates dropped: {reasons(engine.dropped)}; '
                f'references dropped: {reasons(engine.references_dropped)}')
        if any(reason.startswith('tf_') for reason in engine.references_dropped):
            topics = ', '.join(self.tf_topics)
            line += (f'; tf {self.tf_state}, {self.tf_messages} messages on {topics} (record the '
                     'tf topics with the inputs, or name them with --tf-topics)')
        return line

    def check_overlap(self) -> None:
        """Raise BagInputError when nothing paired because the two inputs never overlap."""
        estimate, reference = self.ranges['estimate'], self.ranges['reference']
        if not self.engine.paired and not estimate.overlaps(reference):
            raise BagInputError(
                f'{self.path}: {self.estimate_topic} (header stamps {estimate.text()}) and '
                f'{self.reference_topic} ({reference.text()}) do not overlap in time')

    def counts(self) -> dict[str, Any]:
        """Return the engine's counts as a JSON-ready dict."""
        engine = self.engine
        return {
            'estimates': self.ranges['estimate'].count,
            'references': self.ranges['reference'].count,
            'paired': engine.paired,
            'outcomes': engine.outcomes,
            'outcomes_paced_out': engine.paced_out,
            'assessments': engine.assessments,
            'estimates_dropped': dict(sorted(engine.dropped.items())),
            'references_dropped': dict(sorted(engine.references_dropped.items())),
            'resets': dict(sorted(engine.resets.items())),
            'undecodable_skipped': dict(self.undecodable),
            'tf': self.tf_state,
            'tf_messages': self.tf_messages,
            'tf_transforms_accepted': engine.transforms_accepted,
            'tf_transforms_refused': sum(engine.transforms_refused.values()),
            'tf_transforms_refused_by_reason': dict(sorted(engine.transforms_refused.items())),
            'oversized_skipped': dict(self.oversized),
        }


def bridge_outputs(path: str | os.PathLike[str], estimate_topic: str, reference_topic: str,
                   values: Mapping[str, Any],
                   tf_topics: Mapping[str, bool] | None = None) -> BridgeRun:
    """Return a :class:`BridgeRun`; iterate it for ``(kind, contract)`` in publication order.

    ``tf_topics``: the bag's tf topics, each with True for static (default /tf, /tf_static).
    """
    return BridgeRun(path, estimate_topic, reference_topic, values, tf_topics)


def tf_topics_option(text: str) -> dict[str, bool]:
    """Return ``{tf: False, tf_static: True}`` of ``--tf-topics TF,TF_STATIC`` (ValueError)."""
    parts = [part.strip() for part in text.split(',')]
    if len(parts) != 2 or not all(part.startswith('/') and len(part) > 1 for part in parts) \
            or parts[0] == parts[1]:
        raise ValueError(f'--tf-topics must be two absolute topics TF,TF_STATIC (e.g. '
                         f'/robot1/tf,/robot1/tf_static), got {text!r}')
    return {parts[0]: False, parts[1]: True}


def add_input_arguments(parser: argparse.ArgumentParser, note: str = '',
                        required: bool = False) -> None:
    """Add --estimate, --reference, --params-file and --tf-topics (evaluate and audit share them).

    ``required``: both topics must be given (argparse says so in the usage line and the help).
    """
    must = 'required: ' if required else ''
    parser.add_argument('--estimate', metavar='TOPIC', required=required,
                        help=f'{must}estimate topic (nav_msgs/Odometry or '
                        'PoseWithCovarianceStamped)' + note)
    parser.add_argument('--reference', metavar='TOPIC', required=required,
                        help=f'{must}reference topic (Odometry, PoseStamped or '
                        'PoseWithCovarianceStamped)' + ('' if required else
                                                        '; goes with --estimate'))
    parser.add_argument('--params-file', metavar='YAML',
                        help="the bridge's parameter file (default: the bridge's defaults), e.g. "
                        'project_ghost_feedback/config/outcome_bridge.yaml')
    parser.add_argument('--tf-topics', metavar='TF,TF_STATIC',
                        help="the bag's tf topics (default /tf,/tf_static), e.g. "
                        '/robot1/tf,/robot1/tf_static for a robot with namespaced tf')
