# SPDX-License-Identifier: Apache-2.0
"""A private rclpy context, and /clock published until a node's clock reads a stamp."""


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
