# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback echo``: the calibrated self-assessments as they are published, readable live.

By default one line per message (:func:`assessment_line`: time from the first message, raw ->
calibrated level by name, the policy's reason, k per vec3 with its 95% interval); ``--full``
prints the whole message as ``ros2 topic echo`` would (YAML). Silence is said on stderr after
:data:`ECHO_NOTE_AFTER_S`, then once a minute; ``--timeout`` ends it with one line, exit 1.
"""

import argparse
from collections.abc import Callable
import math
import sys
from typing import Any

from ..core import NS_PER_S


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


def assessment_line(message: Any, first_stamp_ns: int) -> str:
    """Return one line of a CalibratedSelfAssessment message: what a user reads live.

    ``+12.300 s  KNOWN -> UNCERTAIN  significant_overconfidence  k (ratio of stds, 95%):
    position 2.90 [2.51, 3.40], orientation 1.10 [0.80, 1.50]``: the time from
    ``first_stamp_ns`` (the first message echoed), the raw and calibrated levels by name, the
    policy's reason and the overconfidence factor k per vec3 (the ratio of the real error's
    standard deviation to the claimed one, with its 95% interval; docs/policies.md).
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
        estimates = format_overconfidence(history_from_msg(message.calibration_history))
    except (TypeError, ValueError):  # a history that fails its contract: say so, go on
        estimates = {}
    k = ', '.join(f'{vec3} {text}' for vec3, text in estimates.items() if text)
    return (f'+{(stamp - first_stamp_ns) / NS_PER_S:.3f} s  {change}  '
            f'{message.adjustment_reason or "-"}  '
            + (f'k (ratio of stds, 95%): {k}' if k else 'k: - (no outcomes in the window)'))


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
    first_stamp: list[Any] = [None]
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
            if first_stamp[0] is None:
                stamp = message.header.stamp
                first_stamp[0] = stamp.sec * NS_PER_S + stamp.nanosec
            print(terminal_text(assessment_line(message, first_stamp[0])), flush=True)

        subscription = node.create_subscription(
            CalibratedSelfAssessment, args.topic, on_message, qos)
        topic = subscription.topic_name
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
