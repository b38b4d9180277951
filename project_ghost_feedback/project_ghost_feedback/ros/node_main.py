# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the project nodes: main() (signals, spin, exit codes) and queue draining."""

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from .feedback_node import ShutdownRequest, spin_until_shutdown


def run_node(make_node, logger_name, args=None, make_executor=None):
    """Build a node with ``make_node()`` and spin it until SIGINT or SIGTERM.

    Return 0 on a clean shutdown, 2 when ``make_node`` raises ValueError (an invalid start-up
    configuration, logged on the ROS logger ``logger_name``). ``make_executor(node)`` chooses the
    executor (default: a SingleThreadedExecutor).
    """
    shutdown = ShutdownRequest()
    shutdown.install()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = None
    exit_code = 0
    try:
        node = make_node()
        executor = make_executor(node) if make_executor else SingleThreadedExecutor()
        executor.add_node(node)
        spin_until_shutdown(executor, node.context, stop=shutdown.__bool__)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as error:
        rclpy.logging.get_logger(logger_name).error(str(error))
        exit_code = 2
    except Exception:
        # The context shut down under the executor: its next wait set raises (Jazzy).
        if rclpy.ok():
            raise
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        shutdown.restore()
    return exit_code


def drain_queued(node, subscription, callback, limit):
    """Take up to ``limit`` messages already queued on ``subscription``; pass each to ``callback``.

    Lets a node handle the messages of one input that arrived before the message it is about to
    handle on another (the executor takes one message per ready subscription per turn).
    """
    try:
        with subscription.handle:
            for _ in range(limit):
                taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
                if taken is None:
                    return
                callback(taken[0])
    except Exception as error:  # noqa: BLE001 - never lose the message being handled
        node.get_logger().debug(f'queue drain unavailable: {error!r}', once=True)
