# SPDX-License-Identifier: Apache-2.0
"""The innovation bridge's engine: innovations in, outcomes and raw claims out (pure).

One engine for every path that turns a filter's innovations into what the feedback loop judges:
the live ``innovation_bridge`` node (``ros/innovation_bridge_node.py``) hands it each received
``project_ghost_feedback_msgs/Innovation`` and each PX4 aid-source sample of its
``px4_aid_topics``, and ``ghost-feedback evaluate`` / ``audit``
(``field_inputs.py``) hand it the same messages read from a bag, and PX4
``EstimatorAidSource1d/2d/3d`` samples (:mod:`..px4_aid_source`). The rules are
:class:`~..core.innovation.InnovationPairing`'s; this class adds what the node did around it:

- ``source``: judge only innovations of this source (one window per source); others are counted
  as ``other_source``; empty: every source, each paired on its own, into one window;
- stamps (``header.stamp``: a non-normalised one is refused as ``bad_stamp``) and the message's
  ``schema_version`` (``unsupported_schema_version``);
- one raw claim (``claimed_level``) per outcome, at the outcome's stamp, after it;
- the counts the node puts on /diagnostics (:meth:`values`).

Messages are read by attribute, so an rclpy message and a rosbags one take the same path.
Standard library only. ``docs/field.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Any

from ..core import BeliefSelfAssessment, NS_PER_S, PredictionOutcome, SelfAssessmentLevel
from ..core.innovation import InnovationOutcome, InnovationPairing, is_source_name
from ..core.innovation import vec3_components_of
from ..core.innovation import REFUSAL_REASONS as PAIRING_REFUSAL_REASONS
from ..parameter_spec import cap_text, ParameterError, ParameterSpec
from ..px4_aid_source import aid_topic_type, innovation_of

LEVELS = ('KNOWN', 'UNCERTAIN', 'UNKNOWN')
INNOVATION_SCHEMA_VERSION = 1
"""``Innovation.SCHEMA_VERSION`` of the .msg this engine reads."""
MAX_FRAME_ID = 256
MAX_AID_TOPICS = 32
TOPIC_NAME = re.compile(r'/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*')
"""An absolute or relative ROS topic name without substitutions (``px4_aid_topics``)."""

REFUSAL_REASONS = (*PAIRING_REFUSAL_REASONS, 'bad_stamp', 'unsupported_schema_version')
"""Every reason the engine refuses an innovation with (the pairing's and the message's)."""

PARAMETERS = {
    'source': ParameterSpec(
        '', 'Judge only innovations of this source (one window per source); others are counted '
        "as 'other_source'. Empty: every source, each paired on its own, in one window.",
        read_only=True),
    'claimed_level': ParameterSpec(
        'KNOWN', 'The raw self-assessment published with every outcome: what the filter claims '
        'while its innovations stay within their stated covariance.', choices=LEVELS),
    'diagnostics_period_s': ParameterSpec(
        1.0, 'Period of the /diagnostics status, seconds of the node clock.',
        read_only=True, float_range=(0.05, 60.0)),
    'qos_depth': ParameterSpec(
        100, 'Depth of the reliable innovation subscription and output publishers (and of the '
        'best-effort PX4 aid-source subscriptions).',
        read_only=True, integer_range=(1, 10000)),
    'px4_aid_topics': ParameterSpec(
        [], 'PX4 EstimatorAidSource1d/2d/3d topics to judge as well (e.g. '
        '/fmu/out/estimator_aid_src_gnss_pos), subscribed best effort as uXRCE-DDS publishes '
        "them. Each topic's type is the one whose .msg lists the last segment of its name in a "
        "'# TOPICS' line; its source is that segment without 'estimator_aid_src_'. Empty: none.",
        read_only=True),
}
"""The innovation bridge's parameters (the node declares them; evaluate reads a file of them)."""


def validate(values: dict[str, Any]) -> dict[str, Any]:
    """Return a checked copy of a complete set of :data:`PARAMETERS` values (ParameterError)."""
    source = values['source']
    if source and not is_source_name(source):
        raise ParameterError(f'source {source!r} is not [a-z][a-z0-9_]* (<= 64)')
    if values['claimed_level'] not in LEVELS:
        raise ParameterError(f'claimed_level {values["claimed_level"]!r} is not one of {LEVELS}')
    return {**values, 'px4_aid_topics': check_aid_topics(values['px4_aid_topics'])}


def check_aid_topics(topics: Any) -> list[str]:
    """Return ``px4_aid_topics`` as a list, or raise ParameterError naming the bad entry.

    ``None`` is none: an empty list in a ROS parameter file (``px4_aid_topics: []``) reads as
    not set.
    """
    if topics is None:
        return []
    if not isinstance(topics, (list, tuple)) or not all(isinstance(t, str) for t in topics):
        raise ParameterError('px4_aid_topics must be a list of topic names, got '
                             f'{cap_text(repr(topics), 80)}')
    if len(topics) > MAX_AID_TOPICS:
        raise ParameterError(f'px4_aid_topics: {len(topics)} topics, at most {MAX_AID_TOPICS}')
    for topic in topics:
        if not TOPIC_NAME.fullmatch(topic):
            raise ParameterError(f'px4_aid_topics: {cap_text(repr(topic), 80)} is not a topic '
                                 'name (segments of [A-Za-z_][A-Za-z0-9_]* separated by /)')
        if topics.count(topic) > 1:
            raise ParameterError(f'px4_aid_topics: {topic!r} is listed twice')
        try:
            aid_topic_type(topic)
        except ValueError as error:
            raise ParameterError(f'px4_aid_topics: {cap_text(error)}') from None
    return list(topics)


