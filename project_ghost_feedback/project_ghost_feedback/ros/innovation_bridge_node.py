# SPDX-License-Identifier: Apache-2.0
"""innovation_bridge: a filter's Innovation messages -> PredictionOutcome + BeliefSelfAssessment.

Subscribes to ``innovation`` (``project_ghost_feedback_msgs/Innovation``) and publishes, for the
feedback node in the same namespace, ``prediction_outcome`` and ``self_assessment/raw`` (the
raw claim, ``claimed_level``, one per outcome, after it, at the outcome's stamp). The rules that
decide what is published are :class:`~..bridge.innovation_engine.InnovationEngine`'s (pure, the
same engine ``ghost-feedback evaluate`` runs over a bag); this node is the ROS shell: parameters
(descriptors, validated on set), QoS, publishing and /diagnostics (one status
``<fqn>: innovations``, counts by refusal reason, WARN while refusals grow). ``docs/field.md``.

PX4 live: ``px4_aid_topics`` (read-only, a list of topic names, default none) adds one subscription
per PX4 ``EstimatorAidSource1d/2d/3d`` topic (e.g. ``/fmu/out/estimator_aid_src_gnss_pos``), its
type read from its name (:func:`~..px4_aid_source.aid_topic_type`: the ``# TOPICS`` lines of the
unmodified px4_msgs definitions; px4_msgs is built by ``make setup``). PX4's uXRCE-DDS client
publishes best effort, so these subscriptions are best effort and volatile (compatible with a
best-effort or reliable, volatile or transient-local publisher; a reliable subscription would
match no PX4 publisher and receive nothing). Each sample goes through
:meth:`~..bridge.innovation_engine.InnovationEngine.take_aid_source`, the same rule
``ghost-feedback evaluate`` applies to a recorded PX4 bag; its outcomes and claims are published
as for Innovation messages.
"""

from functools import partial
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from project_ghost_feedback_msgs.msg import Innovation as InnovationMsg

from ..bridge.innovation_engine import InnovationEngine, InnovationOutputs, PARAMETERS, validate
from ..core import SelfAssessmentLevel
from ..core.innovation import vec3_components_of
from ..px4_aid_source import aid_topic_type, source_name
from .conversions import belief_to_msg, outcome_to_msg
from .node_kit import (
    diagnostic_array, diagnostic_status, message_class, ParameterSet, producer_publishers)
from .node_main import run_node

TASK = 'innovations'


class InnovationBridgeNode(Node):
    """Innovations in, outcomes and raw claims out (``docs/field.md``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('innovation_bridge', **kwargs)
        self._settings = ParameterSet(self, PARAMETERS, validate, self._apply)
        self._settings.watch()
        config = self._settings.config
        self.engine = InnovationEngine(config['source'],
                                       SelfAssessmentLevel[config['claimed_level']])
        self._last_refused_total = 0
        self._logged_layouts: dict[str, tuple[int, ...]] = {}
        qos = QoSProfile(depth=config['qos_depth'], reliability=ReliabilityPolicy.RELIABLE)
        self._outcomes, self._claims, self._diagnostics = producer_publishers(self, qos)
        self.create_subscription(InnovationMsg, 'innovation', self._on_innovation, qos)
        px4_qos = QoSProfile(depth=config['qos_depth'], reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE)
        for topic in config['px4_aid_topics']:
            typename = aid_topic_type(topic)
            self.create_subscription(message_class(typename), topic,
                                     partial(self._on_aid_source, topic), px4_qos)
            self.get_logger().info(f'PX4 aid source: {topic} ({typename}, best effort)')
        self.create_timer(config['diagnostics_period_s'], self._publish_diagnostics)

    @property
    def received(self) -> int:
        """Innovation and PX4 aid-source messages received (every source)."""
        return self.engine.received

    def _apply(self, old: Any, new: Any, parameters: list[Parameter]) -> None:
        self.engine.claimed_level = SelfAssessmentLevel[new['claimed_level']]

    def _on_innovation(self, msg: InnovationMsg) -> None:
        self._publish(msg.source, self.engine.take_innovation(msg))

    def _on_aid_source(self, topic: str, msg: Any) -> None:
        """Take one PX4 aid-source sample of ``topic`` (a px4_msgs EstimatorAidSource message)."""
        result = self.engine.take_aid_source(topic, msg)
        self._publish(source_name(topic, int(msg.estimator_instance)), result)

    def _publish(self, source: str, result: InnovationOutputs | str | None) -> None:
        self._log_components(source)
        if isinstance(result, InnovationOutputs):
            self._outcomes.publish(outcome_to_msg(result.outcome))
            self._claims.publish(belief_to_msg(result.claim))
        elif isinstance(result, str):
            self.get_logger().warning(
                f'innovation of {source[:64]!r} refused: {result}', throttle_duration_sec=5.0)

    def _log_components(self, source: str) -> None:
        """Say once per layout which components ``source``'s outcomes hold, when not 3 and 3.

        The feedback node reads k with its position_components / orientation_components: a
        source of fewer components needs them set for an unbiased k (the levels are right
        either way). Also on /diagnostics (``vec3_components[<source>]``).
        """
        layout = self.engine.pairing.layout(source)
        if layout is None or self._logged_layouts.get(source) == layout:
            return
        self._logged_layouts[source] = layout
        components = vec3_components_of(layout)
        if components != (3, 3):
            self.get_logger().info(
                f'source {source!r}: its outcomes hold {components[0]} and {components[1]} '
                "components; for an unbiased k set the feedback node's "
                f'position_components:={components[0]} '
                f'orientation_components:={components[1]} (the levels do not depend on it)')

    def status(self) -> DiagnosticStatus:
        """Return the ``innovations`` status: counts, refusals by reason; WARN while they grow."""
        refused = self.engine.pairing.refused
        total = self.engine.refused_total()
        grew = total > self._last_refused_total
        self._last_refused_total = total
        level = DiagnosticStatus.WARN if grew else DiagnosticStatus.OK
        reasons = ', '.join(f'{k} {v}' for k, v in sorted(refused.items()))
        message = f'refused ({reasons})' if grew else 'ok'
        return diagnostic_status(self.get_fully_qualified_name(), TASK, level, message,
                                 self.engine.values())

    def _publish_diagnostics(self) -> None:
        self._diagnostics.publish(diagnostic_array(self, self.status()))


def main(args: list[str] | None = None) -> int:
    """Run the innovation bridge until SIGINT or SIGTERM (exit 2: invalid parameters)."""
    return run_node(InnovationBridgeNode, 'innovation_bridge', args)


if __name__ == '__main__':
    raise SystemExit(main())
