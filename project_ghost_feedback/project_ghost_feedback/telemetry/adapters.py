# SPDX-License-Identifier: Apache-2.0
"""Telemetry adapters: one per contract, contract -> (channel, log_time, CDR payload bytes).

``log_time`` is the contract's own simulation stamp, never a wall clock, so the same contract
always gives the same record (ADR-0026 section 6):

- CalibratedSelfAssessment: ``calibrated.raw_assessment.belief_stamp_sim_ns``;
- BeliefSelfAssessment (raw): ``belief_stamp_sim_ns``;
- PredictionOutcome: ``observed_stamp_sim_ns``;
- LoopEvent (a reset or configuration change, FeedbackEvent): ``stamp_ns``, the node clock at the
  event.

The payload is the CDR (little endian, ``cdr`` encapsulation) of the matching
``project_ghost_feedback_msgs`` message, encoded by the rosbags typestore's public
``serialize_cdr`` (no rclpy, and no CDR written by hand).
"""

from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

import numpy

from ..core import BeliefSelfAssessment, NamedLevel, PredictionOutcome
from ..core.feedback import CalibratedSelfAssessment, CalibrationHistory
from ..core.loop import LoopEvent
from ..msg_decoding import (
    EVENT_KIND_WIRE,
    EVENT_SCHEMA_VERSION,
    HISTORY_MSG_SCHEMA_VERSION,
    MSG_SCHEMA_VERSION,
    NS_PER_S,
)
from .channels import (
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_FEEDBACK_EVENTS,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_CALIBRATION_HISTORY,
    TYPE_FEEDBACK_EVENT,
    TYPE_NAMED_LEVEL,
    TYPE_PREDICTION_OUTCOME,
    TYPE_SELF_ASSESSMENT_LEVEL,
)
from .msgdefs import typestore


class TelemetryRecord(NamedTuple):
    """One message of a telemetry bag: channel (topic), log time (ns) and CDR payload."""

    channel: str
    log_time: int
    payload: bytes


class Adapter(Protocol):
    """What every adapter of :data:`ADAPTERS` offers (one contract type each)."""

    @property
    def channel(self) -> str:
        """Return the channel (topic) written."""
        ...

    @property
    def msgtype(self) -> str:
        """Return the ROS 2 type name of the payload."""
        ...

    @property
    def contract_type(self) -> type:
        """Return the contract class adapted."""
        ...

    def log_time(self, contract: Any, /) -> int:
        """Return the log time (ns) of ``contract``."""
        ...

    def encode(self, contract: Any, /) -> bytes:
        """Return the CDR payload of ``contract``."""
        ...

    def __call__(self, contract: Any, /) -> TelemetryRecord:
        """Return the TelemetryRecord of ``contract``."""
        ...


_new_record = tuple.__new__  # TelemetryRecord without its generated __new__ (hot path)

# rosbags NamedLevel message objects by (name, wire level): the same few axis and block names
# recur in every assessment. The serializer only reads them. Bounded.
_NAMED_LEVELS_MAX = 4096


class _Encoder:
    """CDR encoder of one message type: the typestore's public ``serialize_cdr`` (little endian)."""

    def __init__(self, msgtype: str) -> None:
        self.msgtype = msgtype
        self._serialize = typestore().serialize_cdr

    def encode(self, message: Any) -> bytes:
        """Return the CDR bytes (4-byte little-endian encapsulation header + body)."""
        return bytes(self._serialize(message, self.msgtype, little_endian=True))


