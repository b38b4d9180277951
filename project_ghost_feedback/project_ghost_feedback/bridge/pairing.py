# SPDX-License-Identifier: Apache-2.0
"""The bridge's one engine: intake checks, time rules, pairing, pacing, claims (numpy, no ROS).

:class:`PairingEngine` holds every rule of the outcome bridge that decides what is published:
the intake refusals (stamp, position, quaternion, covariance, future stamp), the time rules
(estimates not newer, stamps going back: a timeline reset, a backward clock jump), the frame
rules (``frame_prefix``, fixed transform, never interpolating across frames, frame mismatch;
poses of different bodies, by ``child_frame_id``, unless ``child_frame_map`` relates them;
distances that jump at a /tf change named, :mod:`.frame_steps`), the wait of an
estimate for a reference after its stamp, the interpolation, the pose error, the outcome pacing
and the claim levels. The ROS node (ros/outcome_bridge_node.py) and ``ghost-feedback evaluate``
both drive it, so the same inputs in the same order with the same clock give the same outputs.

Frames through tf (``use_tf``): with a transform provider (:mod:`.transforms`; tf2 in the node
and in evaluate) every reference passes a tf filter before the buffer: it waits, in arrival
order, until the transform from its frame into the estimate's frame at its own stamp is known,
is mapped (position, orientation, covariance ``J S J^T``), and goes into the buffer; a reference
whose transform is unavailable or lies in the future waits until an input stamped
``tf.max_wait_s`` after it has arrived (input time, so a bag gives what the live bridge gave),
one in the past is dropped at once; dropped ones are counted by reason. Nothing is paired with a
transform from another time.

Inputs are messages read by attribute (an rclpy message or a rosbags one: ``header.stamp.sec``,
``header.stamp.nanosec``, ``header.frame_id``, ``pose.pose`` + ``pose.covariance`` for Odometry
and PoseWithCovarianceStamped, ``pose`` for PoseStamped) with the clock ``now_ns`` (0 or None:
unknown, no future-stamp rule). Outputs go to a *listener* (any object with the methods of
:class:`EngineListener`): an outcome is always handed over before the assessment of the same
stamp.
"""

import collections
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core import BeliefSelfAssessment, NamedLevel, NS_PER_S, PredictionOutcome
from ..core.feedback.chi_square import chi_to_chi3
from ..core.loop import FUTURE_STAMP, future_stamp_detail, went_back
from ..msg_decoding import stamp_to_ns as _stamp_to_ns
from .belief_claim import claim_levels
from .decorrelation import OutcomePacer, PACE, WHITEN
from .geometry import (
    covariance_refusal,
    FixedTransform,
    FloatArray,
    pose_error,
    position_refusal,
    quaternion_refusal,
    Refusal,
)
from .reference_buffer import AFTER_BUFFER, EMPTY, ReferenceBuffer, ReferenceSample
from .engine_interface import child_frame_id, EngineListener, Estimate, pose_and_covariance
from .frame_steps import FrameStepMonitor
from .tf_gate import prefixed, RESET, TF2_REFUSED, TfGate
from .whitening import error_blocks, OutcomeWhitening
from .transforms import TF_EXTRAPOLATION_PAST, TransformFailure, TransformProvider

ESTIMATE, REFERENCE = 'estimate', 'reference'

# Drop reasons of estimates (``dropped``) and of references (``references_dropped``). Refusals
# at intake (bad stamp, pose or covariance, future stamp, not newer) publish nothing; an estimate
# dropped later (no reference, gap, frame, overflow) still gets its assessment.
DROP_BAD_STAMP = 'bad_stamp'
DROP_FUTURE_STAMP = FUTURE_STAMP
DROP_NOT_NEWER = 'estimate_not_newer'
DROP_FRAME_MISMATCH = 'frame_mismatch'
DROP_CHILD_FRAME_MISMATCH = 'child_frame_mismatch'
DROP_BEFORE_BUFFER = 'before_reference_buffer'
DROP_NO_REFERENCE_AFTER = 'no_reference_after'
DROP_GAP = 'reference_gap'
DROP_PENDING_OVERFLOW = 'pending_overflow'
DROP_INVALID_OUTCOME = 'invalid_outcome'
DROP_TIME_RESET = 'time_reset'
DROP_CALLBACK_ERROR = 'callback_error'
DROP_MALFORMED = 'malformed'  # bytes neither the bridge nor rclpy can read as the input type
DROP_TOO_OLD = 'older_than_full_buffer'
_LOOKUP_DROPS = {'before_buffer': DROP_BEFORE_BUFFER, 'gap': DROP_GAP}

