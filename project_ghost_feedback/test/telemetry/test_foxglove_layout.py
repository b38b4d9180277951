# SPDX-License-Identifier: Apache-2.0
"""docs/foxglove/ghost_feedback.json names only topics and fields of a bag the node records.

A Plot series that is a plain number is a horizontal reference line in Foxglove (the 1/3/5 std
levels, k = 1): those must be the documented ones; every other path must resolve, topic and
fields, in the bag, and end on a plottable value.
"""

import json
import pathlib
import re

from diagnostic_msgs.msg import DiagnosticArray
from project_ghost_feedback.ros.conversions import outcome_to_msg
from project_ghost_feedback.telemetry.msgdefs import typestore
from project_ghost_feedback_msgs.msg import OverconfidenceEstimate as OverconfidenceEstimateMsg
from rosbags.rosbag2 import Reader
from support.feedback_node import FeedbackNodeHarness, scenario

LAYOUT = pathlib.Path(__file__).resolve().parents[3] / 'docs' / 'foxglove' / 'ghost_feedback.json'
PATH_KEYS = ('value', 'topicPath', 'topicToRender')


def _message_paths(node):
    """Yield every message path string of a layout (values under PATH_KEYS)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in PATH_KEYS and isinstance(value, str):
                yield value
            else:
                yield from _message_paths(value)
    elif isinstance(node, list):
        for item in node:
            yield from _message_paths(item)


def _split(path):
    """Return (topic, [field, ...]) of a Foxglove message path (filters and slices dropped)."""
    path = re.sub(r'\{[^}]*\}|\[[^\]]*\]', '', path)
    topic, _, rest = path.partition('.')
    return topic, [field for field in rest.split('.') if field]


def _is_number(path):
    try:
        float(path)
    except ValueError:
        return False
    return True


def _field_type(store, msgtype, field):
    """Return the message type of ``msgtype.field`` (None for a base type); KeyError if absent."""
    _, fields = store.fielddefs[msgtype]
    kind, spec = dict(fields)[field]
    if kind.name in ('SEQUENCE', 'ARRAY'):
        kind, spec = spec[0]
    return spec if kind.name == 'NAME' else None


def test_the_layout_refers_only_to_topics_and_fields_of_a_recorded_bag(tmp_path):
    bag = tmp_path / 'bag'
    harness = FeedbackNodeHarness(bag, parameters=[('diagnostics_period_s', 0.05)])
    try:
        estimates = []
        harness.driver.create_subscription(
            OverconfidenceEstimateMsg, '/self_assessment/overconfidence', estimates.append, 10)
        harness.connect()
        for outcomes, raw in scenario(8):
            for outcome in outcomes:
                harness.send_outcome(outcome_to_msg(outcome))
            harness.send_assessment(raw)
        # The estimate is published (and recorded) at a diagnostics tick after an assessment;
        # the reset clears it, so it comes first.
        harness.spin_until(lambda: estimates, 'an overconfidence estimate')
        harness.call_reset()
        seen = []
        harness.driver.create_subscription(DiagnosticArray, '/diagnostics', seen.append, 10)
        harness.spin_until(lambda: len(seen) >= 2, 'two diagnostics arrays')
    finally:
        harness.close()
    with Reader(bag) as reader:
        types = {c.topic: c.msgtype for c in reader.connections if c.msgcount}
    store = typestore()
    paths = list(_message_paths(json.loads(LAYOUT.read_text())))
    constants = sorted(float(path) for path in paths if _is_number(path))
    assert constants == [1.0, 1.0, 3.0, 5.0]
    paths = [path for path in paths if not _is_number(path)]
    assert len(paths) >= 12
    assert any(path.startswith('/self_assessment/overconfidence.') for path in paths)
    for path in paths:
        topic, fields = _split(path)
        assert topic in types, f'{path}: {topic} is not in the recorded bag ({sorted(types)})'
        msgtype = types[topic]
        for field in fields:
            assert msgtype is not None, f'{path}: {field} below a base-type field'
            try:
                msgtype = _field_type(store, msgtype, field)
            except KeyError:
                raise AssertionError(f'{path}: no field {field!r} in {msgtype}') from None
        if fields:
            assert msgtype is None, f'{path} ends on a message, not a plottable value'


def test_the_field_check_fails_on_a_wrong_field():
    store = typestore()
    msgtype = 'project_ghost_feedback_msgs/msg/CalibratedSelfAssessment'
    assert _field_type(store, msgtype, 'calibration_history') is not None
    try:
        _field_type(store, msgtype, 'no_such_field')
    except KeyError:
        return
    raise AssertionError('an unknown field was accepted')
