# SPDX-License-Identifier: Apache-2.0
"""A node's health ledger: what goes wrong, counted, noted on the period, logged (throttled).

Both nodes (the feedback node and the outcome bridge) own one :class:`HealthLedger`; it holds
all of their fault state, and each fault is written once here:

- an exception a callback (or the executor's take) raised: counted by type, ERROR on the period,
  logged; a /clock message with a negative time (rclpy's TimeSource raises) is a rejected clock
  instead, WARN, and the node clock keeps its last value;
- input messages the middleware lost (the subscription's message-lost event), by input;
- input messages missing from a publisher's sequence numbers (:class:`~.input_accounting.
  SequenceGaps`, one per watched input);
- inputs refused (by a contract, the wire reader or the loop), counted as ``<kind>:<reason>``
  with the last reason's text capped.

Each log goes out at most once per ``throttle_s()`` per kind of fault (:class:`~.input_accounting.
LogGate`). The period (:class:`~.calibration_status.PeriodStatus`) is the one the node's
/diagnostics status takes; the diagnostics tasks read the ledger's public counts.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Any

from ..core import ContractViolation
from ..parameter_spec import cap_text
from .calibration_status import ERROR, PeriodStatus, WARN
from .input_accounting import is_negative_time_error, LogGate, SequenceGaps

MAX_REJECT_TEXT = 300
"""A rejection's text quotes the bad value: a message with a megabyte-long name must not become
a megabyte in every /diagnostics message and log line."""

MAX_LOG_TEXT = 400
"""The longest line a fault is logged with."""


class HealthLedger:
    """The fault state of one node (module docstring); ``logger`` is the node's rclpy logger.

    ``throttle_s()`` returns the node's ``reject_log_throttle_s`` in effect; ``runs_on`` ends the
    callback-error log line (e.g. ``'the bridge runs on'``).
    """

    def __init__(self, logger: Any, throttle_s: Callable[[], float],
                 runs_on: str = 'the node keeps running') -> None:
        self.period = PeriodStatus()
        self.callback_errors: collections.Counter[str] = collections.Counter()
        self.last_callback_error = ''
        self.clock_rejected = 0
        self.last_clock_rejection = ''
        self.rejected: collections.Counter[str] = collections.Counter()
        self.last_reject_reason = ''
        self.messages_lost: collections.Counter[str] = collections.Counter()
        self.sequences: dict[str, SequenceGaps] = {}
        self._logger = logger
        self._throttle_s = throttle_s
        self._runs_on = runs_on
        self._gates: collections.defaultdict[str, LogGate] = collections.defaultdict(LogGate)

    def log(self, kind: str, level: str, text: str) -> None:
        """Log ``text`` (capped) at ``level`` at most once per throttle period for ``kind``."""
        if self._gates[kind].open(self._throttle_s()):
            getattr(self._logger, level)(cap_text(text, MAX_LOG_TEXT))

    # -- faults ---------------------------------------------------------------------------------

    def callback_error(self, error: BaseException) -> None:
        """Count and log an exception a callback or a take raised; the node keeps running."""
        if is_negative_time_error(error):
            self.clock_rejected += 1
            self.last_clock_rejection = cap_text(
                f'a /clock message with a negative time (rclpy: {error}); the node clock keeps '
                'its last value')
            self.period.note(WARN, f'rejecting /clock messages ({self.last_clock_rejection})')
            self.log('clock', 'warning', f'/clock message rejected ({self.clock_rejected} so '
                                         f'far): {self.last_clock_rejection}')
            return
        key = type(error).__name__
        self.callback_errors[key] += 1
        self.last_callback_error = cap_text(f'{key}: {error}')
        self.period.note(ERROR, f'a callback raised {self.last_callback_error}')
        self.log('callback_error', 'error',
                 f'callback raised {key} ({sum(self.callback_errors.values())} so far), '
                 f'{self._runs_on}: {error}')

    def message_lost(self, kind: str, status: Any) -> None:
        """Count the messages a subscription's message-lost event reports lost, by input."""
        self.messages_lost[kind] += status.total_count_change
        self.period.note(WARN, f'{status.total_count_change} {kind} messages lost in the '
                         'middleware (queue overflow)')

    def watch_sequence(self, kind: str, publisher_count: Callable[[], int]) -> None:
        """Count the gaps in the publication sequence of input ``kind`` (see :meth:`sequence`)."""
        self.sequences[kind] = SequenceGaps(publisher_count)

    def sequence(self, kind: str, info: Mapping[str, Any] | None) -> int:
        """Take the message info of one ``kind`` message; return (and note) the messages missed."""
        missed = self.sequences[kind].note(info)
        if missed:
            self.period.note(WARN, f'{missed} {kind} messages missing from the publication '
                             'sequence (input queue overflow or middleware loss)')
        return missed

    @property
    def messages_missed(self) -> int:
        """Return the messages missing from every watched publication sequence."""
        return sum(gaps.missed for gaps in self.sequences.values())

    def reject(self, kind: str, error: Exception) -> None:
        """Count an input the contracts refused (its ContractViolation reason, or error type)."""
        reason = error.reason if isinstance(error, ContractViolation) else type(error).__name__
        self.rejection(kind, reason, str(error))

    def rejection(self, kind: str, reason: str, text: str) -> None:
        """Count a refused ``kind`` input under ``<kind>:<reason>``; WARN; log (throttled)."""
        self.rejected[f'{kind}:{reason}'] += 1
        text = cap_text(text, MAX_REJECT_TEXT)
        self.last_reject_reason = f'{kind}: {text}'
        self.period.note(WARN, f'rejecting {kind} messages ({reason})')
        self.log('reject', 'warning', f'rejected {kind} ({sum(self.rejected.values())} so far): '
                                      f'{text}')