class _Codec:
    """Contract -> rosbags message objects for the package's types (built lazily, once)."""

    def __init__(self) -> None:
        store = typestore()
        self.named_level_cls = store.types[TYPE_NAMED_LEVEL]
        self.belief_cls = store.types[TYPE_BELIEF_SELF_ASSESSMENT]
        self.history_cls = store.types[TYPE_CALIBRATION_HISTORY]
        self.calibrated_cls = store.types[TYPE_CALIBRATED_SELF_ASSESSMENT]
        self.outcome_cls = store.types[TYPE_PREDICTION_OUTCOME]
        self.level_cls = store.types[TYPE_SELF_ASSESSMENT_LEVEL]
        self.header_cls = store.types['std_msgs/msg/Header']
        self.time_cls = store.types['builtin_interfaces/msg/Time']
        self.belief_encoder = _Encoder(TYPE_BELIEF_SELF_ASSESSMENT)
        self.calibrated_encoder = _Encoder(TYPE_CALIBRATED_SELF_ASSESSMENT)
        self.outcome_encoder = _Encoder(TYPE_PREDICTION_OUTCOME)
        self.event_cls = store.types[TYPE_FEEDBACK_EVENT]
        self.event_encoder = _Encoder(TYPE_FEEDBACK_EVENT)
        # (contract, rosbags message) of the last belief converted: the node records a raw
        # assessment and then the calibrated assessment that carries the very same object. One
        # tuple, swapped atomically.
        self._last_belief: tuple[BeliefSelfAssessment | None, Any] = (None, None)
        self._named_levels: dict[tuple[str, int], Any] = {}

    def named_levels(self, levels: Iterable[NamedLevel]) -> list[Any]:
        cache = self._named_levels
        messages = []
        for item in levels:
            key = (item.name, item.level.value)
            message = cache.get(key)
            if message is None:
                message = self.named_level_cls(item.name, self.level_cls(item.level.value))
                if len(cache) < _NAMED_LEVELS_MAX:
                    cache[key] = message
            messages.append(message)
        return messages

    def belief(self, belief: BeliefSelfAssessment) -> Any:
        last = self._last_belief
        if belief is last[0]:
            return last[1]
        message = self.belief_cls(
            header=self.header(belief.belief_stamp_sim_ns, belief.frame_id),
            overall_level=self.level_cls(belief.overall_level.value),
            axis_levels=self.named_levels(belief.axis_levels),
            block_levels=self.named_levels(belief.block_levels),
            schema_version=MSG_SCHEMA_VERSION)
        self._last_belief = (belief, message)
        return message

    def encode_belief(self, belief: BeliefSelfAssessment) -> bytes:
        """Return the CDR payload of a belief."""
        return self.belief_encoder.encode(self.belief(belief))

    def time(self, stamp_ns: int) -> Any:
        return self.time_cls(*divmod(stamp_ns, NS_PER_S))

    def header(self, stamp_ns: int, frame_id: str) -> Any:
        return self.header_cls(stamp=self.time(stamp_ns), frame_id=frame_id)

    def history(self, history: CalibrationHistory) -> Any:
        # Interface version 3 (ADR-0026a): no stamp (zero outcomes) is a zero Time.
        stamp = history.most_recent_observed_stamp_sim_ns
        return self.history_cls(
            history.outcomes_considered, history.count_within_1_std,
            history.count_beyond_1_std, history.count_beyond_3_std, history.count_beyond_5_std,
            history.worst_position_mahalanobis, history.worst_orientation_mahalanobis,
            numpy.array(history.position_squared_distances, dtype=numpy.float64),
            numpy.array(history.orientation_squared_distances, dtype=numpy.float64),
            self.time(0 if stamp is None else stamp), history.schema_version,
            HISTORY_MSG_SCHEMA_VERSION)

    def calibrated(self, calibrated: CalibratedSelfAssessment) -> Any:
        raw = self.belief(calibrated.raw_assessment)
        return self.calibrated_cls(
            header=raw.header, raw_assessment=raw,
            calibration_history=self.history(calibrated.calibration_history),
            adjusted_overall_level=self.level_cls(calibrated.adjusted_overall_level.value),
            adjustment_policy_id=calibrated.adjustment_policy_id,
            adjustment_reason=calibrated.adjustment_reason, schema_version=MSG_SCHEMA_VERSION)

    def encode_event(self, event: LoopEvent) -> bytes:
        """Return the CDR payload of a LoopEvent (a FeedbackEvent message)."""
        config = event.config
        names, values = config.parameter_texts()
        return self.event_encoder.encode(self.event_cls(
            header=self.header(event.stamp_ns, ''), kind=EVENT_KIND_WIRE[event.kind],
            cause=event.cause, detail=event.detail[:1024], policy=config.policy,
            parameter_names=list(names), parameter_values=list(values),
            max_history=config.max_history, outcome_buffer_size=config.outcome_buffer_size,
            time_jump_tolerance_ns=config.time_jump_tolerance_ns,
            schema_version=EVENT_SCHEMA_VERSION))

    def encode_outcome(self, outcome: PredictionOutcome) -> bytes:
        """Return the CDR payload of a PredictionOutcome (rosbags' serializer)."""
        return self.outcome_encoder.encode(self.outcome(outcome))

    def outcome(self, outcome: PredictionOutcome) -> Any:
        return self.outcome_cls(
            header=self.header(outcome.observed_stamp_sim_ns, outcome.frame_id),
            prediction_stamp=self.time(outcome.prediction_stamp_sim_ns),
            position_error_m=numpy.array(outcome.position_error_m, dtype=numpy.float64),
            orientation_error_rad=numpy.array(outcome.orientation_error_rad, dtype=numpy.float64),
            position_mahalanobis=outcome.position_mahalanobis,
            orientation_mahalanobis=outcome.orientation_mahalanobis,
            schema_version=MSG_SCHEMA_VERSION)


_codec: _Codec | None = None


def _get_codec() -> _Codec:
    global _codec
    if _codec is None:
        _codec = _Codec()
    return _codec


def _require(contract: object, cls: type, adapter: str) -> None:
    if not isinstance(contract, cls):
        raise TypeError(
            f'{adapter} adapts {cls.__name__}, got {type(contract).__name__} {contract!r}')


