# SPDX-License-Identifier: Apache-2.0
"""The node kit both nodes share: parameter refusals, capped text, stamps, diagnostics."""

from builtin_interfaces.msg import Time
import pytest
import rclpy
from rclpy.parameter import Parameter

from project_ghost_feedback.ros.feedback_node import FeedbackNode
from project_ghost_feedback.ros.node_kit import (
    cap_text,
    diagnostic_status,
    MAX_TEXT,
    ns_to_stamp,
    stamp_to_ns,
)
from project_ghost_feedback.ros.outcome_bridge_node import OutcomeBridge


@pytest.mark.parametrize(('node_type', 'huge'), [
    (FeedbackNode, Parameter('policy', value='p' * 1_000_000)),
    (OutcomeBridge, Parameter('ignored_axes', value=['a' * 1_000_000])),
])
def test_both_nodes_refuse_undeclared_names_and_cap_reasons(rclpy_context, node_type, huge):
    """The empty name and an unknown one are refused; a 1 MB bad value gives a short reason."""
    node = node_type(context=rclpy_context, namespace='/node_kit')
    try:
        (empty,) = node.set_parameters([Parameter('', value=1.0)])
        assert not empty.successful and 'not a parameter' in empty.reason
        (refused,) = node.set_parameters([huge])
        assert not refused.successful
        assert len(refused.reason) <= MAX_TEXT + 40, len(refused.reason)
        (sim_time,) = node.set_parameters([Parameter('use_sim_time', value=False)])
        assert sim_time.successful   # rclpy's own parameters still pass
    finally:
        node.destroy_node()


def test_cap_text_says_how_long_the_text_was():
    """Short text is kept; long text is cut and says its length."""
    assert cap_text('short') == 'short'
    capped = cap_text('x' * 1000)
    assert capped.startswith('x' * MAX_TEXT) and capped.endswith('(1000 characters)')


def test_one_stamp_rule_both_ways():
    """Nanoseconds <-> Time round-trip; a nanosec of 10**9 or more is refused, never carried."""
    for ns in (0, 1, 999_999_999, 1_000_000_000, 1_234_567_890_123):
        assert stamp_to_ns(ns_to_stamp(ns)) == ns
    with pytest.raises(ValueError, match='nanosec'):
        stamp_to_ns(Time(sec=1, nanosec=1_000_000_000))


def test_diagnostic_status_names_the_task_and_caps_values(rclpy_context):
    """``<node fully qualified name>: <task>``, hardware_id the node, long values capped.

    The first value names the level (``ros2 topic echo /diagnostics`` shows it as a byte).
    """
    node = rclpy.create_node('kit', namespace='/node_kit', context=rclpy_context)
    try:
        status = diagnostic_status(node.get_fully_qualified_name(), 'task', 1, 'm' * 5000,
                                   {'key': 'v' * 5000, 'n': 3})
        assert status.name == '/node_kit/kit: task' and status.hardware_id == '/node_kit/kit'
        assert len(status.message) < MAX_TEXT + 40
        assert [kv.key for kv in status.values] == ['status', 'key', 'n']
        assert status.values[0].value == 'WARN'
        assert len(status.values[1].value) < MAX_TEXT + 40 and status.values[2].value == '3'
    finally:
        node.destroy_node()
