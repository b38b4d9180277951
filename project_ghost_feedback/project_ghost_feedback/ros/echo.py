# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback echo``: the calibrated self-assessments as they are published, readable live.

A line (:func:`assessment_line`: time from the first message, raw -> calibrated level by name,
the policy's reason, k per vec3 with its 95% interval) for every change of the levels or the
reason, and a summary line once per :data:`SUMMARY_PERIOD_S` (the latest assessment and how many
came), so it stays readable at any rate (:class:`EchoLines`); ``--every`` prints a line per
message, ``--full`` the whole message as ``ros2 topic echo`` would (YAML). An unverified
assessment (no outcome for a while) is followed by what the outcome bridge of the same namespace
last said on /diagnostics (the cause: no reference, no tf, another type, refused estimates);
a line that changes to a downgraded level is followed by that bridge's ``last_frame_step`` when
it named a new one (frames named: the distances jumped at a /tf change, bridge/frame_steps.py).
Silence is said on stderr after :data:`ECHO_NOTE_AFTER_S`, then once a minute; ``--timeout``
ends it with one line, exit 1.
"""

import argparse
from collections.abc import Callable
import math
import sys
from typing import Any

from ..core import NS_PER_S
from ..core.feedback.overconfidence import VEC3_COMPONENTS


def _yaml_lines(message: Any, indent: int = 0) -> list[str]:
    """Return ``ros2 topic echo``-like YAML lines for an rclpy message."""
    pad = '  ' * indent
    lines = []
    for name in message.get_fields_and_field_types():
        value = getattr(message, name)
        if hasattr(value, 'get_fields_and_field_types'):
            lines.append(f'{pad}{name}:')
            lines.extend(_yaml_lines(value, indent + 1))
        elif isinstance(value, (list, tuple)) or type(value).__name__ == 'ndarray':
            items = list(value)
            if not items:
                lines.append(f'{pad}{name}: []')
            elif hasattr(items[0], 'get_fields_and_field_types'):
                lines.append(f'{pad}{name}:')
                for item in items:
                    sub = _yaml_lines(item)
                    lines.append(f'{pad}- {sub[0]}')
                    lines.extend(f'{pad}  {line}' for line in sub[1:])
            else:
                lines.append(f'{pad}{name}:')
                lines.extend(f'{pad}- {_scalar(item)}' for item in items)
        else:
            lines.append(f'{pad}{name}: {_scalar(value)}')
    return lines


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float):
        if math.isinf(value):
            return '.inf' if value > 0 else '-.inf'
        if math.isnan(value):
            return '.nan'
        return repr(value)
    if isinstance(value, str):
        return f"'{value}'"
    return str(value)


ECHO_NOTE_AFTER_S = 5.0
"""Seconds of silence before echo says that it is still waiting (then once a minute)."""


def assessment_line(message: Any, first_stamp_ns: int,
                    components: tuple[int, int] = VEC3_COMPONENTS) -> str:
    """Return one line of a CalibratedSelfAssessment message: what a user reads live.

    ``+12.300 s  KNOWN -> UNCERTAIN  significant_overconfidence  k (ratio of stds, 95%):
    position 2.90 [2.51, 3.40], orientation 1.10 [0.80, 1.50]``: the time from
    ``first_stamp_ns`` (the first message echoed), the raw and calibrated levels by name, the
    policy's reason and the overconfidence factor k per vec3 (the ratio of the real error's
    standard deviation to the claimed one, with its 95% interval; docs/policies.md), read with
    the (position, orientation) error ``components`` of the source (unbiased for a planar one).
    """
    from ..core import SelfAssessmentLevel
    from ..core.feedback import format_overconfidence
    from ..msg_decoding import history_from_msg

    def name(level: Any) -> str:
        try:
            return SelfAssessmentLevel(level.value).name
        except ValueError:
            return f'level {level.value}'

    stamp = message.header.stamp.sec * NS_PER_S + message.header.stamp.nanosec
    raw, calibrated = name(message.raw_assessment.overall_level), name(
        message.adjusted_overall_level)
    change = f'{raw} -> {calibrated}' if raw != calibrated else f'{raw} (kept)'
    try:
        estimates = format_overconfidence(history_from_msg(message.calibration_history),
                                          components)
    except (TypeError, ValueError):  # a history that fails its contract: say so, go on
        estimates = {}
    k = ', '.join(f'{vec3} {text}' for vec3, text in estimates.items() if text)
    return (f'+{(stamp - first_stamp_ns) / NS_PER_S:.3f} s  {change}  '
            f'{message.adjustment_reason or "-"}  '
            + (f'k (ratio of stds, 95%): {k}' if k else 'k: - (no outcomes in the window)'))


SUMMARY_PERIOD_S = 1.0
"""Seconds between two summary lines of echo's default output."""
UNVERIFIED_PREFIX = 'unverified_'
BRIDGE_TASK = ': outcome_bridge'


