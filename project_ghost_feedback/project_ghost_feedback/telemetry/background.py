# SPDX-License-Identifier: Apache-2.0
"""Telemetry recording off the data path: a bounded queue and one writer thread.

The node's callbacks only enqueue contracts (``put_nowait``); the writer thread encodes and writes
them with :class:`~.recorder.TelemetryRecorder`. A slow or full disk therefore never blocks the
data path: when the queue is full (``queue_size`` records or ``queue_bytes`` bytes: 1,500
messages of 1 MB on a slow disk took the node from 43 MB to 1.4 GB when only the count was
bounded), or after the recorder stopped on a write error (reported once through ``on_error``),
records are counted in :attr:`not_recorded` instead, by cause in :attr:`losses`. A message the
bag readers would refuse (over 1 MiB) is refused before it is queued. :meth:`close` lets the
thread finish what is queued, then finishes the bag; an error while finishing (disk full) is
reported, not raised, so the node still shuts down cleanly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import pathlib
import queue
import threading
import time
from typing import Any, TYPE_CHECKING

if TYPE_CHECKING:
    from ..core import BeliefSelfAssessment, PredictionOutcome
    from ..core.feedback import CalibratedSelfAssessment
    from ..core.loop import LoopEvent
    from .recorder import TelemetryRecorder

_STOP = object()
_IDLE_S = 0.02
"""How long the writer thread sleeps when the queue is empty: it takes what came meanwhile in one
go. A blocking ``get`` would wake it for every record: one thread switch per message for the
node's thread too (GIL hand-overs; with the single-threaded executor that doubled the node's CPU
per cycle, bench/node_bench.py --with-telemetry)."""

DEFAULT_QUEUE_BYTES = 64 << 20
"""Default byte budget of the queue (the node's ``telemetry_queue_bytes``)."""
CONTRACT_BYTES = 1024
"""What one queued contract is charged, plus 16 bytes per outcome of an assessment's window."""


class BackgroundRecorder:
    """Feed a TelemetryRecorder from a bounded queue on a daemon writer thread."""

    def __init__(self, recorder: TelemetryRecorder, *, queue_size: int,
                 on_error: Callable[[str], None], queue_bytes: int = DEFAULT_QUEUE_BYTES) -> None:
        self._recorder = recorder
        self._on_error = on_error
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._queue_bytes = queue_bytes
        self._lock = threading.Lock()
        self._dropped = 0
        self._over_budget = 0
        self._queued_bytes = 0
        self._closed = False
        self._thread = threading.Thread(
            target=self._run, name='ghost_feedback_telemetry', daemon=True)
        self._thread.start()

    @property
    def path(self) -> str | pathlib.Path:
        """Return the bag directory."""
        return self._recorder.path

    @property
    def closed(self) -> bool:
        """Return True once :meth:`close` was called."""
        return self._closed

    @property
    def error(self) -> Exception | None:
        """Return the error that stopped the recording, or None."""
        return self._recorder.error

    @property
    def recorded(self) -> int:
        """Return the number of messages recorded in the bag (see TelemetryRecorder.counts)."""
        return sum(self._recorder.counts.values())

    @property
    def not_recorded(self) -> int:
        """Return the number of records not in the bag: queue full, or after a write error."""
        with self._lock:
            dropped = self._dropped
        return dropped + self._recorder.not_recorded

    @property
    def losses(self) -> dict[str, int]:
        """Return ``{cause: records}`` of :attr:`not_recorded` that are not 0.

        ``queue_full`` (``queue_size`` records waiting, or the recording closed),
        ``over_byte_budget`` (``queue_bytes`` waiting); of what was received as bytes
        (telemetry/payload_check.py): ``too_large`` (over the readers' message limit),
        ``malformed`` (rosbags cannot decode it), ``string_with_null`` (rclpy and rosbags would
        read another string); ``write_error`` (the rest: after a write error).
        """
        with self._lock:
            dropped, over_budget = self._dropped, self._over_budget
        not_recorded, refused = self._recorder.loss_counts()
        causes = {'queue_full': dropped - over_budget, 'over_byte_budget': over_budget,
                  **refused, 'write_error': not_recorded - sum(refused.values())}
        return {cause: count for cause, count in causes.items() if count}

    @property
    def queued_bytes(self) -> int:
        """Return the bytes the queue holds now (as charged)."""
        with self._lock:
            return self._queued_bytes

    def _put(self, item: tuple[Any, Any, Any], records: int, size: int) -> None:
        if self._closed or self._recorder.error is not None:
            self._count_lost(records)
            return
        with self._lock:
            if self._queued_bytes + size > self._queue_bytes:
                self._dropped += records
                self._over_budget += records
                return
            self._queued_bytes += size
        try:
            self._queue.put_nowait((item, size))
        except queue.Full:
            with self._lock:
                self._queued_bytes -= size
                self._dropped += records

    def _count_lost(self, records: int) -> None:
        with self._lock:
            self._dropped += records

    def record_outcome(self, outcome: PredictionOutcome) -> None:
        """Queue an accepted PredictionOutcome."""
        self._put(('outcome', outcome, None), 1, CONTRACT_BYTES)

    def record_assessment(self, raw: BeliefSelfAssessment,
                          calibrated: CalibratedSelfAssessment) -> None:
        """Queue an accepted raw assessment and the calibrated assessment published for it."""
        size = 2 * CONTRACT_BYTES + 16 * calibrated.calibration_history.outcomes_considered
        self._put(('assessment', raw, calibrated), 2, size)

    def record_event(self, event: LoopEvent) -> None:
        """Queue a LoopEvent (a reset or a configuration change)."""
        self._put(('event', event, None), 1, CONTRACT_BYTES)

    def record_serialized(self, channel: str, log_time: int, payload: bytes) -> None:
        """Queue a message received as CDR bytes for an extra channel (not if too large)."""
        if not self._recorder.refuse_oversized(payload):
            self._put(('serialized', channel, (log_time, payload)), 1, len(payload))

    def record_bytes(self, records: Sequence[tuple[str, int, bytes]]) -> None:
        """Queue messages already serialized, ``(channel, log_time, payload)`` each: all or none.

        The feedback node records its inputs as the bytes it took and its output as the bytes
        it published (nothing encoded again).
        """
        self._put(('records', records, None), len(records),
                  sum(len(payload) for _, _, payload in records))

    def _run(self) -> None:
        recorder = self._recorder
        while True:
            try:
                queued = self._queue.get_nowait()
            except queue.Empty:
                time.sleep(_IDLE_S)
                continue
            if queued is _STOP:
                return
            (kind, first, second), size = queued
            # After a write error the recorder only counts what it is given as not recorded.
            if kind == 'outcome':
                recorder.record_outcome(first)
            elif kind == 'assessment':
                recorder.record_assessment(first, second)
            elif kind == 'event':
                recorder.record_event(first)
            elif kind == 'records':
                recorder.record_bytes(first)
            else:
                recorder.record_serialized(first, *second)
            del queued, first, second  # the budget is given back once the record is gone
            with self._lock:
                self._queued_bytes -= size

    def close(self, timeout_s: float = 30.0) -> None:
        """Write what is queued, finish the bag; report (not raise) a failure. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._on_error(f'telemetry writer did not finish within {timeout_s} s; '
                           f'{self._queue.qsize()} records not recorded')
            return
        try:
            self._recorder.close()
        except Exception as error:  # noqa: BLE001 - a full disk must not fail the shutdown
            self._on_error(f'telemetry bag {self.path} could not be finished: {error}')
