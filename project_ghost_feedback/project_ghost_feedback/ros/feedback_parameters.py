# SPDX-License-Identifier: Apache-2.0
"""The feedback node's parameters: specs, ParameterDescriptors, and validation of a whole set.

Every parameter is declared with a descriptor that states its meaning and the rules it is checked
against (ranges advertised through ``integer_range`` / ``floating_point_range``, choices through
``additional_constraints``). :func:`validate` checks a complete set of values (node and policy
parameters) and returns a :class:`FeedbackConfig`, or raises
:class:`~..parameter_spec.ParameterError` with a one-line reason; it builds the selected
policy and every other registered policy, so a bad value is refused when it is set, and any
exception a policy raises while it is built is a refusal, never a crash.
Topic names are not parameters: remap ``prediction_outcome``, ``self_assessment/raw`` and
``self_assessment/calibrated``.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..core import NS_PER_S
from ..core.feedback import (
    DEFAULT_MAX_HISTORY,
    DEFAULT_POLICY,
    make_policy,
    policy_names,
    policy_parameter_ranges,
    policy_parameters,
)
from ..core.feedback.parameter_docs import parameter_doc
from ..core.loop import (
    DEFAULT_UNVERIFIED_AFTER_NS,
    DEFAULT_UNVERIFIED_MAX_LEVEL,
    LoopConfig,
    MAX_HISTORY_RANGE,
    OUTCOME_BUFFER_SIZE_RANGE,
    TIME_JUMP_TOLERANCE_S_RANGE,
    UNVERIFIED_AFTER_S_RANGE,
    UNVERIFIED_LEVELS,
)
from ..core.window import DEFAULT_OUTCOME_BUFFER_SIZE
from ..parameter_spec import check_ranges, EXECUTORS, ParameterError, ParameterSpec
from .node_kit import descriptor  # noqa: F401 - re-exported

DEFAULT_EXECUTOR = 'single_threaded'


NODE_PARAMETERS = {
    'executor': ParameterSpec(
        DEFAULT_EXECUTOR, "Executor used by main() (read-only): single_threaded is rclpy's "
        'stable SingleThreadedExecutor; events is rclpy.experimental.EventsExecutor (faster, '
        'experimental on Jazzy; it cannot pass message info to callbacks, so no messages_missed '
        'counting).', read_only=True, choices=EXECUTORS),
    'output_qos_depth': ParameterSpec(
        10, 'keep_last depth of the reliable calibrated output (read-only).', read_only=True,
        integer_range=(1, 100_000)),
    'input_qos_depth': ParameterSpec(
        1000, 'keep_last depth of the reliable input subscriptions, deep enough for a fast replay '
        '(read-only).', read_only=True, integer_range=(1, 100_000)),
    'telemetry_bag': ParameterSpec(
        '', 'Record accepted inputs and calibrated outputs into this new rosbag2 MCAP bag '
        'directory, which must not exist (empty: off; read-only; docs/telemetry.md).',
        read_only=True),
    'telemetry_dir': ParameterSpec(
        '', 'Record into a new timestamped bag directory ghost_feedback_YYYY_MM_DD-HH_MM_SS under '
        'this folder (created if missing), as rosbag2 names bags: a respawned node starts a new '
        'bag (empty: off; read-only; exclusive with telemetry_bag).', read_only=True),
    'telemetry_queue_size': ParameterSpec(
        10_000, 'Records waiting for the telemetry writer thread; when full (a slow disk) new '
        'records are counted as not recorded, the data path never waits (read-only).',
        read_only=True, integer_range=(1, 10_000_000)),
    'telemetry_queue_bytes': ParameterSpec(
        64 << 20, 'Byte budget of the records waiting for the telemetry writer thread (a '
        'record_topics message counts its size); beyond it new records are counted as not '
        'recorded (over_byte_budget), WARN on /diagnostics (read-only).',
        read_only=True, integer_range=(1 << 20, 1 << 34)),
    'record_diagnostics': ParameterSpec(
        True, 'When recording, also record /diagnostics (every publisher, as received, log time '
        "the node clock), so Foxglove's Diagnostics panel shows the run, and the node's "
        'self_assessment/overconfidence, for plots (read-only).',
        read_only=True),
    'record_topics': ParameterSpec(
        [''], "When recording, also record these topics, each '/topic:pkg/msg/Type' (e.g. the "
        "bridge's inputs '/odometry/filtered:nav_msgs/msg/Odometry', for Foxglove or "
        'ghost-feedback evaluate): as received, best effort, log time the node clock '
        '([""] or [] for none; read-only).', read_only=True),
    'policy': ParameterSpec(
        DEFAULT_POLICY, 'Adjustment policy (docs/policies.md; default vec3_scale, graded per '
        'vec3 with hysteresis). mahalanobis_downgrade is the ADR-0026 reference (no stated '
        'false-alarm rate).', choices=tuple(policy_names())),
    'max_history': ParameterSpec(
        DEFAULT_MAX_HISTORY, 'Outcomes per calibration window (ADR-0026 max_history). The buffer '
        'holds at least this many, whatever outcome_buffer_size says. bucket_likelihood_ratio '
        'judges windows of at most 512.',
        integer_range=MAX_HISTORY_RANGE),
    'outcome_buffer_size': ParameterSpec(
        DEFAULT_OUTCOME_BUFFER_SIZE, 'Outcomes kept in observed-stamp order, waiting for the '
        'assessments they belong to; the buffer holds max(outcome_buffer_size, max_history).',
        integer_range=OUTCOME_BUFFER_SIZE_RANGE),
    'assessment_hold_s': ParameterSpec(
        0.0, 'Hold each assessment this long (steady time) before judging it, so outcomes sent '
        'just before it but delivered after it (a burst, a fast replay: the two topics race in '
        'the executor) still count. 0: judge at once; late ones are counted as late_outcomes.',
        float_range=(0.0, 10.0)),
    'time_jump_tolerance_s': ParameterSpec(
        5.0, 'Input stamps that go back by more than this (a restarted estimator, a bag played in '
        'a loop), or lie further than this ahead of the node clock, reset the window (back) or '
        'are rejected (ahead). Seconds.', float_range=TIME_JUMP_TOLERANCE_S_RANGE),
    'unverified_after_s': ParameterSpec(
        DEFAULT_UNVERIFIED_AFTER_NS / NS_PER_S, 'When assessments keep coming but no outcome '
        'arrived for this long (belief stamps after the newest outcome, or after the first '
        'assessment when none came since the start or a reset), the calibrated assessment says '
        'so (reason unverified_no_outcomes / unverified_no_recent_outcomes) at most at '
        "unverified_max_level. Default 20 s: twice the bridge's longest outcome spacing "
        '(decorrelation.max_interval_s 10 s), longer than its warm-up at 2.5 Hz or more. '
        '0: off. Seconds.', float_range=UNVERIFIED_AFTER_S_RANGE),
    'unverified_max_level': ParameterSpec(
        DEFAULT_UNVERIFIED_MAX_LEVEL, 'The most confident level of an unverified assessment '
        '(unverified_after_s): UNCERTAIN (default: nothing vouches for the claim), UNKNOWN, or '
        'KNOWN (the level is left to the policy; only the reason says unverified).',
        choices=UNVERIFIED_LEVELS),
    'position_components': ParameterSpec(
        3, 'Error components the outcome source keeps in the position vec3: 3, or 2 for a '
        "planar estimator (the bridge's ignored_axes z), 1 for one axis. The source maps its "
        'distances onto chi(3), so the levels do not depend on it; the k estimates '
        '(/self_assessment/overconfidence, /diagnostics, episodes) map them back and are '
        'unbiased only when it matches.', integer_range=(1, 3)),
    'orientation_components': ParameterSpec(
        3, "Likewise for the orientation vec3: 1 for a planar estimator's yaw (ignored_axes "
        'roll, pitch).', integer_range=(1, 3)),
    'diagnostics_period_s': ParameterSpec(
        1.0, 'Period of /diagnostics, seconds of steady time (keeps flowing when sim time '
        'stalls).', float_range=(0.01, 3600.0)),
    'stale_after_s': ParameterSpec(
        5.0, 'The status is STALE when no outcome arrived for this long (steady time).',
        float_range=(0.01, 86_400.0)),
    'reject_log_throttle_s': ParameterSpec(
        1.0, 'Minimum seconds between two logs of rejected messages.',
        float_range=(0.0, 3600.0)),
}


def policy_parameter_specs() -> dict[str, tuple[str, str, ParameterSpec]]:
    """Return ``{'<policy>.<field>': (policy, field, ParameterSpec)}`` for every policy."""
    specs = {}
    for policy in policy_names():
        advertised = policy_parameter_ranges(policy)
        for field, default in policy_parameters(policy).items():
            bounds, meaning = advertised.get(field, parameter_doc(field)[::-1])
            spec = ParameterSpec(default, f'{policy}: {meaning}')
            if bounds is not None and isinstance(default, int):
                spec = ParameterSpec(default, spec.description,
                                     integer_range=cast(tuple[int, int], bounds))
            elif bounds is not None:
                spec = ParameterSpec(default, spec.description, float_range=bounds)
            specs[f'{policy}.{field}'] = (policy, field, spec)
    return specs


@dataclass(frozen=True)
class FeedbackConfig:
    """A validated parameter set, as the node applies it."""

    loop: LoopConfig
    assessment_hold_ns: int
    diagnostics_period_s: float
    stale_after_s: float
    reject_log_throttle_s: float


def _check_record_topics(values: Mapping[str, Any]) -> None:
    """Raise ParameterError when ``record_topics`` is refused (imports telemetry if needed)."""
    entries = [entry for entry in values['record_topics'] if entry]
    if not entries:
        return
    if not (values['telemetry_bag'] or values['telemetry_dir']):
        raise ParameterError(
            'record_topics records into the telemetry bag: set telemetry_bag or telemetry_dir')
    try:
        from ..telemetry.channels import recorded_topic
    except ImportError as error:
        raise ParameterError(f'record_topics needs the telemetry libraries ({error})') from None
    try:
        channels = [recorded_topic(entry) for entry in entries]
    except ValueError as error:
        raise ParameterError(str(error)) from None
    if len({channel.topic for channel in channels}) != len(channels):
        raise ParameterError('record_topics names a topic twice')


def validate(values: Mapping[str, Any],
             policy_specs: Mapping[str, tuple[str, str, ParameterSpec]]) -> FeedbackConfig:
    """Return a FeedbackConfig for a complete set of parameter values (else ParameterError)."""
    policy_name = values['policy']
    if policy_name not in policy_names():
        raise ParameterError(f'policy {policy_name!r} is not registered (choose from '
                             f'{", ".join(policy_names())})')
    selected_fields = {}
    for name in policy_names():
        fields = {
            field: values[parameter]
            for parameter, (policy, field, _) in policy_specs.items() if policy == name
        }
        try:
            make_policy(name, fields)
        except Exception as error:  # noqa: BLE001 - any failure to build is a refusal
            raise ParameterError(f'parameters of policy {name!r}: {error}') from None
        if name == policy_name:
            selected_fields = fields
    if values['executor'] not in EXECUTORS:
        raise ParameterError(
            f'executor {values["executor"]!r} is not one of {", ".join(EXECUTORS)}')
    if values['telemetry_bag'] and values['telemetry_dir']:
        raise ParameterError('set telemetry_bag or telemetry_dir, not both')
    _check_record_topics(values)
    check_ranges(NODE_PARAMETERS, values)
    try:
        loop = LoopConfig.make(
            policy_name, dict(selected_fields), values['max_history'],
            values['outcome_buffer_size'], int(values['time_jump_tolerance_s'] * NS_PER_S),
            round(values['unverified_after_s'] * NS_PER_S), values['unverified_max_level'],
            (values['position_components'], values['orientation_components']))
    except (TypeError, ValueError) as error:
        raise ParameterError(str(error)) from None
    return FeedbackConfig(
        loop=loop,
        assessment_hold_ns=int(values['assessment_hold_s'] * NS_PER_S),
        diagnostics_period_s=values['diagnostics_period_s'],
        stale_after_s=values['stale_after_s'],
        reject_log_throttle_s=values['reject_log_throttle_s'])
