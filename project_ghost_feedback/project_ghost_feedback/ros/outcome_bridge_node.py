# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge: an estimator's pose with covariance + a reference -> outcomes and claims.

Subscribes to ``estimate`` (nav_msgs/Odometry or geometry_msgs/PoseWithCovarianceStamped, by the
``estimate_type`` parameter) and ``reference`` (Odometry, PoseStamped or
PoseWithCovarianceStamped, by ``reference_type``); topic names are relative, so remap them
(``estimate:=/odometry/filtered reference:=/ground_truth/odom``). For every estimate it publishes
the estimator's claim from its covariance as a BeliefSelfAssessment on ``self_assessment/raw``
and, when a reference brackets its stamp, a PredictionOutcome on ``prediction_outcome`` (paced
by the decorrelation parameters) -- the feedback node's inputs, with no remapping. An outcome is
always published before the assessment of the same stamp. The math and conventions are in
bridge/geometry.py and docs/bridge.md.

Estimates newer than the newest reference wait for a reference after them: while references
keep arriving (a backlog being worked through, or a reference with latency) up to
``pending_capacity`` of them; once references stop, at most ``max_estimate_wait_s`` of estimate
time. Nothing is paired with a stale reference.

Hardened for what real publishers send (docs/bridge.md):

- every input is checked before any math: stamp, finite position, quaternion (zero, non-finite,
  norm off 1 by more than 1e-3), covariance (non-finite, negative variance, not PSD within
  1e-9 of its scale, all zero); refused inputs are counted by reason and publish nothing;
- stamps further than ``time_jump_tolerance_s`` ahead of the node clock are refused
  (``future_stamp``); stamps going back by more than it (a restarted estimator, a sim reset), or
  a backward jump of the node clock, reset what is time-ordered beyond the new time;
- every input is accounted for (received = paired or used + dropped by reason + pending), losses
  in the middleware are counted (message_lost events, sequence gaps in the message info);
- callback errors (also a message whose CDR does not deserialize) are counted and logged
  throttled, and the bridge runs on;
- inputs are BEST_EFFORT by default (they match reliable and best-effort publishers), with the
  standard ``qos_overrides./<topic>.subscription.*`` parameters;
- /diagnostics reports the worst of each period: publishers per input (none or several: WARN),
  silence longer than ``stale_after_s`` (STALE), drops, resets, losses, incompatible QoS.

