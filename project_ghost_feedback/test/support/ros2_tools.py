# SPDX-License-Identifier: Apache-2.0
"""The real ros2 tools as processes, and a feeder of the bridge's inputs."""

import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from support.ros_context import new_rclpy_context
from rcl_interfaces.srv import GetParameters
import rclpy
from rclpy.parameter import parameter_value_to_python
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.ros.conversions import belief_to_msg, outcome_to_msg


DEADLINE_S = 30.0
"""Upper bound of any wait for the node or its output; a healthy run needs a fraction of it."""


SECOND_NS = 1_000_000_000


QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE)


class Process:
    """A ``ros2 launch`` / ``ros2 run`` process in its own process group, output to a file."""

    def __init__(self, *args, cwd=None):
        """Start ``ros2 *args`` (in ``cwd``, when given)."""
        self._log = tempfile.TemporaryFile(mode='w+')
        self.popen = subprocess.Popen(
            ('ros2',) + args, stdout=self._log, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, cwd=cwd)

    def output(self):
        """Return everything the process printed so far."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read()

    def stop(self, sig=signal.SIGINT, timeout=DEADLINE_S):
        """Send ``sig`` to the whole process group and return the exit code (kill on timeout)."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
            raise

    def close(self):
        """Kill the process group if it still runs, and drop the log."""
        if self.popen.poll() is None:
            try:
                self.stop(signal.SIGKILL, timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        self._log.close()


def wait_for_output(process, needles, what, deadline_s=2 * DEADLINE_S):
    """Wait (bounded) until every string of ``needles`` is in ``process``'s output; return it."""
    deadline = time.monotonic() + deadline_s
    while True:
        text = process.output()
        missing = [needle for needle in needles if needle not in text]
        if not missing:
            return text
        assert process.popen.poll() is None, f'{what}: the process ended\n{text}'
        assert time.monotonic() < deadline, f'{what}: no {missing} within {deadline_s} s\n{text}'
        time.sleep(0.1)


def subscribed(topics):
    """Return the lines ``ros2 bag record`` logs once it records each of ``topics``."""
    return [f"Subscribed to topic '{topic}'" for topic in topics]


def qos_overrides_file(path, topics, depth=1000, durability='volatile'):
    """Write a ``ros2 bag record|play --qos-profile-overrides-path`` file; return its path.

    Every ``topics`` entry gets reliable, KEEP_LAST ``depth``, ``durability``. For ``record``:
    rosbag2 subscribes KEEP_LAST 10 (rosbag2_storage's Rosbag2QoS), so a test that publishes a
    burst of more than 10 reliable messages can lose some in the recorder's own queue on a
    loaded machine (measured: 6 of 400 in 1 of 8 runs here); volatile is what the tests'
    publishers offer. For ``play``: ``transient_local`` keeps what the player published before
    its writers matched a (transient_local) reader, which a loaded machine delays.
    """
    infinite = {'sec': 0, 'nsec': 0}  # rmw's "default": no deadline, lifespan or lease
    profile = {'history': 'keep_last', 'depth': depth, 'reliability': 'reliable',
               'durability': durability, 'deadline': infinite, 'lifespan': infinite,
               'liveliness': 'automatic', 'liveliness_lease_duration': infinite,
               'avoid_ros_namespace_conventions': False}
    import yaml

    path.write_text(yaml.safe_dump({topic: profile for topic in topics}), encoding='utf-8')
    return path


def spin_until_shutdown(executor, context):
    """Spin ``executor`` until ``context`` is shut down (a test's feeder thread)."""
    while context.ok():
        try:
            executor.spin_once(timeout_sec=0.1)
        except Exception:  # noqa: B902 - the context is shut down under the executor
            if context.ok():
                raise
            return


class BackgroundNode:
    """A node in a private rclpy.Context, spun by a background thread once :meth:`start` runs."""

    def __init__(self, node_name):
        self.context = new_rclpy_context()
        self.node = rclpy.create_node(node_name, context=self.context)
        self._executor = SingleThreadedExecutor(context=self.context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(
            target=spin_until_shutdown, args=(self._executor, self.context), daemon=True)

    def start(self):
        """Start spinning (after the subclass made its publishers, subscriptions and timers)."""
        self._thread.start()

    def close(self):
        """Stop the thread and shut the private context down."""
        self.context.try_shutdown()
        self._thread.join(timeout=10)
        self.node.destroy_node()


class Feeder(BackgroundNode):
    """Publish a calibrated input stream into ``namespace`` and collect the node's output.

    A background thread spins a node in a private rclpy.Context: every 0.1 s it publishes one
    step (four PredictionOutcome, one BeliefSelfAssessment) with increasing stamps.
    """

    def __init__(self, namespace='', output='self_assessment/calibrated'):
        """Publish to ``prediction_outcome`` and ``self_assessment/raw`` in ``namespace``."""
        prefix = '/' + namespace.strip('/') if namespace.strip('/') else ''
        super().__init__('cli_test_feeder')
        self._outcomes = self.node.create_publisher(
            PredictionOutcomeMsg, f'{prefix}/prediction_outcome', QOS)
        self._raw = self.node.create_publisher(
            BeliefSelfAssessmentMsg, f'{prefix}/self_assessment/raw', QOS)
        self._lock = threading.Lock()
        self.received = []
        self.node.create_subscription(
            CalibratedSelfAssessmentMsg, f'{prefix}/{output}',
            self._on_calibrated, QOS)
        self._rng = random.Random(14)
        self._step = 0
        self.node.create_timer(0.1, self._publish_step)
        self.start()

    def _on_calibrated(self, msg):
        with self._lock:
            self.received.append(msg)

    def _publish_step(self):
        step, rng = self._step, self._rng
        self._step += 1
        for j in range(4):
            observed = step * SECOND_NS + (j + 1) * (SECOND_NS // 5)
            self._outcomes.publish(outcome_to_msg(PredictionOutcome(
                prediction_stamp_sim_ns=observed - SECOND_NS // 10,
                observed_stamp_sim_ns=observed,
                position_error_m=tuple(rng.uniform(-0.5, 0.5) for _ in range(3)),
                orientation_error_rad=tuple(rng.uniform(-0.05, 0.05) for _ in range(3)),
                position_mahalanobis=rng.uniform(0.0, 2.5),
                orientation_mahalanobis=rng.uniform(0.0, 2.5))))
        self._raw.publish(belief_to_msg(BeliefSelfAssessment(
            belief_stamp_sim_ns=(step + 1) * SECOND_NS,
            overall_level=SelfAssessmentLevel.KNOWN)))

    def wait_for(self, condition, what):
        """Wait (bounded) until ``condition(msg)`` holds for a received message; return it."""
        deadline = time.monotonic() + DEADLINE_S
        seen = 0
        while time.monotonic() < deadline:
            with self._lock:
                fresh = self.received[seen:]
                seen = len(self.received)
            for msg in fresh:
                if condition(msg):
                    return msg
            time.sleep(0.05)
        raise AssertionError(f'no calibrated output {what} within {DEADLINE_S} s '
                             f'({seen} messages received)')

    def parameter(self, node_name, name):
        """Return the value of parameter ``name`` of ``node_name``, read with rclpy (bounded)."""
        client = self.node.create_client(GetParameters, f'{node_name}/get_parameters')
        try:
            assert client.wait_for_service(timeout_sec=DEADLINE_S), node_name
            future = client.call_async(GetParameters.Request(names=[name]))
            deadline = time.monotonic() + DEADLINE_S
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert future.done(), f'no answer from {node_name}/get_parameters'
            return parameter_value_to_python(future.result().values[0])
        finally:
            self.node.destroy_client(client)
