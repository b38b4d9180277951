# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's /diagnostics status: small named checks merged into one status.

As diagnostic_updater composes tasks, each check below looks at one concern of the running
bridge, read through :class:`BridgeState` (public state only; this module does not import the
node), notes a level on the period of the node's health ledger
(:class:`~.calibration_status.PeriodStatus`: the worst of the period wins, the first at equal
severity) and adds its values; :class:`BridgeDiagnostics` runs them in order, keeps what the
last period saw (its own state) and returns the one ``DiagnosticStatus`` named
``<node>: outcome_bridge``.

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
from typing import Any, Protocol, TYPE_CHECKING

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
    from .calibrated_estimate_publisher import CalibratedEstimatePublisher
    from .health import HealthLedger


class BridgeState(Protocol):
    """What the diagnostics read of the outcome bridge: its public state, nothing private."""

    health: HealthLedger
    engine: PairingEngine
    input_subscriptions: dict[str, Any]
    tf_subscriptions: dict[str, Any]
    tf_received: collections.Counter[str]
    received: collections.Counter[str]
    period_counts: collections.Counter[str]  # drops by reason this period (check_pairing takes)
    incompatible_qos: collections.Counter[str]
    outcomes_published: int
    assessments_published: int
    message_info: bool
    transform_steps: int
    last_transform_step: str
    tf_state: str
    last_drop_reason: str
    last_reset_reason: str
    calibrated_estimate: CalibratedEstimatePublisher | None

    @property
    def config(self) -> dict[str, Any]:
        """Return the configuration in effect."""

    def accounting(self) -> dict[str, int]:
        """Return the inputs received but in no bucket (0 unless a bug)."""

    def get_publishers_info_by_topic(self, topic_name: str) -> list[Any]:
        """Return the graph's publishers of a topic (rclpy)."""

    def get_fully_qualified_name(self) -> str:
        """Return the node's name (the status's name)."""


DIAGNOSTIC_TASK = 'outcome_bridge'

Values = dict[str, Any]
Check = Callable[['BridgeState', 'BridgeDiagnostics', int, Values], None]


def _counts(values: Values, prefix: str, counter: Mapping[str, int]) -> None:
    """Add ``prefix[key]`` for every key of ``counter``, sorted."""
    for key, count in sorted(counter.items()):
        values[f'{prefix}[{key}]'] = count


def _type_name(message_class: Any) -> str:
    """Return ``pkg/msg/Type`` of a generated message class."""
    return f'{message_class.__module__.split(".")[0]}/msg/{message_class.__name__}'


def _other_types_offered(node: BridgeState, subscription: Any) -> str:
    """Return the other types the graph says are published on the subscription's topic.

    From ``get_publishers_info_by_topic``, comma-separated; ``''`` when none.
    """
    expected = _type_name(subscription.msg_type)
    offered = {info.topic_type for info in
               node.get_publishers_info_by_topic(subscription.topic_name)}
    return ', '.join(sorted(offered - {expected}))


def check_inputs(node: BridgeState, task: BridgeDiagnostics, steady_ns: int,
                 values: Values) -> None:
    """Check publishers matched and silence per input; add gaps, losses, incompatible QoS."""
    period = node.health.period
    for kind, subscription in node.input_subscriptions.items():
        count = subscription.get_publisher_count()
        values[f'{kind}_publishers'] = count
        if node.received[kind] != task.received_at_tick[kind]:
            task.received_at_tick[kind] = node.received[kind]
            task.last_input_steady_ns[kind] = steady_ns
        silent_s = (steady_ns - task.last_input_steady_ns[kind]) / NS_PER_S
        offered = _other_types_offered(node, subscription) if count == 0 else ''
        values[f'{kind}_type_offered'] = offered
        if offered:
            # Another type never matches: name it, the bridge will not pair until it changes.
            period.note(ERROR, f'{subscription.topic_name} is published as {offered}, the '
                               f'bridge reads {_type_name(subscription.msg_type)} '
                               f'({kind}_type)')
        if silent_s > node.config['stale_after_s']:
            period.note(STALE, f'no {kind} received for {silent_s:.1f} s'
                               + (' (no publisher matched)' if count == 0 else ''))
        if count == 0:
            period.note(WARN, f'no publisher matched on {subscription.topic_name}')
        elif not node.received[kind]:
            period.note(WARN, f'no {kind} received yet')
        elif count > 1:
            period.note(WARN, f'{count} publishers on {subscription.topic_name}: '
                              'their streams mix')
    values['estimates_received'] = node.received[ESTIMATE]
    values['references_received'] = node.received[REFERENCE]
    for kind in (ESTIMATE, REFERENCE):
        values[f'{kind}_messages_missed'] = node.health.sequences[kind].missed
        values[f'{kind}_messages_lost'] = node.health.messages_lost[kind]
        values[f'{kind}_sequence_restarts'] = node.health.sequences[kind].restarts
        values[f'{kind}_incompatible_qos'] = node.incompatible_qos[kind]
    values['message_info'] = node.message_info
    for topic in node.tf_subscriptions:
        name = topic.strip('/')
        values[f'{name}_messages_received'] = node.tf_received[topic]
        values[f'{name}_messages_missed'] = node.health.sequences[topic].missed
        values[f'{name}_messages_lost'] = node.health.messages_lost[topic]


