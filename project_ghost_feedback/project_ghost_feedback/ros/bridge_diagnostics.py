# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's /diagnostics status: small named checks merged into one status.

As diagnostic_updater composes tasks, :class:`BridgeDiagnostics` is handed the objects that hold
the bridge's state (its health ledger, its pairing engine, its counts: ``bridge_state.py``, its
subscriptions), never the node; each check below looks at one concern of them, notes a level
on the period of the health ledger (:class:`~.calibration_status.PeriodStatus`: the worst of the
period wins, the first at equal severity) and adds its values; :class:`BridgeDiagnostics` runs
them in order, keeps what the last period saw (its own state) and returns the one
``DiagnosticStatus`` named ``<node>: outcome_bridge``.

- :func:`check_inputs`: publishers matched and silence per input, sequence gaps, losses, QoS;
- :func:`check_tf`: the /tf gate's counts (transforms accepted, refused by reason, frames) and
  the frame steps (distances that jumped at a /tf change: ``frame_steps``, ``last_frame_step``);
- :func:`check_pairing`: what paired this period (ERROR when nothing paired because of frames,
  bodies or tf; WARN when estimates came and none paired) and the engine's counts;
- :func:`check_decorrelation`: the pacer's warm-up and figures;
- :func:`check_faults`: resets, clock rejections, callback errors (noted when they happen);
- :func:`check_calibrated_estimate`: the calibrated estimate's counts and factors, when enabled.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Any, TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticStatus

from ..bridge.decorrelation import PACE, WHITEN
from ..bridge.pairing import (
    DROP_CHILD_FRAME_MISMATCH,
    DROP_FRAME_MISMATCH,
    ESTIMATE,
    REFERENCE,
    RESET_CLOCK_JUMP,
)
from ..core import NS_PER_S
from .calibration_status import ERROR, OK, STALE, WARN
from .node_kit import diagnostic_status

if TYPE_CHECKING:
    from ..bridge.pairing import PairingEngine
    from .bridge_state import BridgeCounts
    from .calibrated_estimate_publisher import CalibratedEstimatePublisher
    from .health import HealthLedger


DIAGNOSTIC_TASK = 'outcome_bridge'

Values = dict[str, Any]
Check = Callable[['BridgeDiagnostics', int, Values], None]


def _counts(values: Values, prefix: str, counter: Mapping[str, int]) -> None:
    """Add ``prefix[key]`` for every key of ``counter``, sorted."""
    for key, count in sorted(counter.items()):
        values[f'{prefix}[{key}]'] = count


def _type_name(message_class: Any) -> str:
    """Return ``pkg/msg/Type`` of a generated message class."""
    return f'{message_class.__module__.split(".")[0]}/msg/{message_class.__name__}'


def _other_types_offered(task: BridgeDiagnostics, subscription: Any) -> str:
    """Return the other types the graph says are published on the subscription's topic.

    From ``get_publishers_info_by_topic``, comma-separated; ``''`` when none.
    """
    expected = _type_name(subscription.msg_type)
    offered = {info.topic_type for info in
               task.publishers_info(subscription.topic_name)}
    return ', '.join(sorted(offered - {expected}))


def check_inputs(task: BridgeDiagnostics, steady_ns: int, values: Values) -> None:
    """Check publishers matched and silence per input; add gaps, losses, incompatible QoS."""
    period = task.health.period
    for kind, subscription in task.inputs.items():
        count = subscription.get_publisher_count()
        values[f'{kind}_publishers'] = count
        if task.counts.received[kind] != task.received_at_tick[kind]:
            task.received_at_tick[kind] = task.counts.received[kind]
            task.last_input_steady_ns[kind] = steady_ns
        silent_s = (steady_ns - task.last_input_steady_ns[kind]) / NS_PER_S
        offered = _other_types_offered(task, subscription) if count == 0 else ''
        values[f'{kind}_type_offered'] = offered
        if offered:
            # Another type never matches: name it, the bridge will not pair until it changes.
            period.note(ERROR, f'{subscription.topic_name} is published as {offered}, the '
                               f'bridge reads {_type_name(subscription.msg_type)} '
                               f'({kind}_type)')
        if silent_s > task.config()['stale_after_s']:
            period.note(STALE, f'no {kind} received for {silent_s:.1f} s'
                               + (' (no publisher matched)' if count == 0 else ''))
        if count == 0:
            period.note(WARN, f'no publisher matched on {subscription.topic_name}')
        elif not task.counts.received[kind]:
            period.note(WARN, f'no {kind} received yet')
        elif count > 1:
            period.note(WARN, f'{count} publishers on {subscription.topic_name}: '
                              'their streams mix')
    values['estimates_received'] = task.counts.received[ESTIMATE]
    values['references_received'] = task.counts.received[REFERENCE]
    for kind in (ESTIMATE, REFERENCE):
        values[f'{kind}_messages_missed'] = task.health.sequences[kind].missed
        values[f'{kind}_messages_lost'] = task.health.messages_lost[kind]
        values[f'{kind}_sequence_restarts'] = task.health.sequences[kind].restarts
        values[f'{kind}_incompatible_qos'] = task.counts.incompatible_qos[kind]
    values['message_info'] = task.counts.message_info
    for topic in task.tf_subscriptions:
        name = topic.strip('/')
        values[f'{name}_messages_received'] = task.counts.tf_received[topic]
        values[f'{name}_messages_missed'] = task.health.sequences[topic].missed
        values[f'{name}_messages_lost'] = task.health.messages_lost[topic]


