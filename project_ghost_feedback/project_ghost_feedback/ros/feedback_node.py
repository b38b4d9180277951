# SPDX-License-Identifier: Apache-2.0
"""The long-running closed-loop feedback node.

Subscribes to PredictionOutcome and BeliefSelfAssessment, keeps a bounded window of outcomes in
observed-stamp order, and on each assessment publishes ``assess_with_feedback`` over the outcomes
observed at or before the belief stamp as a CalibratedSelfAssessment on
``self_assessment/calibrated`` (topic names are relative to the node namespace:
``/self_assessment/calibrated`` at the root). Publishes ``/diagnostics`` at a steady rate.

Run it with ``ros2 run project_ghost_feedback feedback_node`` (ROS install) or ``feedback_node``
(the project venv; see the README).
"""

import collections
import signal
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
import rclpy
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)

from ..core import ContractViolation
from ..core.feedback import (
    assess_with_feedback,
    DEFAULT_MAX_HISTORY,
    DEFAULT_POLICY,
    make_policy,
    policy_names,
    policy_parameters,
)
from ..core.window import (
    ADDED,
    DEFAULT_OUTCOME_BUFFER_SIZE,
    DUPLICATE,
    OutcomeWindow,
    TOO_OLD,
)
from .conversions import belief_from_msg, fill_calibrated_msg, outcome_from_msg

NODE_NAME = 'feedback_node'
DIAGNOSTIC_NAME = 'project_ghost_feedback: feedback'
EXECUTORS = ('single_threaded', 'events')

# name -> (default, description). Policy parameters are added per registered policy.
_STATIC_PARAMETERS = {
    # Topic names are relative, so they resolve in the node's namespace (/prediction_outcome, ...
    # at the root, /robot1/prediction_outcome, ... with a namespace).
    'outcome_topic': (
        'prediction_outcome', 'PredictionOutcome input topic, relative to the node namespace '
        '(read-only; remap).'),
    'assessment_topic': (
        'self_assessment/raw', 'BeliefSelfAssessment input topic, relative to the node namespace '
        '(read-only; remap).'),
    'calibrated_topic': (
        'self_assessment/calibrated', 'CalibratedSelfAssessment output topic, relative to the '
        'node namespace (read-only; remap).'),
    'output_qos_depth': (10, 'keep_last depth of the reliable output publisher (read-only).'),
    'input_qos_depth': (
        1000, 'keep_last depth of the reliable input subscriptions, deep enough for a fast replay '
        '(read-only).'),
    'executor': (
        'events', f'Executor used by main(): one of {", ".join(EXECUTORS)} (read-only).'),
    'telemetry_bag': (
        '', 'Record accepted inputs and calibrated outputs into this new rosbag2 MCAP bag '
        'directory (empty: off; read-only; see docs/telemetry.md).'),
}
_DYNAMIC_PARAMETERS = {
    'policy': (DEFAULT_POLICY, 'Adjustment policy: one of the registered policy names.'),
    'max_history': (DEFAULT_MAX_HISTORY, 'Outcomes per calibration window (ADR max_history).'),
    'outcome_buffer_size': (
        DEFAULT_OUTCOME_BUFFER_SIZE, 'Outcomes kept in observed-stamp order (>= max_history); '
        'outcomes newer than a belief wait here until their assessment arrives.'),
    'diagnostics_period_s': (1.0, 'Period of /diagnostics, seconds of node-clock time.'),
    'stale_after_s': (
        5.0, 'Diagnostics go STALE when no outcome arrived for this long (node clock).'),
    'reject_log_throttle_s': (1.0, 'Minimum seconds between two logs of rejected messages.'),
}
_READ_ONLY = frozenset(_STATIC_PARAMETERS)
_MAX_INT = 2**31 - 1
# A rejection's text quotes the bad value: a message with a megabyte-long name must not become a
# megabyte in every /diagnostics message and log line.
_MAX_REJECT_TEXT = 300


