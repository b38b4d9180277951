#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bridge over DDS: pairs/s beside a bare rclpy relay, CPU per pair, and accounting at 1 kHz.

One run, three parts, each against its own process over loopback DDS:

1. **Relay**: a bare rclpy node (this file, ``--serve-relay``) with the bridge's QoS: two
   BEST_EFFORT Odometry subscriptions, and for every estimate one PredictionOutcome and one
   BeliefSelfAssessment (prebuilt, only the stamp set) on the bridge's reliable outputs. The
   ceiling of a Python node that takes two messages and publishes two.
2. **Bridge**: the outcome_bridge node
   (``python -m project_ghost_feedback.ros.outcome_bridge_node``, decorrelation off, so every pair
   gives an outcome), with each of ``--executors``.

   Both driven alike and running at once, each in its own namespace with its own driver:
   references and estimates with the same stamps (the lookup still runs). First the fine figure:
   the process's CPU per pair over ``--cpu-pairs`` pairs at ``--cpu-rate-hz`` (a rate both
   sustain), in ``--cpu-repeats`` rounds of one run of each back to back (order alternating, so
   both see the same load): best of each, and the median relay / bridge ratio of the rounds,
   where a 10% change shows. Then at most ``--in-flight``
   estimates ahead of the assessments that came back (flow control, so the figure is the
   sustained rate, never a queue overflow): pairs/s and CPU per pair.
3. **Accounting at a fixed rate**: the bridge fed ``--rate-hz`` pairs/s open loop for
   ``--duration-s``; afterwards its /diagnostics must account for every input sent:
   ``sent = received + messages_missed`` (sequence gaps: losses before the bridge took them) and
   ``received = paired + dropped + pending`` (``estimates_unaccounted``).

    python3 bench/bridge_dds_bench.py [--pairs N] [--in-flight W] [--rate-hz R] [--duration-s S]
    python3 bench/bridge_dds_bench.py --no-pure --pairs 0 --duration-s 0   # CPU per pair only

The process, the relay's spin, the driver's node, pacing and CPU per message are bench/harness.py
(shared with node_bench).

Figures, not a gate: a 2-CPU machine shares its cores between the driver and the node.
"""

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from harness import (
    cpu_per_message,
    DriverNode,
    load_1min,
    MeasuredProcess,
    run_paced,
    serve,
)
from project_ghost_feedback.core import NS_PER_S

COVARIANCE = [0.0] * 36
for _i in range(6):
    COVARIANCE[_i * 7] = 0.01
INPUT_DEPTH = 1000


def _odometry(msg_type: Callable[[], Any], stamp_ns: int, x: float, yaw: float) -> Any:
    msg = msg_type()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, NS_PER_S)
    msg.header.frame_id = 'odom'
    msg.pose.pose.position.x = x
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    msg.pose.covariance = COVARIANCE
    return msg


def make_relay(namespace: str) -> Any:
    """Return the bare relay node (``--serve-relay``): the bridge's QoS, none of its work."""
    import rclpy
    from nav_msgs.msg import Odometry
    from project_ghost_feedback_msgs.msg import BeliefSelfAssessment, PredictionOutcome
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    node = rclpy.create_node('bare_relay', namespace=namespace)
    inputs = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=INPUT_DEPTH,
                        reliability=ReliabilityPolicy.BEST_EFFORT)
    outputs = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
    outcomes = node.create_publisher(PredictionOutcome, 'prediction_outcome', outputs)
    assessments = node.create_publisher(BeliefSelfAssessment, 'self_assessment/raw', outputs)
    outcome, assessment = PredictionOutcome(), BeliefSelfAssessment()
    outcome.schema_version = assessment.schema_version = PredictionOutcome.SCHEMA_VERSION

    def on_estimate(msg: Any) -> None:
        outcome.header = assessment.header = msg.header
        outcomes.publish(outcome)
        assessments.publish(assessment)

    node.create_subscription(Odometry, 'reference', lambda msg: None, inputs)
    node.create_subscription(Odometry, 'estimate', on_estimate, inputs)
    return node


class Process(MeasuredProcess):
    """A node under test as its own process (the relay or the bridge), in ``namespace``."""

    def __init__(self, kind: str, namespace: str, executor: str = 'single_threaded') -> None:
        python = [sys.executable]
        if kind == 'relay':
            command = python + [os.path.abspath(__file__), '--serve-relay', namespace,
                                '--relay-executor', executor]
        else:
            command = python + ['-m', 'project_ghost_feedback.ros.outcome_bridge_node',
                                '--ros-args', '-r', f'__ns:={namespace}',
                                '-p', 'decorrelation.adaptive:=false',
                                '-p', 'decorrelation.min_interval_s:=0.0',
                                '-p', f'executor:={executor}',
                                '-p', 'diagnostics_period_s:=0.5']
        super().__init__(command, f'{kind}[{executor}]', log_prefix=f'bridge_dds_bench_{kind}_')


