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
``project_ghost_feedback_msgs`` message, encoded by :mod:`..msg_encoding`: the one table of each
message, the same bytes the nodes publish (and rclpy's and rosbags' serializers write: its tests
check both).
"""

from typing import Any, NamedTuple, Protocol

from ..core import BeliefSelfAssessment, PredictionOutcome
from ..core.feedback import CalibratedSelfAssessment
from ..core.loop import LoopEvent
from ..msg_encoding import (
    belief_bytes, calibrated_contract_bytes, cdr_bytes, EVENT, outcome_bytes)
from .channels import (
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_FEEDBACK_EVENTS,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_FEEDBACK_EVENT,
    TYPE_PREDICTION_OUTCOME,
)


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
        return calibrated_contract_bytes(calibrated)

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
        return belief_bytes(belief)

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
        return outcome_bytes(outcome)

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
        return cdr_bytes(EVENT, event)

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