def _descriptor(name, default, description):
    if isinstance(default, bool):
        kind = ParameterType.PARAMETER_BOOL
    elif isinstance(default, int):
        kind = ParameterType.PARAMETER_INTEGER
    elif isinstance(default, float):
        kind = ParameterType.PARAMETER_DOUBLE
    else:
        kind = ParameterType.PARAMETER_STRING
    descriptor = ParameterDescriptor(
        name=name, type=kind, description=description, read_only=name in _READ_ONLY)
    if name in ('max_history', 'outcome_buffer_size', 'output_qos_depth', 'input_qos_depth'):
        descriptor.integer_range = [IntegerRange(from_value=1, to_value=_MAX_INT, step=1)]
    elif name in ('diagnostics_period_s', 'stale_after_s', 'reject_log_throttle_s'):
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=0.0, to_value=3600.0, step=0.0)]
    return descriptor


def _policy_parameter_names():
    """Return {'<policy>.<field>': (policy, field, default)} for every registered policy."""
    return {
        f'{policy}.{field}': (policy, field, default)
        for policy in policy_names()
        for field, default in policy_parameters(policy).items()
    }


class _LogGate:
    """At most one log per period, decided before calling the logger.

    rclpy's own ``throttle_duration_sec`` inspects the caller's frame and resolves its file path
    on every call, also for the calls it then drops: ~0.5 ms each, which made every rejected or
    downgraded message cost several times a whole assessment (bench/node_bench.py). Steady time,
    as rclpy's throttle; it only paces logs, never the data path.
    """

    __slots__ = ('_next_ns',)

    def __init__(self):
        self._next_ns = 0

    def open(self, period_s):
        """Return True if a log may go out now (then not again for ``period_s`` seconds)."""
        now_ns = time.monotonic_ns()
        if now_ns < self._next_ns:
            return False
        self._next_ns = now_ns + int(period_s * 1e9)
        return True


