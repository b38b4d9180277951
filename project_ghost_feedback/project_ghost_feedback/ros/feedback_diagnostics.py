# SPDX-License-Identifier: Apache-2.0
"""The feedback node's /diagnostics status: small named checks merged into one status.

As diagnostic_updater composes tasks, :class:`FeedbackDiagnostics` is handed the objects that hold
the node's state (its health ledger, its loop, its counts and last verdict, its clock watch, its
recorders; ``feedback_state.py``), never the node, and each check looks at one concern of them.
Two kinds, run in order by :meth:`FeedbackDiagnostics.status`:

- *period checks* note a level on the node's period (the worst of the period wins):
  :func:`check_outcomes_fresh` (STALE without outcomes), :func:`check_telemetry_losses`;
- then the period is taken (seeded with the last assessment's severity, which lasts), and
  *status checks* add values and may append a note or raise the level: :func:`check_clock`
  (the node clock stalled), :func:`check_calibration` (levels, window, underconfidence, the
  overconfidence estimate), :func:`check_inputs` (counts, publishers, losses, rejections),
  :func:`check_telemetry` (the recorder's counts; ERROR when it stopped).

The result is the one ``DiagnosticStatus`` named ``<node>: calibration``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticStatus

from ..core import NS_PER_S
from ..core.feedback import (
    CalibratedSelfAssessment,
    format_overconfidence,
    PoseErrorStatistics,
)
from ..core.loop import LoopConfig, UNVERIFIED_NO_OUTCOMES, UNVERIFIED_REASONS
from .calibration_status import (
    ERROR,
    is_underconfident,
    OK,
    STALE,
    UNDERCONFIDENT_MESSAGE,
    WARN,
)
from .node_kit import diagnostic_status

if TYPE_CHECKING:
    from ..core.loop import FeedbackLoop
    from ..telemetry.background import BackgroundRecorder
    from .feedback_parameters import FeedbackConfig
    from .feedback_state import ClockWatch, FeedbackCounts, LastVerdict
    from .feedback_telemetry import TopicRecorder
    from .health import HealthLedger


DIAGNOSTIC_TASK = 'calibration'
OVERCONFIDENCE_MEANING = ('k [95% interval] per vec3: the real error std over the claimed std '
                          '(1 honest, 2 errors twice the claim)')
"""What the ``overconfidence[<vec3>]`` values mean, said beside them (``overconfidence_is``)."""


@dataclass
class Status:
    """The status being merged: level, message and values; checks add to it."""

    level: bytes
    message: str
    values: dict[str, Any] = field(default_factory=dict)

    def append(self, note: str) -> None:
        """Append ``note`` to the message (once)."""
        if note not in self.message:
            self.message = f'{self.message}; {note}'

    def counts(self, prefix: str, counter: Mapping[str, int]) -> None:
        """Add ``prefix[key]`` for every key of ``counter``, sorted."""
        for key, count in sorted(counter.items()):
            self.values[f'{prefix}[{key}]'] = count


PeriodCheck = Callable[['FeedbackDiagnostics', int], None]
StatusCheck = Callable[['FeedbackDiagnostics', int, Status], None]


def check_outcomes_fresh(task: FeedbackDiagnostics, steady_ns: int) -> None:
    """Note STALE when no outcome came for ``stale_after_s`` (steady time)."""
    starved_s = task.counts.starved_s(steady_ns)
    if starved_s > task.config().stale_after_s:
        task.health.period.note(STALE, f'no outcome received for {starved_s:.1f} s')


def check_telemetry_losses(task: FeedbackDiagnostics, steady_ns: int) -> None:
    """Note WARN when records were not recorded this period (with the causes)."""
    telemetry = task.telemetry
    if telemetry is None:
        return
    not_recorded = telemetry.not_recorded
    if not_recorded > task.not_recorded_at_status:
        task.health.period.note(
            WARN, f'telemetry: {not_recorded - task.not_recorded_at_status} records not '
            f'recorded ({", ".join(telemetry.losses)})')
    task.not_recorded_at_status = not_recorded


def check_clock(task: FeedbackDiagnostics, steady_ns: int, status: Status) -> None:
    """Say when the node clock has not advanced for a diagnostics period (sim time paused)."""
    note = task.clock.note(task.clock_ns(), steady_ns, task.config().diagnostics_period_s)
    if note:
        status.append(note)
    status.values.update({
        'node_clock_ns': task.clock.last_clock_ns,
        'clock_rejected': task.health.clock_rejected,
        'last_clock_rejection': task.health.last_clock_rejection,
        'clock_stalled': bool(note),
    })


def window_evidence(calibrated: CalibratedSelfAssessment | None) -> str:
    """Return the evidence of the window a calibrated assessment was judged on, in words."""
    if calibrated is None:
        return ''
    history = calibrated.calibration_history
    return (f'{history.count_within_1_std} within 1 std, {history.count_beyond_1_std} 1-3, '
            f'{history.count_beyond_3_std} 3-5, {history.count_beyond_5_std} beyond 5; worst d '
            f'position {history.worst_position_mahalanobis:.2f}, orientation '
            f'{history.worst_orientation_mahalanobis:.2f}')


def unverified_message(calibrated: CalibratedSelfAssessment, loop: LoopConfig) -> str:
    """Return the words of an unverified assessment (/diagnostics and the node's log)."""
    what = ('no outcome since the start or the last reset'
            if calibrated.adjustment_reason == UNVERIFIED_NO_OUTCOMES else 'no recent outcome')
    return (f'unverified: {what} for more than {loop.unverified_after_ns / NS_PER_S:g} s, level '
            f'at most {loop.unverified_max_level}; the outcome producer (outcome_bridge: its '
            '/diagnostics) says why (no reference, no tf, wrong type, refused estimates)')


def check_calibration(task: FeedbackDiagnostics, steady_ns: int, status: Status) -> None:
    """Add the verdict: levels, reason, window, policy, underconfidence, overconfidence k."""
    calibrated = task.verdict.calibrated
    config = task.config()
    underconfident = calibrated is not None and is_underconfident(calibrated)
    if underconfident:
        status.append(UNDERCONFIDENT_MESSAGE)
    if calibrated is not None and calibrated.adjustment_reason in UNVERIFIED_REASONS:
        # Nothing checks the claim: say so, and where the cause is named.
        if status.level == OK:
            status.level = WARN
        status.append(unverified_message(calibrated, config.loop))
    judged = calibrated.calibration_history.outcomes_considered if calibrated else 0
    status.values.update({
        'window_outcomes': f'{judged} of {config.loop.max_history}',
        'window_evidence': window_evidence(calibrated),
        'max_history': config.loop.max_history,
        'buffer_fill': '{}/{}'.format(*task.loop.buffer_fill),
        'policy': config.loop.policy,
        'raw_level': calibrated.raw_assessment.overall_level.name if calibrated else '',
        'calibrated_level': calibrated.adjusted_overall_level.name if calibrated else '',
        'last_reason': calibrated.adjustment_reason if calibrated else '',
        'underconfident': underconfident,
        'underconfident_assessments': task.counts.underconfident_assessments,
    })
    # The false-alarm budget in time and the outcome rate it is spent at (vec3_scale).
    status.values.update(task.loop.budget())
    # ADR-0026a: how overconfident each vec3 is, 'k_hat [low, high]' (95%); '' if unknown.
    history = calibrated.calibration_history if calibrated else None
    for vec3, text in format_overconfidence(history, config.loop.vec3_components).items():
        status.values[f'overconfidence[{vec3}]'] = text
    status.values['overconfidence_is'] = OVERCONFIDENCE_MEANING
    # Beside k, the window's error itself: metres and degrees (the outcomes carry it).
    errors = PoseErrorStatistics()
    for outcome in task.verdict.judged:
        errors.add(outcome.position_error_m, outcome.orientation_error_rad)
    summary = errors.as_dict()
    position, rotation = summary['position_m'], summary['rotation_deg']
    status.values.update({
        'window_error': errors.text() if errors.count else '',
        'window_position_error_rmse_m': (f'{position["rmse"]:.4f}'  # type: ignore[index]
                                         if position else ''),
        'window_rotation_error_rmse_deg': (f'{rotation["rmse"]:.3f}'  # type: ignore[index]
                                           if rotation else ''),
    })


def check_inputs(task: FeedbackDiagnostics, steady_ns: int, status: Status) -> None:
    """Add the inputs' counts: received, published, dropped, lost, publishers, rejections."""
    counts, health = task.counts, task.health
    status.values.update({
        'outcomes_received': counts.received['outcome'],
        'assessments_received': counts.received['assessment'],
        'rejected_total': sum(health.rejected.values()),
        'published': counts.published,
        'duplicates_dropped': counts.duplicates,
        'too_old_outcomes_dropped': counts.too_old_outcomes,
        'late_outcomes': counts.late_outcomes,
        'messages_lost': sum(health.messages_lost.values()),
        'messages_missed': health.messages_missed,
        **{f'{kind}_publishers': count() for kind, count in task.publishers.items()},
        'resets_total': sum(counts.resets.values()),
        'last_reset_reason': counts.last_reset_reason,
        'last_reject_reason': health.last_reject_reason,
    })
    status.counts('callback_errors', health.callback_errors)
    status.counts('resets', counts.resets)
    status.counts('rejected', health.rejected)


def check_telemetry(task: FeedbackDiagnostics, steady_ns: int, status: Status) -> None:
    """Add the recorder's counts; ERROR (over OK or WARN) when recording stopped."""
    telemetry = task.telemetry
    if telemetry is None:
        return
    topics = task.topics
    status.values.update({
        'telemetry_bag': str(telemetry.path),
        'telemetry_recorded': telemetry.recorded,
        'telemetry_not_recorded': telemetry.not_recorded,
        'record_topics_messages': topics.recorded if topics else 0,
        'record_topics_messages_missed': topics.missed if topics else 0,
        'record_topics_messages_lost': topics.lost if topics else 0,
        'telemetry_queue_bytes': telemetry.queued_bytes,
    })
    status.counts('telemetry_not_recorded', telemetry.losses)
    if telemetry.error is not None:
        if status.level in (OK, WARN):
            status.level = ERROR
        status.message = f'{status.message}; telemetry stopped: {telemetry.error}'


PERIOD_CHECKS: tuple[PeriodCheck, ...] = (check_outcomes_fresh, check_telemetry_losses)
STATUS_CHECKS: tuple[StatusCheck, ...] = (
    check_clock, check_calibration, check_inputs, check_telemetry)


class FeedbackDiagnostics:
    """The feedback node's /diagnostics task: its checks, and the state it keeps between periods.

    It is handed what it reads (module docstring): ``name`` (the node's fully qualified name),
    ``config`` (returns the configuration in effect), ``clock_ns`` (returns the node clock now),
    ``publishers`` (per input, returns its publisher count) and the state objects. Its own
    state is what the last period saw (``not_recorded_at_status``).
    """

    def __init__(self, name: str, config: Callable[[], FeedbackConfig], health: HealthLedger,
                 loop: FeedbackLoop, counts: FeedbackCounts, verdict: LastVerdict,
                 clock: ClockWatch, clock_ns: Callable[[], int],
                 publishers: Mapping[str, Callable[[], int]],
                 telemetry: BackgroundRecorder | None = None,
                 topics: TopicRecorder | None = None) -> None:
        self.name = name
        self.config = config
        self.health = health
        self.loop = loop
        self.counts = counts
        self.verdict = verdict
        self.clock = clock
        self.clock_ns = clock_ns
        self.publishers = publishers
        self.telemetry = telemetry
        self.topics = topics
        self.not_recorded_at_status = 0

    def status(self, steady_ns: int) -> DiagnosticStatus:
        """Run the checks; return the period's merged DiagnosticStatus and start a new period."""
        for period_check in PERIOD_CHECKS:
            period_check(self, steady_ns)
        level, message = self.health.period.take(carry=self.verdict.severity)
        status = Status(level, message)
        for status_check in STATUS_CHECKS:
            status_check(self, steady_ns, status)
        return diagnostic_status(self.name, DIAGNOSTIC_TASK, status.level, status.message,
                                 status.values)