@dataclass(frozen=True)
class InnovationOutputs:
    """What the bridge publishes for one outcome: the outcome, then the raw claim."""

    outcome: PredictionOutcome
    claim: BeliefSelfAssessment


class InnovationEngine:
    """Innovation messages (or PX4 aid-source samples) -> :class:`InnovationOutputs`.

    Each ``take_*`` returns an :class:`InnovationOutputs`, ``None`` (nothing to publish: pending,
    another source, not fused) or the refusal reason (a ``str``). Counts: ``received``,
    ``other_source``, ``not_fused`` (PX4 samples of a source not being fused),
    ``outcomes_published`` and ``pairing`` (accepted, refused by reason, source resets).
    """

    def __init__(self, source: str = '',
                 claimed_level: SelfAssessmentLevel = SelfAssessmentLevel.KNOWN) -> None:
        if source and not is_source_name(source):
            raise ValueError(f'source {source!r} is not [a-z][a-z0-9_]* (<= 64)')
        self.source = source
        self.claimed_level = claimed_level
        self.pairing = InnovationPairing()
        self.received = 0
        self.other_source = 0
        self.not_fused = 0
        self.outcomes_published = 0

    def _refuse(self, reason: str) -> str:
        refused = self.pairing.refused
        refused[reason] = refused.get(reason, 0) + 1
        return reason

    def _wanted(self, source: str) -> bool:
        if self.source and source != self.source:
            self.other_source += 1
            return False
        return True

    def take_innovation(self, msg: Any) -> InnovationOutputs | str | None:
        """Take one ``Innovation`` message (rclpy or rosbags, read by attribute)."""
        self.received += 1
        if not self._wanted(msg.source):
            return None
        stamp = msg.header.stamp
        if not 0 <= stamp.nanosec < NS_PER_S or stamp.sec < 0:
            return self._refuse('bad_stamp')
        if msg.schema_version != INNOVATION_SCHEMA_VERSION:
            return self._refuse('unsupported_schema_version')
        return self._push(
            msg.source, stamp.sec * NS_PER_S + stamp.nanosec, [float(v) for v in msg.innovation],
            [float(v) for v in msg.innovation_covariance],
            [int(v) for v in msg.component_kinds], bool(msg.rejected_by_filter),
            msg.header.frame_id)

    def take_aid_source(self, topic: str, msg: Any) -> InnovationOutputs | str | None:
        """Take one PX4 ``EstimatorAidSource1d/2d/3d`` sample of ``topic`` (read by attribute)."""
        self.received += 1
        sample = innovation_of(topic, msg)
        if sample is None:
            self.not_fused += 1
            return None
        if not self._wanted(sample.source):
            return None
        return self._push(sample.source, sample.stamp_ns, sample.innovation, sample.covariance,
                          sample.kinds, sample.rejected_by_filter, '')

    def take(self, source: str, stamp_ns: int, innovation: list[float] | tuple[float, ...],
             covariance: list[float] | tuple[float, ...], kinds: list[int] | tuple[int, ...],
             rejected_by_filter: bool = False,
             frame_id: str = '') -> InnovationOutputs | str | None:
        """Take one innovation given by its fields (a converted reference, a test)."""
        self.received += 1
        if not self._wanted(source):
            return None
        return self._push(source, stamp_ns, innovation, covariance, kinds, rejected_by_filter,
                          frame_id)

    def _push(self, source: str, stamp_ns: int, innovation: Any, covariance: Any, kinds: Any,
              rejected: bool, frame_id: str) -> InnovationOutputs | str | None:
        result = self.pairing.push(source, stamp_ns, innovation, covariance, kinds, rejected,
                                   frame_id)
        if not isinstance(result, InnovationOutcome):
            return result
        frame = result.frame_id[:MAX_FRAME_ID]
        outcome = PredictionOutcome(
            result.prediction_stamp_ns, result.observed_stamp_ns, result.position_error,
            result.orientation_error, result.position_mahalanobis,
            result.orientation_mahalanobis, frame_id=frame,
            bias_evidence_nats=result.bias_evidence_nats,
            bias_position_share=result.bias_position_share)
        claim = BeliefSelfAssessment(result.observed_stamp_ns, self.claimed_level,
                                     frame_id=frame)
        self.outcomes_published += 1
        return InnovationOutputs(outcome, claim)

    @property
    def components(self) -> dict[str, tuple[int, int]]:
        """Per known source, the (position, orientation) components its outcomes hold."""
        return {source: vec3_components_of(layout)
                for source, layout in self.pairing.layouts().items()}

    def refused_total(self) -> int:
        """Return the number of innovations refused so far (every reason)."""
        return sum(self.pairing.refused.values())

    def values(self) -> dict[str, object]:
        """Return the counts the node's /diagnostics status carries (every reason named)."""
        refused = self.pairing.refused
        values: dict[str, object] = {
            'innovations_received': self.received,
            'innovations_accepted': self.pairing.accepted,
            'outcomes_published': self.outcomes_published,
            'innovations_refused': self.refused_total(),
            'innovations_other_source': self.other_source,
            'innovations_not_fused': self.not_fused,
            'source_resets': self.pairing.source_resets,
        }
        for reason in (*REFUSAL_REASONS, *sorted(set(refused) - set(REFUSAL_REASONS))):
            values[f'innovations_refused[{reason}]'] = refused.get(reason, 0)
        for source, (position, orientation) in sorted(self.components.items()):
            values[f'vec3_components[{source}]'] = f'{position},{orientation}'
        return values


__all__ = ['check_aid_topics', 'InnovationEngine', 'InnovationOutputs', 'LEVELS', 'PARAMETERS',
           'REFUSAL_REASONS', 'validate']
