# SPDX-License-Identifier: Apache-2.0
"""The replay engine: a recorded run through the node's own feedback loop, compared with its output.

:func:`replay_bag` feeds the recorded outcomes, raw assessments and loop events (resets and
configuration changes, ``/feedback_events``), in recorded order, through the same
:class:`~..core.loop.FeedbackLoop` the feedback node runs, and compares each recomputed calibrated
assessment with the recorded one. Resets the loop derives from its inputs (an input stamp going
back: ``input_stamp_jump``) are derived again and checked against the record; the others
(``~/reset``, a node clock jump, a parameter change) are applied where they were recorded. An
input that the core's contracts refuse (e.g. a NaN distance in a ``ros2 bag record`` bag) is
skipped and counted per reason, as the live node does (``ReplayReport.rejected``).

Order. ``order='recorded'`` (default) reads messages in the order they were written: for the
node's telemetry bag that is the order the node processed them, so replay reproduces even
outcomes that arrived late; for a ``ros2 bag record`` bag it is receive order. ``order='stamp'``
reads in log-time order (ties in write order). Any problem with the bag raises :class:`BagError`
with a one-line message (:mod:`.bag_reader`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterator
import itertools
import os
from typing import Any, cast, NamedTuple

from ..core import PredictionOutcome
from ..core.feedback import (
    CalibratedSelfAssessment, coerce_parameters, EpisodeTracker, HISTORY_SCHEMA_SQUARED_DISTANCES)
from ..core.loop import (
    CONFIGURATION, DERIVED_CAUSES, FeedbackLoop, LoopConfig, LoopEvent, Step)
from .bag_reader import BagMessage
from .bag_metadata import BagError
from .bag_reader import OpenBag, ORDERS
from .channels import (
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_FEEDBACK_EVENT,
)
from .codecs import DECODERS, decode, decoder_for
from .config import recorded_config
from .loop_inputs import (
    decode_error,
    INPUT_TYPES,
    loop_inputs,
    LoopFeeder,
    LoopInput,
    RecordedOutput,
    select_loop_topics,
)
from .replay_report import (
    Difference, first_field_difference, LevelSummary, ReplayReport, summary_line)

LOOP_TOPIC_TYPES = INPUT_TYPES + (TYPE_CALIBRATED_SELF_ASSESSMENT,)
"""What replay reads: the loop's inputs and the recorded output it compares with."""

NO_EVENTS_WARNING = (
    'no /feedback_events topic: resets and parameter changes of the node cannot be known '
    "(replay assumes there were none); record the node's feedback_events topic too")


class BagContract(NamedTuple):
    """One decoded message of a bag."""

    topic: str
    msgtype: str
    log_time: int
    contract: object


def iter_bag(path: str | os.PathLike[str], *, order: str = 'recorded',
             topics: Collection[str] | None = None) -> Iterator[BagMessage]:
    """Yield every BagMessage of the bag ``path`` (optionally only ``topics``) in ``order``.

    After the last message the per-topic counts are checked against metadata.yaml: a bag whose
    storage holds fewer or more messages than it announces raises BagError (this also catches
    rosbags' silent skip of a channel whose QoS differs between metadata.yaml and the MCAP).
    """
    with OpenBag(path) as bag:
        yield from bag.messages(order, topics)


