# SPDX-License-Identifier: Apache-2.0
"""The feedback node's telemetry recorder (pure Python: no rclpy).

It writes, in the order the node processes them, every accepted input (outcomes and raw
assessments) and every published calibrated assessment through the telemetry adapters, so the log
time of each record is the contract's sim stamp and the same input always gives the same bag. The
node's configuration at start goes to metadata.yaml's ``custom_data`` so ``ghost-feedback replay``
can verify the bag with the configuration that produced it.
"""

import collections
from collections.abc import Callable, Iterable, Sequence
import pathlib
import threading

from ..core import BeliefSelfAssessment, PredictionOutcome
from ..core.feedback import CalibratedSelfAssessment
from ..core.loop import CAUSE_PARAMETERS, CONFIGURATION, LoopConfig, LoopEvent
from .adapters import (
    BeliefSelfAssessmentToTelemetryAdapter,
    CalibratedSelfAssessmentToTelemetryAdapter,
    FeedbackEventToTelemetryAdapter,
    PredictionOutcomeToTelemetryAdapter,
    TelemetryRecord,
)
from .bag_limits import DEFAULT_LIMITS, readable_message_counts
from .channels import Channel, CHANNELS
from .msgdefs import MessageDefinitionError
from .payload_check import PayloadCheck, TOO_LARGE
from .config import CUSTOM_CONFIG_CHANGES, CUSTOM_RECORDER, custom_data_for_config
from .writer import TelemetryWriter, TelemetryWriterError