class FeedbackNode(Node):
    """Closed-loop feedback: calibrate raw self-assessments with recent prediction outcomes."""

    def __init__(self, node_name=NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        self._policy_parameters = _policy_parameter_names()
        self._parameter_names = (
            list(_STATIC_PARAMETERS) + list(_DYNAMIC_PARAMETERS) + list(self._policy_parameters))
        node_parameters = {**_STATIC_PARAMETERS, **_DYNAMIC_PARAMETERS}
        try:
            for name, (default, description) in node_parameters.items():
                self.declare_parameter(name, default, _descriptor(name, default, description))
            for name, (policy, field, default) in self._policy_parameters.items():
                self.declare_parameter(name, default, _descriptor(
                    name, default, f'Parameter {field!r} of policy {policy!r}.'))
        except ParameterException as error:
            # An override out of its descriptor's range or of the wrong type: a ValueError with
            # rclpy's reason, like every other invalid start-up value.
            self.destroy_node()
            raise ValueError(f'invalid parameters: {error}') from None

        # Validate the whole start-up configuration before creating any entity.
        config = self._config_from(self._parameter_values())
        if isinstance(config, str):
            self.destroy_node()
            raise ValueError(f'invalid parameters: {config}')
        self._apply_config(config)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        # Open the telemetry bag before any topic exists: a bad path fails without endpoints.
        self._telemetry = None
        if self._param('telemetry_bag'):
            from ..telemetry.recorder import TelemetryRecorder  # rosbags only when recording
            self._telemetry = TelemetryRecorder(
                self._param('telemetry_bag'), policy=config['policy'],
                max_history=config['max_history'],
                outcome_buffer_size=config['outcome_buffer_size'],
                on_error=self.get_logger().error)

        self._window = OutcomeWindow(config['outcome_buffer_size'])
        self.received = collections.Counter()
        self.rejected = collections.Counter()
        self.published = 0
        self.duplicates = 0
        self.too_old_outcomes = 0
        self.late_outcomes = 0
        self.last_reject_reason = ''
        self._reject_log_gate = _LogGate()
        self._downgrade_log_gate = _LogGate()
        self.last_calibrated = None
        self._last_processed_belief_stamp = None
        self._last_outcome_time = None
        self._start_time = self.get_clock().now()
        self._drain_limit = self._param('input_qos_depth')

        input_qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=self._drain_limit,
            reliability=ReliabilityPolicy.RELIABLE)
        output_qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=self._param('output_qos_depth'),
            reliability=ReliabilityPolicy.RELIABLE)
        # One output message, refilled per assessment: publish() serializes it synchronously.
        self._output_msg = CalibratedSelfAssessmentMsg()
        self._publisher = self.create_publisher(
            CalibratedSelfAssessmentMsg, self._param('calibrated_topic'), output_qos)
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        # The outcome subscription is created first and drained before each assessment, so
        # outcomes published before an assessment are in the window when it is processed.
        self._outcome_subscription = self.create_subscription(
            PredictionOutcomeMsg, self._param('outcome_topic'), self._on_outcome, input_qos)
        self._assessment_subscription = self.create_subscription(
            BeliefSelfAssessmentMsg, self._param('assessment_topic'), self._on_assessment,
            input_qos)
        self._diagnostics_timer = self.create_timer(
            self._diagnostics_period_s, self.publish_diagnostics)
        self.get_logger().info(
            f'feedback node ready: policy {self._policy.policy_id} {self._policy}, '
            f'max_history {self._max_history}; {self._outcome_subscription.topic_name} + '
            f'{self._assessment_subscription.topic_name} -> {self._publisher.topic_name}')

    # -- parameters ---------------------------------------------------------------------------

    def _param(self, name):
        return self.get_parameter(name).value

    def _parameter_values(self):
        return {name: self.get_parameter(name).value for name in self._parameter_names}

    def _config_from(self, values):
        """Return a validated config dict from parameter values, or a reason string."""
        policy_name = values['policy']
        if policy_name not in policy_names():
            return f'policy {policy_name!r} is not registered (choose from {policy_names()})'
        # Every registered policy's parameters are validated, not only the selected one's: an
        # invalid value is refused when it is set, not later when someone switches policy.
        for name in policy_names():
            fields = {
                field: values[parameter]
                for parameter, (policy, field, _) in self._policy_parameters.items()
                if policy == name
            }
            try:
                built = make_policy(name, fields)
            except (TypeError, ValueError) as error:
                return f'parameters of policy {name!r}: {error}'
            if name == policy_name:
                policy = built
        max_history = values['max_history']
        buffer_size = values['outcome_buffer_size']
        if buffer_size < max_history:
            return (f'outcome_buffer_size ({buffer_size}) must be >= max_history '
                    f'({max_history})')
        if values['diagnostics_period_s'] <= 0.0:
            return 'diagnostics_period_s must be > 0'
        if values['executor'] not in EXECUTORS:
            return f'executor {values["executor"]!r} is not one of {EXECUTORS}'
        for topic in ('outcome_topic', 'assessment_topic', 'calibrated_topic'):
            if not values[topic]:
                return f'{topic} must not be empty'
        return {
            'policy': policy, 'max_history': max_history, 'outcome_buffer_size': buffer_size,
            'diagnostics_period_s': values['diagnostics_period_s'],
            'stale_after_s': values['stale_after_s'],
            'reject_log_throttle_s': values['reject_log_throttle_s'],
        }

    def _apply_config(self, config):
        self._policy = config['policy']
        self._max_history = config['max_history']
        self._stale_after = Duration(nanoseconds=int(config['stale_after_s'] * 1e9))
        self._reject_log_throttle_s = config['reject_log_throttle_s']
        period = config['diagnostics_period_s']
        if getattr(self, '_diagnostics_period_s', period) != period:
            self.destroy_timer(self._diagnostics_timer)
            self._diagnostics_timer = self.create_timer(period, self.publish_diagnostics)
        self._diagnostics_period_s = period
        window = getattr(self, '_window', None)
        if window is not None and window.capacity != config['outcome_buffer_size']:
            window.resize(config['outcome_buffer_size'])

    def _on_set_parameters(self, parameters):
        values = self._parameter_values()
        for parameter in parameters:
            if parameter.name in _READ_ONLY:
                return SetParametersResult(
                    successful=False, reason=f'{parameter.name} is read-only (set it at start)')
            values[parameter.name] = parameter.value
        config = self._config_from(values)
        if isinstance(config, str):
            self.get_logger().warning(f'parameter change rejected: {config}')
            return SetParametersResult(successful=False, reason=config)
        self._apply_config(config)
        if self._telemetry is not None:
            self._telemetry.note_config_change()
        self.get_logger().info(
            'parameters changed: ' + ', '.join(f'{p.name}={p.value!r}' for p in parameters))
        return SetParametersResult(successful=True)

    # -- data path ----------------------------------------------------------------------------

    def _reject(self, kind, error):
        reason = error.reason if isinstance(error, ContractViolation) else type(error).__name__
        self.rejected[f'{kind}:{reason}'] += 1
        text = str(error)
        if len(text) > _MAX_REJECT_TEXT:
            text = f'{text[:_MAX_REJECT_TEXT]}... ({len(text)} characters)'
        self.last_reject_reason = f'{kind}: {text}'
        if self._reject_log_gate.open(self._reject_log_throttle_s):
            self.get_logger().warning(
                f'rejected {kind} ({sum(self.rejected.values())} so far): {text}')

    def _on_outcome(self, msg):
        self.received['outcome'] += 1
        try:
            outcome = outcome_from_msg(msg)
        except (TypeError, ValueError) as error:
            self._reject('outcome', error)
            return
        if self._telemetry is not None:
            self._telemetry.record_outcome(outcome)
        status = self._window.add(outcome)
        if status == DUPLICATE:
            self.duplicates += 1
            return
        if status == TOO_OLD:
            # Older than everything in a full buffer: it can no longer count for any window.
            self.too_old_outcomes += 1
        self._last_outcome_time = self.get_clock().now()
        if (status == ADDED and self._last_processed_belief_stamp is not None
                and outcome.observed_stamp_sim_ns <= self._last_processed_belief_stamp):
            # It would have counted for an assessment already published.
            self.late_outcomes += 1

    def _drain_outcomes(self):
        """Take the outcomes already queued before handling an assessment (arrival-order race).

        At most one input queue's worth (``input_qos_depth``) per assessment, so a producer faster
        than the node cannot hold an assessment off forever.
        """
        subscription = self._outcome_subscription
        try:
            with subscription.handle:
                for _ in range(self._drain_limit):
                    taken = subscription.handle.take_message(
                        subscription.msg_type, subscription.raw)
                    if taken is None:
                        return
                    self._on_outcome(taken[0])
        except Exception as error:  # noqa: BLE001 - never lose the assessment over the drain
            self.get_logger().debug(f'outcome drain unavailable: {error!r}', once=True)

    def _on_assessment(self, msg):
        self.received['assessment'] += 1
        self._drain_outcomes()
        try:
            raw = belief_from_msg(msg)
        except (TypeError, ValueError) as error:
            self._reject('assessment', error)
            return
        window = self._window.causal_window(raw.belief_stamp_sim_ns, self._max_history)
        calibrated = assess_with_feedback(raw, window, self._policy, self._max_history)
        self._publisher.publish(fill_calibrated_msg(self._output_msg, calibrated, raw_msg=msg))
        if self._telemetry is not None:
            self._telemetry.record_assessment(raw, calibrated)
        self.published += 1
        self.last_calibrated = calibrated
        if (self._last_processed_belief_stamp is None
                or raw.belief_stamp_sim_ns > self._last_processed_belief_stamp):
            self._last_processed_belief_stamp = raw.belief_stamp_sim_ns
        if calibrated.was_downgraded and self._downgrade_log_gate.open(1.0):
            self.get_logger().info(
                f'downgraded {raw.overall_level.name} -> '
                f'{calibrated.adjusted_overall_level.name} at {raw.belief_stamp_sim_ns} ns '
                f'({calibrated.adjustment_reason})')

    # -- diagnostics --------------------------------------------------------------------------

    def diagnostic_status(self):
        """Return the node's DiagnosticStatus (OK, WARN when downgraded, STALE when starved)."""
        now = self.get_clock().now()
        last = self._last_outcome_time or self._start_time
        stale = (now - last) > self._stale_after
        calibrated = self.last_calibrated
        raw_level = calibrated.raw_assessment.overall_level.name if calibrated else ''
        adjusted = calibrated.adjusted_overall_level.name if calibrated else ''
        if stale:
            level, message = DiagnosticStatus.STALE, 'no outcomes received recently'
        elif calibrated is not None and calibrated.was_downgraded:
            level = DiagnosticStatus.WARN
            message = (
                f'calibrated {adjusted} below raw {raw_level} ({calibrated.adjustment_reason})')
        else:
            level, message = DiagnosticStatus.OK, 'calibration within tolerance'
        values = {
            'outcomes_received': self.received['outcome'],
            'assessments_received': self.received['assessment'],
            'rejected_total': sum(self.rejected.values()),
            'published': self.published,
            'duplicates_dropped': self.duplicates,
            'too_old_outcomes_dropped': self.too_old_outcomes,
            'late_outcomes': self.late_outcomes,
            'window_fill': f'{len(self._window)}/{self._window.capacity}',
            'max_history': self._max_history,
            'policy': self._policy.policy_id,
            'raw_level': raw_level,
            'calibrated_level': adjusted,
            'last_reason': calibrated.adjustment_reason if calibrated else '',
            'last_reject_reason': self.last_reject_reason,
        }
        for reason, count in sorted(self.rejected.items()):
            values[f'rejected[{reason}]'] = count
        return DiagnosticStatus(
            level=level, name=DIAGNOSTIC_NAME, message=message,
            hardware_id=self.get_fully_qualified_name(),
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])

    def publish_diagnostics(self):
        """Publish one DiagnosticArray on /diagnostics."""
        array = DiagnosticArray(status=[self.diagnostic_status()])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics_publisher.publish(array)

    def close(self):
        """Close the telemetry bag, if recording (idempotent; main() calls it on shutdown)."""
        telemetry = getattr(self, '_telemetry', None)
        if telemetry is not None:
            telemetry.close()

    def destroy_node(self):
        """Close the telemetry bag, then destroy the node."""
        self.close()
        return super().destroy_node()


