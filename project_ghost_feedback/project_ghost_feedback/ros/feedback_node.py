# SPDX-License-Identifier: Apache-2.0
"""The long-running closed-loop feedback node.

Subscribes to ``prediction_outcome`` (PredictionOutcome) and ``self_assessment/raw``
(BeliefSelfAssessment), keeps a bounded window of outcomes in observed-stamp order, and on each
assessment publishes the policy's verdict over the outcomes observed at or before the belief
stamp as a CalibratedSelfAssessment on ``self_assessment/calibrated``. Topic names are relative
(they resolve in the node's namespace) and change by remapping only. Also:

- the window, stamp rules, held assessments and resets are the core's one feedback loop
  (:class:`~..core.loop.FeedbackLoop`, which replay runs too); every reset and parameter change is
  published on ``feedback_events`` (FeedbackEvent) and recorded, so replay reproduces the run;
- ``~/reset`` (std_srvs/Trigger) clears the window;
- a backward jump of the node clock (sim reset, a bag played in a loop), input stamps that go back
  by more than ``time_jump_tolerance_s`` (a restarted estimator) reset the window and the node's
  state, logged once per event and counted; input stamps further ahead of the node clock than the
  tolerance are rejected (``future_stamp``), so they cannot poison the window;
- ``/diagnostics``: status ``<node fully qualified name>: calibration``, the worst of each period,
  on a steady-clock timer (it keeps flowing when sim time stalls);
- ``self_assessment/overconfidence`` (OverconfidenceEstimate): the continuous overconfidence
  estimate per vec3 as numbers, on the same timer, when a new assessment came (for plots);
- telemetry (``telemetry_bag`` / ``telemetry_dir``) recorded on a writer thread, off the data path.

Run it with ``ros2 run project_ghost_feedback feedback_node`` (ROS install) or ``feedback_node``
(the project venv; see the README).
"""

import collections
import datetime
import pathlib
import sys

from diagnostic_msgs.msg import DiagnosticArray
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    FeedbackEvent as FeedbackEventMsg,
    OverconfidenceEstimate as OverconfidenceEstimateMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from rclpy.clock import Clock, ClockType, JumpThreshold
from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from rcl_interfaces.msg import SetParametersResult
from std_srvs.srv import Trigger

from ..core import ContractViolation, NS_PER_S
from ..core.feedback import format_overconfidence
from ..core.loop import (
    CAUSE_SERVICE,
    CAUSE_START,
    CONFIGURATION,
    FeedbackLoop,
    LoopEvent,
)
from ..core.window import DUPLICATE, TOO_OLD
from .calibration_status import (
    assessment_severity,
    ERROR,
    is_underconfident,
    OK,
    PeriodStatus,
    STALE,
    UNDERCONFIDENT_MESSAGE,
    WARN,
)
from .conversions import (
    belief_from_msg,
    event_to_msg,
    fill_calibrated_msg,
    outcome_from_msg,
    overconfidence_to_msg,
)
from .feedback_parameters import (  # noqa: F401 - EXECUTORS re-exported for main()'s users
    descriptor,
    EXECUTORS,
    NODE_PARAMETERS,
    policy_parameter_specs,
    validate,
)
from .input_accounting import is_negative_time_error, LogGate, SequenceGaps
from .node_kit import (  # noqa: F401 - make_executor re-exported for main()'s users
    cap_text,
    diagnostic_array,
    diagnostic_status,
    make_executor,
    message_class,
    refusal,
    TimedLogging,
)

NODE_NAME = 'feedback_node'
DIAGNOSTIC_TASK = 'calibration'
OUTCOME_TOPIC = 'prediction_outcome'
ASSESSMENT_TOPIC = 'self_assessment/raw'
CALIBRATED_TOPIC = 'self_assessment/calibrated'
EVENTS_TOPIC = 'feedback_events'
OVERCONFIDENCE_TOPIC = 'self_assessment/overconfidence'
BAG_PREFIX = 'ghost_feedback'
OVERCONFIDENCE_MEANING = ('k [95% interval] per vec3: the real error std over the claimed std '
                          '(1 honest, 2 errors twice the claim)')
# A rejection's text quotes the bad value: a message with a megabyte-long name must not become a
# megabyte in every /diagnostics message and log line.
_MAX_REJECT_TEXT = 300


