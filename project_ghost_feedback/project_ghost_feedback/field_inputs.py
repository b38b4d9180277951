# SPDX-License-Identifier: Apache-2.0
"""A bag without ground truth -> the innovation bridge's outcomes and claims, offline.

:func:`innovation_outputs` reads innovation topics of any rosbag2 bag (MCAP or sqlite3, rosbags'
public ``AnyReader``): ``project_ghost_feedback_msgs/msg/Innovation`` and PX4's
``px4_msgs/msg/EstimatorAidSource1d/2d/3d`` (decoded by type from the .msg definitions kept in
the repository: the package's own ``msg/`` and ``third_party/px4_msgs``, so neither package needs
to be built). Every message goes, in recorded order, through the **same** engine the live
``innovation_bridge`` node drives (:class:`~.bridge.innovation_engine.InnovationEngine`, with
the node's ``source`` and ``claimed_level`` from the same parameter file), and the run yields
what the node would have published, as :class:`~.bridge_inputs.BridgeRun` does for the outcome
bridge: ``('outcome', PredictionOutcome)`` then ``('assessment', BeliefSelfAssessment)``.

So a bag of a live run (``ros2 bag record`` of the filter's innovation topic) re-evaluates to
the live node's verdict: same outcomes, same claims, same loop. ``docs/field.md``.

:func:`navsat_outputs` does the same for the navsat bridge (a GNSS reference, no ground truth):
an estimate topic (Odometry in the ENU frame at the datum) and a NavSatFix topic, through the
node's own data path (:class:`~.bridge.navsat_innovation.NavSatFeed`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
import os
from typing import Any, NamedTuple

from .bridge_inputs import ASSESSMENT, BagInputError, open_reader, OUTCOME, read_parameter_file
from .bridge_inputs import Output, StampRange

INNOVATION_TYPE = 'project_ghost_feedback_msgs/msg/Innovation'
PX4_AID_SOURCE_TYPES = tuple(f'px4_msgs/msg/EstimatorAidSource{n}d' for n in (1, 2, 3))
INNOVATION_TYPES = (INNOVATION_TYPE, *PX4_AID_SOURCE_TYPES)
"""Types an ``--innovation`` topic may have."""


def node_parameters(params_file: str | os.PathLike[str] | None, node: str,
                    specs: Mapping[str, Any], validate: Any) -> dict[str, Any]:
    """Return a field node's parameters: its defaults, overridden by ``params_file``, validated.

    ``params_file`` is the ROS 2 parameter file the node's launch uses (``/**:`` or ``<node>:``,
    then ``ros__parameters``); an unknown key or a refused value is a BagInputError naming it.
    Keys of other nodes' sections are not read.
    """
    from .parameter_spec import ParameterError

    what = node.replace('_', ' ')
    values = {name: spec.default for name, spec in specs.items()}
    if params_file is not None:
        values.update(read_parameter_file(params_file, node, specs, f'{what} parameter'))
    try:
        return dict(validate(values))
    except ParameterError as error:
        raise BagInputError(f'{params_file or f"{what} parameters (no --params-file)"}: '
                            f'{error}') from None


def innovation_parameters(params_file: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Return the innovation bridge's parameters (:func:`node_parameters`)."""
    from .bridge.innovation_engine import PARAMETERS, validate

    return node_parameters(params_file, 'innovation_bridge', PARAMETERS, validate)


def _register_types(reader: Any) -> None:
    """Make the Innovation and PX4 aid-source types known to the reader's typestore.

    A type the bag defines itself (rosbag2 MCAP stores each definition) is decoded with the
    bag's definition, as rosbags does; the kept definitions serve bags without them.
    """
    from rosbags.typesys import get_types_from_msg, TypesysError

    from .px4_aid_source import px4_msg_texts
    from .telemetry.msgdefs import msg_texts

    texts = {INNOVATION_TYPE: msg_texts()[INNOVATION_TYPE], **px4_msg_texts()}
    for name, text in texts.items():
        try:   # the same definition again is a no-op in rosbags
            reader.typestore.register(get_types_from_msg(text, name))
        except TypesysError:
            pass   # the bag defines the type differently: its own definition decodes it


