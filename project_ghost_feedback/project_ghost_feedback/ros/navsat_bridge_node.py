# SPDX-License-Identifier: Apache-2.0
"""navsat_bridge: a GNSS fix (sensor_msgs/NavSatFix) against the estimate -> outcomes.

Subscribes to ``estimate`` (``nav_msgs/Odometry`` in the ENU frame at the datum) and ``fix``
(``sensor_msgs/NavSatFix``); each fix that is not refused becomes a position innovation
``e = p_fix - p_est`` with ``S = P_est + P_fix`` (:class:`~..bridge.navsat_innovation.
NavSatInnovations`, pure), which the innovation engine (the innovation bridge's,
:class:`~..bridge.innovation_engine.InnovationEngine`) pairs two per outcome; the node publishes
``prediction_outcome`` and ``self_assessment/raw`` for the feedback node in its namespace.
GNSS has no orientation: nothing is invented for it.

/diagnostics: one status ``<fqn>: navsat``: fixes and estimates received, refusals by reason
(``fixes_refused[<reason>]``), the engine's counts; WARN while refusals grow; WARN always with
``reference_fused`` true, saying the stated rate does not hold and pointing to the innovation
path. ``docs/field.md``, "GNSS reference".
"""

from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import NavSatFix

from ..bridge.innovation_engine import InnovationOutputs
from ..bridge.navsat_innovation import NavSatFeed, PARAMETERS, REFUSAL_REASONS, validate
from ..core import NS_PER_S, SelfAssessmentLevel
from .conversions import belief_to_msg, outcome_to_msg
from .node_kit import diagnostic_array, diagnostic_status, ParameterSet, producer_publishers
from .node_main import run_node

TASK = 'navsat'
FUSED_MESSAGE = (
    'reference_fused: the fix is also fused into the estimate, so their errors are correlated '
    'and P_est + P_fix is not the covariance of their difference: the stated false-alarm rate '
    "does not hold. Judge the filter's own innovations instead (publish Innovation to the "
    'innovation_bridge, docs/field.md)')


class NavSatBridgeNode(Node):
    """Estimates and NavSatFix in, outcomes and raw claims out (``docs/field.md``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('navsat_bridge', **kwargs)
        self._settings = ParameterSet(self, PARAMETERS, validate, self._apply)
        self._settings.watch()
        config = self._settings.config
        # The data path, as evaluate runs it offline (bridge/navsat_innovation.NavSatFeed).
        self.feed = NavSatFeed(config)
        self.fixes, self.engine = self.feed.fixes, self.feed.engine
        self._fused = config['reference_fused']
        self._last_refused_total = 0
        qos = QoSProfile(depth=config['qos_depth'], reliability=ReliabilityPolicy.RELIABLE)
        self._outcomes, self._claims, self._diagnostics = producer_publishers(self, qos)
        self.create_subscription(Odometry, 'estimate', self._on_estimate, qos)
        self.create_subscription(NavSatFix, 'fix', self._on_fix, qos)
        self.create_timer(config['diagnostics_period_s'], self._publish_diagnostics)

    def _apply(self, old: Any, new: Any, parameters: list[Parameter]) -> None:
        self.engine.claimed_level = SelfAssessmentLevel[new['claimed_level']]
        self._fused = new['reference_fused']
        self.fixes.max_estimate_age_ns = round(new['max_estimate_age_s'] * NS_PER_S)
        self.fixes.ignore_variance_m2 = new['ignore_variance_m2']

    def _on_estimate(self, msg: Odometry) -> None:
        self.feed.take_estimate(msg)

    def _on_fix(self, msg: NavSatFix) -> None:
        outputs = self.feed.take_fix(msg)
        if isinstance(outputs, str) and outputs in (*REFUSAL_REASONS, 'bad_stamp'):
            self.get_logger().warning(f'fix refused: {outputs}', throttle_duration_sec=5.0)
            return
        if isinstance(outputs, InnovationOutputs):
            self._outcomes.publish(outcome_to_msg(outputs.outcome))
            self._claims.publish(belief_to_msg(outputs.claim))

    def status(self) -> DiagnosticStatus:
        """Return the ``navsat`` status: counts, refusals by reason, the fused warning."""
        refused = dict(self.fixes.refused)
        for reason, count in self.engine.pairing.refused.items():
            refused[f'innovation_{reason}'] = count
        total = sum(refused.values())
        grew = total > self._last_refused_total
        self._last_refused_total = total
        reasons = ', '.join(f'{k} {v}' for k, v in sorted(refused.items()))
        messages = [FUSED_MESSAGE] if self._fused else []
        if grew:
            messages.append(f'fixes refused ({reasons})')
        level = DiagnosticStatus.WARN if messages else DiagnosticStatus.OK
        values: dict[str, object] = {
            'reference_fused': self._fused,
            'stated_rate_holds': not self._fused,
            'fixes_received': self.fixes.fixes,
            'estimates_received': self.fixes.estimates,
            'fixes_refused': total,
            'outcomes_published': self.engine.outcomes_published,
        }
        for reason in (*REFUSAL_REASONS, 'bad_stamp',
                       *sorted(set(refused) - set(REFUSAL_REASONS) - {'bad_stamp'})):
            values[f'fixes_refused[{reason}]'] = refused.get(reason, 0)
        return diagnostic_status(self.get_fully_qualified_name(), TASK, level,
                                 '; '.join(messages) or 'ok', values)

    def _publish_diagnostics(self) -> None:
        self._diagnostics.publish(diagnostic_array(self, self.status()))


def main(args: list[str] | None = None) -> int:
    """Run the navsat bridge until SIGINT or SIGTERM (exit 2: invalid parameters)."""
    return run_node(NavSatBridgeNode, 'navsat_bridge', args)


if __name__ == '__main__':
    raise SystemExit(main())
