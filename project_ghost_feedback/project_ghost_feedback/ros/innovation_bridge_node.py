# SPDX-License-Identifier: Apache-2.0
"""innovation_bridge: a filter's Innovation messages -> PredictionOutcome + BeliefSelfAssessment.

Subscribes to ``innovation`` (``project_ghost_feedback_msgs/Innovation``) and publishes, for the
feedback node in the same namespace, ``prediction_outcome`` and ``self_assessment/raw`` (the
raw claim, ``claimed_level``, one per outcome, after it, at the outcome's stamp). The rules that
decide what is published are :class:`~..core.innovation.InnovationPairing` (pure); this node is
the ROS shell: parameters (descriptors, validated on set), QoS, publishing and /diagnostics (one
status ``<fqn>: innovations``, counts by refusal reason, WARN while refusals grow).
``docs/field.md``.
"""

from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy

from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    Innovation as InnovationMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)

from ..core import BeliefSelfAssessment, PredictionOutcome, SelfAssessmentLevel
from ..core.innovation import (
    InnovationOutcome,
    InnovationPairing,
    is_source_name,
    REFUSAL_REASONS,
)
from ..parameter_spec import ParameterError, ParameterSpec
from .conversions import belief_to_msg, outcome_to_msg
from .node_kit import diagnostic_array, diagnostic_status, ParameterSet, stamp_to_ns
from .node_main import run_node

TASK = 'innovations'
LEVELS = ('KNOWN', 'UNCERTAIN', 'UNKNOWN')

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
        100, 'Depth of the reliable innovation subscription and output publishers.',
        read_only=True, integer_range=(1, 10000)),
}


def _validate(values: dict[str, Any]) -> dict[str, Any]:
    source = values['source']
    if source and not is_source_name(source):
        raise ParameterError(f'source {source!r} is not [a-z][a-z0-9_]* (<= 64)')
    if values['claimed_level'] not in LEVELS:
        raise ParameterError(f'claimed_level {values["claimed_level"]!r} is not one of {LEVELS}')
    return dict(values)


class InnovationBridgeNode(Node):
    """Innovations in, outcomes and raw claims out (``docs/field.md``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('innovation_bridge', **kwargs)
        self._settings = ParameterSet(self, PARAMETERS, _validate, self._apply)
        self._settings.watch()
        config = self._settings.config
        self._claimed = SelfAssessmentLevel[config['claimed_level']]
        self.pairing = InnovationPairing()
        self.received = 0
        self.other_source = 0
        self.published_outcomes = 0
        self._last_refused_total = 0
        qos = QoSProfile(depth=config['qos_depth'], reliability=ReliabilityPolicy.RELIABLE)
        self._outcomes = self.create_publisher(PredictionOutcomeMsg, 'prediction_outcome', qos)
        self._claims = self.create_publisher(BeliefSelfAssessmentMsg, 'self_assessment/raw', qos)
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_subscription(InnovationMsg, 'innovation', self._on_innovation, qos)
        self.create_timer(config['diagnostics_period_s'], self._publish_diagnostics)

    def _apply(self, old: Any, new: Any, parameters: list[Parameter]) -> None:
        self._claimed = SelfAssessmentLevel[new['claimed_level']]

    def _on_innovation(self, msg: InnovationMsg) -> None:
        self.received += 1
        wanted = self._settings.config['source']
        if wanted and msg.source != wanted:
            self.other_source += 1
            return
        try:
            stamp_ns = stamp_to_ns(msg.header.stamp, 'Innovation')
        except ValueError:
            self.pairing.refused['bad_stamp'] = self.pairing.refused.get('bad_stamp', 0) + 1
            return
        if msg.schema_version != InnovationMsg.SCHEMA_VERSION:
            key = 'unsupported_schema_version'
            self.pairing.refused[key] = self.pairing.refused.get(key, 0) + 1
            return
        result = self.pairing.push(
            msg.source, stamp_ns, list(msg.innovation), list(msg.innovation_covariance),
            list(msg.component_kinds), bool(msg.rejected_by_filter), msg.header.frame_id)
        if isinstance(result, InnovationOutcome):
            self._publish(result)
        elif isinstance(result, str):
            self.get_logger().warning(
                f'innovation of {msg.source!r} refused: {result}', throttle_duration_sec=5.0)

    def _publish(self, row: InnovationOutcome) -> None:
        outcome = PredictionOutcome(
            row.prediction_stamp_ns, row.observed_stamp_ns, row.position_error,
            row.orientation_error, row.position_mahalanobis, row.orientation_mahalanobis,
            frame_id=row.frame_id[:256])
        claim = BeliefSelfAssessment(row.observed_stamp_ns, self._claimed,
                                     frame_id=row.frame_id[:256])
        self._outcomes.publish(outcome_to_msg(outcome))
        self._claims.publish(belief_to_msg(claim))
        self.published_outcomes += 1

    def status(self) -> DiagnosticStatus:
        """Return the ``innovations`` status: counts, refusals by reason; WARN while they grow."""
        refused = dict(self.pairing.refused)
        total = sum(refused.values())
        grew = total > self._last_refused_total
        self._last_refused_total = total
        level = DiagnosticStatus.WARN if grew else DiagnosticStatus.OK
        reasons = ', '.join(f'{k} {v}' for k, v in sorted(refused.items()))
        message = f'refused ({reasons})' if grew else 'ok'
        values: dict[str, object] = {
            'innovations_received': self.received,
            'innovations_accepted': self.pairing.accepted,
            'outcomes_published': self.published_outcomes,
            'innovations_refused': total,
            'innovations_other_source': self.other_source,
            'source_resets': self.pairing.source_resets,
        }
        for reason in (*REFUSAL_REASONS, *sorted(set(refused) - set(REFUSAL_REASONS))):
            values[f'innovations_refused[{reason}]'] = refused.get(reason, 0)
        return diagnostic_status(self, TASK, level, message, values)

    def _publish_diagnostics(self) -> None:
        self._diagnostics.publish(diagnostic_array(self, self.status()))


def main(args: list[str] | None = None) -> int:
    """Run the innovation bridge until SIGINT or SIGTERM (exit 2: invalid parameters)."""
    return run_node(InnovationBridgeNode, 'innovation_bridge', args)


if __name__ == '__main__':
    raise SystemExit(main())