def check_tf(task: BridgeDiagnostics, steady_ns: int, values: Values) -> None:
    """Add what the tf gate took and refused, by reason (WARN noted when refused)."""
    if not task.tf_subscriptions:
        return
    engine = task.engine
    values.update({
        'tf_transforms_accepted': engine.transforms_accepted,
        'tf_transforms_refused_total': sum(engine.transforms_refused.values()),
        'tf_frames': f'{len(engine.tf_gate.frames)}/{engine.tf_gate.max_frames}',
        # Frames named (bridge/frame_steps.py): the distances jumped or fell back at a /tf
        # change; the frames, the step in m and deg, the distances before and after.
        'frame_steps': task.counts.transform_steps,
        'last_frame_step': task.counts.last_transform_step,
    })
    _counts(values, 'tf_transforms_refused', engine.transforms_refused)


def check_pairing(task: BridgeDiagnostics, steady_ns: int, values: Values) -> None:
    """Check what paired this period (ERROR when frames forbid it); add the engine's counts."""
    engine = task.engine
    period = task.health.period
    engine.retry_transforms()  # tf data may have come since the last input
    counts = task.counts.take_period_counts()
    counts['paired'] = engine.paired - task.paired_at_last_status
    task.paired_at_last_status = engine.paired
    if counts[DROP_FRAME_MISMATCH] and not counts['paired']:
        period.note(ERROR, 'estimate and reference frames differ')
    if counts[DROP_CHILD_FRAME_MISMATCH] and not counts['paired']:
        period.note(ERROR, 'estimate and reference are poses of different bodies')
    if counts['reference_tf'] and not counts['paired']:
        period.note(ERROR, 'references cannot be transformed into the estimate frame '
                           '(tf; references_dropped[tf_*])')
    received = task.counts.received[ESTIMATE] - task.estimates_at_last_status
    task.estimates_at_last_status = task.counts.received[ESTIMATE]
    if received and not counts['paired']:
        period.note(WARN, 'no estimate paired with a reference this period')
    unaccounted = task.counts.unaccounted(task.engine)
    values.update({
        'paired': engine.paired,
        'outcomes_published': task.counts.outcomes_published,
        'outcomes_paced_out': engine.paced_out,
        'assessments_published': task.counts.assessments_published,
        'dropped_total': sum(engine.dropped.values()),
        'references_used': engine.references_used,
        'references_dropped_total': sum(engine.references_dropped.values()),
        'pending': len(engine.pending),
        'estimates_unaccounted': unaccounted[ESTIMATE],
        'references_unaccounted': unaccounted[REFERENCE],
        'reference_buffer_fill': f'{len(engine.buffer)}/{engine.buffer.capacity}',
        'reference_frame_id': engine.reference_frame_id or '',
        'tf': task.counts.tf_state,
        'references_waiting_tf': len(engine.tf_waiting),
        'last_drop_reason': task.counts.last_drop_reason,
    })
    _counts(values, 'dropped', engine.dropped)
    _counts(values, 'references_dropped', engine.references_dropped)