class InnovationRun:
    """One offline innovation-bridge run over a bag: iterate it, then read the counts."""

    has_reference = False
    """No reference: an outcome's components are innovations, not a pose error."""

    def __init__(self, path: str | os.PathLike[str], topics: Sequence[str],
                 values: Mapping[str, Any]) -> None:
        from .core.feedback import PoseErrorStatistics

        self.path = str(path)
        self.topics = list(topics)
        self.engine = self._engine(values)
        self.errors = PoseErrorStatistics()
        """Empty: with innovations there is no reference to measure an error against."""
        self.types: dict[str, str] = {}
        self.stamps = StampRange()
        self.undecodable = 0
        self.oversized = 0
        self.bag_start_ns = self.bag_end_ns = None

    def _engine(self, values: Mapping[str, Any]) -> Any:
        """Return the innovation engine the run drives (the node's, from its parameters)."""
        from .bridge.innovation_engine import InnovationEngine
        from .core import SelfAssessmentLevel

        return InnovationEngine(values['source'], SelfAssessmentLevel[values['claimed_level']])

    def _inputs(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Return ``{topic: (what it is, its accepted types)}`` of the topics read."""
        return {topic: ('innovation topic', INNOVATION_TYPES) for topic in self.topics}

    def _take(self, topic: str, msgtype: str, msg: Any) -> Any:
        """Give one decoded message to the engine; return its result."""
        if msgtype == INNOVATION_TYPE:
            return self.engine.take_innovation(msg)
        return self.engine.take_aid_source(topic, msg)

    def __iter__(self) -> Iterator[Output]:
        """Read the topics in recorded order (over 1 MiB or undecodable: counted, skipped)."""
        from .bridge.innovation_engine import InnovationOutputs
        from .telemetry.bag_limits import DEFAULT_LIMITS

        reader = open_reader(self.path)
        try:
            _register_types(reader)
            connections = []
            for topic, (what, accepted) in self._inputs().items():
                found = [c for c in reader.connections if c.topic == topic]
                if not found:
                    names = ', '.join(sorted({c.topic for c in reader.connections})) or 'none'
                    raise BagInputError(f'{self.path}: no {what} {topic} in the bag '
                                        f'(topics: {names})')
                wrong = {c.msgtype for c in found} - set(accepted)
                if wrong:
                    raise BagInputError(
                        f'{self.path}: {what} {topic} has type {", ".join(sorted(wrong))}; '
                        f'expected {"one of " if len(accepted) > 1 else ""}'
                        f'{", ".join(accepted)}')
                self.types[topic] = found[0].msgtype
                connections += found
            self.bag_start_ns, self.bag_end_ns = reader.start_time, reader.end_time
            for connection, _, rawdata in reader.messages(connections=connections):
                if len(rawdata) > DEFAULT_LIMITS.message_bytes:
                    self.oversized += 1
                    continue
                try:
                    msg = reader.deserialize(rawdata, connection.msgtype)
                except Exception:  # noqa: BLE001 - any decoder error: counted, skipped
                    self.undecodable += 1
                    continue
                result = self._take(connection.topic, connection.msgtype, msg)
                if isinstance(result, InnovationOutputs):
                    self.stamps.add(result.outcome.observed_stamp_sim_ns)
                    yield OUTCOME, result.outcome
                    yield ASSESSMENT, result.claim
        finally:
            reader.close()

    def check_overlap(self) -> None:
        """Nothing to check: one kind of input (kept for evaluate's common path)."""

    def why_nothing_paired(self) -> str | None:
        """Return why no outcome came out (one line: counts and refusals), or None."""
        engine = self.engine
        if engine.outcomes_published:
            return None
        refused = sorted(engine.pairing.refused.items(), key=lambda item: (-item[1], item[0]))
        reasons = ', '.join(f'{reason} {count}' for reason, count in refused) or 'none'
        return (f'{self.path}: 0 outcomes from {engine.received} innovations on '
                f'{", ".join(self.topics)} ({engine.pairing.accepted} accepted, '
                f'{engine.other_source} of another source than {engine.source!r}, '
                f'{engine.not_fused} not fused); refused: {reasons}')

    def counts(self) -> dict[str, Any]:
        """Return the engine's counts as a JSON-ready dict (the node's /diagnostics values)."""
        values = {key: value for key, value in self.engine.values().items()
                  if '[' not in key}
        return values | {
            'refused_by_reason': dict(sorted(self.engine.pairing.refused.items())),
            'source': self.engine.source,
            'undecodable_skipped': self.undecodable,
            'oversized_skipped': self.oversized,
        }


def navsat_parameters(params_file: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Return the navsat bridge's parameters (:func:`node_parameters`; the datum is required)."""
    from .bridge.navsat_innovation import PARAMETERS, validate

    return node_parameters(params_file, 'navsat_bridge', PARAMETERS, validate)


NAVSAT_TYPES = {'estimate': 'nav_msgs/msg/Odometry', 'fix': 'sensor_msgs/msg/NavSatFix'}
"""The navsat bridge's input types (``--estimate`` and ``--navsat-fix``)."""


class NavSatRun(InnovationRun):
    """One offline navsat-bridge run: estimates and GNSS fixes of a bag, no ground truth.

    Every message goes, in the bag's order, through the live node's data path
    (:class:`~.bridge.navsat_innovation.NavSatFeed`); the run yields what the node would have
    published, as :class:`InnovationRun` does for the innovation bridge.
    """

    def __init__(self, path: str | os.PathLike[str], estimate_topic: str, fix_topic: str,
                 values: Mapping[str, Any]) -> None:
        self.estimate_topic, self.fix_topic = estimate_topic, fix_topic
        super().__init__(path, [estimate_topic, fix_topic], values)

    def _engine(self, values: Mapping[str, Any]) -> Any:
        """Return the navsat data path's engine (the feed, the node's, holds it)."""
        from .bridge.navsat_innovation import NavSatFeed

        self.feed = NavSatFeed(dict(values))
        return self.feed.engine

    def _inputs(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {self.estimate_topic: ('estimate topic', (NAVSAT_TYPES['estimate'],)),
                self.fix_topic: ('fix topic', (NAVSAT_TYPES['fix'],))}

    def _take(self, topic: str, msgtype: str, msg: Any) -> Any:
        if topic == self.estimate_topic:
            return self.feed.take_estimate(msg)
        return self.feed.take_fix(msg)

    def why_nothing_paired(self) -> str | None:
        """Return why no outcome came out (fixes, estimates and refusals), or None."""
        if self.engine.outcomes_published:
            return None
        fixes = self.feed.fixes
        refused = {**fixes.refused, **{f'innovation_{k}': v
                                       for k, v in self.engine.pairing.refused.items()}}
        ordered = sorted(refused.items(), key=lambda item: (-item[1], item[0]))
        reasons = ', '.join(f'{k} {v}' for k, v in ordered)
        return (f'{self.path}: 0 outcomes from {fixes.fixes} fixes on {self.fix_topic} and '
                f'{fixes.estimates} estimates on {self.estimate_topic}; refused: '
                f'{reasons or "none"}')

    def counts(self) -> dict[str, Any]:
        """Return the engine's counts and the fixes' refusals (the node's /diagnostics values)."""
        fixes = self.feed.fixes
        return super().counts() | {
            'fixes_received': fixes.fixes, 'estimates_received': fixes.estimates,
            'fixes_refused_by_reason': dict(sorted(fixes.refused.items())),
        }


class NavSatSource(NamedTuple):
    """A bag's GNSS evaluation: what ``audit`` hands each bag's task (it pickles)."""

    estimate_topic: str
    fix_topic: str
    values: Mapping[str, Any]


def navsat_outputs(path: str | os.PathLike[str], estimate_topic: str, fix_topic: str,
                   values: Mapping[str, Any]) -> NavSatRun:
    """Return a :class:`NavSatRun` over the two topics; iterate it for ``(kind, contract)``."""
    if not estimate_topic or not fix_topic or estimate_topic == fix_topic:
        raise BagInputError('a GNSS evaluation needs two different topics: --estimate (Odometry '
                            'in the ENU frame at the datum) and --navsat-fix (NavSatFix)')
    return NavSatRun(path, estimate_topic, fix_topic, values)


def innovation_outputs(path: str | os.PathLike[str], topics: Sequence[str],
                       values: Mapping[str, Any]) -> InnovationRun:
    """Return an :class:`InnovationRun` over ``topics``; iterate it for ``(kind, contract)``."""
    if not topics:
        raise BagInputError('no innovation topic given')
    return InnovationRun(path, topics, values)
