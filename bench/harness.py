# SPDX-License-Identifier: Apache-2.0
"""The shared harness of the DDS benches (node_bench, bridge_dds_bench).

What every bench over DDS needs, so each bench file holds only what it measures:

- :class:`MeasuredProcess`: the node under test or its relay as its own process (log file, CPU
  time and RSS through psutil, stop by SIGINT as ``ros2 launch`` does);
- :func:`serve`: run a bench-side node (the bare relay) in its process with the project's own
  executor choice and spin loop, until SIGINT;
- :class:`CountsDiagnostics`: a relay's counters on ``/diagnostics``, read like a node's;
- :class:`DriverNode`: the load generator's node in this process, its own context, spun by an
  EventsExecutor on a background thread (the cheapest executor: it shares the 2 CPUs with the
  process measured);
- :func:`run_paced`: publish at a fixed rate; :func:`climb`: the rate ladder (the highest rate
  sustained, one retry per step);
- :func:`cpu_per_message`: process CPU per message over a fixed message count at a rate both the
  node and its relay sustain: the fine figure (a 10% change shows, the ladder's 1k steps do not);
- :func:`machine_lines`, :func:`load_average`, :func:`percentile`: report lines. Every figure is
  printed with the load average of the machine when it was taken.

The benches import it as a sibling module (their folder is ``sys.path[0]``).
"""

import math
import os
import platform
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from project_ghost_feedback.core import NS_PER_S

_T = TypeVar('_T')


# -- report --------------------------------------------------------------------------------------

def load_average() -> str:
    """Return the 1, 5 and 15 minute load averages as text."""
    return ' '.join(f'{x:.2f}' for x in os.getloadavg())


def load_1min() -> float:
    """Return the 1-minute load average."""
    return os.getloadavg()[0]


def percentile(values: Iterable[float], fraction: float) -> float:
    """Return the ``fraction`` quantile of ``values`` (nearest rank on the sorted list)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def machine_lines() -> list[str]:
    """Return lines describing the machine, Python, rclpy and the load."""
    cpu = platform.processor() or 'unknown cpu'
    try:
        with open('/proc/cpuinfo') as info:
            cpu = next(line.split(':', 1)[1].strip() for line in info
                       if line.startswith('model name'))
    except (OSError, StopIteration):
        pass
    try:
        from importlib.metadata import version
        rclpy_version = version('ros-jazzy-rclpy')
    except Exception:  # noqa: BLE001 - informational only
        rclpy_version = 'unknown'
    return [
        f'machine: {cpu}, {os.cpu_count()} cpus, {platform.platform()}',
        f'python {platform.python_version()}, rclpy {rclpy_version} (Jazzy wheels), '
        f'RMW {os.environ.get("RMW_IMPLEMENTATION", "default")}, ROS_DOMAIN_ID '
        f'{os.environ.get("ROS_DOMAIN_ID", "0")}, discovery '
        f'{os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "unset")}',
        f'date {time.strftime("%Y-%m-%d %H:%M %Z")}, load average {load_average()}',
    ]


# -- the process under measurement ---------------------------------------------------------------

class MeasuredProcess:
    """A benchmarked process: ``command`` run with its output in a temporary log file.

    It reads the process's CPU time and RSS (psutil), raises with the log's tail when it died,
    and stops it as ``ros2 launch`` does: SIGINT by PID, then SIGKILL (and a Fast DDS
    shared-memory clean-up) if it ignores SIGINT. The log is kept only when the exit code is
    not 0.
    """

    def __init__(self, command: Sequence[str], label: str, *, log_prefix: str,
                 log_dir: str | None = None) -> None:
        import psutil

        self.label = label
        self.log = tempfile.NamedTemporaryFile(
            'w+', prefix=log_prefix, suffix='.log', dir=log_dir, delete=False)
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        self.ps = psutil.Process(self.process.pid)

    def cpu_s(self) -> float:
        """Return the user + system CPU seconds used so far (all threads)."""
        times = self.ps.cpu_times()
        return times.user + times.system

    def rss_bytes(self) -> int:
        """Return the resident set size in bytes."""
        return self.ps.memory_info().rss

    def check_alive(self) -> None:
        """Raise RuntimeError with the log's tail when the process has exited."""
        if self.process.poll() is not None:
            self.log.flush()
            with open(self.log.name) as log:
                text = log.read()[-2000:]
            raise RuntimeError(f'{self.label} exited with {self.process.returncode}:\n{text}')

    def stop(self, timeout: float = 15.0) -> int | None:
        """Stop with SIGINT; SIGKILL and clean shared memory if it hangs; return the exit code.

        Idempotent: a second call returns the same exit code.
        """
        if self.log.closed:
            return self.process.returncode
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                print(f'  warning: {self.label} ignored SIGINT for {timeout:g} s: killed',
                      flush=True)
                self.process.kill()
                self.process.wait()
                subprocess.run(['fastdds', 'shm', 'clean'], capture_output=True, check=False)
        self.log.close()
        code = self.process.returncode
        if code == 0:
            os.unlink(self.log.name)
        return code


