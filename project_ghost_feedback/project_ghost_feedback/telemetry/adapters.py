# SPDX-License-Identifier: Apache-2.0
"""Telemetry adapters: one per contract, contract -> (channel, log_time, CDR payload bytes).

``log_time`` is the contract's own simulation stamp, never a wall clock, so the same contract
always gives the same record (ADR-0026 section 6):

- CalibratedSelfAssessment: ``calibrated.raw_assessment.belief_stamp_sim_ns``;
- BeliefSelfAssessment (raw): ``belief_stamp_sim_ns``;
- PredictionOutcome: ``observed_stamp_sim_ns``.

The payload is the CDR (little endian, ``cdr`` encapsulation) of the matching
``project_ghost_feedback_msgs`` message, encoded by rosbags' generated serializers (no rclpy).
"""

from typing import NamedTuple

import numpy

from ..core import BeliefSelfAssessment, PredictionOutcome
from ..core.feedback import CalibratedSelfAssessment
from .channels import (
    CHANNEL_CALIBRATED_SELF_ASSESSMENT,
    CHANNEL_PREDICTION_OUTCOME,
    CHANNEL_RAW_SELF_ASSESSMENT,
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_CALIBRATION_HISTORY,
    TYPE_NAMED_LEVEL,
    TYPE_PREDICTION_OUTCOME,
)
from .msgdefs import typestore

# Encoding into a fresh zeroed buffer of this size skips rosbags' size pass; a message that does
# not fit (long names or many levels) takes the exact-size path. Both give identical bytes.
_SCRATCH_SIZE = 1024


class TelemetryRecord(NamedTuple):
    """One message of a telemetry bag: channel (topic), log time (ns) and CDR payload."""

    channel: str
    log_time: int
    payload: bytes


class _Encoder:
    """CDR encoder of one message type, through the rosbags typestore."""

    def __init__(self, msgtype):
        store = typestore()
        self.msgtype = msgtype
        self._store = store
        msgdef = store.get_msgdef(msgtype)
        self._serialize = msgdef.serialize_cdr_le
        self._cls = msgdef.cls

    def encode(self, message):
        """Return the CDR bytes (4-byte little-endian encapsulation header + body)."""
        buffer = bytearray(_SCRATCH_SIZE)
        buffer[1] = 1  # CDR_LE encapsulation: 0x00 0x01 0x00 0x00
        try:
            end = self._serialize(memoryview(buffer)[4:], 0, message, self._store)
        except Exception:  # noqa: BLE001 - too big for the scratch buffer, or a bad value
            # The exact-size path gives the same bytes, or raises rosbags' own error.
            return bytes(self._store.serialize_cdr(message, self.msgtype, little_endian=True))
        return bytes(buffer[:end + 4])


class _Codec:
    """Contract -> rosbags message objects for the package's types (built lazily, once)."""

    def __init__(self):
        store = typestore()
        self.named_level_cls = store.types[TYPE_NAMED_LEVEL]
        self.belief_cls = store.types[TYPE_BELIEF_SELF_ASSESSMENT]
        self.history_cls = store.types[TYPE_CALIBRATION_HISTORY]
        self.calibrated_cls = store.types[TYPE_CALIBRATED_SELF_ASSESSMENT]
        self.outcome_cls = store.types[TYPE_PREDICTION_OUTCOME]
        self.belief_encoder = _Encoder(TYPE_BELIEF_SELF_ASSESSMENT)
        self.calibrated_encoder = _Encoder(TYPE_CALIBRATED_SELF_ASSESSMENT)
        self.outcome_encoder = _Encoder(TYPE_PREDICTION_OUTCOME)
        # The rosbags objects of the last belief converted: the node records a raw assessment
        # and then the calibrated assessment that carries the very same object.
        self._last_belief = None
        self._last_belief_message = None

    def named_levels(self, levels):
        cls = self.named_level_cls
        return [cls(item.name, item.level.value) for item in levels]

    def belief(self, belief):
        if belief is self._last_belief:
            return self._last_belief_message
        message = self.belief_cls(
            belief.belief_stamp_sim_ns, belief.overall_level.value,
            self.named_levels(belief.axis_levels), self.named_levels(belief.block_levels),
            belief.schema_version)
        self._last_belief = belief
        self._last_belief_message = message
        return message

    def history(self, history):
        stamp = history.most_recent_observed_stamp_sim_ns
        return self.history_cls(
            history.outcomes_considered, history.count_within_1_std,
            history.count_beyond_1_std, history.count_beyond_3_std, history.count_beyond_5_std,
            history.worst_position_mahalanobis, history.worst_orientation_mahalanobis,
            stamp is not None, 0 if stamp is None else stamp, history.schema_version)

    def calibrated(self, calibrated):
        return self.calibrated_cls(
            self.belief(calibrated.raw_assessment), self.history(calibrated.calibration_history),
            calibrated.adjusted_overall_level.value, calibrated.adjustment_policy_id,
            calibrated.adjustment_reason, calibrated.schema_version)

    def outcome(self, outcome):
        return self.outcome_cls(
            outcome.prediction_stamp_sim_ns, outcome.observed_stamp_sim_ns,
            numpy.array(outcome.position_error_m, dtype=numpy.float64),
            numpy.array(outcome.orientation_error_rad, dtype=numpy.float64),
            outcome.position_mahalanobis, outcome.orientation_mahalanobis,
            outcome.schema_version)


