# SPDX-License-Identifier: Apache-2.0
"""A bag's loop inputs and the one rule that feeds them to a feedback loop (every offline path).

The feedback node takes three kinds of input: prediction outcomes, raw self-assessments and,
when a run is replayed, its recorded loop events (``/feedback_events``: resets and
configuration changes). This module is the one place that

- chooses which topics of a bag carry them (:func:`select_loop_topics`: by type, the node's
  default topic winning a tie, with a warning when a type has several topics);
- decodes them in the bag's order (:func:`loop_inputs`): a message that does not decode raises
  :class:`~.bag_metadata.BagError` naming topic, index and log time; an input that the core's
  contracts refuse (e.g. a NaN distance in a ``ros2 bag record`` bag) is skipped and counted
  per reason, as the live node does; the recorded calibrated output, when asked for, is passed
  on undecoded (replay compares it);
- feeds one input to a :class:`~..core.loop.FeedbackLoop` (:class:`LoopFeeder`), a table of
  one handler per input type, as ArduPilot's Replay dispatches each logged message. A recorded
  configuration change goes through ``configure`` (replay applies its overrides to it; an
  audit that holds its configuration fixed passes None and the change is skipped); the other
  recorded events go through :meth:`FeedbackLoop.apply`, which does not re-apply the resets the
  loop derives from its inputs. With a ``recorder`` (a
  :class:`~.recorder.TelemetryRecorder`) each input and its calibrated output are recorded as
  the feedback node records them.

``ghost-feedback replay`` (:mod:`.replay`) and ``ghost-feedback audit`` (:mod:`..audit.task`)
read bags through it; ``ghost-feedback evaluate`` (:mod:`..evaluate.command`) and the synthetic
fleet (:mod:`..audit.synthetic`) feed and record through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
import os
from typing import cast, NamedTuple, TYPE_CHECKING

from ..core import BeliefSelfAssessment, PredictionOutcome
from ..core.validation import ContractViolation
from ..core.loop import CONFIGURATION, FeedbackLoop, LoopConfig, LoopEvent, Step
from .bag_metadata import BagError, normalize_type_name, one_line
from .channels import (
    CHANNEL_BY_TYPE,
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_FEEDBACK_EVENT,
    TYPE_PREDICTION_OUTCOME,
)
from .codecs import decoder_for

if TYPE_CHECKING:
    from .bag_reader import BagInfo, OpenBag
    from .recorder import TelemetryRecorder

INPUT_TYPES = (TYPE_PREDICTION_OUTCOME, TYPE_BELIEF_SELF_ASSESSMENT, TYPE_FEEDBACK_EVENT)
"""The loop's input types, in the order :func:`select_loop_topics` reports them."""

LoopItem = PredictionOutcome | BeliefSelfAssessment | LoopEvent


class RecordedOutput(NamedTuple):
    """A recorded calibrated self-assessment, undecoded (replay compares it)."""

    index: int  # type: ignore[assignment]  # shadows tuple.index (kept: a public field)
    log_time: int
    payload: bytes


class LoopInput(NamedTuple):
    """One input of a bag, decoded: ``item`` is a contract, a LoopEvent or a RecordedOutput."""

    index: int  # type: ignore[assignment]  # shadows tuple.index (kept: a public field)
    topic: str
    log_time: int
    item: LoopItem | RecordedOutput


def select_loop_topics(
        info: BagInfo, warnings: list[str] | None = None,
        types: tuple[str, ...] = INPUT_TYPES,
) -> dict[str, str]:
    """Return ``{msgtype: topic}`` for each of ``types`` present in the bag.

    The node's default topic of a type wins when the type has several topics, else the first by
    name; a line is appended to ``warnings`` (when given) for every such choice.
    """
    selected = {}
    for msgtype in types:
        names = sorted(t.name for t in info.topics if normalize_type_name(t.msgtype) == msgtype)
        if not names:
            continue
        default = CHANNEL_BY_TYPE[msgtype].topic
        chosen = default if default in names else names[0]
        if len(names) > 1 and warnings is not None:
            warnings.append(f'several topics of type {msgtype} ({", ".join(names)}); '
                            f'replaying {chosen}')
        selected[msgtype] = chosen
    return selected