def read_bag(path: str | os.PathLike[str], *, order: str = 'recorded',
             topics: Collection[str] | None = None,
             skip_unknown: bool = True) -> Iterator[BagContract]:
    """Yield a BagContract for every message of a type with a decoder, in ``order``.

    Messages of other types are skipped (``skip_unknown``) or raise BagError. A message that
    does not decode, or that a contract refuses, raises BagError naming topic, index and stamp;
    so does a recorded type whose definition differs from ours.
    """
    with OpenBag(path) as bag:
        bag.check_definitions(set(DECODERS))
        definitions = {t.name: t.definition for t in bag.info.topics}
        for index, message in enumerate(bag.messages(order, topics)):
            decoder = DECODERS.get(message.msgtype)
            if decoder is not None:
                decoder = decoder_for(message.msgtype, definitions.get(message.topic, 'same'))
            if decoder is None:
                if skip_unknown:
                    continue
                raise BagError(
                    f'{path}: no decoder for type {message.msgtype} on {message.topic}')
            try:
                contract = decoder(message.payload)
            except Exception as error:  # noqa: BLE001 - any decoder error is one line
                raise decode_error(path, index, message.topic, message.log_time,
                                   message.msgtype, error) from None
            yield BagContract(message.topic, message.msgtype, message.log_time, contract)


FIRST_OUTPUT_WITHIN = 10_000
"""Inputs held while replay looks for the first recorded calibrated assessment (bounded memory)."""


def _read_until_first_output(
        bag: OpenBag, inputs: Iterator[LoopInput], calibrated_topic: str | None,
) -> tuple[list[LoopInput], CalibratedSelfAssessment | None]:
    """Return ``(head, first)``: the inputs read up to the first recorded calibrated assessment.

    The bag is read once: ``head`` is replayed before the rest of ``inputs``. ``first`` (None when
    there is none within :data:`FIRST_OUTPUT_WITHIN` inputs, or it does not decode: the full
    read reports that) names the recording policy of a bag without a recorded configuration and
    the history schema its outputs use.
    """
    head: list[LoopInput] = []
    if calibrated_topic is None:
        return head, None
    definition = next(t.definition for t in bag.info.topics if t.name == calibrated_topic)
    for loop_input in inputs:
        head.append(loop_input)
        if isinstance(loop_input.item, RecordedOutput):
            try:
                return head, cast(CalibratedSelfAssessment, decode(
                    TYPE_CALIBRATED_SELF_ASSESSMENT, loop_input.item.payload, definition))
            except Exception:  # noqa: BLE001 - the comparison decodes it again and reports
                return head, None
        if len(head) >= FIRST_OUTPUT_WITHIN:
            break
    return head, None


class Overrides(NamedTuple):
    """What a replay changes in every recorded configuration (None: keep the recorded value)."""

    policy: str | None = None
    parameters: dict[str, Any] | None = None
    max_history: int | None = None
    outcome_buffer_size: int | None = None

    def apply(self, recorded: LoopConfig) -> LoopConfig:
        """Return ``recorded`` (a LoopConfig) with these overrides (ValueError/TypeError)."""
        if self == Overrides():
            return recorded
        policy = recorded.policy if self.policy is None else self.policy
        merged = dict(recorded.parameters) if policy == recorded.policy else {}
        merged.update(coerce_parameters(policy, self.parameters))
        return LoopConfig.make(
            policy, merged,
            recorded.max_history if self.max_history is None else self.max_history,
            recorded.outcome_buffer_size if self.outcome_buffer_size is None
            else self.outcome_buffer_size,
            recorded.time_jump_tolerance_ns, recorded.unverified_after_ns,
            recorded.unverified_max_level)


def replay_bag(path: str | os.PathLike[str], *, policy: str | None = None,
               parameters: dict[str, Any] | None = None, max_history: int | None = None,
               outcome_buffer_size: int | None = None, order: str = 'recorded') -> ReplayReport:
    """Replay the bag ``path`` through the feedback loop and compare with its recorded output.

    With no overrides the configuration is the recorded one (``mode='verify'``): every recomputed
    calibrated assessment must equal the recorded one. ``policy`` / ``parameters`` (merged over
    the recorded parameters when the policy is the recorded one) / ``max_history`` /
    ``outcome_buffer_size`` replay another configuration, applied over the start configuration
    and over every recorded configuration change; parameter values given as strings are
    converted to the type of the parameter's default (``mode='compare'`` when it differs):
    the report then says what would have changed. Raise BagError for an unreadable bag and
    ValueError/TypeError for an invalid configuration.
    """
    if order not in ORDERS:
        raise ValueError(f'order must be one of {ORDERS}, got {order!r}')
    overrides = Overrides(policy, parameters, max_history, outcome_buffer_size)
    with OpenBag(path) as bag:
        return _replay(bag, overrides, order)