class Driver(DriverNode):
    """This process's side: publishes the two inputs, counts the outputs and /diagnostics."""

    def __init__(self, namespace: str, target: MeasuredProcess) -> None:
        from nav_msgs.msg import Odometry
        from project_ghost_feedback_msgs.msg import BeliefSelfAssessment, PredictionOutcome
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

        super().__init__('bridge_dds_bench_driver', namespace,
                         status_id=f'{namespace}/outcome_bridge')
        self.namespace, self.target = namespace, target
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.estimates = self.node.create_publisher(Odometry, 'estimate', qos)
        self.references = self.node.create_publisher(Odometry, 'reference', qos)
        self.received = {'assessments': 0, 'outcomes': 0}
        self.node.create_subscription(BeliefSelfAssessment, 'self_assessment/raw',
                                      lambda _: self._count('assessments'), qos, raw=True)
        self.node.create_subscription(PredictionOutcome, 'prediction_outcome',
                                      lambda _: self._count('outcomes'), qos, raw=True)
        self.reference = _odometry(Odometry, 0, 0.0, 0.0)
        self.estimate = _odometry(Odometry, 0, 0.05, 0.01)
        self.stamp_ns = NS_PER_S
        self.start()

    @property
    def status(self) -> dict[str, str]:
        """Return the bridge's last /diagnostics values (empty before the first)."""
        return self.diagnostics or {}

    def _count(self, key: str) -> None:
        self.received[key] += 1

    def spin_until(self, condition: Callable[[], object], what: str, timeout: float = 120.0,
                   poll_s: float = 0.0002) -> None:
        self.wait_until(condition, what, self.target, timeout, poll_s)

    def send_pair(self) -> None:
        for msg in (self.reference, self.estimate):
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(self.stamp_ns, NS_PER_S)
        self.references.publish(self.reference)
        self.estimates.publish(self.estimate)
        self.stamp_ns += NS_PER_S // 1000

    def connect(self) -> None:
        """Wait for the match, then send pairs until one comes back (best-effort inputs)."""
        self.spin_until(lambda: (self.estimates.get_subscription_count() >= 1
                                 and self.references.get_subscription_count() >= 1
                                 and self.node.count_publishers(
                                     f'{self.namespace}/self_assessment/raw') >= 1),
                        'the match', timeout=60.0)
        last = 0.0

        def answered() -> bool:
            nonlocal last
            if time.monotonic() - last > 0.1:
                self.send_pair()
                last = time.monotonic()
            return self.received['assessments'] > 0

        self.spin_until(answered, 'a first answer', timeout=60.0)

    def warm_up(self, pairs: int = 200) -> None:
        """Send ``pairs`` pairs one at a time, each after the previous answer."""
        for _ in range(pairs):
            sent = self.received['assessments'] + 1
            self.send_pair()
            self.spin_until(lambda: self.received['assessments'] >= sent, 'a warm-up answer')

    def flow(self, pairs: int, in_flight: int) -> tuple[float, float]:
        """Send ``pairs`` pairs, at most ``in_flight`` ahead; return (pairs/s, CPU us/pair)."""
        base = self.received['assessments']
        cpu0, start = self.target.cpu_s(), time.perf_counter()
        for index in range(pairs):
            self.send_pair()
            if index + 1 - (self.received['assessments'] - base) > in_flight:
                self.spin_until(lambda: index + 1 - (self.received['assessments'] - base)
                                <= in_flight, 'an answer')
        self.spin_until(lambda: self.received['assessments'] - base >= pairs, 'the last answer')
        elapsed, cpu = time.perf_counter() - start, self.target.cpu_s() - cpu0
        return pairs / elapsed, cpu / pairs * 1e6

    def paced(self, rate_hz: float, pairs: int) -> int:
        """Send ``pairs`` pairs at ``rate_hz``; wait for the answers; return how many came.

        Best-effort inputs may lose a few under load: the wait ends when every answer came or
        none came for a second.
        """
        base = self.received['assessments']
        run_paced(rate_hz, pairs, self.send_pair)
        last, since = -1, time.monotonic()
        while self.received['assessments'] - base < pairs and time.monotonic() - since < 1.0:
            if self.received['assessments'] != last:
                last, since = self.received['assessments'], time.monotonic()
            time.sleep(0.01)
        return self.received['assessments'] - base

    def fixed_rate(self, rate_hz: float, duration_s: float) -> dict[str, Any]:
        """Send pairs open loop at ``rate_hz`` for ``duration_s``; return the figures."""
        quiet_until = time.monotonic() + 2.0   # > 3 diagnostics periods: a status after the flow
        self.spin_until(lambda: time.monotonic() > quiet_until, 'a quiet status', poll_s=0.05)
        sent0 = int(self.status.get('estimates_received', 0))
        missed0 = int(self.status.get('estimate_messages_missed', 0))
        received0 = dict(self.received)
        count = int(rate_hz * duration_s)
        cpu0 = self.target.cpu_s()
        start_ns, end_ns, _, late = run_paced(rate_hz, count, self.send_pair)
        elapsed = (end_ns - start_ns) / NS_PER_S
        cpu = self.target.cpu_s() - cpu0

        def settled() -> bool:
            status = self.status
            taken = (int(status.get('estimates_received', 0))
                     + int(status.get('estimate_messages_missed', 0)))
            return taken - sent0 - missed0 >= count and status.get('pending') == '0'

        try:
            self.spin_until(settled, 'the bridge to report every input', timeout=60.0,
                            poll_s=0.01)
        except RuntimeError:
            pass   # reported below as unaccounted
        status = self.status
        received = int(status.get('estimates_received', 0)) - sent0
        missed = int(status.get('estimate_messages_missed', 0)) - missed0
        return {
            'sent': count, 'elapsed_s': elapsed, 'late_sends': late,
            'received': received, 'missed': missed,
            'lost_events': int(status.get('estimate_messages_lost', 0)),
            'unaccounted_in_bridge': int(status.get('estimates_unaccounted', -1)),
            'unaccounted': count - received - missed,
            'dropped': int(status.get('dropped_total', 0)),
            'outputs': self.received['assessments'] - received0['assessments'],
            'cpu_us': cpu / count * 1e6, 'load': load_1min(),
        }


