# SPDX-License-Identifier: Apache-2.0
"""Telemetry recording off the data path: a bounded queue and one writer thread.

The node's callbacks only enqueue contracts (``put_nowait``); the writer thread encodes and writes
them with :class:`~.recorder.TelemetryRecorder`. A slow or full disk therefore never blocks the
data path: when the queue is full, or after the recorder stopped on a write error (reported once
through ``on_error``), records are counted in :attr:`not_recorded` instead. :meth:`close` lets the
thread finish what is queued, then finishes the bag; an error while finishing (disk full) is
reported, not raised, so the node still shuts down cleanly.
"""

from __future__ import annotations

from collections.abc import Callable
import pathlib
import queue
import threading
from typing import Any, TYPE_CHECKING

from ..core import BeliefSelfAssessment, PredictionOutcome
from ..core.feedback import CalibratedSelfAssessment
from ..core.loop import LoopEvent

if TYPE_CHECKING:
    from .recorder import TelemetryRecorder

_STOP = object()


class BackgroundRecorder:
    """Feed a TelemetryRecorder from a bounded queue on a daemon writer thread."""

    def __init__(self, recorder: TelemetryRecorder, *, queue_size: int,
                 on_error: Callable[[str], None]) -> None:
        self._recorder = recorder
        self._on_error = on_error
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._dropped = 0
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

    def _put(self, item: tuple[str, Any, Any], records: int) -> None:
        if self._closed or self._recorder.error is not None:
            self._count_lost(records)
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._count_lost(records)

    def _count_lost(self, records: int) -> None:
        with self._lock:
            self._dropped += records

    def record_outcome(self, outcome: PredictionOutcome) -> None:
        """Queue an accepted PredictionOutcome."""
        self._put(('outcome', outcome, None), 1)

    def record_assessment(self, raw: BeliefSelfAssessment,
                          calibrated: CalibratedSelfAssessment) -> None:
        """Queue an accepted raw assessment and the calibrated assessment published for it."""
        self._put(('assessment', raw, calibrated), 2)

    def record_event(self, event: LoopEvent) -> None:
        """Queue a LoopEvent (a reset or a configuration change)."""
        self._put(('event', event, None), 1)

    def record_serialized(self, channel: str, log_time: int, payload: bytes) -> None:
        """Queue a message received as CDR bytes for an extra channel."""
        self._put(('serialized', channel, (log_time, payload)), 1)

    def _run(self) -> None:
        recorder = self._recorder
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            kind, first, second = item
            # After a write error the recorder only counts what it is given as not recorded.
            if kind == 'outcome':
                recorder.record_outcome(first)
            elif kind == 'assessment':
                recorder.record_assessment(first, second)
            elif kind == 'event':
                recorder.record_event(first)
            else:
                recorder.record_serialized(first, *second)

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