def _replay(bag: OpenBag, overrides: Overrides, order: str) -> ReplayReport:
    info = bag.info
    warnings: list[str] = []
    topics = select_loop_topics(info, warnings, LOOP_TOPIC_TYPES)
    if TYPE_BELIEF_SELF_ASSESSMENT not in topics:
        raise BagError(f'{info.path}: no {TYPE_BELIEF_SELF_ASSESSMENT} topic to replay')
    bag.check_definitions(set(topics))
    events_topic = topics.get(TYPE_FEEDBACK_EVENT)
    rejected: dict[str, int] = {}
    inputs = loop_inputs(bag, topics, order, rejected)
    head, first = _read_until_first_output(
        bag, inputs, topics.get(TYPE_CALIBRATED_SELF_ASSESSMENT))
    base, source, config_warnings = recorded_config(
        info, first, events_recorded=events_topic is not None)
    warnings.extend(config_warnings)
    if events_topic is None and source != 'recorded':
        warnings.append(NO_EVENTS_WARNING)
    config = overrides.apply(base)
    report = ReplayReport(
        bag=info.path, order=order, mode='verify' if config == base else 'compare',
        recorded_config=base, config_source=source, replay_config=config, warnings=warnings,
        bag_start_ns=info.start_time_ns, bag_end_ns=info.end_time_ns,
        # k read with each configuration's vec3 components (a planar source's: unbiased).
        recorded=LevelSummary(episodes=EpisodeTracker(components=base.vec3_components)),
        recomputed=LevelSummary(episodes=EpisodeTracker(components=config.vec3_components)),
        rejected=rejected)  # loop_inputs goes on counting refusals into it
    # Rebuild the histories in the schema the bag recorded (schema 1 before ADR-0026a).
    history_schema = (HISTORY_SCHEMA_SQUARED_DISTANCES if first is None
                      else first.calibration_history.schema_version)
    loop = FeedbackLoop(config, history_schema_version=history_schema)
    _run(bag, topics, itertools.chain(head, inputs), loop, overrides, report)
    return report


def _run(bag: OpenBag, topics: dict[str, str], inputs: Iterator[LoopInput], loop: FeedbackLoop,
         overrides: Overrides, report: ReplayReport) -> None:
    """Stream the bag's inputs through ``loop``, comparing outputs into ``report``."""
    calibrated_topic = topics.get(TYPE_CALIBRATED_SELF_ASSESSMENT)
    comparer = _Comparer(report, definition=next(
        (t.definition for t in bag.info.topics if t.name == calibrated_topic), 'same'))
    recomputed_queue: deque[CalibratedSelfAssessment] = deque()
    recorded_queue: deque[RecordedOutput] = deque()
    recomputed_summary = report.recomputed
    events_topic = topics.get(TYPE_FEEDBACK_EVENT)
    derived: dict[str, dict[str, int]] = {'recorded': {}, 'replayed': {}}
    feeder = LoopFeeder(loop, configure=lambda event: overrides.apply(event.config))
    for _, _, _, item in inputs:
        if isinstance(item, RecordedOutput):
            report.recorded_outputs += 1
            recorded_queue.append(item)
        elif isinstance(item, LoopEvent):
            report.events += 1
            if item.cause in DERIVED_CAUSES:
                _count(derived['recorded'], item.cause)
            elif feeder.feed(item) and item.kind != CONFIGURATION:
                _count(report.resets, item.cause)
            continue
        else:
            step = cast(Step, feeder.feed(item))
            if isinstance(item, PredictionOutcome):
                report.outcomes += 1
            else:
                report.assessments += 1
                assert step.calibrated is not None  # replay passes no now_ns: never refused
                recomputed_summary.add(step.calibrated)
                recomputed_queue.append(step.calibrated)
            for event in step.events:
                _count(derived['replayed'], event.cause)
                _count(report.resets, event.cause)
        while recomputed_queue and recorded_queue:
            comparer.compare(
                recorded_queue.popleft(), recomputed_queue.popleft(), calibrated_topic)
    _finish(report, recorded_queue, comparer, calibrated_topic, derived, events_topic)


