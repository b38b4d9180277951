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
time. Nothing is paired with a stale reference. Drops are counted per reason on /diagnostics.

Run it with ``ros2 run project_ghost_feedback outcome_bridge`` or ``outcome_bridge`` (venv).
"""

import collections
import sys

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from rclpy.clock import Clock, ClockType, JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)

from ..bridge.belief_claim import claim_levels, ClaimThresholds
from ..bridge.decorrelation import OutcomePacer
from ..bridge.geometry import AXES, axis_mask, covariance_6x6, FixedTransform, pose_error
from ..bridge.reference_buffer import AFTER_BUFFER, EMPTY, ReferenceBuffer, ReferenceSample
from ..core import BeliefSelfAssessment, NamedLevel, PredictionOutcome
from .conversions import belief_to_msg, outcome_to_msg
from .node_main import run_node

NODE_NAME = 'outcome_bridge'
DIAGNOSTIC_TASK = 'outcome_bridge'
ESTIMATE_TYPES = {'odometry': Odometry, 'pose_with_covariance': PoseWithCovarianceStamped}
REFERENCE_TYPES = {
    'odometry': Odometry, 'pose': PoseStamped, 'pose_with_covariance': PoseWithCovarianceStamped}
NS_PER_S = 1_000_000_000

# Drop reasons (keys of ``dropped`` and of the /diagnostics values ``dropped[<reason>]``).
DROP_INVALID_ESTIMATE = 'invalid_estimate'
DROP_INVALID_REFERENCE = 'invalid_reference'
DROP_NOT_NEWER = 'estimate_not_newer'
DROP_FRAME_MISMATCH = 'frame_mismatch'
DROP_BEFORE_BUFFER = 'before_reference_buffer'
DROP_NO_REFERENCE_AFTER = 'no_reference_after'
DROP_GAP = 'reference_gap'
DROP_PENDING_OVERFLOW = 'pending_overflow'
DROP_INVALID_OUTCOME = 'invalid_outcome'
DROP_CLOCK_JUMP = 'clock_jump'
_LOOKUP_DROPS = {'before_buffer': DROP_BEFORE_BUFFER, 'gap': DROP_GAP}

_F = ParameterType.PARAMETER_DOUBLE
_I = ParameterType.PARAMETER_INTEGER
_B = ParameterType.PARAMETER_BOOL
_S = ParameterType.PARAMETER_STRING
_SA = ParameterType.PARAMETER_STRING_ARRAY
_FA = ParameterType.PARAMETER_DOUBLE_ARRAY
_MAX_INT = 2**31 - 1

# name -> (default, type, range or None, read_only, description)
PARAMETERS = {
    'estimate_type': ('odometry', _S, None, True,
                      f'Estimate message type: one of {sorted(ESTIMATE_TYPES)} (read-only).'),
    'reference_type': ('odometry', _S, None, True,
                       f'Reference message type: one of {sorted(REFERENCE_TYPES)} (read-only).'),
    'input_qos_depth': (
        1000, _I, (1, _MAX_INT), True,
        'keep_last depth of the reliable input subscriptions, deep enough for a fast replay '
        '(read-only).'),
    'output_qos_depth': (1000, _I, (1, _MAX_INT), True,
                         'keep_last depth of the reliable output publishers (read-only).'),
    'reference_buffer_size': (
        1000, _I, (2, 1_000_000), True,
        'Reference samples kept for interpolation (read-only; at 100 Hz, 1000 is 10 s).'),
    'pending_capacity': (
        1000, _I, (1, 1_000_000), True,
        'Estimates waiting for a reference after their stamp, at most (read-only).'),
    'max_reference_gap_s': (
        0.5, _F, (1e-6, 3600.0), False,
        'Estimates between two references further apart than this are dropped (gap).'),
    'max_estimate_wait_s': (
        5.0, _F, (0.0, 3600.0), False,
        'An estimate newer than every reference is dropped once estimates this much newer '
        'arrived with no newer reference in between (estimate time).'),
    'use_reference_covariance': (
        True, _B, None, False, 'Add the reference covariance (if its type has one).'),
    'ignored_axes': (
        [''], _SA, None, False,
        f'Axes left out of distances and claims, from {list(AXES)} (e.g. z, roll, pitch for a '
        'planar estimator; [""] or [] for none).'),
    'null_tolerance': (
        1e-9, _F, (0.0, 1.0), False,
        'An error component along a zero-variance direction above this gives distance +inf.'),
    'position_known_max_std_m': (0.2, _F, (1e-9, 1e6), False,
                                 'Position std at or below this: KNOWN.'),
    'position_uncertain_max_std_m': (1.0, _F, (1e-9, 1e6), False,
                                     'Position std at or below this: UNCERTAIN (else UNKNOWN).'),
    'orientation_known_max_std_rad': (0.05, _F, (1e-9, 10.0), False,
                                      'Orientation std at or below this: KNOWN.'),
    'orientation_uncertain_max_std_rad': (
        0.2, _F, (1e-9, 10.0), False, 'Orientation std at or below this: UNCERTAIN.'),
    'decorrelation.adaptive': (
        True, _B, None, False,
        'Space outcomes by the online decorrelation time of d^2 (see docs/bridge.md).'),
    'decorrelation.min_interval_s': (
        0.0, _F, (0.0, 3600.0), False, 'Minimum estimate time between two emitted outcomes.'),
    'decorrelation.max_interval_s': (
        10.0, _F, (0.0, 3600.0), False, 'Upper bound of the adaptive interval.'),
    'decorrelation.target_autocorrelation': (
        0.1, _F, (1e-6, 0.999), False,
        'Adaptive: emitted outcomes are spaced so their d^2 autocorrelation is about this.'),
    'decorrelation.alpha': (
        0.01, _F, (1e-6, 1.0), False,
        'Forgetting factor of the autocorrelation estimate (horizon ~ 1/alpha samples).'),
    'transform.enabled': (
        False, _B, None, False,
        'Map references in transform.from_frame_id into transform.to_frame_id first.'),
    'transform.from_frame_id': ('', _S, None, False, 'Reference frame of the fixed transform.'),
    'transform.to_frame_id': ('', _S, None, False, 'Estimate frame of the fixed transform.'),
    'transform.translation_m': (
        [0.0, 0.0, 0.0], _FA, None, False, 'p_to = R p_from + t: t, metres.'),
    'transform.rotation_xyzw': (
        [0.0, 0.0, 0.0, 1.0], _FA, None, False, 'p_to = R p_from + t: R as quaternion x y z w.'),
    'diagnostics_period_s': (1.0, _F, (1e-3, 3600.0), False,
                             'Period of /diagnostics, steady-clock seconds.'),
}
_READ_ONLY = frozenset(name for name, spec in PARAMETERS.items() if spec[3])


def _descriptor(name):
    default, kind, bounds, read_only, description = PARAMETERS[name]
    descriptor = ParameterDescriptor(
        name=name, type=kind, description=description, read_only=read_only)
    if bounds is not None and kind == _I:
        descriptor.integer_range = [IntegerRange(from_value=bounds[0], to_value=bounds[1],
                                                 step=1)]
    elif bounds is not None:
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=bounds[0], to_value=bounds[1], step=0.0)]
    return descriptor


def stamp_ns(stamp):
    """Return a builtin_interfaces/Time as integer nanoseconds (sec * 1e9 + nanosec)."""
    return stamp.sec * NS_PER_S + stamp.nanosec


def _pose_parts(pose):
    p, q = pose.position, pose.orientation
    return (p.x, p.y, p.z), (q.x, q.y, q.z, q.w)


def _pose_with_covariance(msg):
    """Return (pose, covariance or None) of an Odometry, PoseWithCovarianceStamped, PoseStamped."""
    if isinstance(msg, PoseStamped):
        return msg.pose, None
    return msg.pose.pose, msg.pose.covariance


def config_from(values):
    """Return a validated config dict from parameter values, or a reason string."""
    if values['estimate_type'] not in ESTIMATE_TYPES:
        return (f'estimate_type {values["estimate_type"]!r} is not one of '
                f'{sorted(ESTIMATE_TYPES)}')
    if values['reference_type'] not in REFERENCE_TYPES:
        return (f'reference_type {values["reference_type"]!r} is not one of '
                f'{sorted(REFERENCE_TYPES)}')
    ignored = tuple(axis for axis in values['ignored_axes'] if axis)
    try:
        axis_mask(ignored)
        thresholds = ClaimThresholds(
            values['position_known_max_std_m'], values['position_uncertain_max_std_m'],
            values['orientation_known_max_std_rad'], values['orientation_uncertain_max_std_rad'])
        pacer = OutcomePacer(
            min_interval_ns=int(values['decorrelation.min_interval_s'] * NS_PER_S),
            max_interval_ns=int(values['decorrelation.max_interval_s'] * NS_PER_S),
            adaptive=values['decorrelation.adaptive'],
            target_autocorrelation=values['decorrelation.target_autocorrelation'],
            alpha=values['decorrelation.alpha'])
        transform = None
        if values['transform.enabled']:
            if not values['transform.from_frame_id'] or not values['transform.to_frame_id']:
                return 'transform.from_frame_id and transform.to_frame_id must be set'
            if len(values['transform.translation_m']) != 3:
                return 'transform.translation_m must have 3 values'
            if len(values['transform.rotation_xyzw']) != 4:
                return 'transform.rotation_xyzw must have 4 values'
            transform = FixedTransform(
                values['transform.translation_m'], values['transform.rotation_xyzw'])
    except ValueError as error:
        return str(error)
    return {
        'ignored_axes': ignored, 'thresholds': thresholds, 'pacer': pacer,
        'transform': transform,
        'from_frame_id': values['transform.from_frame_id'],
        'to_frame_id': values['transform.to_frame_id'],
        'max_reference_gap_ns': int(values['max_reference_gap_s'] * NS_PER_S),
        'max_estimate_wait_ns': int(values['max_estimate_wait_s'] * NS_PER_S),
        'use_reference_covariance': values['use_reference_covariance'],
        'null_tolerance': values['null_tolerance'],
        'diagnostics_period_s': values['diagnostics_period_s'],
    }


class _Estimate:
    __slots__ = ('stamp_ns', 'frame_id', 'position', 'quaternion', 'covariance')

    def __init__(self, stamp_ns, frame_id, position, quaternion, covariance):
        self.stamp_ns = stamp_ns
        self.frame_id = frame_id
        self.position = position
        self.quaternion = quaternion
        self.covariance = covariance


class OutcomeBridge(Node):
    """Turn (estimate with covariance, reference) into PredictionOutcome + BeliefSelfAssessment."""

    def __init__(self, node_name=NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        try:
            for name, spec in PARAMETERS.items():
                self.declare_parameter(name, spec[0], _descriptor(name))
        except ParameterException as error:
            self.destroy_node()
            raise ValueError(f'invalid parameters: {error}') from None
        config = config_from(self._values())
        if isinstance(config, str):
            self.destroy_node()
            raise ValueError(f'invalid parameters: {config}')
        self._config = None
        self._pacer = None
        self._buffer = ReferenceBuffer(
            self._param('reference_buffer_size'), config['max_reference_gap_ns'])
        self._apply_config(config)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._on_parameters_set)

        self.received = collections.Counter()
        self.dropped = collections.Counter()
        self.paired = 0
        self.paced_out = 0
        self.outcomes_published = 0
        self.assessments_published = 0
        self.last_drop_reason = ''
        self._logged_once = set()
        self._pending = collections.deque()
        self._pending_capacity = self._param('pending_capacity')
        self._last_estimate_ns = None
        # Stamp of the first estimate that arrived after the newest reference sample was added
        # (None: a newer reference came after the last estimate). Waits count from it (see
        # _resolve_pending).
        self._no_reference_since_ns = None
        self._reference_frame_id = None

        input_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST,
                               depth=self._param('input_qos_depth'),
                               reliability=ReliabilityPolicy.RELIABLE)
        output_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST,
                                depth=self._param('output_qos_depth'),
                                reliability=ReliabilityPolicy.RELIABLE)
        self._outcome_publisher = self.create_publisher(
            PredictionOutcomeMsg, 'prediction_outcome', output_qos)
        self._assessment_publisher = self.create_publisher(
            BeliefSelfAssessmentMsg, 'self_assessment/raw', output_qos)
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._reference_subscription = self.create_subscription(
            REFERENCE_TYPES[self._param('reference_type')], 'reference', self._on_reference,
            input_qos)
        self._estimate_subscription = self.create_subscription(
            ESTIMATE_TYPES[self._param('estimate_type')], 'estimate', self._on_estimate,
            input_qos)
        self.clock_resets = 0
        # A backward jump of the node clock (a simulator reset, a bag replayed again) restarts
        # the stamps: forget everything time-ordered, or every new estimate is "not newer".
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=False),
            post_callback=self._on_clock_jump)
        self._steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        self._diagnostics_timer = self.create_timer(
            self._config['diagnostics_period_s'], self.publish_diagnostics,
            clock=self._steady_clock)
        self.get_logger().info(
            f'outcome bridge ready: {self._estimate_subscription.topic_name} '
            f'({self._param("estimate_type")}) + {self._reference_subscription.topic_name} '
            f'({self._param("reference_type")}) -> {self._outcome_publisher.topic_name} + '
            f'{self._assessment_publisher.topic_name}')

    # -- parameters ---------------------------------------------------------------------------

    def _param(self, name):
        return self.get_parameter(name).value

    def _values(self):
        return {name: self.get_parameter(name).value for name in PARAMETERS}

    def _apply_config(self, config):
        previous = self._config
        self._config = config
        if previous is None or self._pacer_settings(previous) != self._pacer_settings(config):
            self._pacer = config['pacer']
        self._buffer.max_gap_ns = config['max_reference_gap_ns']
        if previous is not None and (
                previous['diagnostics_period_s'] != config['diagnostics_period_s']):
            self.destroy_timer(self._diagnostics_timer)
            self._diagnostics_timer = self.create_timer(
                config['diagnostics_period_s'], self.publish_diagnostics,
                clock=self._steady_clock)

    @staticmethod
    def _pacer_settings(config):
        pacer = config['pacer']
        return (pacer.min_interval_ns, pacer.max_interval_ns, pacer.adaptive,
                pacer.target_autocorrelation, pacer.alpha)

    def _on_set_parameters(self, parameters):
        """Validate a change as a whole (read-only refused); applied after it is set."""
        values = self._values()
        for parameter in parameters:
            if parameter.name in _READ_ONLY:
                return SetParametersResult(
                    successful=False, reason=f'{parameter.name} is read-only (set it at start)')
            values[parameter.name] = parameter.value
        config = config_from(values)
        if isinstance(config, str):
            self.get_logger().warning(f'parameter change rejected: {config}')
            return SetParametersResult(successful=False, reason=config)
        return SetParametersResult(successful=True)

    def _on_parameters_set(self, parameters):
        config = config_from(self._values())
        if not isinstance(config, str):  # validated by _on_set_parameters already
            self._apply_config(config)
        self.get_logger().info(
            'parameters changed: ' + ', '.join(f'{p.name}={p.value!r}' for p in parameters))

    def _on_clock_jump(self, jump):
        """Reset the reference buffer, waiting estimates and the pacer on a backward jump."""
        for estimate in self._pending:
            self._drop(DROP_CLOCK_JUMP, f'pending at the jump ({estimate.stamp_ns} ns)')
        self._pending.clear()
        self._buffer.clear()
        self._pacer.reset()
        self._last_estimate_ns = None
        self._no_reference_since_ns = None
        self._reference_frame_id = None
        self.clock_resets += 1
        self.get_logger().warning(
            f'clock jumped back by {-jump.delta.nanoseconds / NS_PER_S:.3f} s: reference buffer, '
            'waiting estimates and decorrelation state reset')

    # -- data path ----------------------------------------------------------------------------

    def _drop(self, reason, detail=''):
        self.dropped[reason] += 1
        self.last_drop_reason = f'{reason}: {detail}' if detail else reason
        if reason not in self._logged_once:
            self._logged_once.add(reason)
            self.get_logger().warning(
                f'dropped an estimate ({reason}{": " + detail if detail else ""}); further '
                f'drops of this kind are only counted (/diagnostics)')

    def _on_reference(self, msg):
        self.received['reference'] += 1
        pose, covariance = _pose_with_covariance(msg)
        frame_id = msg.header.frame_id
        try:
            position, quaternion = _pose_parts(pose)
            if covariance is not None and self._config['use_reference_covariance']:
                covariance = covariance_6x6(covariance)
            else:
                covariance = None
            transform = self._config['transform']
            if transform is not None and frame_id == self._config['from_frame_id']:
                position, quaternion, covariance = transform.apply(
                    position, quaternion, covariance)
                frame_id = self._config['to_frame_id']
            sample = ReferenceSample(stamp_ns(msg.header.stamp), position, quaternion,
                                     covariance)
        except ValueError as error:
            self.dropped[DROP_INVALID_REFERENCE] += 1
            self.last_drop_reason = f'{DROP_INVALID_REFERENCE}: {error}'
            return
        if self._reference_frame_id != frame_id:
            if self._reference_frame_id is not None:
                self._buffer.clear()  # never interpolate across frames
            self._reference_frame_id = frame_id
        newest = self._buffer.newest_stamp_ns
        if self._buffer.add(sample) and (newest is None or sample.stamp_ns > newest):
            self._no_reference_since_ns = None  # references are moving: estimates may wait
        self._resolve_pending()

    def _on_estimate(self, msg):
        self.received['estimate'] += 1
        pose, covariance = _pose_with_covariance(msg)
        try:
            position, quaternion = _pose_parts(pose)
            estimate = _Estimate(stamp_ns(msg.header.stamp), msg.header.frame_id, position,
                                 quaternion, covariance_6x6(covariance))
        except ValueError as error:
            self._drop(DROP_INVALID_ESTIMATE, str(error))
            return
        if self._last_estimate_ns is not None and estimate.stamp_ns <= self._last_estimate_ns:
            self._drop(DROP_NOT_NEWER, f'{estimate.stamp_ns} <= {self._last_estimate_ns} ns')
            return
        self._last_estimate_ns = estimate.stamp_ns
        if self._no_reference_since_ns is None:
            self._no_reference_since_ns = estimate.stamp_ns
        if len(self._pending) >= self._pending_capacity:
            self._finish(self._pending.popleft(), None, DROP_PENDING_OVERFLOW)
        self._pending.append(estimate)
        self._resolve_pending()

    def _resolve_pending(self):
        """Pair (or drop) waiting estimates, oldest first, as far as the references allow."""
        while self._pending:
            estimate = self._pending[0]
            if (self._reference_frame_id is not None
                    and estimate.frame_id != self._reference_frame_id):
                self._finish(self._pending.popleft(), None, DROP_FRAME_MISMATCH,
                             f'estimate in {estimate.frame_id!r}, reference in '
                             f'{self._reference_frame_id!r} (set transform.* to relate them)')
                continue
            looked_up = self._buffer.lookup(estimate.stamp_ns)
            if looked_up in (AFTER_BUFFER, EMPTY):
                # The wait counts only the estimate time during which no reference arrived. The
                # executor takes one message per ready subscription per turn, so behind a
                # backlog estimates run ahead of references already queued (at 50 Hz references
                # and 10 Hz estimates, 4 s of estimate time per 10 estimates): counting all of
                # it would drop estimates whose references are in fact there. While references
                # come, pending_capacity bounds the wait.
                if self._no_reference_since_ns is None:
                    return
                waited = self._last_estimate_ns - max(estimate.stamp_ns,
                                                      self._no_reference_since_ns)
                if waited < self._config['max_estimate_wait_ns']:
                    return  # a newer reference may still come
                self._finish(self._pending.popleft(), None, DROP_NO_REFERENCE_AFTER)
                continue
            self._pending.popleft()
            if isinstance(looked_up, str):
                self._finish(estimate, None, _LOOKUP_DROPS[looked_up])
            else:
                self._finish(estimate, looked_up, None)

    def _finish(self, estimate, reference, drop_reason, detail=''):
        """Publish the outcome (if paired and paced in), then the assessment of ``estimate``."""
        if drop_reason is not None:
            self._drop(drop_reason, detail)
        else:
            self._publish_outcome(estimate, reference)
        self._publish_assessment(estimate)

    def _publish_outcome(self, estimate, reference):
        config = self._config
        error = pose_error(
            estimate.position, estimate.quaternion, estimate.covariance,
            reference.position, reference.quaternion, reference.covariance,
            ignored_axes=config['ignored_axes'], null_tolerance=config['null_tolerance'])
        self.paired += 1
        if not self._pacer.offer(estimate.stamp_ns, error.position_mahalanobis,
                                 error.orientation_mahalanobis):
            self.paced_out += 1
            return
        try:
            outcome = PredictionOutcome(
                prediction_stamp_sim_ns=estimate.stamp_ns,
                observed_stamp_sim_ns=estimate.stamp_ns,
                position_error_m=error.position_error_m,
                orientation_error_rad=error.orientation_error_rad,
                position_mahalanobis=error.position_mahalanobis,
                orientation_mahalanobis=error.orientation_mahalanobis,
                frame_id=estimate.frame_id)
        except (TypeError, ValueError) as invalid:
            self._drop(DROP_INVALID_OUTCOME, str(invalid))
            return
        self._outcome_publisher.publish(outcome_to_msg(outcome))
        self.outcomes_published += 1

    def _publish_assessment(self, estimate):
        overall, axes, blocks = claim_levels(
            estimate.covariance, self._config['thresholds'], self._config['ignored_axes'])
        try:
            belief = BeliefSelfAssessment(
                belief_stamp_sim_ns=estimate.stamp_ns, overall_level=overall,
                axis_levels=tuple(NamedLevel(name, level) for name, level in axes.items()),
                block_levels=tuple(NamedLevel(name, level) for name, level in blocks.items()),
                frame_id=estimate.frame_id)
        except (TypeError, ValueError) as invalid:
            self.dropped['invalid_assessment'] += 1
            self.last_drop_reason = f'invalid_assessment: {invalid}'
            return
        self._assessment_publisher.publish(belief_to_msg(belief))
        self.assessments_published += 1

    # -- diagnostics --------------------------------------------------------------------------

    def diagnostic_status(self):
        """Return the bridge's DiagnosticStatus (ERROR on frame mismatch, WARN on other drops)."""
        if self.dropped[DROP_FRAME_MISMATCH] and not self.paired:
            level, message = DiagnosticStatus.ERROR, 'estimate and reference frames differ'
        elif self.received['estimate'] and not self.paired:
            level, message = DiagnosticStatus.WARN, 'no estimate paired with a reference yet'
        elif sum(self.dropped.values()):
            level, message = DiagnosticStatus.WARN, f'estimates dropped: {self.last_drop_reason}'
        else:
            level, message = DiagnosticStatus.OK, 'pairing estimates with references'
        values = {
            'estimates_received': self.received['estimate'],
            'references_received': self.received['reference'],
            'paired': self.paired,
            'outcomes_published': self.outcomes_published,
            'outcomes_paced_out': self.paced_out,
            'assessments_published': self.assessments_published,
            'dropped_total': sum(self.dropped.values()),
            'pending': len(self._pending),
            'clock_resets': self.clock_resets,
            'reference_buffer_fill': f'{len(self._buffer)}/{self._buffer.capacity}',
            'reference_frame_id': self._reference_frame_id or '',
            'decorrelation_interval_s': f'{self._pacer.interval_ns / NS_PER_S:.3f}',
            'd2_lag1_autocorrelation': f'{self._pacer.autocorrelation:.3f}',
            'last_drop_reason': self.last_drop_reason,
        }
        for reason, count in sorted(self.dropped.items()):
            values[f'dropped[{reason}]'] = count
        name = self.get_fully_qualified_name()
        return DiagnosticStatus(
            level=level, name=f'{name}: {DIAGNOSTIC_TASK}', message=message, hardware_id=name,
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])

    def publish_diagnostics(self):
        """Publish one DiagnosticArray on /diagnostics."""
        array = DiagnosticArray(status=[self.diagnostic_status()])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics_publisher.publish(array)


def main(args=None):
    """Run the bridge until SIGINT or SIGTERM: exit 0; invalid start-up configuration: exit 2."""
    return run_node(OutcomeBridge, NODE_NAME, args=args)


if __name__ == '__main__':
    sys.exit(main())