_codec = None


def _get_codec():
    global _codec
    if _codec is None:
        _codec = _Codec()
    return _codec


def _require(contract, cls, adapter):
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

    def log_time(self, calibrated):
        """Return the log time (ns) of ``calibrated``: its raw assessment's belief stamp."""
        return calibrated.raw_assessment.belief_stamp_sim_ns

    def encode(self, calibrated):
        """Return the CDR payload of ``calibrated``."""
        codec = _get_codec()
        return codec.calibrated_encoder.encode(codec.calibrated(calibrated))

    def __call__(self, calibrated):
        """Return the TelemetryRecord of ``calibrated``."""
        _require(calibrated, CalibratedSelfAssessment, type(self).__name__)
        return TelemetryRecord(self.channel, self.log_time(calibrated), self.encode(calibrated))


class BeliefSelfAssessmentToTelemetryAdapter:
    """Raw BeliefSelfAssessment -> ``/self_assessment/raw``, log time its belief stamp."""

    channel = CHANNEL_RAW_SELF_ASSESSMENT
    msgtype = TYPE_BELIEF_SELF_ASSESSMENT
    contract_type = BeliefSelfAssessment

    def log_time(self, belief):
        """Return the log time (ns) of ``belief``: its ``belief_stamp_sim_ns``."""
        return belief.belief_stamp_sim_ns

    def encode(self, belief):
        """Return the CDR payload of ``belief``."""
        codec = _get_codec()
        return codec.belief_encoder.encode(codec.belief(belief))

    def __call__(self, belief):
        """Return the TelemetryRecord of ``belief``."""
        _require(belief, BeliefSelfAssessment, type(self).__name__)
        return TelemetryRecord(self.channel, self.log_time(belief), self.encode(belief))


class PredictionOutcomeToTelemetryAdapter:
    """PredictionOutcome -> ``/prediction_outcome``, log time its ``observed_stamp_sim_ns``."""

    channel = CHANNEL_PREDICTION_OUTCOME
    msgtype = TYPE_PREDICTION_OUTCOME
    contract_type = PredictionOutcome

    def log_time(self, outcome):
        """Return the log time (ns) of ``outcome``: its ``observed_stamp_sim_ns``."""
        return outcome.observed_stamp_sim_ns

    def encode(self, outcome):
        """Return the CDR payload of ``outcome``."""
        codec = _get_codec()
        return codec.outcome_encoder.encode(codec.outcome(outcome))

    def __call__(self, outcome):
        """Return the TelemetryRecord of ``outcome``."""
        _require(outcome, PredictionOutcome, type(self).__name__)
        return TelemetryRecord(self.channel, self.log_time(outcome), self.encode(outcome))


ADAPTERS = {
    CalibratedSelfAssessment: CalibratedSelfAssessmentToTelemetryAdapter(),
    BeliefSelfAssessment: BeliefSelfAssessmentToTelemetryAdapter(),
    PredictionOutcome: PredictionOutcomeToTelemetryAdapter(),
}
"""Contract class -> its adapter."""


def adapter_for(contract):
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


def to_telemetry(contract):
    """Return the TelemetryRecord (channel, log_time, payload) of any adapted contract."""
    return adapter_for(contract)(contract)
