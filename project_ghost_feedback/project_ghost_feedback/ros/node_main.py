# SPDX-License-Identifier: Apache-2.0
"""The main() of a project node: signals, spin, clean exit codes (one place for every node)."""

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