def _state(message: Any) -> tuple[int, int, str]:
    return (message.raw_assessment.overall_level.value, message.adjusted_overall_level.value,
            message.adjustment_reason)


class EchoLines:
    """What echo prints by default: changes at once, a summary once per ``period_s``.

    :meth:`message` takes each message with the (steady) time it arrived and returns the lines
    to print: the message's line when its raw level, calibrated level or reason differ from the
    previous message's; else, once ``period_s`` passed since the last line, the latest message's
    line with ``(N assessments in the last S s)``. ``every``: a line per message.
    """

    def __init__(self, period_s: float = SUMMARY_PERIOD_S, every: bool = False,
                 components: tuple[int, int] = VEC3_COMPONENTS) -> None:
        self.period_s = period_s
        self.every = every
        self.components = components
        self.first_stamp_ns: int | None = None
        self._state: tuple[int, int, str] | None = None
        self._last_line_s: float | None = None
        self._since = 0
        self._frame_steps_named = 0

    def message(self, message: Any, now_s: float, cause: str = '',
                frame_step: tuple[int, str] = (0, ''), budget: str = '') -> list[str]:
        """Return the lines to print for ``message`` arriving at ``now_s``.

        ``cause``: what the bridge says (beside an unverified line); ``frame_step``: the bridge's
        ``(frame_steps, last_frame_step)`` (:func:`bridge_frame_step`), a new one named on a line
        that changes to a downgraded level; ``budget``: the feedback node's false-alarm budget and
        outcome rate (beside a summary line).
        """
        if self.first_stamp_ns is None:
            stamp = message.header.stamp
            self.first_stamp_ns = stamp.sec * NS_PER_S + stamp.nanosec
        line = assessment_line(message, self.first_stamp_ns, self.components)
        if cause and message.adjustment_reason.startswith(UNVERIFIED_PREFIX):
            line = f'{line}  cause: {cause}'
        state, self._state = self._state, _state(message)
        self._since += 1
        if self.every or state != self._state:
            self._last_line_s, self._since = now_s, 0
            count, text = frame_step
            downgraded = self._state[1] < self._state[0]
            if downgraded and text and count != self._frame_steps_named:
                self._frame_steps_named = count
                line = f'{line}  frames: {text}'
            return [line]
        elapsed = now_s - (self._last_line_s if self._last_line_s is not None else now_s)
        if elapsed >= self.period_s:
            count, self._since, self._last_line_s = self._since, 0, now_s
            extra = f'; {budget}' if budget else ''
            return [f'{line}  ({count} assessments in the last {elapsed:.1f} s{extra})']
        return []


def bridge_cause(status: Any, namespace: str) -> str | None:
    """Return ``'outcome_bridge LEVEL: message'`` of a bridge's DiagnosticStatus in ``namespace``.

    None for any other status (another node, another namespace).
    """
    name = status.name
    if not name.endswith(BRIDGE_TASK):
        return None
    node = name[:-len(BRIDGE_TASK)]
    if node.rsplit('/', 1)[0] != namespace:
        return None
    levels = {0: 'OK', 1: 'WARN', 2: 'ERROR', 3: 'STALE'}
    level = levels.get(status.level[0] if isinstance(status.level, bytes) else status.level, '?')
    return f'outcome_bridge {level}: {status.message}'


FEEDBACK_TASK = ': calibration'