def check_tf(node: BridgeState, task: BridgeDiagnostics, steady_ns: int,
             values: Values) -> None:
    """Add what the tf gate took and refused, by reason (WARN noted when refused)."""
    if not node.tf_subscriptions:
        return
    engine = node.engine
    values.update({
        'tf_transforms_accepted': engine.transforms_accepted,
        'tf_transforms_refused_total': sum(engine.transforms_refused.values()),
        'tf_frames': f'{len(engine.tf_gate.frames)}/{engine.tf_gate.max_frames}',
        # Frames named (bridge/frame_steps.py): the distances jumped or fell back at a /tf
        # change; the frames, the step in m and deg, the distances before and after.
        'frame_steps': node.transform_steps,
        'last_frame_step': node.last_transform_step,
    })
    _counts(values, 'tf_transforms_refused', engine.transforms_refused)


def check_pairing(node: BridgeState, task: BridgeDiagnostics, steady_ns: int,
                  values: Values) -> None:
    """Check what paired this period (ERROR when frames forbid it); add the engine's counts."""
    engine = node.engine
    period = node.health.period
    engine.retry_transforms()  # tf data may have come since the last input
    counts, node.period_counts = node.period_counts, collections.Counter()
    counts['paired'] = engine.paired - task.paired_at_last_status
    task.paired_at_last_status = engine.paired
    if counts[DROP_FRAME_MISMATCH] and not counts['paired']:
        period.note(ERROR, 'estimate and reference frames differ')
    if counts[DROP_CHILD_FRAME_MISMATCH] and not counts['paired']:
        period.note(ERROR, 'estimate and reference are poses of different bodies')
    if counts['reference_tf'] and not counts['paired']:
        period.note(ERROR, 'references cannot be transformed into the estimate frame '
                           '(tf; references_dropped[tf_*])')
    received = node.received[ESTIMATE] - task.estimates_at_last_status
    task.estimates_at_last_status = node.received[ESTIMATE]
    if received and not counts['paired']:
        period.note(WARN, 'no estimate paired with a reference this period')
    unaccounted = node.accounting()
    values.update({
        'paired': engine.paired,
        'outcomes_published': node.outcomes_published,
        'outcomes_paced_out': engine.paced_out,
        'assessments_published': node.assessments_published,
        'dropped_total': sum(engine.dropped.values()),
        'references_used': engine.references_used,
        'references_dropped_total': sum(engine.references_dropped.values()),
        'pending': len(engine.pending),
        'estimates_unaccounted': unaccounted[ESTIMATE],
        'references_unaccounted': unaccounted[REFERENCE],
        'reference_buffer_fill': f'{len(engine.buffer)}/{engine.buffer.capacity}',
        'reference_frame_id': engine.reference_frame_id or '',
        'tf': node.tf_state,
        'references_waiting_tf': len(engine.tf_waiting),
        'last_drop_reason': node.last_drop_reason,
    })
    _counts(values, 'dropped', engine.dropped)
    _counts(values, 'references_dropped', engine.references_dropped)


def check_decorrelation(node: BridgeState, task: BridgeDiagnostics, steady_ns: int,
                        values: Values) -> None:
    """Say how outcomes are made independent (method, warm-up at OK); add its figures."""
    engine = node.engine
    method = engine.config['decorrelation_method']
    values['decorrelation_method'] = method
    if method == WHITEN:
        whitening = engine.whitening
        if not whitening.warm:
            node.health.period.note(
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
            node.health.period.note(
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


def check_faults(node: BridgeState, task: BridgeDiagnostics, steady_ns: int,
                 values: Values) -> None:
    """Add resets, clock rejections and callback errors (noted at their level when they came)."""
    resets = node.engine.resets
    values.update({
        'resets_total': sum(resets.values()),
        'clock_resets': resets[RESET_CLOCK_JUMP],
        'last_reset_reason': node.last_reset_reason,
        'clock_rejected': node.health.clock_rejected,
        'callback_errors_total': sum(node.health.callback_errors.values()),
        'last_callback_error': node.health.last_callback_error,
    })
    _counts(values, 'resets', resets)
    _counts(values, 'callback_errors', node.health.callback_errors)


def check_calibrated_estimate(node: BridgeState, task: BridgeDiagnostics, steady_ns: int,
                              values: Values) -> None:
    """Add the calibrated estimate's counts and factors (nothing when it is not enabled)."""
    republisher = node.calibrated_estimate
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

    ``node`` is read through :class:`BridgeState`; ``start_steady_ns`` is when the inputs'
    silence starts counting.
    """

    def __init__(self, node: BridgeState, start_steady_ns: int) -> None:
        self._node = node
        self.last_input_steady_ns = {REFERENCE: start_steady_ns, ESTIMATE: start_steady_ns}
        self.received_at_tick: collections.Counter[str] = collections.Counter()
        self.estimates_at_last_status = 0
        self.paired_at_last_status = 0

    def status(self, steady_ns: int) -> DiagnosticStatus:
        """Run :data:`CHECKS`; return the period's merged status and start a new period."""
        node = self._node
        values: Values = {}
        for check in CHECKS:
            check(node, self, steady_ns, values)
        node.health.period.note(OK, 'pairing estimates with references')
        level, message = node.health.period.take()
        return diagnostic_status(node, DIAGNOSTIC_TASK, level, message, values)
