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

Frames (docs/bridge.md, "Frames"): with ``use_tf`` (default) a tf2_ros Buffer fed by the node's
/tf and /tf_static subscriptions (each transform through the engine's gate, bridge/tf_gate.py:
time rules and bounds) maps each reference into the estimate's frame at the reference's stamp
(the rule is the engine's: bridge/pairing.py); what cannot be transformed is counted by
reason. Without tf2 importable it runs without tf and says so. The fixed
``transform.*`` stays for stacks without tf.

Run it with ``ros2 run project_ghost_feedback outcome_bridge`` or ``outcome_bridge`` (venv).
"""

from collections.abc import Callable, Mapping
from functools import partial
import sys
from typing import Any, TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from project_ghost_feedback_msgs.msg import PredictionOutcome as PredictionOutcomeMsg
from rclpy.clock import Clock, ClockType, JumpThreshold, TimeJump
from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.serialization import deserialize_message

from ..bridge.decorrelation import WHITEN
from ..bridge.engine_interface import Estimate, EngineListener
from ..bridge.geometry import vec3_components
from ..bridge.parameters import config_from, PARAMETERS
from ..bridge.transforms import TF_REASONS
from ..bridge.pairing import (  # noqa: F401 - the drop reasons and reset causes, re-exported
    DROP_BAD_STAMP,
    DROP_BEFORE_BUFFER,
    DROP_CALLBACK_ERROR,
    DROP_CHILD_FRAME_MISMATCH,
    DROP_FRAME_MISMATCH,
    DROP_FUTURE_STAMP,
    DROP_GAP,
    DROP_INVALID_OUTCOME,
    DROP_MALFORMED,
    DROP_NO_REFERENCE_AFTER,
    DROP_NOT_NEWER,
    DROP_PENDING_OVERFLOW,
    DROP_TIME_RESET,
    DROP_TOO_OLD,
    ESTIMATE,
    PairingEngine,
    REFERENCE,
    RESET_CLOCK_JUMP,
    RESET_ESTIMATE_STAMPS,
    RESET_REFERENCE_STAMPS,
)
from ..msg_encoding import belief_bytes, outcome_bytes
from .bridge_diagnostics import BridgeDiagnostics
from .bridge_state import BridgeCounts
from .calibrated_estimate_publisher import CalibratedEstimatePublisher
from .calibration_status import ERROR, WARN
from .health import HealthLedger
from .pose_wire import VIEWS
from .wire import WireError
from .node_kit import (
    NO_PUBLISHER_EVENTS,
    cap_text,
    diagnostic_array,
    make_executor,
    NS_PER_S,
    ParameterSet,
    PeriodicTimer,
    producer_publishers,
    TimedLogging,
)
from .node_main import run_node

if TYPE_CHECKING:
    from ..bridge.tf2_transforms import Tf2Transforms
    from ..core import BeliefSelfAssessment, PredictionOutcome
    from ..core.feedback import TransformStep

NODE_NAME = 'outcome_bridge'
ESTIMATE_CLASSES = {'odometry': Odometry, 'pose_with_covariance': PoseWithCovarianceStamped}
REFERENCE_CLASSES = {
    'odometry': Odometry, 'pose': PoseStamped, 'pose_with_covariance': PoseWithCovarianceStamped}
"""The message class of each ``estimate_type`` / ``reference_type`` choice (bridge.parameters)."""


class _NodeListener(EngineListener):
    """Publish what the pairing engine hands over; count, log and note it on /diagnostics.

    Handed what it writes: the three output publishers (``outputs``: outcome, unwhitened
    outcome, assessment), the bridge's counts and health ledger, ``config`` (returns the
    configuration in effect) and the calibrated estimate's publisher (None: disabled).
    ``engine`` (set once the engine exists) gives the totals its log lines quote.
    """

    def __init__(self, outputs: tuple[Any, Any, Any], counts: BridgeCounts,
                 health: HealthLedger, config: Callable[[], Mapping[str, Any]],
                 calibrated_estimate: CalibratedEstimatePublisher | None) -> None:
        self._outcomes, self._unwhitened, self._assessments = outputs
        self._counts = counts
        self._health = health
        self._config = config
        self._calibrated_estimate = calibrated_estimate
        self.engine: PairingEngine | None = None

    def _engine(self) -> PairingEngine:
        assert self.engine is not None, 'the listener is attached to its engine at start-up'
        return self.engine

    def outcome_ready(self, outcome: 'PredictionOutcome', estimate: Estimate) -> None:
        self._outcomes.publish(outcome_bytes(outcome))
        self._counts.outcomes_published += 1

    def raw_outcome(self, outcome: 'PredictionOutcome', estimate: Estimate) -> None:
        if self._config()['decorrelation_method'] == WHITEN:
            self._unwhitened.publish(outcome_bytes(outcome))

    def assessment_ready(self, belief: 'BeliefSelfAssessment', estimate: Estimate) -> None:
        self._assessments.publish(belief_bytes(belief))
        self._counts.assessments_published += 1
        if self._calibrated_estimate is not None:
            self._calibrated_estimate.publish(estimate.message)

    def estimate_dropped(self, reason: str, detail: str) -> None:
        self._counts.last_drop_reason = cap_text(f'{reason}: {detail}' if detail else reason)
        self._counts.period_counts[reason] += 1
        self._health.period.note(WARN, f'estimates dropped ({reason})')
        self._health.log(
            'drop', 'warning', f'dropped an estimate ({self._counts.last_drop_reason}); '
            f'{sum(self._engine().dropped.values())} dropped so far, by reason on /diagnostics')

    def reference_dropped(self, reason: str, detail: str) -> None:
        self._counts.last_drop_reason = cap_text(
            f'reference {reason}: {detail}' if detail else reason)
        if reason in TF_REASONS:
            self._counts.period_counts['reference_tf'] += 1
        self._health.period.note(WARN, f'references dropped ({reason})')
        self._health.log(
            'drop_reference', 'warning', f'dropped a reference ({self._counts.last_drop_reason}); '
            f'{sum(self._engine().references_dropped.values())} dropped so far')

    def timeline_reset(self, cause: str, detail: str) -> None:
        self._counts.last_reset_reason = f'{cause}: {detail}'
        self._health.period.note(WARN, f'time-ordered state reset ({cause}: {detail})')
        self._health.log('reset', 'warning', f'reset ({cause}): {detail}; pending estimates '
                         'and reference samples beyond it dropped')

    def transform_refused(self, reason: str, detail: str) -> None:
        self._health.period.note(WARN, f'/tf transforms refused ({reason})')
        # One line per reason and throttle period, with the count: a bad /tf publisher repeats
        # its error on every message.
        self._health.log(
            f'tf_{reason}', 'warning', f'refused a /tf transform ({reason}: {detail}); '
            f'{self._engine().transforms_refused[reason]} refused as {reason} so far, by reason on '
            '/diagnostics')

    def transform_step(self, step: 'TransformStep') -> None:
        # Frames named: the distances crossed at a /tf change (bridge/frame_steps.py).
        self._counts.transform_steps += 1
        self._counts.last_transform_step = cap_text(step.describe())
        verb = 'jumped' if step.kind == 'jump' else 'fell back'
        self._health.period.note(
            WARN, f'{step.vec3} distance {verb} at a /tf change of {step.target_frame} <- '
            f'{step.source_frame} ({step.step_m:.3f} m, {step.step_deg:.2f} deg; '
            'last_frame_step)')
        self._health.log('transform_step', 'warning', self._counts.last_transform_step)

    def invalid_assessment(self, error: Exception) -> None:
        health = self._health
        health.callback_errors['invalid_assessment'] += 1
        health.last_callback_error = cap_text(f'invalid_assessment: {error}')
        health.period.note(ERROR, 'an assessment failed its contract')


class OutcomeBridge(TimedLogging, Node):
    """Turn (estimate with covariance, reference) into PredictionOutcome + BeliefSelfAssessment."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        try:
            self._parameter_set = ParameterSet(self, PARAMETERS, config_from, self._apply_config)
        except ValueError:
            self.destroy_node()
            raise
        config = self._parameter_set.config
        # Faults (callback errors, rejected clocks, losses, gaps) and the diagnostics period.
        self.health = HealthLedger(self.get_logger(),
                                   lambda: self.config['reject_log_throttle_s'],
                                   runs_on='the bridge runs on')
        self._tf_buffer = None
        # What the bridge counts (bridge_state.py): its listener and callbacks write it,
        # /diagnostics reads it. rclpy 7.1's EventsExecutor cannot call a callback taking the
        # message info.
        self.counts = BridgeCounts(message_info=self._param('executor') != 'events')
        self.tf_subscriptions: dict[str, Any] = {}
        depth = self._param('input_qos_depth')
        input_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                               reliability=ReliabilityPolicy.BEST_EFFORT)
        output_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST,
                                depth=self._param('output_qos_depth'),
                                reliability=ReliabilityPolicy.RELIABLE)
        # The outputs are published as the CDR bytes of the contracts (msg_encoding): no message
        # objects to fill and convert.
        self._outcome_publisher, self._assessment_publisher, self._diagnostics_publisher = (
            producer_publishers(self, output_qos))
        # Every paired outcome with its raw distances (whiten: the published ones are whitened).
        self._unwhitened_publisher = self.create_publisher(
            PredictionOutcomeMsg, 'prediction_outcome/unwhitened', output_qos,
            event_callbacks=NO_PUBLISHER_EVENTS)
        transforms = None
        if self._param('use_tf'):
            transforms = self._start_tf()
        self.calibrated_estimate = None
        if self._param('calibrated_estimate.enabled'):
            self.calibrated_estimate = CalibratedEstimatePublisher(
                self, ESTIMATE_CLASSES[self._param('estimate_type')], output_qos,
                self.health.period, lambda: self.config, self.health.callback_error)
        # The engine's listener is handed the publishers and the state it writes.
        listener = _NodeListener(
            (self._outcome_publisher, self._unwhitened_publisher, self._assessment_publisher),
            self.counts, self.health, lambda: self.config, self.calibrated_estimate)
        self.engine = PairingEngine(
            config, listener,
            reference_buffer_size=self._param('reference_buffer_size'),
            pending_capacity=self._param('pending_capacity'),
            keep_messages=self._param('calibrated_estimate.enabled'),
            transforms=transforms)
        listener.engine = self.engine

        input_types = {REFERENCE: self._param('reference_type'),
                       ESTIMATE: self._param('estimate_type')}
        classes = {REFERENCE: REFERENCE_CLASSES[input_types[REFERENCE]],
                   ESTIMATE: ESTIMATE_CLASSES[input_types[ESTIMATE]]}
        # The inputs are taken as their CDR bytes and read by .pose_wire: no message
        # object is built for the few fields the bridge reads; rclpy reads what it cannot.
        self._readers = {kind: (VIEWS[input_types[kind]], classes[kind])
                         for kind in (REFERENCE, ESTIMATE)}
        self.input_subscriptions = {}
        for kind in (REFERENCE, ESTIMATE):
            self.input_subscriptions[kind] = self.create_subscription(
                classes[kind], kind,
                partial(self._on_input_with_info if self.counts.message_info else self._on_input,
                        kind),
                input_qos,
                event_callbacks=SubscriptionEventCallbacks(
                    message_lost=partial(self.health.message_lost, kind),
                    incompatible_qos=partial(self._on_incompatible_qos, kind)),
                qos_overriding_options=QoSOverridingOptions.with_default_policies(),
                raw=True)
            self.health.watch_sequence(kind, self.input_subscriptions[kind].get_publisher_count)
        self._reference_subscription = self.input_subscriptions[REFERENCE]
        self._estimate_subscription = self.input_subscriptions[ESTIMATE]
        self._steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        start = self._steady_clock.now().nanoseconds
        # The /diagnostics task: handed the state it reads, and keeping what the last period saw.
        self.diagnostics = BridgeDiagnostics(
            self.get_fully_qualified_name(), lambda: self.config, self.health, self.engine,
            self.counts, self.input_subscriptions, self.tf_subscriptions,
            self.get_publishers_info_by_topic, self.calibrated_estimate, start)
        # A backward jump of the node clock (a simulator reset, a bag replayed again) restarts
        # the stamps: forget what is time-ordered and now lies in the future.
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=False),
            post_callback=self._on_clock_jump)
        self._diagnostics_timer = PeriodicTimer(
            self, config['diagnostics_period_s'], self.publish_diagnostics, self._steady_clock)
        self._parameter_set.watch()
        self.get_logger().info(
            f'outcome bridge ready: {self._estimate_subscription.topic_name} '
            f'({self._param("estimate_type")}) + {self._reference_subscription.topic_name} '
            f'({self._param("reference_type")}) -> {self._outcome_publisher.topic_name} + '
            f'{self._assessment_publisher.topic_name}')
        components = vec3_components(config['ignored_axes'])
        if components != (3, 3):
            self.get_logger().info(
                f'ignored_axes {list(config["ignored_axes"])}: the outcomes keep {components[0]} '
                f'position and {components[1]} orientation component(s), mapped onto chi(3); '
                "for an unbiased k set the feedback node's position_components:="
                f'{components[0]} orientation_components:={components[1]}')

    def _start_tf(self) -> 'Tf2Transforms | None':
        """Start a tf2_ros Buffer fed by this node's /tf and /tf_static subscriptions.

        Return the engine's provider, or None without tf2. Every transform goes through the
        engine's gate (bridge/tf_gate.py) before the Buffer: no TransformListener, which would
        feed tf2 directly and hide the losses of its subscriptions.
        """
        from ..bridge.tf2_transforms import tf2_missing

        missing = tf2_missing()
        if missing is not None:
            self.counts.tf_state = f'unavailable: {missing}'
            self.get_logger().warning(f'use_tf: {missing}; references are compared in their '
                                      'own frame (or through transform.*) only')
            return None
        import tf2_ros
        from tf2_msgs.msg import TFMessage

        from ..bridge.tf2_transforms import Tf2Transforms, TF_STATIC_TOPIC, TF_TOPIC

        # No node for the Buffer: the engine clears it itself on a timeline reset (its own
        # clock-jump and stamp rules).
        self._tf_buffer = tf2_ros.Buffer(
            cache_time=Duration(nanoseconds=int(self._param('tf.cache_s') * NS_PER_S)))
        # /tf as deep as the inputs: tf2 interpolates across a /tf sample lost to a queue that
        # overflowed while the bridge lagged (at a step of map -> odom: a wrong transform), so
        # the subscription must keep up with the references it serves (tf's default is 100).
        qos = {
            TF_TOPIC: QoSProfile(history=HistoryPolicy.KEEP_LAST,
                                 depth=self._param('input_qos_depth'),
                                 reliability=ReliabilityPolicy.RELIABLE),
            TF_STATIC_TOPIC: QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                                        reliability=ReliabilityPolicy.RELIABLE,
                                        durability=DurabilityPolicy.TRANSIENT_LOCAL),
        }
        for topic, static in ((TF_TOPIC, False), (TF_STATIC_TOPIC, True)):
            callback = partial(
                self._on_tf_with_info if self.counts.message_info else self._on_tf, topic, static)
            self.tf_subscriptions[topic] = self.create_subscription(
                TFMessage, topic, callback, qos[topic],
                event_callbacks=SubscriptionEventCallbacks(
                    message_lost=partial(self.health.message_lost, topic)))
            self.health.watch_sequence(topic, self.tf_subscriptions[topic].get_publisher_count)
        self.counts.tf_state = 'on'
        return Tf2Transforms(self._tf_buffer)

    # -- parameters ---------------------------------------------------------------------------

    def _param(self, name: str) -> Any:
        return self.get_parameter(name).value

    @property
    def config(self) -> dict[str, Any]:
        """Return the bridge's configuration in effect (:func:`..bridge.parameters.config_from`)."""
        return self._parameter_set.config

    def _apply_config(self, previous: Mapping[str, Any], config: dict[str, Any],
                      parameters: list[Parameter] | tuple[()] = ()) -> None:
        self.engine.apply_config(config)
        if self.calibrated_estimate is not None:
            self.calibrated_estimate.update_factors()
        self._diagnostics_timer.set_period(config['diagnostics_period_s'])

    # -- faults, losses, resets ---------------------------------------------------------------

    def _on_incompatible_qos(self, kind: str, status: Any) -> None:
        incompatible = self.counts.incompatible_qos
        first = not incompatible[kind]
        incompatible[kind] += status.total_count_change
        self.health.period.note(WARN, f'a publisher on {kind} offers an incompatible QoS')
        if first:
            self.get_logger().warning(
                f'{self.input_subscriptions[kind].topic_name}: a publisher offers a QoS '
                f'incompatible with this subscription (policy {status.last_policy_kind}); its '
                'messages never arrive. Match it, or set qos_overrides.<topic>.subscription.* '
                '(logged once; counted as incompatible_qos on /diagnostics)')

    def _on_clock_jump(self, jump: TimeJump) -> None:
        """On a backward jump, reset if the state holds stamps now in the future.

        When the inputs' stamps went back first (their reset already happened), the state holds
        only stamps of the new timeline and nothing is reset twice.
        """
        if jump.delta.nanoseconds < 0:
            self.engine.clock_jumped(jump.delta.nanoseconds, self.get_clock().now().nanoseconds)

    # -- data path ----------------------------------------------------------------------------

    def _on_tf_with_info(self, topic: str, static: bool, msg: Any,
                         info: Mapping[str, Any]) -> None:
        self.health.sequence(topic, info)
        self._on_tf(topic, static, msg)

    def _on_tf(self, topic: str, static: bool, msg: Any) -> None:
        """Take one /tf or /tf_static message: the engine's gate, then tf2."""
        self.counts.tf_received[topic] += 1
        try:
            self.engine.take_transforms(msg, static, self.get_clock().now().nanoseconds)
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self.health.callback_error(error)

    def _read(self, kind: str, data: bytes) -> Any:
        """Return the view of an input's bytes, or the message rclpy reads from them."""
        view, message_class = self._readers[kind]
        try:
            return view(data)
        except WireError:
            # Another encapsulation (big endian, ...) or unreadable: rclpy reads what it can
            # and raises for the rest (the caller drops it as malformed).
            return deserialize_message(data, message_class)

    def _malformed_detail(self, kind: str, data: bytes, error: Exception) -> str:
        return (f'{kind} of {len(data)} bytes is not {self._readers[kind][1].__name__} CDR: '
                f'{type(error).__name__}: {cap_text(str(error), 200)}')

    def _on_input_with_info(self, kind: str, data: bytes, info: Mapping[str, Any]) -> None:
        self.health.sequence(kind, info)
        self._on_input(kind, data)

    def _on_input(self, kind: str, data: bytes) -> None:
        """Take the bytes of one reference or estimate."""
        try:
            msg = self._read(kind, data)
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self.counts.received[kind] += 1
            drop = self.engine.drop_reference if kind == REFERENCE else self.engine.drop_estimate
            drop(DROP_MALFORMED, self._malformed_detail(kind, data, error))
            return
        if kind == REFERENCE:
            self._on_reference(msg)
        else:
            self._on_estimate(msg)

    def _on_reference(self, msg: Any) -> None:
        self.counts.received[REFERENCE] += 1
        engine = self.engine
        accounted = engine.references_used + sum(engine.references_dropped.values())
        try:
            engine.take_reference(msg, self.get_clock().now().nanoseconds)
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self.health.callback_error(error)
            if engine.references_used + sum(engine.references_dropped.values()) == accounted:
                self.engine.drop_reference(DROP_CALLBACK_ERROR, type(error).__name__)

    def _on_estimate(self, msg: Any) -> None:
        self.counts.received[ESTIMATE] += 1
        engine = self.engine
        accounted = engine.resolved + len(engine.pending)
        try:
            engine.take_estimate(msg, self.get_clock().now().nanoseconds)
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the bridge
            self.health.callback_error(error)
            if engine.resolved + len(engine.pending) == accounted:
                engine.drop_estimate(DROP_CALLBACK_ERROR, type(error).__name__)

    # -- diagnostics --------------------------------------------------------------------------

    def accounting(self) -> dict[str, int]:
        """Return ``{input: messages received but in no bucket}`` (always 0 unless a bug)."""
        return self.counts.unaccounted(self.engine)

    def diagnostic_status(self) -> DiagnosticStatus:
        """Return the DiagnosticStatus of the period since the last call, and start a new one.

        The checks of :mod:`.bridge_diagnostics`, merged: STALE when an input brought nothing
        for ``stale_after_s``; ERROR on a callback error, when every estimate of the period met
        a frame or body mismatch, or when references could not be transformed (tf) and nothing
        was paired; WARN on drops, resets, losses, incompatible QoS, no publisher or several on
        an input, or estimates received but none paired; else OK.
        """
        return self.diagnostics.status(self._steady_clock.now().nanoseconds)

    def publish_diagnostics(self) -> None:
        """Publish one DiagnosticArray on /diagnostics."""
        self._diagnostics_publisher.publish(diagnostic_array(self, self.diagnostic_status()))


def main(args: list[str] | None = None) -> int:
    """Run the bridge until SIGINT or SIGTERM: exit 0; invalid start-up configuration: exit 2.

    An exception raised while spinning (a message that does not deserialize, a bad /clock) is
    counted on /diagnostics and the bridge runs on.
    """
    return run_node(
        OutcomeBridge, NODE_NAME, args=args,
        make_executor=lambda node: make_executor(node.get_parameter('executor').value),
        on_error=lambda node, error: node.health.callback_error(error))


if __name__ == '__main__':
    sys.exit(main())