def run(args: argparse.Namespace, executor: str = 'single_threaded',
        fixed_rate: bool = False) -> dict[str, dict[str, Any]]:
    """Return {'relay': figures, 'bridge': figures} for one executor.

    Relay and bridge run at once, each in its own namespace with its own driver: the CPU figure
    is taken in rounds, one run of each back to back per round (order alternating), so both
    see the same load; then each flow-controlled run, then the bridge's accounting.
    """
    kinds = ('relay', 'bridge')
    targets: dict[str, Process] = {}
    drivers: dict[str, Driver] = {}
    figures: dict[str, dict[str, Any]] = {kind: {'cpu_runs': [], 'cpu_loads': []} for kind in kinds}
    try:
        for kind in kinds:
            namespace = f'/bridge_dds_bench_{kind}_{executor}_{os.getpid()}'
            targets[kind] = Process(kind, namespace, executor)
            drivers[kind] = Driver(namespace, targets[kind])
        for kind in kinds:
            drivers[kind].connect()
            drivers[kind].warm_up()
        ratios: list[float] = []
        for round_ in range(args.cpu_repeats):
            now: dict[str, float] = {}
            for kind in kinds if round_ % 2 == 0 else kinds[::-1]:
                answered: list[int]
                driver, answered = drivers[kind], []
                cpu_us, _, loads = cpu_per_message(
                    targets[kind],
                    lambda: answered.append(driver.paced(args.cpu_rate_hz, args.cpu_pairs)),
                    args.cpu_pairs, repeats=1)
                # Per pair handled: best-effort inputs the target never took cost it nothing.
                now[kind] = cpu_us * args.cpu_pairs / max(1, answered[0])
                figures[kind].setdefault('answered', []).append(answered[0])
                figures[kind]['cpu_runs'].append(now[kind])
                figures[kind]['cpu_loads'].append(loads[0])
            ratios.append(now['relay'] / now['bridge'])
        for kind in kinds:
            figures[kind]['cpu_us'] = min(figures[kind]['cpu_runs'])
        figures['bridge']['cpu_ratios'] = ratios
        if args.pairs:
            for kind in kinds:
                figures[kind]['rate'], figures[kind]['flow_cpu_us'] = drivers[kind].flow(
                    args.pairs, args.in_flight)
                figures[kind]['flow_load'] = load_1min()
        if fixed_rate and args.duration_s > 0:
            targets['relay'].stop()   # the accounting run alone
            figures['bridge']['fixed'] = drivers['bridge'].fixed_rate(args.rate_hz,
                                                                      args.duration_s)
    finally:
        for kind in kinds:
            if kind in drivers:
                drivers[kind].close()
            if kind in targets:
                figures[kind]['exit_code'] = targets[kind].stop()
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the bench and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pairs', type=int, default=20_000,
                        help='pairs of the flow-controlled rate (0: skip it)')
    parser.add_argument('--in-flight', type=int, default=50,
                        help='estimates sent ahead of the returned assessments (default 50)')
    parser.add_argument('--cpu-rate-hz', type=float, default=500.0,
                        help='pairs/s of the CPU-per-pair figure: a rate both sustain')
    parser.add_argument('--cpu-pairs', type=int, default=5000,
                        help='pairs per CPU-per-pair run (default 5000)')
    parser.add_argument('--cpu-repeats', type=int, default=3,
                        help='CPU-per-pair runs, the best reported (default 3)')
    parser.add_argument('--rate-hz', type=int, default=1000)
    parser.add_argument('--duration-s', type=float, default=60.0,
                        help='seconds of the accounting run at --rate-hz (0: skip it)')
    parser.add_argument('--executors', default='single_threaded,events',
                        help='bridge executors to measure (comma-separated)')
    parser.add_argument('--no-pure', action='store_true',
                        help='skip the pure bridge path figure (60 s)')
    parser.add_argument('--serve-relay', metavar='NAMESPACE', help=argparse.SUPPRESS)
    parser.add_argument('--relay-executor', default='single_threaded', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_relay:
        return serve(lambda: make_relay(args.serve_relay), args.relay_executor)
    from bridge_bench import bench_pairs  # the sibling bench (this folder is sys.path[0])

    pure = None if args.no_pure else bench_pairs(60.0)
    executors = args.executors.split(',')
    figures: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for name in executors:
        both = run(args, name, fixed_rate=(name == executors[0]))
        figures[name] = (both['relay'], both['bridge'])
    print(f'bridge over DDS: CPU per pair over {args.cpu_pairs} pairs at {args.cpu_rate_hz:g} '
          f'pairs/s (best of {args.cpu_repeats})'
          + (f'; {args.pairs} pairs flow-controlled, at most {args.in_flight} in flight'
             if args.pairs else '') + f'; {os.cpu_count()} CPUs')
    if pure is not None:
        print(f'  pure bridge path (this process):    {pure:>8,.0f} pairs/s '
              f'({1e6 / pure:.0f} us/pair)')
    ok = True
    for name in executors:
        relay, bridge = figures[name]
        print(f'  bare rclpy relay ({name + "):":<17} CPU {relay["cpu_us"]:6.1f} us/pair (runs '
              f'{", ".join(f"{x:.0f}" for x in relay["cpu_runs"])}; answered '
              f'{min(relay["answered"])}+/{args.cpu_pairs}; load '
              f'{relay["cpu_loads"][0]:.2f})'
              + (f', {relay["rate"]:>8,.0f} pairs/s flow-controlled (CPU '
                 f'{relay["flow_cpu_us"]:.0f} us/pair, load {relay["flow_load"]:.2f})'
                 if args.pairs else ''))
        ratio = sorted(bridge['cpu_ratios'])[len(bridge['cpu_ratios']) // 2]
        print(f'  outcome_bridge ({name + "):":<18} CPU {bridge["cpu_us"]:6.1f} us/pair (runs '
              f'{", ".join(f"{x:.0f}" for x in bridge["cpu_runs"])}; answered '
              f'{min(bridge["answered"])}+/{args.cpu_pairs}): {ratio:.2f}x the relay '
              f'(median of the rounds {", ".join(f"{x:.2f}" for x in bridge["cpu_ratios"])}; load '
              f'{bridge["cpu_loads"][0]:.2f})'
              + (f', {bridge["rate"]:>8,.0f} pairs/s = {bridge["rate"] / relay["rate"]:.2f}x '
                 f'(CPU {bridge["flow_cpu_us"]:.0f} us/pair, load {bridge["flow_load"]:.2f})'
                 if args.pairs else '') + f'; exit code {bridge["exit_code"]}')
        ok = ok and relay['exit_code'] == 0 and bridge['exit_code'] == 0
    fixed = figures[executors[0]][1].get('fixed')
    if fixed is not None:
        print(f'  at {args.rate_hz} Hz for {args.duration_s:g} s ({executors[0]}): sent '
              f'{fixed["sent"]} in {fixed["elapsed_s"]:.1f} s ({fixed["late_sends"]} sends >10 '
              f'periods late), received {fixed["received"]}, missed (sequence gaps) '
              f'{fixed["missed"]}, message_lost events {fixed["lost_events"]}, dropped '
              f'{fixed["dropped"]}, assessments out {fixed["outputs"]}; unaccounted: '
              f'{fixed["unaccounted"]} (sent - received - missed), '
              f'{fixed["unaccounted_in_bridge"]} (received - paired - dropped - pending); bridge '
              f'CPU {fixed["cpu_us"]:.0f} us/pair; load {fixed["load"]:.2f}')
        ok = ok and fixed['unaccounted'] == 0 and fixed['unaccounted_in_bridge'] == 0
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