# -- bench-side nodes (the relays) ---------------------------------------------------------------

def serve(make_node: Callable[[], Any], executor_name: str) -> int:
    """Run ``make_node()`` (after ``rclpy.init``) until SIGINT or SIGTERM; return 0.

    The executor is the project's own ``make_executor(executor_name)`` and the spin loop the
    nodes' own (:func:`project_ghost_feedback.ros.node_main.spin_until_shutdown`), so a relay
    pays what the node pays around its callbacks.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from project_ghost_feedback.ros.node_kit import make_executor
    from project_ghost_feedback.ros.node_main import spin_until_shutdown

    rclpy.init()
    node = make_node()
    executor = make_executor(executor_name)
    executor.add_node(node)
    try:
        spin_until_shutdown(executor, node.context)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


class CountsDiagnostics:
    """A relay's counters (``dict`` of ints) published on ``/diagnostics`` every ``period_s``."""

    def __init__(self, node: Any, name: str, counts: dict[str, int], period_s: float) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        self._array_type = DiagnosticArray
        self._name, self._counts = name, counts
        self._publisher = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._timer = node.create_timer(period_s, self.publish)

    def publish(self) -> None:
        """Publish the counters now."""
        from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

        status = DiagnosticStatus(name=self._name, hardware_id=self._name, values=[
            KeyValue(key=key, value=str(value)) for key, value in self._counts.items()])
        self._publisher.publish(self._array_type(status=[status]))


# -- the load generator --------------------------------------------------------------------------