# Causes of a timeline reset (``resets[<cause>]``).
RESET_CLOCK_JUMP = 'clock_jump'
RESET_ESTIMATE_STAMPS = 'estimate_stamp_jump'
RESET_REFERENCE_STAMPS = 'reference_stamp_jump'
RESET_TF_STAMPS = 'tf_stamp_jump'  # a /tf stamp went back: tf2's dynamic transforms cleared


CheckedCovariance = tuple[FloatArray | None, Refusal | None]
"""What :func:`.geometry.covariance_refusal` said of a covariance."""

Intake = tuple[int, tuple[float, float, float], tuple[float, float, float, float],
               FloatArray | None]
"""``(stamp_ns, position, quaternion, covariance)`` of an input taken in."""


class _TfWaiting:
    """A reference waiting for its transform: the sample (in ``frame_id``) and the last failure."""

    __slots__ = ('sample', 'frame_id', 'child', 'failure')

    def __init__(self, sample: ReferenceSample, frame_id: str, child: str) -> None:
        self.sample = sample
        self.frame_id = frame_id
        self.child = child  # the body (child_frame_id) of the reference, '' when unknown
        self.failure: TransformFailure | None = None


class Refused(Exception):
    """An input refused at intake: ``reason`` (counted) and ``detail`` (logged, capped)."""

    def __init__(self, reason: str, detail: str = '') -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