def make_executor(name, context=None):
    """Return the executor called ``name`` (see EXECUTORS) bound to ``context``."""
    if name == 'events':
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


class ShutdownRequest:
    """SIGINT and SIGTERM handlers that only record the request; the spin loop polls it.

    rclpy's own handlers act from whichever thread the signal lands on and shut the context down
    at once: during start-up that leaves half-built rclpy objects whose ``__del__`` prints a
    traceback, and ``EventsExecutor.spin()`` (rclpy 7.1) never returns after it. Python runs
    these handlers in the main thread between bytecodes, so a request is never acted on in the
    middle of building or handling anything.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum = None
        self._previous = {}

    def __bool__(self):
        return self.signum is not None

    def install(self):
        """Install the handlers (main thread only), remembering the previous ones."""
        for signum in self.SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)

    def _handle(self, signum, frame):
        self.signum = signum

    def restore(self):
        """Put the previous handlers back."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


def spin_until_shutdown(executor, context, stop=lambda: False, period_s=0.1):
    """Spin ``executor`` until ``stop()`` is true or ``context`` is shut down.

    Bounded ``spin_once`` calls, so ``stop`` is checked at least every ``period_s`` seconds:
    signal handlers recorded by :class:`ShutdownRequest` are acted on within that time.
    """
    while context.ok() and not stop():
        executor.spin_once(timeout_sec=period_s)


def main(args=None):
    """Run the feedback node until SIGINT or SIGTERM; exit 0 on a clean shutdown."""
    shutdown = ShutdownRequest()
    shutdown.install()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = None
    exit_code = 0
    try:
        node = FeedbackNode()
        executor = make_executor(node.get_parameter('executor').value)
        executor.add_node(node)
        spin_until_shutdown(executor, node.context, stop=shutdown.__bool__)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as error:
        print(f'feedback_node: {error}', file=sys.stderr)
        exit_code = 2
    except Exception:
        # The context shut down under the executor (by another rclpy user of this process):
        # its next wait set then raises RCLError (Jazzy). That is a clean shutdown too.
        if rclpy.ok():
            raise
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.close()  # finish the telemetry bag: every accepted message is in it
            node.destroy_node()
        rclpy.try_shutdown()
        shutdown.restore()
    return exit_code


if __name__ == '__main__':
    sys.exit(main())