def check_decorrelation(task: BridgeDiagnostics, steady_ns: int, values: Values) -> None:
    """Say how outcomes are made independent (method, warm-up at OK); add its figures."""
    engine = task.engine
    method = engine.config['decorrelation_method']
    values['decorrelation_method'] = method
    if method == WHITEN:
        whitening = engine.whitening
        if not whitening.warm:
            task.health.period.note(
                OK, f'warming up: no outcome until {whitening.position.warmup_samples} '
                'consecutive pairs fed the serial-correlation estimate '
                f'({whitening.pairs} so far)')
        for name, whitener in (('position', whitening.position),
                               ('orientation', whitening.orientation)):
            phi, s2 = whitener.coefficients()
            rho = whitener.autocorrelations()
            values[f'{name}_error_autocorrelation'] = ' '.join(f'{r:.3f}' for r in rho)
            values[f'{name}_whitening_ar'] = ' '.join(f'{p:.3f}' for p in phi)
            values[f'{name}_whitening_chain_breaks'] = whitener.breaks
            values[f'{name}_whitening_guarded'] = whitener.guarded
            values[f'{name}_whitening_gross'] = whitener.gross
        values['decorrelation_warm'] = whitening.warm
    elif method == PACE:
        pacer = engine.pacer
        if not pacer.warm:
            task.health.period.note(
                OK, f'warming up: no outcome until {pacer.warmup_samples} paired estimates fed '
                f'the autocorrelation estimate ({pacer.samples} so far)')
        values.update({
            'decorrelation_interval_s': f'{pacer.interval_ns / NS_PER_S:.3f}',
            'd2_lag1_autocorrelation': f'{pacer.autocorrelation:.3f}',
            'decorrelation_warm': pacer.warm,
        })
    else:
        values['decorrelation_warm'] = True
    values['outcomes_withheld_warming_up'] = engine.warming_up


def check_faults(task: BridgeDiagnostics, steady_ns: int, values: Values) -> None:
    """Add resets, clock rejections and callback errors (noted at their level when they came)."""
    resets = task.engine.resets
    values.update({
        'resets_total': sum(resets.values()),
        'clock_resets': resets[RESET_CLOCK_JUMP],
        'last_reset_reason': task.counts.last_reset_reason,
        'clock_rejected': task.health.clock_rejected,
        'callback_errors_total': sum(task.health.callback_errors.values()),
        'last_callback_error': task.health.last_callback_error,
    })
    _counts(values, 'resets', resets)
    _counts(values, 'callback_errors', task.health.callback_errors)


def check_calibrated_estimate(task: BridgeDiagnostics, steady_ns: int, values: Values) -> None:
    """Add the calibrated estimate's counts and factors (nothing when it is not enabled)."""
    republisher = task.calibrated_estimate
    if republisher is None:
        return
    factors = republisher.factors
    values.update({
        'calibrated_estimates_published': republisher.published,
        'calibrated_estimates_not_published': sum(republisher.refused.values()),
        'calibrated_estimate_factors': (
            f'position {factors[0]:.3f}, orientation {factors[1]:.3f}'),
    })
    _counts(values, 'calibrated_estimates_not_published', republisher.refused)


CHECKS: tuple[Check, ...] = (
    check_inputs, check_tf, check_pairing, check_decorrelation, check_faults,
    check_calibrated_estimate)
"""The bridge's checks, in the order they note their levels."""


class BridgeDiagnostics:
    """The outcome bridge's /diagnostics task: its checks and what the last period saw.

    It is handed what it reads (module docstring): ``name`` (the node's fully qualified name),
    ``config`` (returns the configuration in effect), the health ledger, the engine, the
    bridge's counts, its input and /tf subscriptions (``kind`` or topic -> subscription),
    ``publishers_info`` (the graph's publishers of a topic: rclpy's
    ``get_publishers_info_by_topic``) and the calibrated estimate's publisher (None when
    disabled). ``start_steady_ns``: when the inputs' silence starts counting.
    """

    def __init__(self, name: str, config: Callable[[], Mapping[str, Any]],
                 health: HealthLedger, engine: PairingEngine, counts: BridgeCounts,
                 inputs: Mapping[str, Any], tf_subscriptions: Mapping[str, Any],
                 publishers_info: Callable[[str], list[Any]],
                 calibrated_estimate: CalibratedEstimatePublisher | None,
                 start_steady_ns: int) -> None:
        self.name = name
        self.config = config
        self.health = health
        self.engine = engine
        self.counts = counts
        self.inputs = inputs
        self.tf_subscriptions = tf_subscriptions
        self.publishers_info = publishers_info
        self.calibrated_estimate = calibrated_estimate
        self.last_input_steady_ns = {REFERENCE: start_steady_ns, ESTIMATE: start_steady_ns}
        self.received_at_tick: collections.Counter[str] = collections.Counter()
        self.estimates_at_last_status = 0
        self.paired_at_last_status = 0

    def status(self, steady_ns: int) -> DiagnosticStatus:
        """Run :data:`CHECKS`; return the period's merged status and start a new period."""
        values: Values = {}
        for check in CHECKS:
            check(self, steady_ns, values)
        self.health.period.note(OK, 'pairing estimates with references')
        level, message = self.health.period.take()
        return diagnostic_status(self.name, DIAGNOSTIC_TASK, level, message, values)
