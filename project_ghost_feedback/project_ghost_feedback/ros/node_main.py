# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the project nodes: main() (signals, spin, exit codes)."""

from collections.abc import Callable
import os
import signal
from types import FrameType
from typing import Any, TypeVar

import rclpy
from rclpy.context import Context
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

LOG_FORMAT = '[{severity}] [{name}]: {message}'
"""rcutils' console format for the project nodes (no epoch seconds: see node_kit.TimedLogger)."""
# Exit codes of run_node(): 2 is reserved for an invalid start-up configuration.
EXIT_OK, EXIT_RUNTIME_ERROR, EXIT_BAD_CONFIGURATION = 0, 1, 2
NodeT = TypeVar('NodeT', bound=Node)


class ShutdownRequest:
    """SIGINT and SIGTERM handlers that only record the request; the spin loop polls it.

    rclpy's own handlers act from whichever thread the signal lands on and shut the context down
    at once: during start-up that leaves half-built rclpy objects whose ``__del__`` prints a
    traceback, and ``EventsExecutor.spin()`` (rclpy 7.1) never returns after it. Python runs
    these handlers in the main thread between bytecodes, so a request is never acted on in the
    middle of building or handling anything.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[signal.Signals, Any] = {}

    def __bool__(self) -> bool:
        return self.signum is not None

    def install(self) -> None:
        """Install the handlers (main thread only), remembering the previous ones."""
        for signum in self.SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signum = signum

    def restore(self) -> None:
        """Put the previous handlers back; after a signal, ignore SIGINT and SIGTERM instead.

        After a SIGINT or SIGTERM the process is ending: a second one is ignored until it has
        exited (Ctrl-C in a terminal reaches ``ros2 launch`` and its nodes alike, and launch then
        sends its own SIGINT). Python's handlers would not do: while the interpreter finalizes it
        puts the default action back, and the process died by the signal (exit -2) after a
        clean shutdown. An ignored signal stays ignored through finalization.
        """
        for signum, handler in self._previous.items():
            signal.signal(signum, signal.SIG_IGN if self else handler)
        self._previous.clear()


def spin_until_shutdown(executor: Executor, context: Context,
                        stop: Callable[[], bool] = lambda: False, period_s: float = 0.1,
                        on_error: Callable[[Exception], None] | None = None) -> None:
    """Spin ``executor`` until ``stop()`` is true or ``context`` is shut down.

    Bounded ``spin_once`` calls, so ``stop`` is checked at least every ``period_s`` seconds:
    signal handlers recorded by :class:`ShutdownRequest` are acted on within that time. With
    ``on_error``, an exception raised by a callback while the context is up (e.g. rclpy's own
    /clock callback given a negative time) is passed to it and spinning goes on; without it, the
    exception propagates.
    """
    while context.ok() and not stop():
        try:
            executor.spin_once(timeout_sec=period_s)
        except (KeyboardInterrupt, ExternalShutdownException):
            raise
        except Exception as error:  # noqa: BLE001 - a long-running node survives a bad message
            if on_error is None or not context.ok():
                raise
            on_error(error)


def run_node(make_node: Callable[[], NodeT], logger_name: str, args: list[str] | None = None,
             make_executor: Callable[[NodeT], Executor] | None = None,
             on_error: Callable[[NodeT, Exception], None] | None = None) -> int:
    """Build a node with ``make_node()`` and spin it until SIGINT or SIGTERM.

    Return 0 on a clean shutdown; 2 when ``make_node`` raises ValueError (an invalid start-up
    configuration, logged FATAL on the ROS logger ``logger_name``, so /rosout and the log files
    have it); 1 for a failure while running (never 2). ``make_executor(node)`` chooses the
    executor (default: a SingleThreadedExecutor). With ``on_error(node, error)``, an exception a
    callback raises while spinning is handed to it and the node runs on.
    """
    shutdown = ShutdownRequest()
    shutdown.install()
    # The nodes' lines carry their own time (node_kit.TimedLogger: seconds since start, ROS
    # time); rcutils' {time} would add epoch seconds. A format the user set is kept.
    os.environ.setdefault('RCUTILS_CONSOLE_OUTPUT_FORMAT', LOG_FORMAT)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    logger = rclpy.logging.get_logger(logger_name)
    node: NodeT | None = None
    executor: Executor | None = None
    exit_code = EXIT_OK
    try:
        try:
            node = make_node()
        except ValueError as error:
            logger.fatal(f'cannot start: {error}')
            exit_code = EXIT_BAD_CONFIGURATION
        else:
            logger = node.get_logger()
            executor = make_executor(node) if make_executor else SingleThreadedExecutor()
            executor.add_node(node)
            spin_until_shutdown(
                executor, node.context, stop=shutdown.__bool__,
                on_error=None if on_error is None else lambda error: on_error(node, error))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as error:  # noqa: BLE001 - report a runtime failure, never as exit 2
        if rclpy.ok():
            # The context was not shut down under the executor: a real failure while running.
            logger.fatal(f'stopped by an error while running: {type(error).__name__}: {error}')
            exit_code = EXIT_RUNTIME_ERROR
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()  # the feedback node finishes its telemetry bag here
        rclpy.try_shutdown()
        shutdown.restore()
    return exit_code
