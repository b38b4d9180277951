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
(the project venv; see docs/node.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
import sys
from typing import Any, TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    FeedbackEvent as FeedbackEventMsg,
    OverconfidenceEstimate as OverconfidenceEstimateMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from rclpy.clock import Clock, ClockType, JumpThreshold, TimeJump
from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from std_srvs.srv import Trigger

from ..core.loop import (
    CAUSE_SERVICE,
    CAUSE_START,
    CONFIGURATION,
    FeedbackLoop,
    LoopEvent,
    Step,
)
from ..core.window import DUPLICATE, TOO_OLD
from ..msg_encoding import calibrated_bytes
from .calibration_status import (
    assessment_severity,
    is_underconfident,
    WARN,
)
from .conversions import (
    belief_from_msg,
    event_to_msg,
    fill_calibrated_msg,
    outcome_from_msg,
    overconfidence_to_msg,
)
from .feedback_diagnostics import FeedbackDiagnostics
from .feedback_state import ClockWatch, FeedbackCounts, LastVerdict
from .health import HealthLedger
from .level_log import level_change, Levels
from .feedback_parameters import (  # noqa: F401 - EXECUTORS re-exported for main()'s users
    EXECUTORS,
    FeedbackConfig,
    NODE_PARAMETERS,
    policy_parameter_specs,
    validate,
)
from .wire import belief_view, outcome_view, StringRefused, WireError
from .node_kit import (  # noqa: F401 - make_executor re-exported for main()'s users
    cap_text,
    diagnostic_array,
    make_executor,
    message_class,
    NO_PUBLISHER_EVENTS,
    ParameterSet,
    PeriodicTimer,
    TimedLogging,
)
from .feedback_telemetry import open_telemetry, StartupError, TopicRecorder

if TYPE_CHECKING:
    from ..core.feedback import CalibratedSelfAssessment
    from ..telemetry.background import BackgroundRecorder


NODE_NAME = 'feedback_node'
DIAGNOSTIC_TASK = 'calibration'
OUTCOME_TOPIC = 'prediction_outcome'
ASSESSMENT_TOPIC = 'self_assessment/raw'
CALIBRATED_TOPIC = 'self_assessment/calibrated'
EVENTS_TOPIC = 'feedback_events'
OVERCONFIDENCE_TOPIC = 'self_assessment/overconfidence'


class FeedbackNode(TimedLogging, Node):
    """Closed-loop feedback: calibrate raw self-assessments with recent prediction outcomes."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        policy_specs = policy_parameter_specs()
        specs = {**NODE_PARAMETERS, **{n: s for n, (_, _, s) in policy_specs.items()}}
        try:
            self._parameter_set = ParameterSet(
                self, specs, lambda values: validate(values, policy_specs),
                self._apply_config, error_type=StartupError)
        except StartupError:
            self.destroy_node()
            raise
        config = self._parameter_set.config

        # Faults (callback errors, rejected clocks and inputs, losses, gaps) and the period.
        self.health = HealthLedger(self.get_logger(), lambda: self.config.reject_log_throttle_s)
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        started = self._steady.now().nanoseconds
        # What the node keeps between callbacks (feedback_state.py): /diagnostics reads them.
        self.counts = FeedbackCounts(start_steady_ns=started)
        self.verdict = LastVerdict()
        self._clock_watch = ClockWatch(self.get_clock().now().nanoseconds, started)
        # (raw level, calibrated level) of the last output: the log says when it changes.
        self._logged_levels: Levels | None = None
        self.loop = FeedbackLoop(config.loop, hold_ns=config.assessment_hold_ns)

        # Open the telemetry bag before any topic exists: a bad path fails without endpoints.
        self.telemetry = self._open_telemetry()

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
            CalibratedSelfAssessmentMsg, CALIBRATED_TOPIC, output_qos,
            event_callbacks=NO_PUBLISHER_EVENTS)
        self._diagnostics_publisher = self.create_publisher(
            DiagnosticArray, '/diagnostics', 10, event_callbacks=NO_PUBLISHER_EVENTS)
        # The continuous overconfidence estimate as numbers, once per diagnostics period.
        self._overconfidence_publisher = self.create_publisher(
            OverconfidenceEstimateMsg, OVERCONFIDENCE_TOPIC, output_qos,
            event_callbacks=NO_PUBLISHER_EVENTS)
        self._overconfidence_published_for: CalibratedSelfAssessment | None = None
        # Resets and configuration changes: what replay needs besides the inputs. Transient
        # local, so a `ros2 bag record` started later still gets the configuration in effect.
        self._events_publisher = self.create_publisher(
            FeedbackEventMsg, EVENTS_TOPIC, QoSProfile(
                history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL), event_callbacks=NO_PUBLISHER_EVENTS)
        # Created first: when both inputs are ready in one wait, the executor takes the outcomes
        # first (SingleThreadedExecutor serves a node's subscriptions in creation order).
        # Raw: the node reads the serialized bytes itself (.wire), no message objects built.
        self.outcome_subscription = self.create_subscription(
            PredictionOutcomeMsg, OUTCOME_TOPIC, on_outcome, input_qos,
            event_callbacks=SubscriptionEventCallbacks(
                message_lost=partial(self.health.message_lost, 'outcome')),
            raw=True)
        self.assessment_subscription = self.create_subscription(
            BeliefSelfAssessmentMsg, ASSESSMENT_TOPIC, on_assessment, input_qos,
            event_callbacks=SubscriptionEventCallbacks(
                message_lost=partial(self.health.message_lost, 'assessment')),
            raw=True)
        self.health.watch_sequence('outcome', self.outcome_subscription.get_publisher_count)
        self.health.watch_sequence('assessment', self.assessment_subscription.get_publisher_count)
        self._reset_service = self.create_service(Trigger, '~/reset', self._on_reset_request)
        self.topic_recorder = None
        if self.telemetry is not None:
            # Any topic asked for (e.g. the bridge's inputs) and /diagnostics, as received.
            self.topic_recorder = TopicRecorder(
                self, self.telemetry, self._recorded_topics, self._clock_ns, self.health.period,
                self._message_info, self._param('record_diagnostics'))
        # Releases the assessments the loop holds for assessment_hold_s.
        self._hold_timer = self.create_timer(0.01, self._release_held, clock=self._steady)
        # The /diagnostics task: handed the state it reads, and keeping its own.
        self.diagnostics = FeedbackDiagnostics(
            self.get_fully_qualified_name(), lambda: self.config, self.health, self.loop,
            self.counts, self.verdict, self._clock_watch,
            lambda: self.get_clock().now().nanoseconds,
            {'outcome': self.outcome_subscription.get_publisher_count,
             'assessment': self.assessment_subscription.get_publisher_count},
            self.telemetry, self.topic_recorder)
        self._diagnostics_timer = PeriodicTimer(
            self, config.diagnostics_period_s, self.publish_diagnostics, self._steady)
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=False),
            post_callback=self._on_clock_jump)
        self._parameter_set.watch()
        self.diagnostic_name = f'{self.get_fully_qualified_name()}: {DIAGNOSTIC_TASK}'
        self._emit(LoopEvent(self._clock_ns(), CONFIGURATION, CAUSE_START,
                             config.loop.describe(), config.loop))
        self.get_logger().info(
            f'feedback node ready: {config.loop.describe()}; '
            f'{self.outcome_subscription.topic_name} + '
            f'{self.assessment_subscription.topic_name} -> {self._publisher.topic_name}, '
            f'events on {self._events_publisher.topic_name}'
            + (f'; recording to {self.telemetry.path}' if self.telemetry else ''))

    # -- start-up -----------------------------------------------------------------------------

    def _open_telemetry(self) -> BackgroundRecorder | None:
        """Open the telemetry bag the parameters ask for (None: no recording)."""
        try:
            opened = open_telemetry(self._param, self.config.loop, self._telemetry_error)
        except StartupError:
            self.destroy_node()
            raise
        if opened is None:
            return None
        self._channels = opened.channels
        self._overconfidence_channel = opened.overconfidence_channel
        self._recorded_topics = opened.recorded_topics
        return opened.recorder

    def _telemetry_error(self, message: str) -> None:
        self.get_logger().error(message)

    # -- parameters ---------------------------------------------------------------------------

    def _param(self, name: str) -> Any:
        return self._parameter_set.value(name)

    @property
    def config(self) -> FeedbackConfig:
        """Return the FeedbackConfig in effect (the parameter set's validated configuration)."""
        return self._parameter_set.config

    def _apply_config(self, old: FeedbackConfig, config: FeedbackConfig,
                      parameters: list[Parameter]) -> None:
        """Post-set: apply the configuration the parameter set validated (it logs the change)."""
        self._diagnostics_timer.set_period(config.diagnostics_period_s)
        self.loop.hold_ns = config.assessment_hold_ns
        event = self.loop.configure(config.loop, self._clock_ns())
        if event is not None:
            self._emit(event)

    # -- resets -------------------------------------------------------------------------------

    def _clock_ns(self) -> int:
        """Return the node clock now, in ns, never negative (an event's stamp)."""
        return max(self.get_clock().now().nanoseconds, 0)

    def _emit(self, event: LoopEvent) -> None:
        """Publish a LoopEvent on feedback_events and record it (before what it applies to)."""
        self._events_publisher.publish(event_to_msg(event))
        if self.telemetry is not None:
            self.telemetry.record_event(event)

    def _note_reset(self, event: LoopEvent) -> None:
        """Publish, record, count and log (once per event) a reset the loop made."""
        self.verdict.clear()
        self._logged_levels = None
        self._emit(event)
        self.counts.reset(event.cause, event.detail)
        self.health.period.note(WARN, f'window reset ({event.cause}: {event.detail})')
        self.get_logger().warning(f'window reset ({event.cause}): {event.detail}')

    def reset(self, cause: str, detail: str) -> LoopEvent:
        """Clear the window and the time-ordered state; log once, count the cause; return it."""
        event = self.loop.reset(cause, detail, self._clock_ns())
        self._note_reset(event)
        return event

    def _on_reset_request(self, request: Trigger.Request,
                          response: Trigger.Response) -> Trigger.Response:
        event = self.reset(CAUSE_SERVICE, 'requested through ~/reset')
        response.success = True
        response.message = f'window cleared ({event.detail})'
        return response

    def _on_clock_jump(self, jump: TimeJump) -> None:
        """Reset on a backward jump if the state holds stamps now in the future (see the loop)."""
        event = self.loop.clock_jumped(jump.delta.nanoseconds, self.get_clock().now().nanoseconds)
        if event is not None:
            self._note_reset(event)

    # -- data path ----------------------------------------------------------------------------

    def _input_callbacks(self) -> tuple[Callable[..., None], Callable[..., None]]:
        if self._message_info:
            return self._on_outcome_with_info, self._on_assessment_with_info
        return self._on_outcome_data, self._on_assessment_data

    def input_handlers(self) -> tuple[Callable[[Any], None], Callable[[Any], None]]:
        """Return ``(on_outcome, on_assessment)``: the subscription callbacks, taking a message.

        For handler-level tests and benches, which feed messages without DDS: serialized bytes
        take the subscriptions' own path (the message-info path with an empty info where it is
        in use); a message object (rclpy's, or any with the same attributes) is converted from
        its attributes and then handled by the same code.
        """
        on_outcome, on_assessment = self._input_callbacks()
        if self._message_info:
            def with_info(callback: Callable[[bytes, Any], None]) -> Callable[[bytes], None]:
                return lambda data: callback(data, {})
            on_outcome, on_assessment = with_info(on_outcome), with_info(on_assessment)

        def outcome_handler(msg: Any) -> None:
            return on_outcome(msg) if isinstance(msg, bytes) else self._on_outcome(msg)

        def assessment_handler(msg: Any) -> None:
            return (on_assessment(msg) if isinstance(msg, bytes)
                    else self._on_assessment(msg, None, 0))
        return outcome_handler, assessment_handler

    def _on_outcome_with_info(self, data: bytes, info: Mapping[str, Any]) -> None:
        self.health.sequence('outcome', info)
        self._on_outcome_data(data)

    def _on_outcome_data(self, data: bytes) -> None:
        try:
            msg = outcome_view(data)
        except StringRefused as error:
            # A string rclpy and rosbags read differently: refused, never recorded.
            self.counts.received['outcome'] += 1
            self.health.rejection('outcome', StringRefused.reason, str(error))
            return
        except WireError:
            # Another encapsulation (big endian, ...) or unreadable: rclpy reads what it can
            # and raises for the rest (counted as a callback error, as a failed take was).
            msg = deserialize_message(data, PredictionOutcomeMsg)
            data = None  # type: ignore[assignment]
        self._on_outcome(msg, data)

    def _on_outcome(self, msg: Any, data: bytes | None = None) -> None:
        """Take one outcome: ``msg`` to read it from; ``data`` its bytes (recorded), or None."""
        counts = self.counts
        counts.received['outcome'] += 1
        try:
            outcome = outcome_from_msg(msg)
        except (TypeError, ValueError) as error:
            self.health.reject('outcome', error)
            return
        step = self.loop.outcome(outcome, self.get_clock().now().nanoseconds)
        if step.refusal is not None:
            self.health.rejection('outcome', *step.refusal)
            return
        for event in step.events:  # resets the input caused: recorded before it
            self._note_reset(event)
        if self.telemetry is not None:
            if data is not None:   # as taken: nothing encoded again
                self.telemetry.record_bytes(
                    ((self._channels[0], outcome.observed_stamp_sim_ns, data),))
            else:
                self.telemetry.record_outcome(outcome)
        status = step.status
        if status == DUPLICATE:
            counts.duplicates += 1
            return
        if status == TOO_OLD:
            # Older than everything in a full buffer: it can no longer count for any window.
            counts.too_old_outcomes += 1
        counts.last_outcome_steady_ns = self._steady.now().nanoseconds
        if step.late:
            # It would have counted for an assessment already published.
            counts.late_outcomes += 1

    def _on_assessment_with_info(self, data: bytes, info: Mapping[str, Any]) -> None:
        self.health.sequence('assessment', info)
        self._on_assessment_data(data)

    def _on_assessment_data(self, data: bytes) -> None:
        try:
            msg, header_end = belief_view(data)
        except StringRefused as error:  # as for outcomes
            self.counts.received['assessment'] += 1
            self.health.rejection('assessment', StringRefused.reason, str(error))
            return
        except WireError:
            msg = deserialize_message(data, BeliefSelfAssessmentMsg)  # as for outcomes
            data = None  # type: ignore[assignment]
        self._on_assessment(msg, data, header_end if data is not None else 0)

    def _on_assessment(self, msg: Any, data: bytes | None, header_end: int) -> None:
        """Take one assessment: ``msg`` to read it from; ``data`` its bytes, or None."""
        self.counts.received['assessment'] += 1
        try:
            raw = belief_from_msg(msg)
        except (TypeError, ValueError) as error:
            self.health.reject('assessment', error)
            return
        if not self.loop.hold(raw, self._steady.now().nanoseconds):
            self._after_judging(
                self.loop.assessment(raw, self.get_clock().now().nanoseconds), msg, data,
                header_end)

    def _release_held(self) -> None:
        """Judge the held assessments whose hold time is over, in arrival order."""
        loop = self.loop
        if not loop.held:
            return
        for step in loop.release(self._steady.now().nanoseconds,
                                 self.get_clock().now().nanoseconds):
            self._after_judging(step, None, None, 0)

    def _after_judging(self, step: Step, msg: Any, data: bytes | None, header_end: int) -> None:
        """Publish, record and account one judged assessment.

        ``data`` (with ``header_end``): the assessment's serialized bytes, around which the output
        is encoded (.wire); else ``msg``, the rclpy message it came from (its raw assessment as
        is), or None (the output message built from the contract).
        """
        if step.refusal is not None:
            self.health.rejection('assessment', *step.refusal)
            return
        for event in step.events:  # resets the input caused: recorded before it
            self._note_reset(event)
        calibrated = step.calibrated
        assert calibrated is not None  # an assessment not refused is judged
        raw = calibrated.raw_assessment
        if data is not None:
            payload = calibrated_bytes(data, header_end, calibrated)
            self._publisher.publish(payload)
            if self.telemetry is not None:   # the bytes taken and the bytes published
                stamp = raw.belief_stamp_sim_ns
                _, raw_channel, calibrated_channel = self._channels
                self.telemetry.record_bytes(((raw_channel, stamp, data),
                                             (calibrated_channel, stamp, payload)))
        else:
            raw_msg = msg if isinstance(msg, BeliefSelfAssessmentMsg) else None
            self._publisher.publish(fill_calibrated_msg(self._output_msg, calibrated, raw_msg))
            if self.telemetry is not None:
                self.telemetry.record_assessment(raw, calibrated)
        self.counts.published += 1
        self.counts.underconfident_assessments += is_underconfident(calibrated)
        verdict = self.verdict
        verdict.calibrated = calibrated
        verdict.judged = step.judged  # its error in m and deg on /diagnostics
        verdict.severity = assessment_severity(calibrated)
        self.health.period.note(*verdict.severity)
        self._log_level_change(calibrated)

    def _log_level_change(self, calibrated: CalibratedSelfAssessment) -> None:
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

    def diagnostic_status(self) -> DiagnosticStatus:
        """Return the DiagnosticStatus of the period since the last call, and start a new one.

        The checks of :mod:`.feedback_diagnostics`, merged.
        """
        return self.diagnostics.status(self._steady.now().nanoseconds)

    def publish_diagnostics(self) -> None:
        """Publish one DiagnosticArray on /diagnostics, and the overconfidence estimate if new."""
        self._diagnostics_publisher.publish(diagnostic_array(self, self.diagnostic_status()))
        calibrated = self.verdict.calibrated
        if calibrated is None or calibrated is self._overconfidence_published_for:
            return
        self._overconfidence_published_for = calibrated
        msg = overconfidence_to_msg(calibrated, self.config.loop.vec3_components)
        self._overconfidence_publisher.publish(msg)
        if self.telemetry is not None and self._overconfidence_channel is not None:
            self.telemetry.record_serialized(
                self._overconfidence_channel, self._clock_ns(), serialize_message(msg))

    def close(self) -> None:
        """Finish the telemetry bag, if recording (idempotent; main() calls it on shutdown)."""
        telemetry = getattr(self, 'telemetry', None)
        if telemetry is not None and not telemetry.closed:
            telemetry.close()
            self.get_logger().info(
                f'telemetry: {telemetry.recorded} messages recorded in {telemetry.path}, '
                f'{telemetry.not_recorded} not recorded'
                + ('' if telemetry.error is None else
                   ' (recording stopped by the error above; the bag is unfinished: no '
                   'metadata.yaml, its complete MCAP chunks are readable)'))

    def destroy_node(self) -> None:
        """Finish the telemetry bag, then destroy the node."""
        self.close()
        return super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """Run the feedback node until SIGINT or SIGTERM (exit codes: :func:`.node_main.run_node`)."""
    from .node_main import run_node

    return run_node(
        FeedbackNode, NODE_NAME, args=args,
        make_executor=lambda node: make_executor(node.get_parameter('executor').value),
        on_error=lambda node, error: node.health.callback_error(error))


if __name__ == '__main__':
    sys.exit(main())
