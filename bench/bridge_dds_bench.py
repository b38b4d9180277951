#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bridge over DDS: pairs/s the outcome_bridge node sustains, and its CPU per pair.

The bridge runs as its own process (``python -m project_ghost_feedback.ros.outcome_bridge_node``,
loopback DDS, decorrelation off so every pair gives an outcome). This process publishes
``nav_msgs/Odometry`` references and estimates with the same stamps (no interpolation work
skipped: the lookup still runs), at most ``--in-flight`` estimates ahead of the assessments
that came back, and counts the bridge's outputs. Flow control makes the figure the bridge's
sustained rate, never a queue overflow. Beside it, the pure bridge path (pose error + pacer +
claim, ``bench/bridge_bench.py``'s loop) in this process, and the ratio of the two.

    python3 bench/bridge_dds_bench.py [--pairs N] [--in-flight W]

Figures, not a gate: a 2-CPU machine shares its cores between the driver and the bridge.
"""

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

NS_PER_S = 1_000_000_000
COVARIANCE = [0.0] * 36
for _i in range(6):
    COVARIANCE[_i * 7] = 0.01


def _odometry(msg_type, stamp_ns, x, yaw):
    msg = msg_type()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, NS_PER_S)
    msg.header.frame_id = 'odom'
    msg.pose.pose.position.x = x
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    msg.pose.covariance = COVARIANCE
    return msg


class Bridge:
    """The outcome bridge as its own process, in namespace ``namespace``."""

    def __init__(self, namespace):
        command = [sys.executable, '-m', 'project_ghost_feedback.ros.outcome_bridge_node',
                   '--ros-args', '-r', f'__ns:={namespace}',
                   '-p', 'decorrelation.adaptive:=false',
                   '-p', 'decorrelation.min_interval_s:=0.0']
        self.log = tempfile.NamedTemporaryFile('w+', prefix='bridge_dds_bench_', suffix='.log',
                                               delete=False)
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        import psutil
        self.ps = psutil.Process(self.process.pid)

    def cpu_s(self):
        """Return the bridge's user + system CPU seconds so far."""
        times = self.ps.cpu_times()
        return times.user + times.system

    def check_alive(self):
        """Raise RuntimeError with the log tail when the bridge exited."""
        if self.process.poll() is not None:
            self.log.flush()
            with open(self.log.name) as log:
                raise RuntimeError(f'bridge exited {self.process.returncode}: {log.read()[-2000:]}')

    def stop(self):
        """SIGINT (by PID), as ros2 launch does; return the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        if self.process.returncode == 0:
            os.unlink(self.log.name)
        return self.process.returncode


def run_dds(pairs, in_flight):
    """Return (pairs/s wall, bridge CPU us per pair, outcomes received, exit code)."""
    import rclpy
    from nav_msgs.msg import Odometry
    from project_ghost_feedback_msgs.msg import BeliefSelfAssessment, PredictionOutcome
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    namespace = f'/bridge_dds_bench_{os.getpid()}'
    bridge = Bridge(namespace)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('bridge_dds_bench_driver', namespace=namespace, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    estimates = node.create_publisher(Odometry, 'estimate', qos)
    references = node.create_publisher(Odometry, 'reference', qos)
    received = {'assessments': 0, 'outcomes': 0}
    node.create_subscription(BeliefSelfAssessment, 'self_assessment/raw',
                             lambda _: received.__setitem__('assessments',
                                                            received['assessments'] + 1), qos)
    node.create_subscription(PredictionOutcome, 'prediction_outcome',
                             lambda _: received.__setitem__('outcomes', received['outcomes'] + 1),
                             qos)

    def spin_until(condition, what, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not condition():
            bridge.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f'timed out waiting for {what}: {received}')
            executor.spin_once(timeout_sec=0.001)

    try:
        spin_until(lambda: (estimates.get_subscription_count() >= 1
                            and references.get_subscription_count() >= 1
                            and node.count_publishers(f'{namespace}/self_assessment/raw') >= 1
                            and node.count_publishers(f'{namespace}/prediction_outcome') >= 1),
                   'the bridge to match', timeout=30.0)
        stamp_ns = NS_PER_S
        step_ns = NS_PER_S // 100   # 100 Hz stamps; the rate itself is set by flow control
        # Warm-up (also proves the data path): 200 pairs, one at a time.
        for _ in range(200):
            references.publish(_odometry(Odometry, stamp_ns, 0.0, 0.0))
            estimates.publish(_odometry(Odometry, stamp_ns, 0.05, 0.01))
            stamp_ns += step_ns
            sent = received['assessments'] + 1
            spin_until(lambda: received['assessments'] >= sent, 'a warm-up assessment')
        base_assessments, base_outcomes = received['assessments'], received['outcomes']
        reference = _odometry(Odometry, 0, 0.0, 0.0)
        estimate = _odometry(Odometry, 0, 0.05, 0.01)
        cpu0, start = bridge.cpu_s(), time.perf_counter()
        for index in range(pairs):
            for msg in (reference, estimate):
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, NS_PER_S)
            references.publish(reference)
            estimates.publish(estimate)
            stamp_ns += step_ns
            executor.spin_once(timeout_sec=0)
            while index + 1 - (received['assessments'] - base_assessments) > in_flight:
                executor.spin_once(timeout_sec=0.001)
        spin_until(lambda: received['assessments'] - base_assessments >= pairs, 'the last output')
        elapsed, cpu = time.perf_counter() - start, bridge.cpu_s() - cpu0
        spin_until(lambda: received['outcomes'] - base_outcomes >= pairs, 'the last outcome',
                   timeout=10.0)
        outcomes = received['outcomes'] - base_outcomes
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
        code = bridge.stop()
    return pairs / elapsed, cpu / pairs * 1e6, outcomes, code


def main(argv=None):
    """Run the bench and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pairs', type=int, default=20_000)
    parser.add_argument('--in-flight', type=int, default=50,
                        help='estimates sent ahead of the returned assessments (default 50)')
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bridge_bench import _bench_pairs

    pure = _bench_pairs(60.0)
    rate, cpu_us, outcomes, code = run_dds(args.pairs, args.in_flight)
    load = os.getloadavg()[0]
    print(f'bridge over DDS: {args.pairs} pairs, at most {args.in_flight} in flight, '
          f'{os.cpu_count()} CPUs, load {load:.1f}')
    print(f'  pure bridge path (this process):  {pure:>10,.0f} pairs/s ({1e6 / pure:.0f} us/pair)')
    print(f'  outcome_bridge node over DDS:     {rate:>10,.0f} pairs/s = {rate / pure:.2f}x the '
          f'pure path; bridge CPU {cpu_us:.0f} us/pair')
    print(f'  outputs: {args.pairs} assessments, {outcomes} outcomes; bridge exit code {code}')
    return 0 if code == 0 and outcomes == args.pairs else 1


if __name__ == '__main__':
    sys.exit(main())
