# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's parameters: the table, and the validation of a whole set of values.

:data:`PARAMETERS` declares every parameter (default, meaning, read-only, range or choices);
:func:`config_from` validates a complete set of values and returns the configuration the pairing
engine and the node run with, or raises :class:`~..parameter_spec.ParameterError`. The bridge
node declares and watches them (``ros/outcome_bridge_node.py``, through ``node_kit.ParameterSet``);
``ghost-feedback evaluate`` and ``audit`` read a bridge parameter file against the same table and
rules (``bridge_inputs.bridge_parameters``), without ROS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import NS_PER_S
from ..core import serial_whitening as whitening_rules
from ..parameter_spec import cap_text, check_ranges, EXECUTORS, ParameterError, ParameterSpec
from .belief_claim import ClaimThresholds
from .calibrated_estimate import CONFIDENCE_RANGE, DEFAULT_CONFIDENCE
from .decorrelation import (
    DEFAULT_TARGET_AUTOCORRELATION,
    DEFAULT_WARMUP_SAMPLES,
    MAX_WARMUP_SAMPLES,
    METHODS,
    MIN_WARMUP_SAMPLES,
    OutcomePacer,
    WHITEN,
)
from .geometry import AXES, axis_mask, FixedTransform, quaternion_refusal
from .whitening import OutcomeWhitening
from .tf_gate import (
    DEFAULT_MAX_FRAMES,
    DEFAULT_MAX_TRANSFORMS_PER_FRAME,
    frame_prefix_refusal,
    MAX_FRAME_NAME,
)

MAX_CHILD_FRAME_MAP_ENTRIES = 64
"""Most ``child_frame_map`` entries (each names one body twice; a robot has few)."""
MAX_CHILD_FRAME_MAP_ENTRY = 2 * MAX_FRAME_NAME + 1
"""Longest ``child_frame_map`` entry: two frame names and the colon."""

ESTIMATE_TYPE_CHOICES = {
    'odometry': 'nav_msgs/msg/Odometry',
    'pose_with_covariance': 'geometry_msgs/msg/PoseWithCovarianceStamped',
}
"""``estimate_type`` choice -> the ROS message type it subscribes (with a covariance)."""
REFERENCE_TYPE_CHOICES = {
    'odometry': 'nav_msgs/msg/Odometry',
    'pose': 'geometry_msgs/msg/PoseStamped',
    'pose_with_covariance': 'geometry_msgs/msg/PoseWithCovarianceStamped',
}
"""``reference_type`` choice -> the ROS message type it subscribes."""