class TelemetryRecorder:
    """Record a feedback node's accepted inputs and calibrated outputs into a telemetry bag.

    ``path`` must not exist. Opening failures (existing path, unwritable directory, missing .msg
    definitions) raise ValueError with a one-line reason, so a node can refuse its parameter.
    A failure while writing is reported once through ``on_error(message)`` and stops the
    recording (the node keeps running); :attr:`error` keeps it.
    """

    def __init__(self, path: str | pathlib.Path, config: LoopConfig, *,
                 recorder: str = 'feedback_node', extra_channels: Iterable[Channel] = (),
                 on_error: Callable[[str], None] | None = None) -> None:
        custom_data = custom_data_for_config(config)
        custom_data[CUSTOM_RECORDER] = recorder
        self._config_changes = 0
        custom_data[CUSTOM_CONFIG_CHANGES] = '0'
        extra_channels = tuple(extra_channels)
        # What is recorded as received bytes (record_serialized) is checked as the inputs are.
        self._msgtypes = {channel.topic: channel.msgtype for channel in extra_channels}
        self._check = PayloadCheck(self._msgtypes.values(), DEFAULT_LIMITS.message_bytes)
        try:
            self._writer = TelemetryWriter(
                path, channels=CHANNELS + extra_channels, custom_data=custom_data)
        except (TelemetryWriterError, MessageDefinitionError, OSError) as error:
            raise ValueError(f'telemetry_bag: {error}') from None
        self.path = path
        self.error: Exception | None = None
        self.offered = 0
        self.refused: collections.Counter[str] = collections.Counter()
        """Messages received as bytes and not recorded, by reason (telemetry/payload_check.py):
        the readers would refuse the bag for them, or could not decode them as rclpy does."""
        self._readable: dict[str, int] | None = None
        self._on_error = on_error
        self._lock = threading.RLock()  # on_error may read the counts
        self._outcome = PredictionOutcomeToTelemetryAdapter()
        self._raw = BeliefSelfAssessmentToTelemetryAdapter()
        self._calibrated = CalibratedSelfAssessmentToTelemetryAdapter()
        self._event = FeedbackEventToTelemetryAdapter()

    @property
    def counts(self) -> dict[str, int]:
        """Return ``{topic: messages recorded}``.

        Before a write error: what the writer took (what metadata.yaml counts at close). After
        one: what is readable from the bag's MCAP file (its complete chunks), counted once.
        """
        if self._readable is not None:
            return dict(self._readable)
        return dict(self._writer.counts)

    @property
    def not_recorded(self) -> int:
        """Return the number of records given to this recorder that are not in the bag.

        Read under the recorder's lock: during a write ``offered`` already counts the records
        the writer has not counted yet, and /diagnostics read that as a write error.
        """
        return self.loss_counts()[0]

    def loss_counts(self) -> tuple[int, dict[str, int]]:
        """Return ``(not_recorded, {reason: refused})`` at one instant (between writes)."""
        with self._lock:
            return self.offered - sum(self.counts.values()), dict(self.refused)

    @property
    def closed(self) -> bool:
        """Return True once the bag is closed."""
        return self._writer.closed

    def _write(self, records: Sequence[TelemetryRecord]) -> None:
        with self._lock:
            self.offered += len(records)
            if self.error is not None or self._writer.closed:
                return
            try:
                for record in records:
                    self._writer.write(record)
            except Exception as error:  # noqa: BLE001 - never take the node down with the log
                self._stop(error)

    def _stop(self, error: Exception) -> None:
        """Stop recording after a write error: abort the bag, count what is readable, report.

        The writer buffers a chunk in memory, so messages it took may never reach the disk:
        after the error, the recorded count is what a reader recovers from the file. Finishing
        the bag would fail the same way (a full disk), so it is aborted: the MCAP file keeps
        its complete chunks and gets no summary, and there is no metadata.yaml.
        """
        self.error = error
        try:
            self._writer.abort()
        except Exception:  # noqa: BLE001,S110 - the error being reported says it all
            pass
        readable: dict[str, int] = {}
        for mcap_file in sorted(pathlib.Path(self.path).glob('*.mcap')):
            for topic, count in readable_message_counts(mcap_file).items():
                readable[topic] = readable.get(topic, 0) + count
        self._readable = readable
        if self._on_error is not None:
            self._on_error(f'telemetry recording to {self.path} stopped: {error}')

    def record_outcome(self, outcome: PredictionOutcome) -> None:
        """Record an accepted PredictionOutcome (log time: its observed stamp)."""
        self._write((self._outcome(outcome),))

    def record_assessment(self, raw: BeliefSelfAssessment,
                          calibrated: CalibratedSelfAssessment) -> None:
        """Record an accepted raw assessment and the calibrated assessment published for it."""
        self._write((self._raw(raw), self._calibrated(calibrated)))

    def refuse_oversized(self, payload: bytes) -> bool:
        """Count and return True when ``payload`` is beyond what the bag readers accept.

        A message over the readers' ``message_bytes`` (1 MiB) would make ``info``, ``replay``
        and ``evaluate`` refuse the whole bag, the node's own channels with it: it is not
        recorded, it is counted (:attr:`refused` ``too_large``, and in :attr:`not_recorded`).
        """
        if len(payload) <= DEFAULT_LIMITS.message_bytes:
            return False
        self._refuse(TOO_LARGE)
        return True

    def _refuse(self, reason: str) -> None:
        with self._lock:
            self.offered += 1
            self.refused[reason] += 1

    def record_serialized(self, channel: str, log_time: int, payload: bytes) -> None:
        """Record a message received as CDR bytes on an extra channel (e.g. /diagnostics).

        Only what rosbags decodes with the channel's own schema, as rclpy reads it
        (:class:`~.payload_check.PayloadCheck`); the rest is counted in :attr:`refused`.
        """
        reason = self._check.refusal(self._msgtypes[channel], payload)
        if reason is not None:
            self._refuse(reason)
            return
        self._write((TelemetryRecord(channel, log_time, payload),))

    def record_bytes(self, records: Sequence[tuple[str, int, bytes]]) -> None:
        """Record messages already serialized, ``(channel, log_time, payload)`` each, in order.

        The bytes must be what the channel's adapter would give for the same contract (the
        node's inputs as taken, its output as published); the log time likewise.
        """
        self._write(tuple(TelemetryRecord(*record) for record in records))

    def record_event(self, event: LoopEvent) -> None:
        """Record a LoopEvent: a reset or a configuration change (log time: its stamp).

        A parameter change is also counted in metadata.yaml's custom_data (``config_changes``).
        """
        self._write((self._event(event),))
        if event.kind == CONFIGURATION and event.cause == CAUSE_PARAMETERS:
            with self._lock:
                if self._writer.closed:
                    return
                self._config_changes += 1
                self._writer.set_custom_data(CUSTOM_CONFIG_CHANGES, str(self._config_changes))

    def close(self) -> None:
        """Finish the bag (MCAP summary and metadata.yaml). Idempotent.

        A failure to finish (the disk filled up) is handled as a write error: reported once
        through ``on_error``, the complete chunks counted; it is not raised.
        """
        with self._lock:
            if self._writer.closed:
                return
            try:
                self._writer.close()
            except Exception as error:  # noqa: BLE001 - never fail the node's shutdown
                self._stop(error)