class DriverNode:
    """The load generator's node: its own context, spun by an EventsExecutor on a thread.

    Subclasses create their publishers and subscriptions on :attr:`node`, then call
    :meth:`start`. ``diagnostics`` holds the last ``/diagnostics`` values whose status
    ``hardware_id`` (or name) is ``status_id`` (any status with a ``published`` or
    ``estimates_received`` key when ``status_id`` is None).
    """

    def __init__(self, name: str, namespace: str = '', status_id: str | None = None) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.experimental import EventsExecutor

        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, namespace=namespace, context=self.context)
        self.status_id = status_id
        self.diagnostics: dict[str, str] | None = None
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        self._executor = EventsExecutor(context=self.context)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start spinning on the background thread (after the entities are created)."""
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, name='bench_driver_spin', daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.task import Future
        never = Future()
        while not self._stop.is_set() and self.context.ok():
            self._executor.spin_until_future_complete(never, timeout_sec=0.1)

    def _on_diagnostics(self, array: Any) -> None:
        for status in array.status:
            if self.status_id is None or self.status_id in (status.hardware_id, status.name):
                values = {kv.key: kv.value for kv in status.values}
                if self.status_id is not None or 'published' in values:
                    self.diagnostics = values

    def wait_until(self, condition: Callable[[], object], what: str,
                   target: MeasuredProcess | None = None, timeout: float = 120.0,
                   poll_s: float = 0.001) -> None:
        """Wait until ``condition()`` is true (RuntimeError on timeout, or if ``target`` died)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if target is not None:
                target.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f'timed out after {timeout:g} s waiting for {what}')
            time.sleep(poll_s)

    def close(self) -> None:
        """Stop the spin thread and shut the context down."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        self._executor.shutdown()
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


def run_paced(rate_hz: float, count: int,
              send: Callable[[], _T]) -> tuple[int, int, list[_T], int]:
    """Call ``send()`` ``count`` times at ``rate_hz``; return (start_ns, end_ns, results, late).

    ``results`` are what ``send()`` returned, in order; ``late`` counts the sends that left more
    than 10 periods after their due time (the generator could not keep up then). Below 500 Hz
    the wait is one sleep; above, sleeps of at most 1 ms (catching up in bursts when late).
    """
    results: list[_T] = []
    start = time.perf_counter_ns()
    period_ns = NS_PER_S / rate_hz
    done = late = 0
    while done < count:
        now = time.perf_counter_ns()
        due = min(count, int((now - start) / period_ns) + 1)
        if due <= done:
            wait_ns = start + done * period_ns - now
            if wait_ns > 0:
                wait_s = wait_ns / NS_PER_S
                time.sleep(min(wait_s, 0.001) if rate_hz > 500 else wait_s)
            continue
        if now - (start + done * period_ns) > 10 * period_ns:
            late += due - done
        while done < due:
            results.append(send())
            done += 1
    return start, time.perf_counter_ns(), results, late


def climb(ladder: Iterable[float], measure_step: Callable[[float], dict[str, Any]], label: str,
          drain: Callable[[], object] = lambda: None) -> tuple[float, list[dict[str, Any]]]:
    """Climb ``ladder`` until a rate is not sustained (twice); return (best, steps).

    ``measure_step(rate)`` returns a dict with at least ``sustained``, ``generator_limited``,
    ``achieved_hz`` and a ``summary`` text. A step not sustained is retried once (a shared
    machine); a step where the generator could not send at the rate ends the ladder, its
    achieved rate a lower bound.
    """
    best: float
    steps: list[dict[str, Any]]
    best, steps = 0.0, []
    for rate in ladder:
        step = measure_step(rate)
        if not step['sustained']:
            drain()
            step = measure_step(rate)
        steps.append(step)
        print(f'    {label:24s} {rate:7.0f} Hz: '
              f'{"sustained" if step["sustained"] else "NOT sustained"} ({step["summary"]}; '
              f'load {load_1min():.2f})', flush=True)
        if step['generator_limited']:
            print('    (the generator could not send faster: the figure is a lower bound)')
            if step['sustained']:
                best = max(best, step['achieved_hz'])
            break
        if not step['sustained']:
            break
        best = rate
        drain()
    return best, steps


def cpu_per_message(target: MeasuredProcess, run: Callable[[], object], messages: int,
                    repeats: int = 3) -> tuple[float, list[float], list[float]]:
    """Return CPU us per message of ``target``: (best, all repeats, load averages).

    ``run()`` sends ``messages`` messages at a rate the target sustains and returns once the
    target has handled them all (its outputs came back); the target's process CPU time (user +
    system, every thread: DDS, executor, callbacks, recording) over that run, divided by
    ``messages``. Best of ``repeats``: other processes on a shared machine only add to it
    (cache and scheduler effects), so the lowest is the closest to the cost itself.
    """
    samples: list[float]
    loads: list[float]
    samples, loads = [], []
    for _ in range(repeats):
        cpu0 = target.cpu_s()
        run()
        samples.append((target.cpu_s() - cpu0) / messages * 1e6)
        loads.append(load_1min())
        target.check_alive()
    return min(samples), samples, loads