class CalibratedSelfAssessmentToTelemetryAdapter:
    """CalibratedSelfAssessment -> ``/self_assessment/calibrated`` (ADR-0026 section 6).

    ``log_time`` is ``calibrated.raw_assessment.belief_stamp_sim_ns``: the instant of the belief
    that started the chain.
    """

    channel = CHANNEL_CALIBRATED_SELF_ASSESSMENT
    msgtype = TYPE_CALIBRATED_SELF_ASSESSMENT
    contract_type = CalibratedSelfAssessment

    def log_time(self, calibrated: CalibratedSelfAssessment) -> int:
        """Return the log time (ns) of ``calibrated``: its raw assessment's belief stamp."""
        return calibrated.raw_assessment.belief_stamp_sim_ns

    def encode(self, calibrated: CalibratedSelfAssessment) -> bytes:
        """Return the CDR payload of ``calibrated``."""
        codec = _get_codec()
        return codec.calibrated_encoder.encode(codec.calibrated(calibrated))

    def __call__(self, calibrated: CalibratedSelfAssessment) -> TelemetryRecord:
        """Return the TelemetryRecord of ``calibrated``."""
        if type(calibrated) is not CalibratedSelfAssessment:
            _require(calibrated, CalibratedSelfAssessment, type(self).__name__)
        return _new_record(
            TelemetryRecord, (self.channel, self.log_time(calibrated), self.encode(calibrated)))


class BeliefSelfAssessmentToTelemetryAdapter:
    """Raw BeliefSelfAssessment -> ``/self_assessment/raw``, log time its belief stamp."""

    channel = CHANNEL_RAW_SELF_ASSESSMENT
    msgtype = TYPE_BELIEF_SELF_ASSESSMENT
    contract_type = BeliefSelfAssessment

    def log_time(self, belief: BeliefSelfAssessment) -> int:
        """Return the log time (ns) of ``belief``: its ``belief_stamp_sim_ns``."""
        return belief.belief_stamp_sim_ns

    def encode(self, belief: BeliefSelfAssessment) -> bytes:
        """Return the CDR payload of ``belief``."""
        return _get_codec().encode_belief(belief)

    def __call__(self, belief: BeliefSelfAssessment) -> TelemetryRecord:
        """Return the TelemetryRecord of ``belief``."""
        if type(belief) is not BeliefSelfAssessment:
            _require(belief, BeliefSelfAssessment, type(self).__name__)
        return _new_record(
            TelemetryRecord, (self.channel, self.log_time(belief), self.encode(belief)))


class PredictionOutcomeToTelemetryAdapter:
    """PredictionOutcome -> ``/prediction_outcome``, log time its ``observed_stamp_sim_ns``."""

    channel = CHANNEL_PREDICTION_OUTCOME
    msgtype = TYPE_PREDICTION_OUTCOME
    contract_type = PredictionOutcome

    def log_time(self, outcome: PredictionOutcome) -> int:
        """Return the log time (ns) of ``outcome``: its ``observed_stamp_sim_ns``."""
        return outcome.observed_stamp_sim_ns

    def encode(self, outcome: PredictionOutcome) -> bytes:
        """Return the CDR payload of ``outcome``."""
        return _get_codec().encode_outcome(outcome)

    def __call__(self, outcome: PredictionOutcome) -> TelemetryRecord:
        """Return the TelemetryRecord of ``outcome``."""
        if type(outcome) is not PredictionOutcome:
            _require(outcome, PredictionOutcome, type(self).__name__)
        return _new_record(
            TelemetryRecord, (self.channel, self.log_time(outcome), self.encode(outcome)))


class FeedbackEventToTelemetryAdapter:
    """LoopEvent -> ``/feedback_events`` (FeedbackEvent), log time the node clock at the event."""

    channel = CHANNEL_FEEDBACK_EVENTS
    msgtype = TYPE_FEEDBACK_EVENT
    contract_type = LoopEvent

    def log_time(self, event: LoopEvent) -> int:
        """Return the log time (ns) of ``event``: its ``stamp_ns``."""
        return event.stamp_ns

    def encode(self, event: LoopEvent) -> bytes:
        """Return the CDR payload of ``event``."""
        return _get_codec().encode_event(event)

    def __call__(self, event: LoopEvent) -> TelemetryRecord:
        """Return the TelemetryRecord of ``event``."""
        _require(event, LoopEvent, type(self).__name__)
        return _new_record(
            TelemetryRecord, (self.channel, self.log_time(event), self.encode(event)))


ADAPTERS: dict[type, Adapter] = {
    CalibratedSelfAssessment: CalibratedSelfAssessmentToTelemetryAdapter(),
    BeliefSelfAssessment: BeliefSelfAssessmentToTelemetryAdapter(),
    PredictionOutcome: PredictionOutcomeToTelemetryAdapter(),
    LoopEvent: FeedbackEventToTelemetryAdapter(),
}
"""Contract class -> its adapter."""


def adapter_for(contract: object) -> Adapter:
    """Return the adapter of ``contract`` (TypeError when no adapter handles its type)."""
    adapter = ADAPTERS.get(type(contract))
    if adapter is None:
        for cls, candidate in ADAPTERS.items():
            if isinstance(contract, cls):
                return candidate
        raise TypeError(
            f'no telemetry adapter for {type(contract).__name__} '
            f'(adapted: {", ".join(cls.__name__ for cls in ADAPTERS)})')
    return adapter


def to_telemetry(contract: object) -> TelemetryRecord:
    """Return the TelemetryRecord (channel, log_time, payload) of any adapted contract."""
    return adapter_for(contract)(contract)