def _count(counter: dict[str, int], key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


def _finish(report: ReplayReport, recorded_queue: deque[RecordedOutput], comparer: _Comparer,
            calibrated_topic: str | None, derived: dict[str, dict[str, int]],
            events_topic: str | None) -> None:
    if events_topic is not None and derived['recorded'] != derived['replayed']:
        report.warnings.append(
            f'resets derived from the inputs differ: recorded {derived["recorded"]}, '
            f'replayed {derived["replayed"]}')
    if report.recorded_outputs and report.recorded_outputs != report.assessments:
        report.warnings.append(
            f'{report.recorded_outputs} recorded calibrated assessments for '
            f'{report.assessments} raw assessments; compared the first {report.compared}')
        for index, log_time, payload in recorded_queue:  # still count what was recorded
            report.recorded.add(comparer.decode(index, log_time, payload, calibrated_topic))
        if report.first_difference is None:
            report.first_difference = Difference(
                report.compared, None, '(count)', report.recorded_outputs, report.assessments)


class _Comparer:
    """Compare recorded calibrated payloads with recomputed contracts, into a ReplayReport.

    Fast path: when the recorded payload is byte-identical to the encoding of the recomputed
    assessment the two are equal (the encoding is deterministic and decoding is a function) and
    nothing is decoded. Otherwise the payload is decoded and compared field by field.
    """

    def __init__(self, report: ReplayReport, definition: str = 'same') -> None:
        from .adapters import CalibratedSelfAssessmentToTelemetryAdapter

        self.report = report
        legacy = definition == 'legacy'  # never byte-identical to our current encoding
        self.encode: Callable[[CalibratedSelfAssessment], bytes] | None = (
            None if legacy else CalibratedSelfAssessmentToTelemetryAdapter().encode)
        self.decoder = decoder_for(TYPE_CALIBRATED_SELF_ASSESSMENT, definition)
        self.index = 0

    def decode(self, index: int, log_time: int, payload: bytes,
               topic: str | None) -> CalibratedSelfAssessment:
        try:
            return cast(CalibratedSelfAssessment, self.decoder(payload))
        except Exception as error:  # noqa: BLE001 - any decoder error is one line
            raise decode_error(
                self.report.bag, index, topic, log_time, TYPE_CALIBRATED_SELF_ASSESSMENT,
                error) from None

    def compare(self, recorded_item: RecordedOutput, recomputed: CalibratedSelfAssessment,
                topic: str | None) -> None:
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


def _compare(report: ReplayReport, index: int, recorded: CalibratedSelfAssessment,
             recomputed: CalibratedSelfAssessment) -> None:
    if recorded == recomputed:
        return
    report.differences += 1
    stamp = recomputed.raw_assessment.belief_stamp_sim_ns
    if report.first_difference is None:
        field, a, b = cast(tuple[str, object, object],  # recorded != recomputed: not None
                           first_field_difference(recorded, recomputed))
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


def verify_bag(path: str | os.PathLike[str], *, order: str = 'recorded') -> tuple[bool, str]:
    """Replay ``path`` with its recorded configuration; return ``(ok, one-line text)``.

    ``ok`` is True only when every recorded calibrated assessment was recomputed identically
    (and there was at least one). A bag that cannot be read gives ``(False, the BagError text)``.
    """
    try:
        report = replay_bag(path, order=order)
    except BagError as error:
        return False, f'replay failed: {error}'
    return report.identical is True, summary_line(report)
