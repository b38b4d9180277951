# SPDX-License-Identifier: Apache-2.0
"""How the feedback node counts, notes and logs what goes wrong, and keeps running.

:class:`FeedbackFaults` is a mixin of :class:`~.feedback_node.FeedbackNode` (first in its bases):
an exception a callback raised (a /clock message with a negative time is a rejected clock), input
messages the middleware lost or that are missing from their publication sequence, and inputs the
core's contracts refuse. Each is counted (the /diagnostics values), noted on the period at its
severity and logged at most once per ``reject_log_throttle_s``.
"""

from __future__ import annotations

import collections
from typing import Any, TYPE_CHECKING

from ..core import ContractViolation
from .calibration_status import ERROR, PeriodStatus, WARN
from .input_accounting import is_negative_time_error, LogGate

if TYPE_CHECKING:
    from .feedback_parameters import FeedbackConfig

MAX_REJECT_TEXT = 300
"""A rejection's text quotes the bad value: a message with a megabyte-long name must not become
a megabyte in every /diagnostics message and log line."""


class FeedbackFaults:
    """Fault accounting of the feedback node (the node's attributes below are its state)."""

    period: PeriodStatus
    callback_errors: collections.Counter[str]
    rejected: collections.Counter[str]
    clock_rejected: int
    last_clock_rejection: str
    last_reject_reason: str
    lost_messages: int
    _clock_log_gate: LogGate
    _callback_error_log_gate: LogGate
    _reject_log_gate: LogGate

    if TYPE_CHECKING:
        @property
        def config(self) -> FeedbackConfig: ...

        def get_logger(self) -> Any: ...

    def note_callback_error(self, error: Exception) -> None:
        """Count and log (throttled) an exception a callback raised; the node keeps running.

        rclpy's own /clock subscription (its TimeSource, with use_sim_time) raises when a
        /clock message holds a negative time; that message is counted as a rejected clock, and
        the node clock keeps its last value.
        """
        if is_negative_time_error(error):
            self.clock_rejected += 1
            self.last_clock_rejection = (
                f'a /clock message with a negative time (rclpy: {error}); the node clock keeps '
                'its last value')
            self.period.note(WARN, f'rejecting /clock messages ({self.last_clock_rejection})')
            if self._clock_log_gate.open(self.config.reject_log_throttle_s):
                self.get_logger().warning(
                    f'/clock message rejected ({self.clock_rejected} so far): '
                    f'{self.last_clock_rejection}')
            return
        key = type(error).__name__
        self.callback_errors[key] += 1
        self.period.note(ERROR, f'a callback raised {key}: {error}')
        if self._callback_error_log_gate.open(self.config.reject_log_throttle_s):
            self.get_logger().error(
                f'callback raised {key} ({sum(self.callback_errors.values())} so far), '
                f'the node keeps running: {error}')

    def _on_message_lost(self, status: Any) -> None:
        self.lost_messages += status.total_count_change
        self.period.note(WARN, f'{status.total_count_change} input messages lost in the '
                         'middleware (queue overflow)')

    def _reject(self, kind: str, error: Exception) -> None:
        reason = error.reason if isinstance(error, ContractViolation) else type(error).__name__
        self._count_rejection(kind, reason, str(error))

    def _count_rejection(self, kind: str, reason: str, text: str) -> None:
        self.rejected[f'{kind}:{reason}'] += 1
        if len(text) > MAX_REJECT_TEXT:
            text = f'{text[:MAX_REJECT_TEXT]}... ({len(text)} characters)'
        self.last_reject_reason = f'{kind}: {text}'
        self.period.note(WARN, f'rejecting {kind} messages ({reason})')
        if self._reject_log_gate.open(self.config.reject_log_throttle_s):
            self.get_logger().warning(
                f'rejected {kind} ({sum(self.rejected.values())} so far): {text}')

    def _note_missed(self, kind: str, missed: int) -> None:
        self.period.note(WARN, f'{missed} {kind} messages missing from the publication '
                         'sequence (input queue overflow)')