def decode_error(path: str | os.PathLike[str], index: int, topic: str | None, log_time: int,
                 msgtype: str, error: BaseException) -> BagError:
    """Return the one-line BagError of a message that does not decode."""
    return BagError(
        f'{path}: message {index} on {topic} (log time {log_time}) does not decode as '
        f'{msgtype}: {one_line(error)}')


def loop_inputs(bag: OpenBag, topics: dict[str, str], order: str,
                rejected: dict[str, int]) -> Iterator[LoopInput]:
    """Yield the decoded inputs of ``bag`` on ``topics`` (:func:`select_loop_topics`) in ``order``.

    A recorded calibrated topic (``topics[TYPE_CALIBRATED_SELF_ASSESSMENT]``) yields
    :class:`RecordedOutput`. A contract refusal is counted in ``rejected`` under
    ``'outcome:<reason>'`` / ``'assessment:<reason>'`` and skipped.
    """
    recorded = {info.name: info.definition for info in bag.info.topics}
    decoders = {topics[t]: (t, decoder_for(t, recorded.get(topics[t], 'same')))
                for t in INPUT_TYPES if t in topics}
    calibrated = topics.get(TYPE_CALIBRATED_SELF_ASSESSMENT)
    wanted = sorted(set(decoders) | ({calibrated} if calibrated is not None else set()))
    path = bag.info.path
    for index, (topic, msgtype, log_time, payload) in enumerate(bag.messages(order, wanted)):
        if topic == calibrated:
            yield LoopInput(index, topic, log_time, RecordedOutput(index, log_time, payload))
            continue
        input_type, decoder = decoders[topic]
        try:
            message = decoder.decode_message(payload)
        except Exception as error:  # noqa: BLE001 - any decoder error is one line
            raise decode_error(path, index, topic, log_time, msgtype, error) from None
        try:
            item = decoder.to_contract(message)
        except (ContractViolation, TypeError, ValueError) as error:
            if input_type == TYPE_FEEDBACK_EVENT:
                raise decode_error(path, index, topic, log_time, msgtype, error) from None
            kind = 'outcome' if input_type == TYPE_PREDICTION_OUTCOME else 'assessment'
            reason = (error.reason if isinstance(error, ContractViolation)
                      else type(error).__name__)
            rejected[f'{kind}:{reason}'] = rejected.get(f'{kind}:{reason}', 0) + 1
            continue
        yield LoopInput(index, topic, log_time, cast('LoopItem', item))


class LoopFeeder:
    """Feed inputs to one FeedbackLoop: one handler per input type (the module docstring).

    ``configure(event)`` returns the LoopConfig a recorded configuration change becomes (replay:
    the recorded one with its overrides), or is None to keep the loop's configuration.
    :meth:`feed` returns the loop's :class:`~..core.loop.Step` for an outcome or an assessment,
    and for a recorded event whether it changed the loop (``True``/``False``). ``recorder``
    (optional) records each outcome, and each assessment with its calibrated output.
    """

    def __init__(self, loop: FeedbackLoop,
                 configure: Callable[[LoopEvent], LoopConfig] | None = None,
                 recorder: TelemetryRecorder | None = None) -> None:
        self.loop = loop
        self._configure = configure
        self._recorder = recorder
        self._handlers: dict[type, Callable[..., Step | bool]] = {
            PredictionOutcome: self._outcome,
            BeliefSelfAssessment: self._assessment,
            LoopEvent: self._event,
        }

    def feed(self, item: LoopItem) -> Step | bool:
        """Give ``item`` to the loop by its type (TypeError for anything else)."""
        handler = self._handlers.get(type(item))
        if handler is None:
            raise TypeError(f'not a loop input: {type(item).__name__}')
        return handler(item)

    def _outcome(self, outcome: PredictionOutcome) -> Step:
        step = self.loop.outcome(outcome)
        if self._recorder is not None:
            self._recorder.record_outcome(outcome)
        return step

    def _assessment(self, raw: BeliefSelfAssessment) -> Step:
        step = self.loop.assessment(raw)
        # Offline there is no now_ns: an assessment is never refused, so it always has an output.
        assert step.calibrated is not None
        if self._recorder is not None:
            self._recorder.record_assessment(raw, step.calibrated)
        return step

    def _event(self, event: LoopEvent) -> bool:
        if event.kind == CONFIGURATION:
            if self._configure is None:
                return False
            return self.loop.configure(
                self._configure(event), event.stamp_ns, event.cause) is not None
        return self.loop.apply(event)