class PairingEngine:
    """The outcome bridge's data path (see the module documentation)."""

    def __init__(self, config: dict[str, Any], listener: EngineListener, *,
                 reference_buffer_size: int = 1000, pending_capacity: int = 1000,
                 keep_messages: bool = False,
                 transforms: TransformProvider | None = None) -> None:
        self.config = config
        self.listener = listener
        # With use_tf: where transforms come from (None: no tf, frames compared as they are).
        self.transforms = transforms
        self.pacer: OutcomePacer = config['pacer']
        self.whitening: OutcomeWhitening = config['whitening']
        self.buffer = ReferenceBuffer(reference_buffer_size, config['max_reference_gap_ns'])
        self.pending_capacity = int(pending_capacity)
        self.keep_messages = keep_messages
        self.dropped: collections.Counter[str] = collections.Counter()  # estimates, by reason
        self.references_dropped: collections.Counter[str] = collections.Counter()  # references
        self.references_used = 0
        self.paired = 0
        self.paced_out = 0
        self.warming_up = 0   # of paced_out: withheld while the pacer's estimate was not warm
        self.outcomes = 0
        self.assessments = 0
        self.resets: collections.Counter[str] = collections.Counter()
        self.resolved = 0     # estimates paired or dropped
        self.pending: collections.deque[Estimate] = collections.deque()
        self.last_estimate_ns: int | None = None
        # Stamp of the first estimate that arrived after the newest reference sample was added
        # (None: a newer reference came after the last estimate). Waits count from it.
        self.no_reference_since_ns: int | None = None
        self.reference_frame_id: str | None = None
        self.reference_child_frame_id = ''  # the body of the buffered references ('' unknown)
        self.estimate_frame_id: str | None = None   # of the newest accepted estimate
        self.tf_waiting: collections.deque[_TfWaiting] = collections.deque()
        self.newest_input_ns: int | None = None     # newest accepted stamp of either input
        # /tf and /tf_static: the gate before tf2 (bridge/tf_gate.py) and what it decided.
        self.tf_gate = TfGate(config.get('tf_max_frames', 1000),
                              config.get('tf_max_transforms_per_frame', 1000),
                              config.get('tf_cache_ns', 10 * NS_PER_S))
        # Distances that jump at a /tf change (bridge/frame_steps.py): frames named.
        self.frame_steps = FrameStepMonitor()
        self.transforms_accepted = 0
        self.transforms_refused: collections.Counter[str] = collections.Counter()
        self._covariances: dict[str, tuple[bytes | None, CheckedCovariance | None]] = {
            ESTIMATE: (None, None), REFERENCE: (None, None)}

    # -- configuration ------------------------------------------------------------------------

    @staticmethod
    def _pacer_settings(config: Mapping[str, Any]) -> tuple[Any, ...]:
        pacer = config['pacer']
        return (pacer.min_interval_ns, pacer.max_interval_ns, pacer.adaptive,
                pacer.target_autocorrelation, pacer.alpha, pacer.warmup_samples,
                config['decorrelation_method'])

    @staticmethod
    def _whitening_settings(config: Mapping[str, Any]) -> tuple[Any, ...]:
        return (config['whitening'].settings, config['decorrelation_method'],
                config['kept_components'])

    def apply_config(self, config: dict[str, Any]) -> None:
        """Take a new config (a dynamic parameter change).

        The pacer and the whitening restart only if their settings (or the method, or the axes
        kept) changed: their estimates belong to the stream they were fitted on.
        """
        if self._pacer_settings(self.config) != self._pacer_settings(config):
            self.pacer = config['pacer']
        if self._whitening_settings(self.config) != self._whitening_settings(config):
            self.whitening = config['whitening']
        self.config = config
        self.buffer.max_gap_ns = config['max_reference_gap_ns']

    # -- refusals, drops, resets --------------------------------------------------------------

    def drop_estimate(self, reason: str, detail: str = '') -> None:
        """Count an estimate as dropped (also for a refusal made by the caller)."""
        self.dropped[reason] += 1
        self.resolved += 1
        self.listener.estimate_dropped(reason, detail)

    def drop_reference(self, reason: str, detail: str = '') -> None:
        """Count a reference as dropped (also for a refusal made by the caller)."""
        self.references_dropped[reason] += 1
        self.listener.reference_dropped(reason, detail)

    @property
    def tf_active(self) -> bool:
        """Return True when references pass the tf filter (``use_tf`` and a provider)."""
        return self.transforms is not None and bool(self.config['use_tf'])

    def _note_input_stamp(self, stamp_ns: int) -> None:
        if self.newest_input_ns is None or stamp_ns > self.newest_input_ns:
            self.newest_input_ns = stamp_ns

    def _newest_reference_ns(self) -> int | None:
        newest = self.buffer.newest_stamp_ns
        if self.tf_waiting:
            waiting = max(w.sample.stamp_ns for w in self.tf_waiting)
            newest = waiting if newest is None else max(newest, waiting)
        return newest

    def _reset_timeline(self, cause: str, stamp_ns: int, detail: str) -> None:
        """Forget what is time-ordered beyond ``stamp_ns`` + tolerance."""
        horizon = stamp_ns + self.config['time_jump_tolerance_ns']
        self.tf_gate.forget_dynamic()
        if self.transforms is not None:
            # tf2 refuses data older than its newest by more than its cache: start over (the
            # static transforms stay).
            self.transforms.clear()
        if self.tf_waiting:
            still: collections.deque[_TfWaiting] = collections.deque()
            for waiting in self.tf_waiting:
                if waiting.sample.stamp_ns > horizon:
                    self.drop_reference(DROP_TIME_RESET, f'waiting for tf at the {cause} reset')
                else:
                    still.append(waiting)
            self.tf_waiting = still
        if self.newest_input_ns is not None and self.newest_input_ns > horizon:
            self.newest_input_ns = stamp_ns
        kept: collections.deque[Estimate] = collections.deque()
        for estimate in self.pending:
            if estimate.stamp_ns > horizon:
                self.drop_estimate(DROP_TIME_RESET, f'pending at the {cause} reset')
            else:
                kept.append(estimate)
        self.pending = kept
        self.buffer.drop_newer_than(horizon)
        if self.last_estimate_ns is not None and self.last_estimate_ns > horizon:
            self.last_estimate_ns = kept[-1].stamp_ns if kept else None
        self.pacer.reset()
        self.whitening.reset()
        self.frame_steps.reset()
        self.no_reference_since_ns = None
        self.resets[cause] += 1
        self.listener.timeline_reset(cause, detail)

    def clock_jumped(self, delta_ns: int, now_ns: int) -> None:
        """On a backward jump of the clock, reset if the state holds stamps now in the future.

        When the inputs' stamps went back first (their reset already happened), the state holds
        only stamps of the new timeline and nothing is reset twice.
        """
        if delta_ns >= 0:
            return
        horizon = now_ns + self.config['time_jump_tolerance_ns']
        stamps = (self._newest_reference_ns(), self.last_estimate_ns,
                  self.pending[-1].stamp_ns if self.pending else None)
        if any(stamp is not None and stamp > horizon for stamp in stamps):
            self._reset_timeline(RESET_CLOCK_JUMP, now_ns,
                                 f'node clock went back by {-delta_ns / NS_PER_S:.3f} s')

    def _intake(self, kind: str, msg: Any, now_ns: int | None, covariance_optional: bool,
                use_covariance: bool = True) -> Intake:
        """Return ``(stamp_ns, position, quaternion, covariance)`` of an input, or Refused.

        Checked in this order, before any math: the stamp (normalised, not negative), the
        position (finite), the quaternion, the covariance (when used; all zero is "none" when
        ``covariance_optional``), then the stamp against the clock (future_stamp).
        """
        try:
            stamp = _stamp_to_ns(msg.header.stamp, kind, 'header.stamp')
        except ValueError as error:
            raise Refused(DROP_BAD_STAMP, str(error)) from None
        if stamp < 0:
            raise Refused(DROP_BAD_STAMP, f'negative stamp {stamp} ns')
        pose, covariance = pose_and_covariance(msg)
        p, q = pose.position, pose.orientation
        position, quaternion = (p.x, p.y, p.z), (q.x, q.y, q.z, q.w)
        refused = position_refusal(position) or quaternion_refusal(quaternion)
        if refused is not None:
            raise Refused(*refused)
        if not use_covariance:
            covariance = None
        if covariance is not None:
            # Many producers repeat one covariance (a ground truth's, a converged filter's):
            # the same 36 values are checked once.
            key = np.asarray(covariance, dtype=float).tobytes()
            last_key, checked = self._covariances[kind]
            if key != last_key or checked is None:  # (checked is None only before the first)
                checked = covariance_refusal(covariance, allow_all_zero=covariance_optional)
                self._covariances[kind] = (key, checked)
            covariance, refused = checked
            if refused is not None:
                raise Refused(*refused)
        future = future_stamp_detail(kind, stamp, now_ns, self.config['time_jump_tolerance_ns'])
        if future is not None:
            raise Refused(DROP_FUTURE_STAMP, future)
        return stamp, position, quaternion, covariance

    # -- data path ----------------------------------------------------------------------------

    def take_reference(self, msg: Any, now_ns: int | None = None) -> None:
        """Take one reference message (``now_ns``: the clock, None or 0 when unknown)."""
        config = self.config
        try:
            stamp, position, quaternion, covariance = self._intake(
                REFERENCE, msg, now_ns, covariance_optional=True,
                use_covariance=config['use_reference_covariance'])
        except Refused as refused:
            self.drop_reference(refused.reason, refused.detail)
            return
        newest = self._newest_reference_ns()
        if newest is not None and went_back(stamp, newest, config['time_jump_tolerance_ns']):
            self._reset_timeline(RESET_REFERENCE_STAMPS, stamp,
                                 f'reference stamp went back by {(newest - stamp) / NS_PER_S:.3f}'
                                 ' s (a restarted producer or a sim reset?)')
        prefix = config.get('frame_prefix', '')
        frame_id = prefixed(prefix, msg.header.frame_id)
        transform = config['transform']
        if transform is not None and frame_id == config['from_frame_id']:
            position, quaternion, covariance = transform.apply(position, quaternion, covariance)
            frame_id = config['to_frame_id']
        sample = ReferenceSample(stamp, position, quaternion, covariance)
        child = prefixed(prefix, child_frame_id(msg))
        self._note_input_stamp(stamp)
        if self.tf_active:
            self.tf_waiting.append(_TfWaiting(sample, frame_id, child))
            self._resolve_tf_waiting()
            return
        self._add_reference(sample, frame_id, child)

    def _add_reference(self, sample: ReferenceSample, frame_id: str, child: str) -> None:
        """Put a reference (in ``frame_id``, after any transform, of body ``child``) in; pair."""
        stamp = sample.stamp_ns
        newest = self.buffer.newest_stamp_ns
        if self.reference_frame_id != frame_id or self.reference_child_frame_id != child:
            if self.reference_frame_id is not None:
                self.buffer.clear()  # never interpolate across frames, nor across bodies
                newest = None
            self.reference_frame_id = frame_id
            self.reference_child_frame_id = child
        if not self.buffer.add(sample):
            self.drop_reference(DROP_TOO_OLD, f'{stamp} ns')
            return
        self.references_used += 1
        if newest is None or stamp > newest:
            self.no_reference_since_ns = None  # references are moving: estimates may wait
        self._resolve_pending()

    def retry_transforms(self) -> None:
        """Try the references waiting for tf again (the node calls it when time passes)."""
        if self.tf_active:
            self._resolve_tf_waiting()

    def _resolve_tf_waiting(self, final: bool = False) -> None:
        """Transform waiting references, oldest first, as far as tf allows; drop the hopeless.

        ``final`` (end of input): whatever still fails is dropped with its reason.
        """
        assert self.transforms is not None  # only called with tf active
        target = self.estimate_frame_id
        waiting_list = self.tf_waiting
        while waiting_list:
            waiting = waiting_list[0]
            if target is None:
                # No estimate yet, so no target frame: the references wait, bounded by count.
                if len(waiting_list) <= self.buffer.capacity and not final:
                    return
                waiting_list.popleft()
                self.drop_reference(DROP_TOO_OLD, 'no estimate (so no target frame) yet')
                continue
            sample = waiting.sample
            if waiting.frame_id != target:
                found = self.transforms.lookup(target, waiting.frame_id, sample.stamp_ns)
                if isinstance(found, TransformFailure):
                    if 'loop' in found.detail:
                        explained = self.tf_gate.explain_unreachable(target, waiting.frame_id)
                        if explained is not None:
                            found = TransformFailure(found.reason, explained)
                    waiting.failure = found
                    assert self.newest_input_ns is not None  # set when the reference came
                    waited = self.newest_input_ns - sample.stamp_ns
                    if (found.reason != TF_EXTRAPOLATION_PAST and not final
                            and waited < self.config['tf_max_wait_ns']
                            and len(waiting_list) <= self.buffer.capacity):
                        return  # the transform may still come
                    waiting_list.popleft()
                    self.drop_reference(found.reason, found.detail)
                    continue
                self.frame_steps.transform_used(sample.stamp_ns, target, waiting.frame_id,
                                                found.translation_m, found.rotation_xyzw)
                position, quaternion, covariance = FixedTransform(
                    found.translation_m, found.rotation_xyzw).apply(
                        sample.position, sample.quaternion, sample.covariance)
                sample = ReferenceSample(sample.stamp_ns, position, quaternion, covariance)
            waiting_list.popleft()
            self._add_reference(sample, target, waiting.child)

    def take_transforms(self, msg: Any, static: bool, now_ns: int | None = None) -> None:
        """Take one tf2_msgs/TFMessage of /tf (``static`` False) or /tf_static (True).

        Every transform passes the gate (:class:`.tf_gate.TfGate`: stamps, frames, pose, the
        clock, the bounds) before it goes to the transform provider; a refused one is counted
        in ``transforms_refused[<reason>]`` and handed to the listener. ``now_ns``: the clock
        (None or 0: unknown; offline, the newest accepted input stamp is used). A transform
        stamped back beyond the tolerance clears the provider's dynamic transforms first.
        """
        if not self.tf_active:
            return
        assert self.transforms is not None  # tf_active
        clock = now_ns if now_ns else self.newest_input_ns
        tolerance = self.config['time_jump_tolerance_ns']
        for transform in msg.transforms:
            reason, detail = self.tf_gate.check(transform, static, clock, tolerance)
            if reason == RESET:
                self.transforms.clear()  # the gate forgot its dynamic state already
                self.resets[RESET_TF_STAMPS] += 1
                self.listener.timeline_reset(RESET_TF_STAMPS, detail)
            elif reason is not None:
                self.transforms_refused[reason] += 1
                self.listener.transform_refused(reason, detail)
                continue
            refused = self.transforms.add(transform, static)
            if refused is not None:
                self.transforms_refused[TF2_REFUSED] += 1
                self.listener.transform_refused(TF2_REFUSED, refused)
                continue
            self.transforms_accepted += 1
        if self.tf_waiting:
            self._resolve_tf_waiting()

    def take_estimate(self, msg: Any, now_ns: int | None = None) -> None:
        """Take one estimate message (``now_ns``: the clock, None or 0 when unknown)."""
        try:
            stamp, position, quaternion, covariance = self._intake(
                ESTIMATE, msg, now_ns, covariance_optional=False)
        except Refused as refused:
            self.drop_estimate(refused.reason, refused.detail)
            return
        if covariance is None:
            # A pose without covariance (PoseStamped) carries no claim to assess; the node and
            # evaluate subscribe estimates only as Odometry or PoseWithCovarianceStamped.
            raise TypeError(f'an estimate needs a pose covariance (Odometry or '
                            f'PoseWithCovarianceStamped), got {type(msg).__name__}')
        last = self.last_estimate_ns
        if last is not None and went_back(stamp, last, self.config['time_jump_tolerance_ns']):
            self._reset_timeline(RESET_ESTIMATE_STAMPS, stamp,
                                 f'estimate stamp went back by {(last - stamp) / NS_PER_S:.3f} s '
                                 '(a restarted estimator or a sim reset?)')
        elif last is not None and stamp <= last:
            self.drop_estimate(DROP_NOT_NEWER, f'{stamp} <= {last} ns')
            return
        prefix = self.config.get('frame_prefix', '')
        estimate = Estimate(stamp, prefixed(prefix, msg.header.frame_id), position, quaternion,
                            covariance, msg if self.keep_messages else None,
                            prefixed(prefix, child_frame_id(msg)))
        self.last_estimate_ns = stamp
        self.estimate_frame_id = estimate.frame_id
        self._note_input_stamp(stamp)
        if self.tf_active and self.tf_waiting:
            self._resolve_tf_waiting()
        if self.no_reference_since_ns is None:
            self.no_reference_since_ns = stamp
        if len(self.pending) >= self.pending_capacity:
            self._finish(self.pending.popleft(), None, DROP_PENDING_OVERFLOW)
        self.pending.append(estimate)
        self._resolve_pending()

    def flush(self) -> None:
        """End of input (offline): transform what tf allows, then drop what still waits.

        References waiting for tf are dropped by their last reason; estimates waiting for a
        reference as no_reference_after.
        """
        if self.tf_active and self.tf_waiting:
            self._resolve_tf_waiting(final=True)
        while self.pending:
            self._finish(self.pending.popleft(), None, DROP_NO_REFERENCE_AFTER, 'end of input')

    def _resolve_pending(self) -> None:
        """Pair (or drop) waiting estimates, oldest first, as far as the references allow."""
        while self.pending:
            estimate = self.pending[0]
            if (self.reference_frame_id is not None
                    and estimate.frame_id != self.reference_frame_id):
                self._finish(self.pending.popleft(), None, DROP_FRAME_MISMATCH,
                             f'estimate in {estimate.frame_id!r}, reference in '
                             f'{self.reference_frame_id!r} (set transform.* to relate them)')
                continue
            if not self._same_body(estimate.child_frame_id):
                self._finish(self.pending.popleft(), None, DROP_CHILD_FRAME_MISMATCH,
                             f'estimate of {estimate.child_frame_id!r}, reference of '
                             f'{self.reference_child_frame_id!r} (child_frame_id; set '
                             'child_frame_map to relate them)')
                continue
            looked_up = self.buffer.lookup(estimate.stamp_ns)
            if looked_up in (AFTER_BUFFER, EMPTY):
                # The wait counts only the estimate time during which no reference arrived. An
                # executor takes one message per ready subscription per turn, so behind a
                # backlog estimates run ahead of references already queued (at 50 Hz references
                # and 10 Hz estimates, 4 s of estimate time per 10 estimates): counting all of
                # it would drop estimates whose references are in fact there. While references
                # come, pending_capacity bounds the wait.
                if self.no_reference_since_ns is None:
                    return
                last = self.last_estimate_ns
                assert last is not None  # set by take_estimate before anything is pending
                waited = last - max(estimate.stamp_ns, self.no_reference_since_ns)
                if waited < self.config['max_estimate_wait_ns']:
                    return  # a newer reference may still come
                self._finish(self.pending.popleft(), None, DROP_NO_REFERENCE_AFTER)
                continue
            self.pending.popleft()
            if isinstance(looked_up, str):
                self._finish(estimate, None, _LOOKUP_DROPS[looked_up])
            else:
                self._finish(estimate, looked_up, None)

    def _same_body(self, estimate_child: str) -> bool:
        """Return False when estimate and references are poses of different bodies.

        Compared only when both name their body (Odometry's ``child_frame_id``; the other types
        carry none): equal, or related by ``child_frame_map``.
        """
        reference_child = self.reference_child_frame_id
        return (not estimate_child or not reference_child or estimate_child == reference_child
                or (estimate_child, reference_child) in self.config['child_frame_map'])

    def _finish(self, estimate: Estimate, reference: ReferenceSample | None,
                drop_reason: str | None, detail: str = '') -> None:
        """Hand over the outcome (if paired and paced in), then the assessment of ``estimate``."""
        if drop_reason is not None:
            self.drop_estimate(drop_reason, detail)
        else:
            assert reference is not None  # paired: no drop reason
            self._outcome(estimate, reference)
        self._assessment(estimate)

    def _outcome(self, estimate: Estimate, reference: ReferenceSample) -> None:
        config = self.config
        error = pose_error(
            estimate.position, estimate.quaternion, estimate.covariance,
            reference.position, reference.quaternion, reference.covariance,
            ignored_axes=config['ignored_axes'], null_tolerance=config['null_tolerance'])
        blocks = error_blocks(error, estimate.covariance, reference.covariance,
                              config['kept_components'])
        method = config['decorrelation_method']
        whitened_warm = self.whitening.warm   # v_t is taken from the estimate before z_t
        if method == WHITEN:
            distances = self.whitening.distances(estimate.stamp_ns, blocks)
        else:  # the raw distances, chi(m) mapped onto chi(3) for a vec3 with ignored axes
            (ep, _, dp), (eo, _, do) = blocks
            distances = (chi_to_chi3(dp, len(ep)) if ep else 0.0,
                         chi_to_chi3(do, len(eo)) if eo else 0.0)
        try:
            raw = PredictionOutcome(
                prediction_stamp_sim_ns=estimate.stamp_ns,
                observed_stamp_sim_ns=estimate.stamp_ns,
                position_error_m=error.position_error_m,
                orientation_error_rad=error.orientation_error_rad,
                position_mahalanobis=error.position_mahalanobis,
                orientation_mahalanobis=error.orientation_mahalanobis,
                frame_id=estimate.frame_id)
            evidence, share = self.whitening.bias.last if method == WHITEN else (0.0, 0.0)
            outcome = raw if (distances == (error.position_mahalanobis,
                                            error.orientation_mahalanobis)
                              and not evidence) else dataclasses.replace(
                raw, position_mahalanobis=distances[0], orientation_mahalanobis=distances[1],
                bias_evidence_nats=evidence, bias_position_share=share)
        except (TypeError, ValueError) as invalid:
            self.drop_estimate(DROP_INVALID_OUTCOME, str(invalid))
            return
        self.paired += 1
        self.resolved += 1
        self.listener.raw_outcome(raw, estimate)
        step = self.frame_steps.distances(
            estimate.stamp_ns, error.position_mahalanobis, error.orientation_mahalanobis,
            error.position_error_m, error.orientation_error_rad)
        if step is not None:
            self.listener.transform_step(step)
        if method == WHITEN:
            keep = warm = whitened_warm
        elif method == PACE:
            warm = self.pacer.warm   # what the pacer decides on (before the candidate)
            keep = self.pacer.offer(estimate.stamp_ns, error.position_mahalanobis,
                                    error.orientation_mahalanobis)
        else:
            keep = warm = True
        if not keep:
            self.paced_out += 1
            self.warming_up += not warm
            self.listener.paced_out(outcome, estimate)
            return
        self.outcomes += 1
        self.listener.outcome_ready(outcome, estimate)

    def _assessment(self, estimate: Estimate) -> None:
        overall, axes, blocks = claim_levels(
            estimate.covariance, self.config['thresholds'], self.config['ignored_axes'])
        try:
            belief = BeliefSelfAssessment(
                belief_stamp_sim_ns=estimate.stamp_ns, overall_level=overall,
                axis_levels=tuple(NamedLevel(name, level) for name, level in axes.items()),
                block_levels=tuple(NamedLevel(name, level) for name, level in blocks.items()),
                frame_id=estimate.frame_id)
        except (TypeError, ValueError) as invalid:
            self.listener.invalid_assessment(invalid)
            return
        self.assessments += 1
        self.listener.assessment_ready(belief, estimate)
