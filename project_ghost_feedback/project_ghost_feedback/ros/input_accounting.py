# SPDX-License-Identifier: Apache-2.0
"""Bookkeeping of the feedback node's inputs: log pacing, sequence gaps, rejected /clock messages.

- :class:`LogGate`: at most one log line per period (cheaper than rclpy's throttling);
- :class:`SequenceGaps`: input messages missing from a publisher's sequence numbers (the losses
  the RMW's message-lost event does not report), ``messages_missed`` on /diagnostics;
- :func:`is_negative_time_error`: the error rclpy's TimeSource raises for a /clock message with
  a negative time, which the node counts as a rejected clock instead of a callback failure.
"""

from collections.abc import Callable, Mapping
import time
from typing import Any

from builtin_interfaces.msg import Time as TimeMsg
from rclpy.time import Time
from ..core import NS_PER_S


class LogGate:
    """At most one log per period, decided before calling the logger.

    rclpy's own ``throttle_duration_sec`` inspects the caller's frame on every call, also for the
    calls it then drops (~0.5 ms each, bench/node_bench.py). Steady time; it only paces logs.
    """

    __slots__ = ('_next_ns',)

    def __init__(self) -> None:
        self._next_ns = 0

    def open(self, period_s: float) -> bool:
        """Return True if a log may go out now (then not again for ``period_s`` seconds)."""
        now_ns = time.monotonic_ns()
        if now_ns < self._next_ns:
            return False
        self._next_ns = now_ns + int(period_s * NS_PER_S)
        return True


class SequenceGaps:
    """Messages missing from one input's publication sequence numbers (rmw message info).

    Each DDS writer numbers its samples 1, 2, 3, ... and rmw_fastrtps passes the number on as
    ``publication_sequence_number``; rclpy's message info has no publisher id, so a gap counts
    only when the input has exactly one matched publisher at that moment (``publisher_count``,
    asked only when a gap shows, so the common path costs nothing). A number at or below the
    previous one is a new writer (numbering restarts) and is not a gap. It catches what the RMW's
    message-lost event does not: samples a reliable KEEP_LAST reader queue overwrote before the
    node took them. With several publishers on one input, or an RMW without the number, nothing
    is counted here. The first message taken from a writer is the baseline: what the writer sent
    before it (before the DDS match completed, or before this node started) is not counted, as a
    late joiner with volatile durability was never owed it.
    """

    __slots__ = ('missed', 'restarts', '_publisher_count', '_last')

    def __init__(self, publisher_count: Callable[[], int]) -> None:
        self.missed = 0
        self.restarts = 0   # numbers that did not go up: a new writer, or several interleaving
        self._publisher_count = publisher_count
        self._last: int | None = None

    def note(self, info: Mapping[str, Any] | None) -> int:
        """Take one message's info; return how many messages are missing before it."""
        number = info.get('publication_sequence_number') if info else None
        last, self._last = self._last, number
        if number is None or last is None or number == last + 1:
            return 0   # no number, the first message, or no gap
        if number <= last:
            self.restarts += 1
            return 0   # a new writer (numbering restarts), or several writers interleaving
        if self._publisher_count() != 1:
            return 0   # numbers of several writers interleave: a gap means nothing
        missed = number - last - 1
        self.missed += missed
        return missed


def _negative_time_error() -> tuple[type[BaseException], str] | None:
    """Return ``(type, text)`` of what rclpy raises for a /clock message with a negative time.

    Learned at import from the public ``Time.from_msg`` (what rclpy's TimeSource calls for every
    /clock message), so a change of rclpy's wording cannot make the node misclassify it.
    """
    try:
        Time.from_msg(TimeMsg(sec=-1))
    except Exception as error:  # noqa: BLE001 - whatever rclpy raises is the signature
        return type(error), str(error)
    return None


_NEGATIVE_TIME_ERROR = _negative_time_error()


def is_negative_time_error(error: BaseException) -> bool:
    """Return True if ``error`` is what rclpy raises for a /clock message with a negative time."""
    return _NEGATIVE_TIME_ERROR is not None and (type(error), str(error)) == _NEGATIVE_TIME_ERROR