def feedback_budget(status: Any, namespace: str) -> str | None:
    """Return ``'budget B/24 h, R outcomes/s'`` of a feedback node's status in ``namespace``.

    The false-alarm budget in time and the outcome rate the node measures (its /diagnostics
    values); None for any other status, or one without a budget (another policy).
    """
    name = status.name
    if not name.endswith(FEEDBACK_TASK) or name[:-len(FEEDBACK_TASK)].rsplit('/', 1)[0] != (
            namespace):
        return None
    values = {kv.key: kv.value for kv in status.values}
    budget = values.get('false_alarm_budget_per_day')
    if budget is None:
        return None
    rate = values.get('outcome_rate_hz', '')
    rate = f'{rate} outcomes/s' if rate and rate[0].isdigit() else 'rate not measured yet'
    return f'false-alarm budget {budget}/24 h, {rate}'


def bridge_frame_step(status: Any, namespace: str) -> tuple[int, str] | None:
    """Return ``(frame_steps, last_frame_step)`` of a bridge's status in ``namespace``, or None.

    None also for a bridge that says nothing of frame steps (an older bridge).
    """
    if bridge_cause(status, namespace) is None:
        return None
    values = {kv.key: kv.value for kv in status.values}
    if 'frame_steps' not in values:
        return None
    try:
        return int(values['frame_steps']), values.get('last_frame_step', '')
    except ValueError:
        return None


def run(args: argparse.Namespace, fail: Callable[..., int], prog: str) -> int:
    """Run ``ghost-feedback echo`` for ``args``; ``fail(message, status)`` prints one line."""
    try:
        import rclpy
        from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from project_ghost_feedback_msgs.msg import CalibratedSelfAssessment
    except ImportError as error:
        return fail(f'echo needs rclpy and project_ghost_feedback_msgs '
                    f'(source scripts/env.sh): {error}')
    import time

    from ..safe_io import terminal_text

    context = rclpy.Context()
    rclpy.init(context=context)
    node = executor = None
    received = 0
    lines = EchoLines(every=args.every, components=tuple(args.vec3_components or VEC3_COMPONENTS))
    cause = ['']
    budget = ['']
    frame_step = [(0, '')]
    try:
        node = rclpy.create_node('ghost_feedback_echo', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                         reliability=ReliabilityPolicy.RELIABLE)

        def on_message(message: Any) -> None:
            nonlocal received
            received += 1
            if args.full:
                print('\n'.join(_yaml_lines(message)))
                print('---', flush=True)
                return
            for line in lines.message(message, time.monotonic(), cause[0], frame_step[0],
                                      budget[0]):
                print(terminal_text(line), flush=True)

        subscription = node.create_subscription(
            CalibratedSelfAssessment, args.topic, on_message, qos)
        topic = subscription.topic_name
        namespace = topic.rsplit('/self_assessment/calibrated', 1)[0] \
            if topic.endswith('/self_assessment/calibrated') else ''

        def on_diagnostics(array: Any) -> None:
            for status in array.status:
                said = bridge_cause(status, namespace)
                if said is not None:
                    cause[0] = said
                    step = bridge_frame_step(status, namespace)
                    if step is not None:
                        frame_step[0] = step
                spent = feedback_budget(status, namespace)
                if spent is not None:
                    budget[0] = spent

        if not args.full:
            from diagnostic_msgs.msg import DiagnosticArray

            node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)
        start = time.monotonic()
        note_after = ECHO_NOTE_AFTER_S
        while context.ok() and (args.count is None or received < args.count):
            executor.spin_once(timeout_sec=0.1)
            now = time.monotonic()
            wanted = args.count or 1
            if args.timeout is not None and received < wanted and now - start >= args.timeout:
                return fail(f'echo: {received} of {wanted} messages on {topic} in '
                            f'{args.timeout:g} s ({subscription.get_publisher_count()} '
                            'publishers)', 1)
            if not received and now - start >= note_after:
                publishers = subscription.get_publisher_count()
                print(f'{prog}: echo: nothing received on {topic} after {note_after:g} s ('
                      + ('no publisher' if not publishers else f'{publishers} publishers')
                      + '); still waiting, Ctrl-C to stop', file=sys.stderr, flush=True)
                note_after += 60.0
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
    return 0
