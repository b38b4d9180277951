# SPDX-License-Identifier: Apache-2.0
"""A private rclpy context, executors spun in turn, and /clock published until a node reads it."""

TURN_TIMEOUT_S = 0.001
"""How long one executor of several spun in turn waits for work (:func:`spin_in_turn`)."""


def new_rclpy_context(args=None):
    """Return a new private rclpy Context, initialised (with ``args`` when given).

    The caller shuts it down (``context.try_shutdown()``). Tests take the ``rclpy_context``
    fixture instead; harness classes, module fixtures and command-line ``args`` use this.
    In the fast tier ``rclpy.init`` skips the test (``_fast_tier_guard``).
    """
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context, args=args)
    return context


def spin_in_turn(*executors):
    """Spin each executor once, in turn, each waiting at most ``TURN_TIMEOUT_S`` for work.

    Several executors spun from one thread (a node on its own executor, a client on another):
    the next message is often for the other one, so a longer wait here is idle time on every
    round trip (5 ms each made some tests twice as long). Callers loop on progress, with their
    own ceilings.
    """
    for executor in executors:
        executor.spin_once(timeout_sec=TURN_TIMEOUT_S)


def publish_clock_until(spin_until, publisher, node, stamp_ns):
    """Publish /clock = ``stamp_ns`` (again every 50 ms) until ``node``'s clock reads it.

    ``spin_until(condition, what)`` is the caller's progress wait (with its ceiling).
    """
    import time

    from rosgraph_msgs.msg import Clock

    from project_ghost_feedback.core import NS_PER_S

    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(stamp_ns, NS_PER_S)
    last = [0.0]

    def reads():
        if node.get_clock().now().nanoseconds == stamp_ns:
            return True
        if time.monotonic() - last[0] > 0.05:
            publisher.publish(msg)
            last[0] = time.monotonic()
        return False

    spin_until(reads, f'the node clock to read {stamp_ns} ns')