class StartupError(ValueError):
    """The start-up configuration is invalid (run_node() logs it and exits 2)."""


def new_bag_path(parent):
    """Return a new ``<parent>/ghost_feedback_YYYY_MM_DD-HH_MM_SS[_N]`` path (rosbag2's naming)."""
    parent = pathlib.Path(parent)
    stamp = datetime.datetime.now().strftime('%Y_%m_%d-%H_%M_%S')
    candidate = parent / f'{BAG_PREFIX}_{stamp}'
    suffix = 1
    while candidate.exists():
        candidate = parent / f'{BAG_PREFIX}_{stamp}_{suffix}'
        suffix += 1
    return candidate


class FeedbackNode(TimedLogging, Node):
    """Closed-loop feedback: calibrate raw self-assessments with recent prediction outcomes."""

    def __init__(self, node_name=NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        self._policy_specs = policy_parameter_specs()
        specs = {**NODE_PARAMETERS, **{n: s for n, (_, _, s) in self._policy_specs.items()}}
        self._parameter_names = list(specs)
        self._read_only = frozenset(n for n, s in specs.items() if s.read_only)
        try:
            for name, spec in specs.items():
                self.declare_parameter(name, spec.default, descriptor(name, spec))
        except ParameterException as error:
            # An override out of its descriptor's range or of the wrong type.
            self.destroy_node()
            raise StartupError(f'invalid parameters: {error}') from None
        config = validate(self._parameter_values(), self._policy_specs)
        if isinstance(config, str):
            self.destroy_node()
            raise StartupError(f'invalid parameters: {config}')
        self._config = config
        self._pending_config = None

        self.received = collections.Counter()
        self.rejected = collections.Counter()
        self.published = 0
        self.underconfident_assessments = 0
        self.duplicates = 0
        self.too_old_outcomes = 0
        self.late_outcomes = 0
        self.lost_messages = 0
        self.resets = collections.Counter()
        self.callback_errors = collections.Counter()
        self.clock_rejected = 0
        self.last_clock_rejection = ''
        self._clock_log_gate = LogGate()
        self._callback_error_log_gate = LogGate()
        self.last_reject_reason = ''
        self.last_reset_reason = ''
        self.last_calibrated = None
        self._reject_log_gate = LogGate()
        # (raw level, calibrated level) of the last output: the log says when it changes.
        self._logged_levels = None
        self._loop = FeedbackLoop(config.loop, hold_ns=config.assessment_hold_ns)
        self._period = PeriodStatus()
        self._last_severity = None
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._start_steady_ns = self._steady.now().nanoseconds
        self._last_outcome_steady_ns = None
        self._last_clock_ns = self.get_clock().now().nanoseconds
        self._last_clock_change_steady_ns = self._start_steady_ns

        # Open the telemetry bag before any topic exists: a bad path fails without endpoints.
        self._telemetry = self._open_telemetry()

        depth = self._param('input_qos_depth')
        input_qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE)
        output_qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=self._param('output_qos_depth'),
            reliability=ReliabilityPolicy.RELIABLE)
        # rclpy 7.1's experimental EventsExecutor raises SystemError for a subscription callback
        # that takes the message info: with it, no sequence-gap counting (messages_missed).
        self._message_info = self._param('executor') != 'events'
        on_outcome, on_assessment = self._input_callbacks()
        # One output message, refilled per assessment: publish() serializes it synchronously.
        self._output_msg = CalibratedSelfAssessmentMsg()
        self._publisher = self.create_publisher(
            CalibratedSelfAssessmentMsg, CALIBRATED_TOPIC, output_qos)
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        # The continuous overconfidence estimate as numbers, once per diagnostics period.
        self._overconfidence_publisher = self.create_publisher(
            OverconfidenceEstimateMsg, OVERCONFIDENCE_TOPIC, output_qos)
        self._overconfidence_published_for = None
        # Resets and configuration changes: what replay needs besides the inputs. Transient
        # local, so a `ros2 bag record` started later still gets the configuration in effect.
        self._events_publisher = self.create_publisher(
            FeedbackEventMsg, EVENTS_TOPIC, QoSProfile(
                history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL))
        # Created first: when both inputs are ready in one wait, the executor takes the outcomes
        # first (SingleThreadedExecutor serves a node's subscriptions in creation order).
        self._outcome_subscription = self.create_subscription(
            PredictionOutcomeMsg, OUTCOME_TOPIC, on_outcome, input_qos,
            event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_message_lost))
        self._assessment_subscription = self.create_subscription(
            BeliefSelfAssessmentMsg, ASSESSMENT_TOPIC, on_assessment, input_qos,
            event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_message_lost))
        self._outcome_gaps = SequenceGaps(self._outcome_subscription.get_publisher_count)
        self._assessment_gaps = SequenceGaps(self._assessment_subscription.get_publisher_count)
        self._reset_service = self.create_service(Trigger, '~/reset', self._on_reset_request)
        if self._telemetry is not None and self._param('record_diagnostics'):
            # As received (CDR bytes, nothing decoded): every publisher's arrays, this node's too.
            self._diagnostics_recording = self.create_subscription(
                DiagnosticArray, '/diagnostics', self._record_diagnostics, 100, raw=True)
        self.topic_messages_recorded = 0  # messages of record_topics handed to the recorder
        if self._telemetry is not None:
            # Any topic asked for (e.g. the bridge's inputs), as received: best effort matches
            # every publisher; the log time is the node clock at receipt, as for /diagnostics.
            self._topic_recordings = [
                self.create_subscription(
                    message_class, channel.topic, self._recorder_of(channel.topic),
                    QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=channel.qos.depth,
                               reliability=ReliabilityPolicy.BEST_EFFORT), raw=True)
                for channel, message_class in self._recorded_topics]
        # Releases the assessments the loop holds for assessment_hold_s.
        self._hold_timer = self.create_timer(0.01, self._release_held, clock=self._steady)
        self._diagnostics_timer = self.create_timer(
            config.diagnostics_period_s, self.publish_diagnostics, clock=self._steady)
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=False),
            post_callback=self._on_clock_jump)
        self.add_on_set_parameters_callback(self._check_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self.diagnostic_name = f'{self.get_fully_qualified_name()}: {DIAGNOSTIC_TASK}'
        self._emit(LoopEvent(self._clock_ns(), CONFIGURATION, CAUSE_START,
                             config.loop.describe(), config.loop))
        self.get_logger().info(
            f'feedback node ready: {config.loop.describe()}; '
            f'{self._outcome_subscription.topic_name} + '
            f'{self._assessment_subscription.topic_name} -> {self._publisher.topic_name}, '
            f'events on {self._events_publisher.topic_name}'
            + (f'; recording to {self._telemetry.path}' if self._telemetry else ''))

    # -- start-up -----------------------------------------------------------------------------

    def _open_telemetry(self):
        bag, parent = self._param('telemetry_bag'), self._param('telemetry_dir')
        if not bag and not parent:
            return None
        try:
            from ..telemetry.background import BackgroundRecorder
            from ..telemetry.channels import DIAGNOSTICS, OVERCONFIDENCE, recorded_topic
            from ..telemetry.recorder import TelemetryRecorder
        except ImportError as error:
            self.destroy_node()
            raise StartupError(
                f'telemetry needs the rosbags library ({error}); install it '
                '(pip install -r requirements/jazzy.txt) or leave telemetry_bag and '
                'telemetry_dir empty') from None
        try:
            if parent:
                pathlib.Path(parent).mkdir(parents=True, exist_ok=True)
                bag = new_bag_path(parent)
            # The periodic, derived data (for Foxglove and plots), on or off together.
            extra = (DIAGNOSTICS, OVERCONFIDENCE) if self._param('record_diagnostics') else ()
            self._overconfidence_channel = (OVERCONFIDENCE.topic if OVERCONFIDENCE in extra
                                            else None)
            channels = [recorded_topic(entry) for entry in self._param('record_topics') if entry]
            self._recorded_topics = tuple(
                (channel, message_class(channel.msgtype)) for channel in channels)
            extra += tuple(channel for channel, _ in self._recorded_topics)
            recorder = TelemetryRecorder(bag, self._config.loop, extra_channels=extra,
                                         on_error=self._telemetry_error)
        except (ValueError, OSError) as error:
            self.destroy_node()
            raise StartupError(str(error)) from None
        return BackgroundRecorder(
            recorder, queue_size=self._param('telemetry_queue_size'),
            on_error=self._telemetry_error)

    def _record_diagnostics(self, payload):
        self._telemetry.record_serialized('/diagnostics', self._clock_ns(), payload)

    def _recorder_of(self, topic):
        def record(payload):
            self.topic_messages_recorded += 1
            self._telemetry.record_serialized(topic, self._clock_ns(), payload)
        return record

    def _telemetry_error(self, message):
        self.get_logger().error(message)

    # -- parameters ---------------------------------------------------------------------------

    def _param(self, name):
        return self.get_parameter(name).value

    def _parameter_values(self):
        return {name: self.get_parameter(name).value for name in self._parameter_names}

    def _check_parameters(self, parameters):
        """On-set: validate the whole resulting set; apply nothing (see _apply_parameters)."""
        values = self._parameter_values()
        refused = refusal(self, parameters, values, self._read_only)
        if refused is not None:
            return SetParametersResult(successful=False, reason=refused)
        values.update((p.name, p.value) for p in parameters if p.name in values)
        config = validate(values, self._policy_specs)
        if isinstance(config, str):
            config = cap_text(config)
            self.get_logger().warning(f'parameter change refused: {config}')
            return SetParametersResult(successful=False, reason=config)
        self._pending_config = config
        return SetParametersResult(successful=True)

    def _apply_parameters(self, parameters):
        """Post-set: apply the configuration the on-set callback validated."""
        config, self._pending_config = self._pending_config, None
        if config is None or config == self._config:
            return  # e.g. a `ros2 param load` of unchanged values: nothing to do, nothing logged
        old, self._config = self._config, config
        if old.diagnostics_period_s != config.diagnostics_period_s:
            self.destroy_timer(self._diagnostics_timer)
            self._diagnostics_timer = self.create_timer(
                config.diagnostics_period_s, self.publish_diagnostics, clock=self._steady)
        self._loop.hold_ns = config.assessment_hold_ns
        event = self._loop.configure(config.loop, self._clock_ns())
        if event is not None:
            self._emit(event)
        self.get_logger().info(
            'parameters changed: ' + ', '.join(f'{p.name}={p.value!r}' for p in parameters))

    # -- resets -------------------------------------------------------------------------------

    def _clock_ns(self):
        """Return the node clock now, in ns, never negative (an event's stamp)."""
        return max(self.get_clock().now().nanoseconds, 0)

    def _emit(self, event):
        """Publish a LoopEvent on feedback_events and record it (before what it applies to)."""
        self._events_publisher.publish(event_to_msg(event))
        if self._telemetry is not None:
            self._telemetry.record_event(event)

    def _note_reset(self, event):
        """Publish, record, count and log (once per event) a reset the loop made."""
        self.last_calibrated = None
        self._last_severity = None
        self._logged_levels = None
        self._emit(event)
        self.resets[event.cause] += 1
        self.last_reset_reason = f'{event.cause}: {event.detail}'
        self._period.note(WARN, f'window reset ({event.cause}: {event.detail})')
        self.get_logger().warning(f'window reset ({event.cause}): {event.detail}')

    def reset(self, cause, detail):
        """Clear the window and the time-ordered state; log once, count the cause; return it."""
        event = self._loop.reset(cause, detail, self._clock_ns())
        self._note_reset(event)
        return event

    def _on_reset_request(self, request, response):
        event = self.reset(CAUSE_SERVICE, 'requested through ~/reset')
        response.success = True
        response.message = f'window cleared ({event.detail})'
        return response

    def _on_clock_jump(self, jump):
        """Reset on a backward jump if the state holds stamps now in the future (see the loop)."""
        event = self._loop.clock_jumped(jump.delta.nanoseconds, self.get_clock().now().nanoseconds)
        if event is not None:
            self._note_reset(event)

    def note_callback_error(self, error):
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
            self._period.note(WARN, f'rejecting /clock messages ({self.last_clock_rejection})')
            if self._clock_log_gate.open(self._config.reject_log_throttle_s):
                self.get_logger().warning(
                    f'/clock message rejected ({self.clock_rejected} so far): '
                    f'{self.last_clock_rejection}')
            return
        key = type(error).__name__
        self.callback_errors[key] += 1
        self._period.note(ERROR, f'a callback raised {key}: {error}')
        if self._callback_error_log_gate.open(self._config.reject_log_throttle_s):
            self.get_logger().error(
                f'callback raised {key} ({sum(self.callback_errors.values())} so far), '
                f'the node keeps running: {error}')

    def _on_message_lost(self, status):
        self.lost_messages += status.total_count_change
        self._period.note(WARN, f'{status.total_count_change} input messages lost in the '
                                'middleware (queue overflow)')

    # -- data path ----------------------------------------------------------------------------

    def _reject(self, kind, error):
        reason = error.reason if isinstance(error, ContractViolation) else type(error).__name__
        self._count_rejection(kind, reason, str(error))

    def _count_rejection(self, kind, reason, text):
        self.rejected[f'{kind}:{reason}'] += 1
        if len(text) > _MAX_REJECT_TEXT:
            text = f'{text[:_MAX_REJECT_TEXT]}... ({len(text)} characters)'
        self.last_reject_reason = f'{kind}: {text}'
        self._period.note(WARN, f'rejecting {kind} messages ({reason})')
        if self._reject_log_gate.open(self._config.reject_log_throttle_s):
            self.get_logger().warning(
                f'rejected {kind} ({sum(self.rejected.values())} so far): {text}')

    def _input_callbacks(self):
        if self._message_info:
            return self._on_outcome_with_info, self._on_assessment_with_info
        return self._on_outcome, self._on_assessment

    def input_handlers(self):
        """Return ``(on_outcome, on_assessment)``: the subscription callbacks, taking a message.

        For handler-level tests and benches, which feed messages without DDS: the same code
        the subscriptions run (the message-info path with an empty info where it is in use).
        """
        on_outcome, on_assessment = self._input_callbacks()
        if not self._message_info:
            return on_outcome, on_assessment
        return (lambda msg: on_outcome(msg, {})), (lambda msg: on_assessment(msg, {}))

    def _note_missed(self, kind, missed):
        self._period.note(WARN, f'{missed} {kind} messages missing from the publication '
                                'sequence (input queue overflow)')

    def _on_outcome_with_info(self, msg, info):
        missed = self._outcome_gaps.note(info)
        if missed:
            self._note_missed('outcome', missed)
        self._on_outcome(msg)

    def _on_outcome(self, msg):
        self.received['outcome'] += 1
        try:
            outcome = outcome_from_msg(msg)
        except (TypeError, ValueError) as error:
            self._reject('outcome', error)
            return
        step = self._loop.outcome(outcome, self.get_clock().now().nanoseconds)
        if step.refusal is not None:
            self._count_rejection('outcome', *step.refusal)
            return
        for event in step.events:  # resets the input caused: recorded before it
            self._note_reset(event)
        if self._telemetry is not None:
            self._telemetry.record_outcome(outcome)
        status = step.status
        if status == DUPLICATE:
            self.duplicates += 1
            return
        if status == TOO_OLD:
            # Older than everything in a full buffer: it can no longer count for any window.
            self.too_old_outcomes += 1
        self._last_outcome_steady_ns = self._steady.now().nanoseconds
        if step.late:
            # It would have counted for an assessment already published.
            self.late_outcomes += 1

    def _on_assessment_with_info(self, msg, info):
        missed = self._assessment_gaps.note(info)
        if missed:
            self._note_missed('assessment', missed)
        self._on_assessment(msg)

    def _on_assessment(self, msg):
        self.received['assessment'] += 1
        try:
            raw = belief_from_msg(msg)
        except (TypeError, ValueError) as error:
            self._reject('assessment', error)
            return
        if not self._loop.hold(raw, self._steady.now().nanoseconds):
            self._judge(raw, msg)

    def _release_held(self):
        """Judge the held assessments whose hold time is over, in arrival order."""
        loop = self._loop
        if not loop.held:
            return
        for step in loop.release(self._steady.now().nanoseconds,
                                 self.get_clock().now().nanoseconds):
            self._after_judging(step, None)

    def _judge(self, raw, msg):
        self._after_judging(
            self._loop.assessment(raw, self.get_clock().now().nanoseconds), msg)

    def _after_judging(self, step, msg):
        """Publish, record and account one judged assessment (``msg``: its message, or None)."""
        if step.refusal is not None:
            self._count_rejection('assessment', *step.refusal)
            return
        for event in step.events:  # resets the input caused: recorded before it
            self._note_reset(event)
        calibrated = step.calibrated
        raw = calibrated.raw_assessment
        self._publisher.publish(fill_calibrated_msg(self._output_msg, calibrated, raw_msg=msg))
        if self._telemetry is not None:
            self._telemetry.record_assessment(raw, calibrated)
        self.published += 1
        self.underconfident_assessments += is_underconfident(calibrated)
        self.last_calibrated = calibrated
        self._last_severity = assessment_severity(calibrated)
        self._period.note(*self._last_severity)
        self._log_level_change(calibrated)

    def _log_level_change(self, calibrated):
        """Log a change of the calibrated level (or of the raw one), with its reason, once."""
        levels, change = level_change(self._logged_levels, calibrated)
        self._logged_levels = levels
        if change is not None:
            severity, text = change
            if severity == WARN:  # rclpy: one severity per call site
                self.get_logger().warning(text)
            else:
                self.get_logger().info(text)

    # -- diagnostics --------------------------------------------------------------------------

    def _clock_note(self, steady_ns):
        """Return a note when the node clock has not advanced for a diagnostics period or more."""
        clock_ns = self.get_clock().now().nanoseconds
        if clock_ns != self._last_clock_ns:
            self._last_clock_ns = clock_ns
            self._last_clock_change_steady_ns = steady_ns
            return ''
        stalled_s = (steady_ns - self._last_clock_change_steady_ns) / NS_PER_S
        if stalled_s >= self._config.diagnostics_period_s:
            return f'node clock stalled for {stalled_s:.1f} s (sim time paused?)'
        return ''

    def diagnostic_status(self):
        """Return the DiagnosticStatus of the period since the last call, and start a new one."""
        steady_ns = self._steady.now().nanoseconds
        last = self._last_outcome_steady_ns or self._start_steady_ns
        starved_s = (steady_ns - last) / NS_PER_S
        if starved_s > self._config.stale_after_s:
            self._period.note(STALE, f'no outcome received for {starved_s:.1f} s')
        level, message = self._period.take(carry=self._last_severity)
        clock_note = self._clock_note(steady_ns)
        if clock_note:
            message = f'{message}; {clock_note}'
        calibrated = self.last_calibrated
        underconfident = calibrated is not None and is_underconfident(calibrated)
        if underconfident and UNDERCONFIDENT_MESSAGE not in message:
            message = f'{message}; {UNDERCONFIDENT_MESSAGE}'
        values = {
            'outcomes_received': self.received['outcome'],
            'assessments_received': self.received['assessment'],
            'rejected_total': sum(self.rejected.values()),
            'published': self.published,
            'duplicates_dropped': self.duplicates,
            'too_old_outcomes_dropped': self.too_old_outcomes,
            'late_outcomes': self.late_outcomes,
            'messages_lost': self.lost_messages,
            'messages_missed': self._outcome_gaps.missed + self._assessment_gaps.missed,
            'outcome_publishers': self._outcome_subscription.get_publisher_count(),
            'assessment_publishers': self._assessment_subscription.get_publisher_count(),
            'resets_total': sum(self.resets.values()),
            'last_reset_reason': self.last_reset_reason,
            'window_outcomes': self._window_outcomes(),
            'window_evidence': window_evidence(calibrated),
            'max_history': self._config.loop.max_history,
            'buffer_fill': '{}/{}'.format(*self._loop.buffer_fill),
            'policy': self._config.loop.policy,
            'raw_level': calibrated.raw_assessment.overall_level.name if calibrated else '',
            'calibrated_level': calibrated.adjusted_overall_level.name if calibrated else '',
            'last_reason': calibrated.adjustment_reason if calibrated else '',
            'underconfident': underconfident,
            'underconfident_assessments': self.underconfident_assessments,
            'last_reject_reason': self.last_reject_reason,
            'node_clock_ns': self._last_clock_ns,
            'clock_rejected': self.clock_rejected,
            'last_clock_rejection': self.last_clock_rejection,
            'clock_stalled': bool(clock_note),
        }
        if self._telemetry is not None:
            values['telemetry_bag'] = str(self._telemetry.path)
            values['telemetry_recorded'] = self._telemetry.recorded
            values['telemetry_not_recorded'] = self._telemetry.not_recorded
            values['record_topics_messages'] = self.topic_messages_recorded
            if self._telemetry.error is not None:
                level = ERROR if level in (OK, WARN) else level
                message = f'{message}; telemetry stopped: {self._telemetry.error}'
        # ADR-0026a: how overconfident each vec3 is, 'k_hat [low, high]' (95%); '' if unknown.
        history = calibrated.calibration_history if calibrated else None
        for vec3, text in format_overconfidence(history).items():
            values[f'overconfidence[{vec3}]'] = text
        values['overconfidence_is'] = OVERCONFIDENCE_MEANING
        for kind, count in sorted(self.callback_errors.items()):
            values[f'callback_errors[{kind}]'] = count
        for cause, count in sorted(self.resets.items()):
            values[f'resets[{cause}]'] = count
        for reason, count in sorted(self.rejected.items()):
            values[f'rejected[{reason}]'] = count
        return diagnostic_status(self, DIAGNOSTIC_TASK, level, message, values)

    def _window_outcomes(self):
        """Return how many outcomes the last assessment was judged on, of max_history."""
        calibrated = self.last_calibrated
        judged = calibrated.calibration_history.outcomes_considered if calibrated else 0
        return f'{judged} of {self._config.loop.max_history}'

    def publish_diagnostics(self):
        """Publish one DiagnosticArray on /diagnostics, and the overconfidence estimate if new."""
        self._diagnostics_publisher.publish(diagnostic_array(self, self.diagnostic_status()))
        calibrated = self.last_calibrated
        if calibrated is None or calibrated is self._overconfidence_published_for:
            return
        self._overconfidence_published_for = calibrated
        msg = overconfidence_to_msg(calibrated)
        self._overconfidence_publisher.publish(msg)
        if self._telemetry is not None and self._overconfidence_channel is not None:
            self._telemetry.record_serialized(
                self._overconfidence_channel, self._clock_ns(), serialize_message(msg))

    def close(self):
        """Finish the telemetry bag, if recording (idempotent; main() calls it on shutdown)."""
        telemetry = getattr(self, '_telemetry', None)
        if telemetry is not None and not telemetry.closed:
            telemetry.close()
            self.get_logger().info(
                f'telemetry: {telemetry.recorded} messages recorded in {telemetry.path}, '
                f'{telemetry.not_recorded} not recorded'
                + ('' if telemetry.error is None else
                   ' (recording stopped by the error above; the bag is unfinished: no '
                   'metadata.yaml, its complete MCAP chunks are readable)'))

    def destroy_node(self):
        """Finish the telemetry bag, then destroy the node."""
        self.close()
        return super().destroy_node()


def window_evidence(calibrated):
    """Return the evidence of the window a calibrated assessment was judged on, in words."""
    if calibrated is None:
        return ''
    history = calibrated.calibration_history
    return (f'{history.count_within_1_std} within 1 std, {history.count_beyond_1_std} 1-3, '
            f'{history.count_beyond_3_std} 3-5, {history.count_beyond_5_std} beyond 5; worst d '
            f'position {history.worst_position_mahalanobis:.2f}, orientation '
            f'{history.worst_orientation_mahalanobis:.2f}')


def level_change(previous, calibrated):
    """Return ``(levels, change)``: the (raw, calibrated) levels now, and what to log, if any.

    ``change`` is None while the levels stay as they were (and for a first output that is not
    downgraded); otherwise ``(WARN, text)`` for a calibrated level below the raw one and
    ``(OK, text)`` for the return to the raw level. Times in seconds of the belief stamp.
    """
    raw = calibrated.raw_assessment
    levels = (raw.overall_level, calibrated.adjusted_overall_level)
    if levels == previous or (previous is None and not calibrated.was_downgraded):
        return levels, None
    at = f'at t={raw.belief_stamp_sim_ns / NS_PER_S:.3f} s'
    if calibrated.was_downgraded:
        return levels, (WARN, f'calibrated level {levels[1].name} (raw {levels[0].name}) {at}: '
                              f'{calibrated.adjustment_reason}')
    return levels, (OK, f'back to the raw level {levels[0].name} {at}: '
                        f'{calibrated.adjustment_reason}')


def main(args=None):
    """Run the feedback node until SIGINT or SIGTERM (exit codes: :func:`.node_main.run_node`)."""
    from .node_main import run_node

    return run_node(
        FeedbackNode, NODE_NAME, args=args,
        make_executor=lambda node: make_executor(node.get_parameter('executor').value),
        on_error=lambda node, error: node.note_callback_error(error))


if __name__ == '__main__':
    sys.exit(main())