Run it with ``ros2 run project_ghost_feedback outcome_bridge`` or ``outcome_bridge`` (venv).
"""

import collections
import sys

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from rclpy.clock import Clock, ClockType, JumpThreshold
from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions

from ..bridge.calibrated_estimate import (
    CONFIDENCE_RANGE,
    DEFAULT_CONFIDENCE,
    inflate_covariance,
    inflation_factors,
)
from ..bridge.decorrelation import (
    DEFAULT_WARMUP_SAMPLES,
    MAX_WARMUP_SAMPLES,
    MIN_WARMUP_SAMPLES,
)
from ..bridge.geometry import AXES
from ..bridge.pairing import (  # noqa: F401 - the drop reasons and reset causes, re-exported
    DROP_BAD_STAMP,
    DROP_BEFORE_BUFFER,
    DROP_CALLBACK_ERROR,
    DROP_FRAME_MISMATCH,
    DROP_FUTURE_STAMP,
    DROP_GAP,
    DROP_INVALID_OUTCOME,
    DROP_NO_REFERENCE_AFTER,
    DROP_NOT_NEWER,
    DROP_PENDING_OVERFLOW,
    DROP_TIME_RESET,
    DROP_TOO_OLD,
    engine_config,
    EngineListener,
    ESTIMATE,
    PairingEngine,
    REFERENCE,
    RESET_CLOCK_JUMP,
    RESET_ESTIMATE_STAMPS,
    RESET_REFERENCE_STAMPS,
)
from ..msg_decoding import history_from_msg
from .calibration_status import ERROR, OK, PeriodStatus, STALE, WARN
from .conversions import fill_belief_msg, fill_outcome_msg, NamedLevelMessages
from .input_accounting import is_negative_time_error, LogGate, SequenceGaps
from .node_kit import (
    cap_text,
    diagnostic_array,
    diagnostic_status,
    EXECUTORS,
    make_executor,
    NS_PER_S,
    ParameterSet,
    ParameterSpec,
    TimedLogging,
)
from .node_main import run_node

NODE_NAME = 'outcome_bridge'
DIAGNOSTIC_TASK = 'outcome_bridge'
ESTIMATE_TYPES = {'odometry': Odometry, 'pose_with_covariance': PoseWithCovarianceStamped}
REFERENCE_TYPES = {
    'odometry': Odometry, 'pose': PoseStamped, 'pose_with_covariance': PoseWithCovarianceStamped}

PARAMETERS = {
    'estimate_type': ParameterSpec(
        'odometry', 'Estimate message type (read-only).', read_only=True,
        choices=tuple(sorted(ESTIMATE_TYPES))),
    'reference_type': ParameterSpec(
        'odometry', 'Reference message type (read-only).', read_only=True,
        choices=tuple(sorted(REFERENCE_TYPES))),
    'executor': ParameterSpec(
        'single_threaded', "Executor used by main() (read-only): single_threaded is rclpy's "
        'SingleThreadedExecutor; events is rclpy.experimental.EventsExecutor (faster; on Jazzy '
        'it passes no message info, so no sequence-gap counting).', read_only=True,
        choices=EXECUTORS),
    'input_qos_depth': ParameterSpec(
        1000, 'keep_last depth of the BEST_EFFORT input subscriptions (they match reliable and '
        'best-effort publishers); qos_overrides./<topic>.subscription.{reliability,depth,history} '
        'override it (read-only).', read_only=True, integer_range=(1, 100_000)),
    'output_qos_depth': ParameterSpec(
        1000, 'keep_last depth of the reliable output publishers (read-only).', read_only=True,
        integer_range=(1, 100_000)),
    'reference_buffer_size': ParameterSpec(
        1000, 'Reference samples kept for interpolation (read-only; at 100 Hz, 1000 is 10 s).',
        read_only=True, integer_range=(2, 1_000_000)),
    'pending_capacity': ParameterSpec(
        1000, 'Estimates waiting for a reference after their stamp, at most (read-only).',
        read_only=True, integer_range=(1, 1_000_000)),
    'max_reference_gap_s': ParameterSpec(
        0.5, 'Estimates between two references further apart than this are dropped (gap).',
        float_range=(1e-6, 3600.0)),
    'max_estimate_wait_s': ParameterSpec(
        5.0, 'An estimate newer than every reference is dropped once estimates this much newer '
        'arrived with no newer reference in between (estimate time).', float_range=(0.0, 3600.0)),
    'time_jump_tolerance_s': ParameterSpec(
        5.0, 'Input stamps further than this ahead of the node clock are refused (future_stamp); '
        'stamps going back by more than this (a restarted producer, a sim reset) reset the '
        'pending estimates and the reference buffer. Seconds.', float_range=(0.001, 3600.0)),
    'use_reference_covariance': ParameterSpec(
        True, 'Add the reference covariance (if its type has one; all zero counts as none).'),
    'ignored_axes': ParameterSpec(
        [''], f'Axes left out of distances and claims, from {list(AXES)} (e.g. z, roll, pitch '
        'for a planar estimator; [""] or [] for none).'),
    'null_tolerance': ParameterSpec(
        1e-9, 'An error component along a zero-variance direction above this gives distance '
        '+inf.', float_range=(0.0, 1.0)),
    'position_known_max_std_m': ParameterSpec(
        0.2, 'Position std at or below this: KNOWN.', float_range=(1e-9, 1e6)),
    'position_uncertain_max_std_m': ParameterSpec(
        1.0, 'Position std at or below this: UNCERTAIN (else UNKNOWN).', float_range=(1e-9, 1e6)),
    'orientation_known_max_std_rad': ParameterSpec(
        0.05, 'Orientation std at or below this: KNOWN.', float_range=(1e-9, 10.0)),
    'orientation_uncertain_max_std_rad': ParameterSpec(
        0.2, 'Orientation std at or below this: UNCERTAIN.', float_range=(1e-9, 10.0)),
    'decorrelation.adaptive': ParameterSpec(
        True, 'Space outcomes by the online decorrelation time of d^2 (see docs/bridge.md).'),
    'decorrelation.min_interval_s': ParameterSpec(
        0.0, 'Minimum estimate time between two emitted outcomes.', float_range=(0.0, 3600.0)),
    'decorrelation.max_interval_s': ParameterSpec(
        10.0, 'Upper bound of the adaptive interval.', float_range=(0.0, 3600.0)),
    'decorrelation.target_autocorrelation': ParameterSpec(
        0.1, 'Adaptive: emitted outcomes are spaced so their d^2 autocorrelation is about this.',
        float_range=(1e-6, 0.999)),
    'decorrelation.alpha': ParameterSpec(
        0.01, 'Forgetting factor of the autocorrelation estimate (horizon ~ 1/alpha samples).',
        float_range=(1e-6, 1.0)),
    'decorrelation.warmup_samples': ParameterSpec(
        DEFAULT_WARMUP_SAMPLES, 'Adaptive: no outcome is emitted until this many paired '
        'estimates have fed the autocorrelation estimate, after a start or a reset (a window of '
        'the first, correlated outcomes would downgrade an honest filter). Several decorrelation '
        'lags at least (docs/bridge.md).',
        integer_range=(MIN_WARMUP_SAMPLES, MAX_WARMUP_SAMPLES)),
    'calibrated_estimate.enabled': ParameterSpec(
        False, 'Republish every estimate on estimate/calibrated (same type and frame) with its '
        "pose covariance inflated per vec3 by an upper confidence bound of the feedback node's "
        'overconfidence factor, read from self_assessment/calibrated (read-only; '
        'docs/bridge.md).', read_only=True),
    'calibrated_estimate.confidence': ParameterSpec(
        DEFAULT_CONFIDENCE, 'One-sided confidence of the factor: 0.975 (default) is the upper '
        'end of the 95% interval on /diagnostics, 0.5 the median-unbiased estimate.',
        float_range=CONFIDENCE_RANGE),
    'calibrated_estimate.allow_deflation': ParameterSpec(
        False, 'Let a factor below 1 (an underconfident estimator) shrink the covariance.'),
    'calibrated_estimate.max_factor': ParameterSpec(
        100.0, 'Largest factor applied per vec3 (a distance of +inf gives an infinite bound).',
        float_range=(1.0, 1e6)),
    'transform.enabled': ParameterSpec(
        False, 'Map references in transform.from_frame_id into transform.to_frame_id first.'),
    'transform.from_frame_id': ParameterSpec('', 'Reference frame of the fixed transform.'),
    'transform.to_frame_id': ParameterSpec('', 'Estimate frame of the fixed transform.'),
    'transform.translation_m': ParameterSpec(
        [0.0, 0.0, 0.0], 'p_to = R p_from + t: t, metres.'),
    'transform.rotation_xyzw': ParameterSpec(
        [0.0, 0.0, 0.0, 1.0], 'p_to = R p_from + t: R as quaternion x y z w.'),
    'diagnostics_period_s': ParameterSpec(
        1.0, 'Period of /diagnostics, steady-clock seconds.', float_range=(1e-3, 3600.0)),
    'stale_after_s': ParameterSpec(
        5.0, 'STALE when an input brought no message for this long (steady time); WARN at once '
        'when an input has no matched publisher, or more than one.', float_range=(0.01, 86_400.0)),
    'reject_log_throttle_s': ParameterSpec(
        1.0, 'Minimum seconds between two log lines of one kind (drops, resets, callback '
        'errors).', float_range=(0.0, 3600.0)),
}


def config_from(values):
    """Return a validated config dict from parameter values, or a reason string."""
    for name, types in (('estimate_type', ESTIMATE_TYPES), ('reference_type', REFERENCE_TYPES)):
        if values[name] not in types:
            return f'{name} {cap_text(repr(values[name]), 80)} is not one of {sorted(types)}'
    if values['executor'] not in EXECUTORS:
        return f'executor {cap_text(repr(values["executor"]), 80)} is not one of {EXECUTORS}'
    for name, spec in PARAMETERS.items():
        bounds = spec.integer_range or spec.float_range
        if bounds is not None and not bounds[0] <= values[name] <= bounds[1]:
            return f'{name} must be in [{bounds[0]}, {bounds[1]}], got {values[name]!r}'
    config = engine_config(values)
    if isinstance(config, str):
        return config
    config.update(calibrated_allow_deflation=values['calibrated_estimate.allow_deflation'],
                  calibrated_max_factor=values['calibrated_estimate.max_factor'],
                  calibrated_confidence=values['calibrated_estimate.confidence'],
                  diagnostics_period_s=values['diagnostics_period_s'],
                  stale_after_s=values['stale_after_s'],
                  reject_log_throttle_s=values['reject_log_throttle_s'])
    return config


class _NodeListener(EngineListener):
    """Publish what the pairing engine hands over; count, log and note it on /diagnostics."""

    def __init__(self, node):
        self._node = node

    def outcome(self, outcome, estimate):
        node = self._node
        node._outcome_publisher.publish(fill_outcome_msg(node._outcome_msg, outcome))
        node.outcomes_published += 1

    def assessment(self, belief, estimate):
        node = self._node
        node._assessment_publisher.publish(
            fill_belief_msg(node._assessment_msg, belief, node._named_level_msgs))
        node.assessments_published += 1
        if node._calibrated_publisher is not None:
            node.publish_calibrated_estimate(estimate.message)

    def estimate_dropped(self, reason, detail):
        node = self._node
        node.last_drop_reason = cap_text(f'{reason}: {detail}' if detail else reason)
        node._period_counts[reason] += 1
        node._period.note(WARN, f'estimates dropped ({reason})')
        node._log('drop', 'warning',
                  f'dropped an estimate ({node.last_drop_reason}); '
                  f'{sum(node.dropped.values())} dropped so far, by reason on /diagnostics')

    def reference_dropped(self, reason, detail):
        node = self._node
        node.last_drop_reason = cap_text(f'reference {reason}: {detail}' if detail else reason)
        node._period.note(WARN, f'references dropped ({reason})')
        node._log('drop_reference', 'warning',
                  f'dropped a reference ({node.last_drop_reason}); '
                  f'{sum(node.references_dropped.values())} dropped so far')

    def timeline_reset(self, cause, detail):
        node = self._node
        node.last_reset_reason = f'{cause}: {detail}'
        node._period.note(WARN, f'time-ordered state reset ({cause}: {detail})')
        node._log('reset', 'warning', f'reset ({cause}): {detail}; pending estimates and '
                                      'reference samples beyond it dropped')

    def invalid_assessment(self, error):
        node = self._node
        node.callback_errors['invalid_assessment'] += 1
        node.last_callback_error = cap_text(f'invalid_assessment: {error}')
        node._period.note(ERROR, 'an assessment failed its contract')


class OutcomeBridge(TimedLogging, Node):
    """Turn (estimate with covariance, reference) into PredictionOutcome + BeliefSelfAssessment."""

    def __init__(self, node_name=NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        try:
            self._parameter_set = ParameterSet(self, PARAMETERS, config_from, self._apply_config)
        except ValueError:
            self.destroy_node()
            raise
        config = self._config = self._parameter_set.config
        self._engine = PairingEngine(
            config, _NodeListener(self),
            reference_buffer_size=self._param('reference_buffer_size'),
            pending_capacity=self._param('pending_capacity'),
            keep_messages=self._param('calibrated_estimate.enabled'))

        self.received = collections.Counter()
        self.outcomes_published = 0
        self.assessments_published = 0
        self.callback_errors = collections.Counter()
        self.messages_lost = collections.Counter()       # the RMW's message_lost events
        self.incompatible_qos = collections.Counter()
        self.clock_rejected = 0
        self.last_drop_reason = ''
        self.last_reset_reason = ''
        self.last_callback_error = ''
        self._log_gates = collections.defaultdict(LogGate)
        self._period = PeriodStatus()
        self._period_counts = collections.Counter()

        depth = self._param('input_qos_depth')
        input_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                               reliability=ReliabilityPolicy.BEST_EFFORT)
        output_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST,
                                depth=self._param('output_qos_depth'),
                                reliability=ReliabilityPolicy.RELIABLE)
        # One message per output, refilled per estimate: publish() serializes synchronously.
        self._outcome_msg = PredictionOutcomeMsg()
        self._assessment_msg = BeliefSelfAssessmentMsg()
        self._named_level_msgs = NamedLevelMessages()
        self._outcome_publisher = self.create_publisher(
            PredictionOutcomeMsg, 'prediction_outcome', output_qos)
        self._assessment_publisher = self.create_publisher(
            BeliefSelfAssessmentMsg, 'self_assessment/raw', output_qos)
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._calibrated_publisher = None
        self._calibration_history = None
        self.calibrated_estimates_published = 0
        self.calibrated_factors = (1.0, 1.0)
        if self._param('calibrated_estimate.enabled'):
            self._calibrated_publisher = self.create_publisher(
                ESTIMATE_TYPES[self._param('estimate_type')], 'estimate/calibrated', output_qos)
            self.create_subscription(
                CalibratedSelfAssessmentMsg, 'self_assessment/calibrated',
                self._on_calibrated, QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                                                reliability=ReliabilityPolicy.RELIABLE))
        # rclpy 7.1's EventsExecutor cannot call a callback taking the message info.
        self.message_info = self._param('executor') != 'events'
        callbacks = {
            REFERENCE: (self._on_reference_with_info, self._on_reference),
            ESTIMATE: (self._on_estimate_with_info, self._on_estimate)}
        types = {REFERENCE: REFERENCE_TYPES[self._param('reference_type')],
                 ESTIMATE: ESTIMATE_TYPES[self._param('estimate_type')]}
        self._input_subscriptions = {}
        self._gaps = {}
        for kind in (REFERENCE, ESTIMATE):
            self._input_subscriptions[kind] = self.create_subscription(
                types[kind], kind, callbacks[kind][0 if self.message_info else 1], input_qos,
                event_callbacks=SubscriptionEventCallbacks(
                    message_lost=lambda status, kind=kind: self._on_message_lost(kind, status),
                    incompatible_qos=lambda status, kind=kind: self._on_incompatible_qos(
                        kind, status)),
                qos_overriding_options=QoSOverridingOptions.with_default_policies())
            self._gaps[kind] = SequenceGaps(self._input_subscriptions[kind].get_publisher_count)
        self._reference_subscription = self._input_subscriptions[REFERENCE]
        self._estimate_subscription = self._input_subscriptions[ESTIMATE]
        self._steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        start = self._steady_clock.now().nanoseconds
        self._last_input_steady_ns = {REFERENCE: start, ESTIMATE: start}
        self._received_at_tick = collections.Counter()
        self._estimates_at_last_status = 0
        self._paired_at_last_status = 0
        # A backward jump of the node clock (a simulator reset, a bag replayed again) restarts
        # the stamps: forget what is time-ordered and now lies in the future.
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=False),
            post_callback=self._on_clock_jump)
        self._diagnostics_timer = self.create_timer(
            config['diagnostics_period_s'], self.publish_diagnostics, clock=self._steady_clock)
        self._parameter_set.watch()
        self.get_logger().info(
            f'outcome bridge ready: {self._estimate_subscription.topic_name} '
            f'({self._param("estimate_type")}) + {self._reference_subscription.topic_name} '
            f'({self._param("reference_type")}) -> {self._outcome_publisher.topic_name} + '
            f'{self._assessment_publisher.topic_name}')

    # -- parameters ---------------------------------------------------------------------------

    def _param(self, name):
        return self.get_parameter(name).value

    # The engine's state and counts, under the names the bridge has always had.
    @property
    def dropped(self):
        """Estimates dropped, by reason."""
        return self._engine.dropped

    @property
    def references_dropped(self):
        """Return the references dropped, by reason."""
        return self._engine.references_dropped

    @property
    def references_used(self):
        """Return the number of references put in the buffer."""
        return self._engine.references_used

    @property
    def paired(self):
        """Estimates paired with a reference (emitted or paced out)."""
        return self._engine.paired

    @property
    def paced_out(self):
        """Paired outcomes not emitted by the decorrelation pacing."""
        return self._engine.paced_out

    @property
    def resets(self):
        """Timeline resets, by cause."""
        return self._engine.resets

    @property
    def _pacer(self):
        return self._engine.pacer

    @_pacer.setter
    def _pacer(self, pacer):
        self._engine.pacer = pacer

    @property
    def _buffer(self):
        return self._engine.buffer

    @property
    def _pending(self):
        return self._engine.pending

    @property
    def clock_resets(self):
        """Timeline resets caused by a backward jump of the node clock."""
        return self.resets[RESET_CLOCK_JUMP]

    def _apply_config(self, previous, config, parameters=()):
        self._config = config
        self._engine.apply_config(config)
        self._update_factors()
        if previous['diagnostics_period_s'] != config['diagnostics_period_s']:
            self.destroy_timer(self._diagnostics_timer)
            self._diagnostics_timer = self.create_timer(
                config['diagnostics_period_s'], self.publish_diagnostics,
                clock=self._steady_clock)

    # -- the calibrated estimate --------------------------------------------------------------

    def _on_calibrated(self, msg):
        try:
            self._calibration_history = history_from_msg(msg.calibration_history)
            self._update_factors()
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self.note_callback_error(error)

    def _update_factors(self):
        if self._calibration_history is not None:
            self.calibrated_factors = inflation_factors(
                self._calibration_history, self._config['calibrated_allow_deflation'],
                self._config['calibrated_max_factor'], self._config['calibrated_confidence'])

    def publish_calibrated_estimate(self, msg):
        """Publish ``msg`` (an accepted estimate) with its pose covariance inflated, in place."""
        msg.pose.covariance = inflate_covariance(msg.pose.covariance, *self.calibrated_factors)
        self._calibrated_publisher.publish(msg)
        self.calibrated_estimates_published += 1

    # -- faults, losses, resets ---------------------------------------------------------------

    def _log(self, kind, level, text):
        """Log ``text`` (capped) at most once per ``reject_log_throttle_s`` for each ``kind``."""
        if self._log_gates[kind].open(self._config['reject_log_throttle_s']):
            getattr(self.get_logger(), level)(cap_text(text, 400))

    def note_callback_error(self, error):
        """Count and log (throttled) an exception a callback or a take raised; run on.

        run_node() hands it what the executor raises (e.g. a message whose CDR does not
        deserialize); the bridge's own callbacks call it for anything they raise. A /clock
        message with a negative time (rclpy's TimeSource raises) counts as a rejected clock.
        """
        if is_negative_time_error(error):
            self.clock_rejected += 1
            self._period.note(WARN, 'rejecting /clock messages with a negative time')
            self._log('clock', 'warning', f'/clock message with a negative time rejected '
                                          f'({self.clock_rejected} so far): {error}')
            return
        key = type(error).__name__
        self.callback_errors[key] += 1
        self.last_callback_error = cap_text(f'{key}: {error}')
        self._period.note(ERROR, f'a callback raised {self.last_callback_error}')
        self._log('callback_error', 'error',
                  f'callback raised {key} ({sum(self.callback_errors.values())} so far), the '
                  f'bridge runs on: {error}')

    def _on_message_lost(self, kind, status):
        self.messages_lost[kind] += status.total_count_change
        self._period.note(WARN, f'{kind} messages lost in the middleware')

    def _on_incompatible_qos(self, kind, status):
        first = not self.incompatible_qos[kind]
        self.incompatible_qos[kind] += status.total_count_change
        self._period.note(WARN, f'a publisher on {kind} offers an incompatible QoS')
        if first:
            self.get_logger().warning(
                f'{self._input_subscriptions[kind].topic_name}: a publisher offers a QoS '
                f'incompatible with this subscription (policy {status.last_policy_kind}); its '
                'messages never arrive. Match it, or set qos_overrides.<topic>.subscription.* '
                '(logged once; counted as incompatible_qos on /diagnostics)')

    def _note_gap(self, kind, info):
        missed = self._gaps[kind].note(info)
        if missed:
            self._period.note(WARN, f'{kind} messages missing from the publication sequence '
                                    '(input queue overflow or middleware loss)')

    def _on_clock_jump(self, jump):
        """On a backward jump, reset if the state holds stamps now in the future.

        When the inputs' stamps went back first (their reset already happened), the state holds
        only stamps of the new timeline and nothing is reset twice.
        """
        if jump.delta.nanoseconds < 0:
            self._engine.clock_jumped(jump.delta.nanoseconds, self.get_clock().now().nanoseconds)

    # -- data path ----------------------------------------------------------------------------

    def _on_reference_with_info(self, msg, info):
        self._note_gap(REFERENCE, info)
        self._on_reference(msg)

    def _on_reference(self, msg):
        self.received[REFERENCE] += 1
        accounted = self.references_used + sum(self.references_dropped.values())
        try:
            self._engine.take_reference(msg, self.get_clock().now().nanoseconds)
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self.note_callback_error(error)
            if self.references_used + sum(self.references_dropped.values()) == accounted:
                self._engine.drop_reference(DROP_CALLBACK_ERROR, type(error).__name__)

    def _on_estimate_with_info(self, msg, info):
        self._note_gap(ESTIMATE, info)
        self._on_estimate(msg)

    def _on_estimate(self, msg):
        self.received[ESTIMATE] += 1
        engine = self._engine
        accounted = engine.resolved + len(engine.pending)
        try:
            engine.take_estimate(msg, self.get_clock().now().nanoseconds)
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self.note_callback_error(error)
            if engine.resolved + len(engine.pending) == accounted:
                engine.drop_estimate(DROP_CALLBACK_ERROR, type(error).__name__)

    # -- diagnostics --------------------------------------------------------------------------

    def accounting(self):
        """Return ``{input: messages received but in no bucket}`` (always 0 unless a bug).

        Estimates: received = paired + dropped (by reason) + pending. References: received =
        used (put in the buffer) + dropped (by reason).
        """
        return {
            ESTIMATE: (self.received[ESTIMATE] - self.paired - sum(self.dropped.values())
                       - len(self._pending)),
            REFERENCE: (self.received[REFERENCE] - self.references_used
                        - sum(self.references_dropped.values())),
        }

    def _note_inputs(self, steady_ns):
        """Note the inputs' state this period: publishers matched, silence."""
        publishers = {}
        for kind, subscription in self._input_subscriptions.items():
            count = publishers[kind] = subscription.get_publisher_count()
            if self.received[kind] != self._received_at_tick[kind]:
                self._received_at_tick[kind] = self.received[kind]
                self._last_input_steady_ns[kind] = steady_ns
            silent_s = (steady_ns - self._last_input_steady_ns[kind]) / NS_PER_S
            if silent_s > self._config['stale_after_s']:
                self._period.note(STALE, f'no {kind} received for {silent_s:.1f} s'
                                         + (' (no publisher matched)' if count == 0 else ''))
            if count == 0:
                self._period.note(WARN, f'no publisher matched on {subscription.topic_name}')
            elif not self.received[kind]:
                self._period.note(WARN, f'no {kind} received yet')
            elif count > 1:
                self._period.note(WARN, f'{count} publishers on {subscription.topic_name}: '
                                        'their streams mix')
        return publishers

    def diagnostic_status(self):
        """Return the DiagnosticStatus of the period since the last call, and start a new one.

        The worst of the period: STALE when an input brought nothing for ``stale_after_s``;
        ERROR on a callback error, or when every estimate of the period met a frame mismatch;
        WARN on drops, resets, losses, incompatible QoS, no publisher or several on an input, or
        estimates received but none paired; else OK.
        """
        steady_ns = self._steady_clock.now().nanoseconds
        publishers = self._note_inputs(steady_ns)
        counts, self._period_counts = self._period_counts, collections.Counter()
        counts['paired'] = self.paired - self._paired_at_last_status
        self._paired_at_last_status = self.paired
        if counts[DROP_FRAME_MISMATCH] and not counts['paired']:
            self._period.note(ERROR, 'estimate and reference frames differ')
        received = self.received[ESTIMATE] - self._estimates_at_last_status
        self._estimates_at_last_status = self.received[ESTIMATE]
        if received and not counts['paired']:
            self._period.note(WARN, 'no estimate paired with a reference this period')
        pacer = self._pacer
        if not pacer.warm:
            self._period.note(OK, f'warming up: no outcome until {pacer.warmup_samples} paired '
                                  f'estimates fed the autocorrelation estimate ({pacer.samples} '
                                  'so far)')
        self._period.note(OK, 'pairing estimates with references')
        level, message = self._period.take()
        unaccounted = self.accounting()
        values = {
            'estimates_received': self.received[ESTIMATE],
            'references_received': self.received[REFERENCE],
            'paired': self.paired,
            'outcomes_published': self.outcomes_published,
            'outcomes_paced_out': self.paced_out,
            'assessments_published': self.assessments_published,
            'dropped_total': sum(self.dropped.values()),
            'references_used': self.references_used,
            'references_dropped_total': sum(self.references_dropped.values()),
            'pending': len(self._pending),
            'estimates_unaccounted': unaccounted[ESTIMATE],
            'references_unaccounted': unaccounted[REFERENCE],
            'estimate_publishers': publishers[ESTIMATE],
            'reference_publishers': publishers[REFERENCE],
            'estimate_messages_missed': self._gaps[ESTIMATE].missed,
            'reference_messages_missed': self._gaps[REFERENCE].missed,
            'estimate_messages_lost': self.messages_lost[ESTIMATE],
            'reference_messages_lost': self.messages_lost[REFERENCE],
            'estimate_sequence_restarts': self._gaps[ESTIMATE].restarts,
            'reference_sequence_restarts': self._gaps[REFERENCE].restarts,
            'estimate_incompatible_qos': self.incompatible_qos[ESTIMATE],
            'reference_incompatible_qos': self.incompatible_qos[REFERENCE],
            'message_info': self.message_info,
            'resets_total': sum(self.resets.values()),
            'clock_resets': self.clock_resets,
            'last_reset_reason': self.last_reset_reason,
            'clock_rejected': self.clock_rejected,
            'callback_errors_total': sum(self.callback_errors.values()),
            'last_callback_error': self.last_callback_error,
            'reference_buffer_fill': f'{len(self._buffer)}/{self._buffer.capacity}',
            'reference_frame_id': self._engine.reference_frame_id or '',
            'decorrelation_interval_s': f'{self._pacer.interval_ns / NS_PER_S:.3f}',
            'd2_lag1_autocorrelation': f'{self._pacer.autocorrelation:.3f}',
            'decorrelation_warm': self._pacer.warm,
            'outcomes_withheld_warming_up': self._engine.warming_up,
            'last_drop_reason': self.last_drop_reason,
        }
        if self._calibrated_publisher is not None:
            values['calibrated_estimates_published'] = self.calibrated_estimates_published
            values['calibrated_estimate_factors'] = (
                f'position {self.calibrated_factors[0]:.3f}, '
                f'orientation {self.calibrated_factors[1]:.3f}')
        for prefix, counter in (('dropped', self.dropped),
                                ('references_dropped', self.references_dropped),
                                ('resets', self.resets),
                                ('callback_errors', self.callback_errors)):
            for key, count in sorted(counter.items()):
                values[f'{prefix}[{key}]'] = count
        return diagnostic_status(self, DIAGNOSTIC_TASK, level, message, values)

    def publish_diagnostics(self):
        """Publish one DiagnosticArray on /diagnostics."""
        self._diagnostics_publisher.publish(diagnostic_array(self, self.diagnostic_status()))


def main(args=None):
    """Run the bridge until SIGINT or SIGTERM: exit 0; invalid start-up configuration: exit 2.

    An exception raised while spinning (a message that does not deserialize, a bad /clock) is
    counted on /diagnostics and the bridge runs on.
    """
    return run_node(
        OutcomeBridge, NODE_NAME, args=args,
        make_executor=lambda node: make_executor(node.get_parameter('executor').value),
        on_error=lambda node, error: node.note_callback_error(error))


if __name__ == '__main__':
    sys.exit(main())