PARAMETERS = {
    'estimate_type': ParameterSpec(
        'odometry', 'Estimate message type (read-only).', read_only=True,
        choices=tuple(sorted(ESTIMATE_TYPE_CHOICES))),
    'reference_type': ParameterSpec(
        'odometry', 'Reference message type (read-only).', read_only=True,
        choices=tuple(sorted(REFERENCE_TYPE_CHOICES))),
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
    'decorrelation.method': ParameterSpec(
        WHITEN, 'How outcomes are made independent for the policies: whiten (default: every '
        'outcome kept, each vec3 prewhitened by an online AR model of its serial correlation, '
        'whitening.*), pace (thin them by the decorrelation.* pacer) or none (as paired; for '
        'references already independent of the estimate). See docs/bridge.md.',
        choices=METHODS),
    'whitening.order': ParameterSpec(
        whitening_rules.DEFAULT_ORDER, 'AR order of the prewhitening (2: a filter whose error has '
        'two time constants; 1; 0: space only).', integer_range=(0, whitening_rules.MAX_ORDER)),
    'whitening.alpha': ParameterSpec(
        whitening_rules.DEFAULT_ALPHA, 'Forgetting factor of the autocorrelation estimates '
        '(horizon ~1/alpha outcomes).', float_range=(1e-6, 1.0)),
    'whitening.guard_alpha': ParameterSpec(
        whitening_rules.DEFAULT_GUARD_ALPHA, 'Forgetting factor of the guard: a fast estimate '
        'beside the slow one; whichever leaves the larger innovation variance whitens, so an '
        'error that becomes less correlated is not over-whitened (read as overconfidence). 0: '
        'off; else above whitening.alpha. See docs/bridge.md.', float_range=(0.0, 1.0)),
    'whitening.warmup_samples': ParameterSpec(
        whitening_rules.DEFAULT_WARMUP_SAMPLES, 'No outcome is emitted until this many consecutive '
        'pairs fed the estimate, after a start, a reset or a change of these parameters.',
        integer_range=(0, 1_000_000)),
    'whitening.max_gap_factor': ParameterSpec(
        whitening_rules.DEFAULT_MAX_GAP_FACTOR, 'A spacing above this many times the usual one '
        '(a dropped reference, a pause) starts a new chain (no lag across it).',
        float_range=(1.01, 1000.0)),
    'decorrelation.adaptive': ParameterSpec(
        True, 'Space outcomes by the online decorrelation time of d^2 (see docs/bridge.md).'),
    'decorrelation.min_interval_s': ParameterSpec(
        0.0, 'Minimum estimate time between two emitted outcomes.', float_range=(0.0, 3600.0)),
    'decorrelation.max_interval_s': ParameterSpec(
        10.0, 'Upper bound of the adaptive interval.', float_range=(0.0, 3600.0)),
    'decorrelation.target_autocorrelation': ParameterSpec(
        DEFAULT_TARGET_AUTOCORRELATION,
        'Pace, adaptive: emitted outcomes are spaced so the lag-1 correlation of their errors is '
        'about this (of d^2: its square).',
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
    'child_frame_map': ParameterSpec(
        [''], "Estimate and reference bodies that are the same robot, each "
        "'estimate_child:reference_child' (e.g. 'base_link:robot1/base_link'). Odometry inputs "
        'whose child_frame_id differ and are not related here are not paired '
        '(child_frame_mismatch); [""] or [] for none.'),
    'frame_prefix': ParameterSpec(
        '', "Prepended to the inputs' frame names (header.frame_id, child_frame_id) that do not "
        "start with it, e.g. 'robot1/' for a robot whose tf frames are robot1/odom, "
        "robot1/base_link but whose messages say odom, base_link ('' none; ends with '/'). "
        'Frames named in other parameters (child_frame_map, transform.*) are written with the '
        'prefix. Read-only.', read_only=True),
    'use_tf': ParameterSpec(
        True, 'Map each reference into the estimate frame with tf2 (/tf, /tf_static) at the '
        "reference's stamp (read-only; docs/bridge.md, Frames). Without tf2 importable the bridge "
        'runs without tf and says so on /diagnostics.', read_only=True),
    'tf.max_wait_s': ParameterSpec(
        1.0, 'A reference whose transform is not known yet (unavailable, or extrapolation into '
        'the future) waits until an input stamped this much later arrives (input time), then is '
        'dropped by reason; extrapolation into the past is dropped at once.',
        float_range=(0.0, 3600.0)),
    'tf.cache_s': ParameterSpec(
        10.0, 'Seconds of /tf history the tf2 buffer keeps (read-only).', read_only=True,
        float_range=(0.1, 3600.0)),
    'tf.max_frames': ParameterSpec(
        DEFAULT_MAX_FRAMES, 'Distinct frame names tf2 is given, at most (static and dynamic); '
        'a transform naming one more is refused (tf_too_many_frames). Read-only.',
        read_only=True, integer_range=(2, 100_000)),
    'tf.max_transforms_per_frame': ParameterSpec(
        DEFAULT_MAX_TRANSFORMS_PER_FRAME, 'Dynamic transforms of one child frame within '
        'tf.cache_s, at most (1000 over 10 s: 100 Hz); more are refused (tf_frame_full). '
        'Read-only.', read_only=True, integer_range=(2, 1_000_000)),
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


def engine_config(values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the engine's config dict from the bridge's parameter values (else ParameterError).

    ``values`` maps every pairing parameter name of the bridge (docs/bridge.md; the keys of
    config/outcome_bridge.yaml) to its value; ranges are the caller's to check.
    """
    ignored = tuple(axis for axis in values['ignored_axes'] if axis)
    bad_prefix = frame_prefix_refusal(values['frame_prefix'])
    if bad_prefix is not None:
        raise ParameterError(bad_prefix)
    child_frames = set()
    entries = [entry for entry in values['child_frame_map'] if entry]
    if len(entries) > MAX_CHILD_FRAME_MAP_ENTRIES:
        raise ParameterError(f'child_frame_map has {len(entries)} entries; at most '
                             f'{MAX_CHILD_FRAME_MAP_ENTRIES}')
    for entry in entries:
        if len(str(entry)) > MAX_CHILD_FRAME_MAP_ENTRY:
            raise ParameterError(cap_text(
                f'child_frame_map entry of {len(str(entry))} characters (at most '
                f'{MAX_CHILD_FRAME_MAP_ENTRY}: two frame names of {MAX_FRAME_NAME}): '
                f'{str(entry)[:60]!r}...'))
        estimate_child, sep, reference_child = str(entry).partition(':')
        if not sep or not estimate_child or not reference_child:
            raise ParameterError(cap_text(
                f"child_frame_map entry {entry!r} is not 'estimate_child:reference_child'"))
        child_frames.add((estimate_child, reference_child))
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
            alpha=values['decorrelation.alpha'],
            warmup_samples=values['decorrelation.warmup_samples'])
        guard_alpha = values['whitening.guard_alpha']
        if guard_alpha and not guard_alpha > values['whitening.alpha']:
            raise ParameterError(f'whitening.guard_alpha ({guard_alpha:g}) must be 0 (off) or '
                                 f"above whitening.alpha ({values['whitening.alpha']:g})")
        whitener = OutcomeWhitening(
            order=values['whitening.order'], alpha=values['whitening.alpha'],
            warmup_samples=values['whitening.warmup_samples'],
            max_gap_factor=values['whitening.max_gap_factor'], guard_alpha=guard_alpha)
        transform = None
        if values['transform.enabled']:
            if not values['transform.from_frame_id'] or not values['transform.to_frame_id']:
                raise ParameterError(
                    'transform.from_frame_id and transform.to_frame_id must be set')
            if len(values['transform.translation_m']) != 3:
                raise ParameterError('transform.translation_m must have 3 values')
            if len(values['transform.rotation_xyzw']) != 4:
                raise ParameterError('transform.rotation_xyzw must have 4 values')
            refused = quaternion_refusal(values['transform.rotation_xyzw'])
            if refused is not None:
                raise ParameterError(f'transform.rotation_xyzw: {refused[0]} ({refused[1]})')
            transform = FixedTransform(
                values['transform.translation_m'], values['transform.rotation_xyzw'])
    except ParameterError:
        raise
    except ValueError as error:
        raise ParameterError(cap_text(error)) from None
    return {
        'ignored_axes': ignored, 'thresholds': thresholds, 'pacer': pacer,
        'whitening': whitener, 'decorrelation_method': values['decorrelation.method'],
        'kept_components': tuple(bool(kept) for kept in axis_mask(ignored)),
        'child_frame_map': frozenset(child_frames),
        'transform': transform,
        'from_frame_id': values['transform.from_frame_id'],
        'to_frame_id': values['transform.to_frame_id'],
        'max_reference_gap_ns': int(values['max_reference_gap_s'] * NS_PER_S),
        'max_estimate_wait_ns': int(values['max_estimate_wait_s'] * NS_PER_S),
        'time_jump_tolerance_ns': int(values['time_jump_tolerance_s'] * NS_PER_S),
        'use_reference_covariance': values['use_reference_covariance'],
        'null_tolerance': values['null_tolerance'],
        'frame_prefix': values['frame_prefix'],
        'use_tf': values['use_tf'],
        'tf_max_wait_ns': int(values['tf.max_wait_s'] * NS_PER_S),
        'tf_cache_ns': int(values['tf.cache_s'] * NS_PER_S),
        'tf_max_frames': values['tf.max_frames'],
        'tf_max_transforms_per_frame': values['tf.max_transforms_per_frame'],
    }


def config_from(values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the bridge's validated configuration from its parameter values.

    ParameterError (one line) for a value outside its range or choices or a set the pairing
    engine refuses (:func:`engine_config`).
    """
    check_ranges(PARAMETERS, values)
    config = engine_config(values)
    config.update(calibrated_allow_deflation=values['calibrated_estimate.allow_deflation'],
                  calibrated_max_factor=values['calibrated_estimate.max_factor'],
                  calibrated_confidence=values['calibrated_estimate.confidence'],
                  diagnostics_period_s=values['diagnostics_period_s'],
                  stale_after_s=values['stale_after_s'],
                  reject_log_throttle_s=values['reject_log_throttle_s'])
    return config
