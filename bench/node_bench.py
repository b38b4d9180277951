# SPDX-License-Identifier: Apache-2.0
"""The feedback node over real DDS: throughput, latency, scale and memory, against a bare relay.

Run from the repository root after ``source scripts/env.sh``::

    python bench/node_bench.py                       # every part, both executors (~10 min)
    python bench/node_bench.py --quick               # short CI-style run (~2-3 min)
    python bench/node_bench.py --part throughput     # one part: throughput|latency|scale|memory
    python bench/node_bench.py --part cpu --with-telemetry   # CPU per cycle only (~1-2 min)
    python bench/node_bench.py --part memory --messages 1000000 --executor events

Set-up, the same for every part: the node under test runs as its own process, the real executable
``python -m project_ghost_feedback.ros.feedback_node --ros-args -p executor:=...``. The baseline is
a bare relay node (this file, ``--relay``: subscribe to both input topics, republish each raw
assessment wrapped in a CalibratedSelfAssessment, no validation or logic) started the same way with
the same executor (the node's own ``make_executor``), QoS (reliable, keep_last 1000 inputs,
keep_last 10 output) and ``/diagnostics`` counters. The load generator is this process: one
PredictionOutcome then one BeliefSelfAssessment per cycle, pre-serialized CDR published raw, and a
raw subscription to ``/self_assessment/calibrated`` timestamped on receipt, spun by an
EventsExecutor in a second thread (bench/harness.py: the process, the relay's spin, the driver,
the ladder, CPU per message and the report lines are shared with bridge_dds_bench). DDS is Fast
DDS confined to this machine by scripts/env.sh (loopback discovery, shared memory / 127.0.0.1),
in this shell's own ROS_DOMAIN_ID.

Parts:

- throughput: for each executor, first the fine figure: process CPU per cycle of the node and
  of the relay over a fixed count (3000-6000 cycles) at 1 kHz, a rate both sustain, best of 3;
  their ratio (relay / node) is what the node costs against the relay, where a 10% change
  shows (``--part cpu`` stops there). Target: >= 0.8x (>= 0.7x recording a telemetry bag,
  ``--with-telemetry``). Then a ladder of assessment rates (outcomes at the same rate,
  max_history 32); a rate is *sustained* when every assessment got its calibrated output, the node
  counted every outcome, and the last output came within 100 ms of the last publish (no growing
  backlog). Reports the highest sustained rate of the node and of the relay, and their ratio.
  Target: node >= 0.8x relay (0.7x recording) and >= 5 kHz.
- latency: assessment publish -> calibrated receipt, p50/p99, at 100 Hz and 1 kHz, node and relay.
  Target: node p99 - relay p99 <= 0.5 ms at 1 kHz.
- scale: cost per assessment at max_history 32, 256, 2048: the pure function alone
  (``assess_with_feedback`` on a window of W outcomes, and one cycle of the node's feedback loop,
  ``core.loop.FeedbackLoop``: an outcome in, an assessment judged), and
  through the node (CPU time of the node process per assessment at a fixed rate, window full),
  beside the relay's CPU time per cycle.
- memory: RSS of the node process after 10k messages and after 1M (``--messages``; inputs counted,
  outcomes + assessments), sampled at checkpoints. Target: growth < 5 MB.

Figures only, never a gate: the machine is shared (load average printed) and timings vary.
"""

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness import (
    climb,
    CountsDiagnostics,
    cpu_per_message,
    DriverNode,
    load_1min,
    load_average,
    machine_lines,
    MeasuredProcess,
    percentile,
    run_paced,
    serve,
)
from project_ghost_feedback.core import NS_PER_S

RELAY_NODE_NAME = 'bench_relay'
OUTCOME_TOPIC = 'prediction_outcome'     # relative: in the target's namespace (default /)
ASSESSMENT_TOPIC = 'self_assessment/raw'
CALIBRATED_TOPIC = 'self_assessment/calibrated'
INPUT_QOS_DEPTH = 1000   # the feedback node's input_qos_depth default
OUTPUT_QOS_DEPTH = 10    # the feedback node's output_qos_depth default
DIAGNOSTICS_PERIOD_S = 0.2
EXECUTORS = ('single_threaded', 'events')
SCALE_WINDOWS = (32, 256, 2048)
MS = 1_000_000
MAX_LAG_S = 0.1          # a rate is sustained only if the last output trails the last publish less

THROUGHPUT_TARGET_RATIO = 0.8
THROUGHPUT_TARGET_RATIO_TELEMETRY = 0.7
THROUGHPUT_TARGET_HZ = 5000.0
LATENCY_TARGET_ADDED_P99_MS = 0.5
MEMORY_TARGET_MB = 5.0

FULL = {
    'ladder': (500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 5000, 6000, 7000, 8500, 10000,
               12000, 14000, 17000, 20000, 24000),
    'step_s': 3.0,
    'latency_s': {100: 20.0, 1000: 10.0},
    'scale_rate_hz': 500.0, 'scale_s': 6.0, 'scale_loops': 2000,
    'messages': 1_000_000, 'memory_rate_hz': {'single_threaded': 1000.0, 'events': 2000.0},
    'cpu_rate_hz': 1000.0, 'cpu_pairs': 6000, 'cpu_repeats': 5,
}
QUICK = {
    'ladder': (1000, 2000, 3000, 4000, 6000, 8000, 10000, 14000, 20000),
    'step_s': 1.0,
    'latency_s': {100: 3.0, 1000: 2.0},
    'scale_rate_hz': 500.0, 'scale_s': 2.0, 'scale_loops': 400,
    'messages': 100_000, 'memory_rate_hz': {'single_threaded': 1000.0, 'events': 2000.0},
    'cpu_rate_hz': 1000.0, 'cpu_pairs': 3000, 'cpu_repeats': 3,
}


# -- the relay (baseline) process ----------------------------------------------------------------

def make_relay(namespace: str = '') -> Any:
    """Return the bare relay node (the baseline of every part); ``--relay`` serves it."""
    import rclpy
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from project_ghost_feedback_msgs.msg import (
        BeliefSelfAssessment, CalibratedSelfAssessment, PredictionOutcome)

    node: Any = rclpy.create_node(RELAY_NODE_NAME, namespace=namespace)
    counts = {'outcomes_received': 0, 'assessments_received': 0, 'published': 0}
    input_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=INPUT_QOS_DEPTH,
                           reliability=ReliabilityPolicy.RELIABLE)
    output_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=OUTPUT_QOS_DEPTH,
                            reliability=ReliabilityPolicy.RELIABLE)
    publisher = node.create_publisher(CalibratedSelfAssessment, CALIBRATED_TOPIC, output_qos)

    def on_outcome(msg: Any) -> None:
        counts['outcomes_received'] += 1

    def on_assessment(msg: Any) -> None:
        counts['assessments_received'] += 1
        publisher.publish(CalibratedSelfAssessment(header=msg.header, raw_assessment=msg))
        counts['published'] += 1

    node.create_subscription(PredictionOutcome, OUTCOME_TOPIC, on_outcome, input_qos)
    node.create_subscription(BeliefSelfAssessment, ASSESSMENT_TOPIC, on_assessment, input_qos)
    node.relay_diagnostics = CountsDiagnostics(node, node.get_fully_qualified_name(), counts,
                                               DIAGNOSTICS_PERIOD_S)
    return node


# -- target processes ----------------------------------------------------------------------------

class Target(MeasuredProcess):
    """The node under test or the relay, as its own process."""

    def __init__(self, kind: str, executor: str, parameters: Iterable[tuple[str, object]] = (),
                 log_dir: str | None = None, namespace: str = '') -> None:
        self.kind = kind
        self.executor = executor
        if kind == 'node':
            command = [sys.executable, '-m', 'project_ghost_feedback.ros.feedback_node',
                       '--ros-args', '-p', f'executor:={executor}',
                       '-p', f'diagnostics_period_s:={DIAGNOSTICS_PERIOD_S}']
            for name, value in parameters:
                command += ['-p', f'{name}:={value}']
            if namespace:
                command += ['-r', f'__ns:={namespace}']
        else:
            command = [sys.executable, os.path.abspath(__file__), '--relay',
                       '--executor', executor, '--namespace', namespace]
        super().__init__(command, f'{kind}[{executor}]', log_prefix=f'node_bench_{kind}_',
                         log_dir=log_dir)


# -- the load generator --------------------------------------------------------------------------

class Driver(DriverNode):
    """Publishes raw outcome/assessment pairs, receives calibrated outputs with receipt times."""

    def __init__(self, namespace: str = '', status_id: str | None = None) -> None:
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from project_ghost_feedback_msgs.msg import (
            BeliefSelfAssessment, CalibratedSelfAssessment, PredictionOutcome)

        super().__init__('node_bench_driver', namespace, status_id)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=INPUT_QOS_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.outcomes = self.node.create_publisher(PredictionOutcome, OUTCOME_TOPIC, qos)
        self.assessments = self.node.create_publisher(BeliefSelfAssessment, ASSESSMENT_TOPIC, qos)
        # (receipt perf_counter_ns, raw CDR of the calibrated output)
        self.received: list[tuple[int, bytes]] = []
        self.calibrated = self.node.create_subscription(
            CalibratedSelfAssessment, CALIBRATED_TOPIC, self._on_output, qos, raw=True)
        self._templates = _templates()
        self.sequence = 0
        self.start()

    def _on_output(self, data: bytes) -> None:
        self.received.append((time.perf_counter_ns(), data))

    # .. graph ..

    def wait_connected(self, target: MeasuredProcess, timeout: float = 30.0) -> None:
        """Wait until the target matched every topic and published its diagnostics."""
        self.diagnostics = None
        self.wait_until(lambda: (self.outcomes.get_subscription_count() > 0
                                 and self.assessments.get_subscription_count() > 0
                                 and self.calibrated.get_publisher_count() > 0
                                 and self.diagnostics is not None),
                        f'{target.label} to connect', target, timeout, poll_s=0.05)

    def counters(self) -> dict[str, int]:
        """Return the target's last diagnostics counters as ints."""
        values = self.diagnostics or {}
        return {key: int(values.get(key, -1))
                for key in ('outcomes_received', 'assessments_received', 'published')}

    # .. traffic ..

    def publish_pair(self) -> tuple[int, int]:
        """Publish the next outcome then the next assessment; return (sequence, send time)."""
        self.sequence += 1
        outcome, assessment = self._templates.pair(self.sequence)
        self.outcomes.publish(outcome)
        sent = time.perf_counter_ns()
        self.assessments.publish(assessment)
        return self.sequence, sent

    def run_paced(self, rate_hz: float, count: int) -> tuple[int, int, dict[int, int]]:
        """Publish ``count`` pairs at ``rate_hz``; return (start_ns, end_ns, send times by seq)."""
        start, end, sends, _ = run_paced(rate_hz, count, self.publish_pair)
        return start, end, dict(sends)

    def wait_outputs(self, expected: int, idle_timeout: float = 1.5,
                     total_timeout: float = 120.0) -> int:
        """Wait until ``expected`` outputs arrived or none arrived for ``idle_timeout`` s."""
        deadline = time.monotonic() + total_timeout
        last_count, last_change = len(self.received), time.monotonic()
        while len(self.received) < expected and time.monotonic() < deadline:
            time.sleep(0.01)
            if len(self.received) != last_count:
                last_count, last_change = len(self.received), time.monotonic()
            elif time.monotonic() - last_change > idle_timeout:
                break
        return len(self.received)

    def wait_counters(self, outcomes: int, timeout: float = 2.0) -> dict[str, int]:
        """Wait for diagnostics counting ``outcomes`` outcomes; return the counters."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.counters()['outcomes_received'] >= outcomes:
                break
            time.sleep(0.02)
        return self.counters()

    def stamp_of(self, data: bytes) -> int:
        """Return the belief stamp (ns) of a calibrated output's raw CDR (header.stamp first)."""
        sec = int.from_bytes(data[4:8], 'little', signed=True)
        return sec * NS_PER_S + int.from_bytes(data[8:12], 'little')


def _time_bytes(stamp_ns: int) -> bytes:
    """Return a builtin_interfaces/Time as CDR little-endian bytes (int32 sec, uint32 nanosec)."""
    sec, nanosec = divmod(stamp_ns, NS_PER_S)
    return sec.to_bytes(4, 'little', signed=True) + nanosec.to_bytes(4, 'little')


class _Templates:
    """Pre-serialized outcome/assessment CDR with the stamps patched per sequence number.

    ``offsets`` are where the v2 messages hold their Time stamps (found by :func:`_templates`):
    the outcome's ``header.stamp`` (observed) and ``prediction_stamp``, the assessment's
    ``header.stamp``.
    """

    def __init__(self, outcomes: Iterable[bytes], assessment: bytes,
                 offsets: tuple[int, int, int]) -> None:
        self._outcomes = [bytearray(b) for b in outcomes]
        self._assessment = bytearray(assessment)
        self._observed, self._predicted, self._belief = offsets

    def pair(self, sequence: int) -> tuple[bytes, bytes]:
        stamp = sequence * MS
        outcome = self._outcomes[sequence % len(self._outcomes)]
        outcome[self._predicted:self._predicted + 8] = _time_bytes(stamp - MS // 2)
        outcome[self._observed:self._observed + 8] = _time_bytes(stamp)
        assessment = self._assessment
        assessment[self._belief:self._belief + 8] = _time_bytes(stamp)
        return bytes(outcome), bytes(assessment)


def _templates() -> _Templates:
    """Return the templates (a calibrated mix of distances, 3 axis levels, 1 block level)."""
    from rclpy.serialization import deserialize_message, serialize_message
    from project_ghost_feedback.core import (
        BeliefSelfAssessment, NamedLevel, PredictionOutcome, SelfAssessmentLevel)
    from project_ghost_feedback.ros.conversions import (
        belief_from_msg, belief_to_msg, outcome_from_msg, outcome_to_msg)
    from project_ghost_feedback_msgs.msg import (
        BeliefSelfAssessment as BeliefMsg, PredictionOutcome as OutcomeMsg)

    known, uncertain = SelfAssessmentLevel.KNOWN, SelfAssessmentLevel.UNCERTAIN
    distances = (0.4, 1.3, 0.7, 2.2, 0.2, 0.9, 1.6, 3.4, 0.5, 1.1, 0.8, 5.5, 0.3, 1.9, 0.6, 1.0)
    outcomes: list[bytes] = []
    for i, distance in enumerate(distances):
        outcome = PredictionOutcome(
            NS_PER_S - MS // 2, NS_PER_S, (0.01 * i, -0.02, 0.003),
            (0.001, -0.0005 * i, 0.002), distance, distances[(i * 5) % len(distances)] / 2)
        outcomes.append(serialize_message(outcome_to_msg(outcome)))
    belief = BeliefSelfAssessment(
        NS_PER_S, known,
        (NamedLevel('position_x', known), NamedLevel('position_y', known),
         NamedLevel('yaw', uncertain)),
        (NamedLevel('pose', known),))
    # Where the stamps are: serialize with distinct sentinel stamps and find their bytes.
    observed_ns, predicted_ns, belief_ns = 123_456_789_987_654_321, 23_456_789_876_543_210, (
        345_678_901_765_432_109)
    probe_outcome = serialize_message(outcome_to_msg(PredictionOutcome(
        predicted_ns, observed_ns, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, 1.0)))
    probe_belief = serialize_message(belief_to_msg(BeliefSelfAssessment(belief_ns, known)))
    offsets = (probe_outcome.find(_time_bytes(observed_ns)),
               probe_outcome.find(_time_bytes(predicted_ns)),
               probe_belief.find(_time_bytes(belief_ns)))
    assert min(offsets) >= 4, offsets
    templates = _Templates(outcomes, serialize_message(belief_to_msg(belief)), offsets)
    # The patched stamps land in the right fields (and nothing else changes).
    raw_outcome, raw_assessment = templates.pair(7)
    outcome = outcome_from_msg(deserialize_message(raw_outcome, OutcomeMsg))
    assert (outcome.prediction_stamp_sim_ns, outcome.observed_stamp_sim_ns) == (
        7 * MS - MS // 2, 7 * MS), outcome
    checked = belief_from_msg(deserialize_message(raw_assessment, BeliefMsg))
    assert checked.belief_stamp_sim_ns == 7 * MS and checked.axis_levels == belief.axis_levels
    return templates


def _with_target(driver: Driver, kind: str, executor: str,
                 parameters: Iterable[tuple[str, object]] = (), warmup: int = 200,
                 namespace: str = '') -> Target:
    """Start a target, connect, warm up; return it (the caller stops it)."""
    target = Target(kind, executor, parameters, namespace=namespace)
    try:
        driver.wait_connected(target)
        driver.received.clear()
        driver.run_paced(1000.0, warmup)
        got = driver.wait_outputs(warmup, idle_timeout=3.0)
        if got < warmup:
            raise RuntimeError(f'{target.label}: only {got}/{warmup} warm-up outputs arrived')
        # Let the warm-up's diagnostics settle so counters are cumulative from here.
        driver.wait_counters(warmup)
    except BaseException:
        target.stop()
        raise
    return target


# -- (a) throughput ------------------------------------------------------------------------------

def measure_step(driver: Driver, target: Target, rate_hz: float,
                 step_s: float) -> dict[str, Any]:
    """Run one rate step; return a dict (sustained, lost, lag_s, achieved_hz, ...)."""
    count = max(50, int(rate_hz * step_s))
    driver.received.clear()
    outcomes_before = driver.counters()['outcomes_received']
    start, end, _ = driver.run_paced(rate_hz, count)
    got = driver.wait_outputs(count)
    last_ns = driver.received[-1][0] if driver.received else end
    counters = driver.wait_counters(outcomes_before + count)
    target.check_alive()
    outcomes_counted = counters['outcomes_received'] - outcomes_before
    achieved = count / ((end - start) / NS_PER_S)
    lag_s = max(0.0, (last_ns - end) / NS_PER_S)
    lost = count - got
    sustained = lost == 0 and outcomes_counted >= count and lag_s <= MAX_LAG_S
    return {
        'rate_hz': rate_hz, 'count': count, 'outputs': got, 'lost': lost,
        'outcomes_counted': outcomes_counted, 'lag_s': lag_s, 'achieved_hz': achieved,
        'generator_limited': achieved < 0.95 * rate_hz, 'sustained': sustained,
        'summary': f'lost {lost}/{count}, outcomes counted {outcomes_counted}, lag '
                   f'{1000 * lag_s:.0f} ms, sent at {achieved:.0f} Hz',
    }


def max_sustained_rate(driver: Driver, target: Target, ladder: Iterable[float],
                       step_s: float) -> tuple[float, list[dict[str, Any]]]:
    """Climb ``ladder`` until a rate is not sustained (twice); return (best, steps)."""
    return climb(ladder, lambda rate: measure_step(driver, target, rate, step_s), target.label,
                 drain=lambda: _drain(driver))


def cpu_run(driver: Driver, target: Target,
            settings: dict[str, Any]) -> tuple[float, float, str]:
    """Return one run's CPU us per cycle of ``target`` (see harness.cpu_per_message).

    ``settings['cpu_pairs']`` cycles (one outcome + one assessment in, one output out) at
    ``settings['cpu_rate_hz']``; the run ends when the target counted every input on
    /diagnostics and the outputs came back. Returns (us, load, shortfall text or '').
    """
    rate, pairs = settings['cpu_rate_hz'], settings['cpu_pairs']
    shortfalls: list[str] = []

    def run() -> None:
        driver.received.clear()
        before = driver.counters()
        driver.run_paced(rate, pairs)
        got = driver.wait_outputs(pairs, idle_timeout=1.0)
        counters = driver.wait_counters(before['outcomes_received'] + pairs, timeout=5.0)
        taken = counters['assessments_received'] - before['assessments_received']
        if got < pairs or taken < pairs:
            shortfalls.append(f'{taken}/{pairs} assessments taken, {got} outputs')

    us, _, loads = cpu_per_message(target, run, pairs, repeats=1)
    return us, loads[0], '; '.join(shortfalls)


def cpu_paired(settings: dict[str, Any], executor: str, parameters: Sequence[tuple[str, object]]
               ) -> tuple[dict[str, Any], dict[str, Any], list[float]]:
    """Measure CPU per cycle of the relay and the node, alternating, both running throughout.

    Each in its own namespace with its own driver; ``settings['cpu_repeats']`` rounds, each a run
    of the relay and one of the node back to back (the order alternates), so both see the same
    load; returns (relay figures, node figures, ratios relay/node per round).
    """
    kinds = ('relay', 'node')
    drivers: dict[str, Driver] = {}
    targets: dict[str, Target] = {}
    try:
        for kind in kinds:
            namespace = f'/node_bench_{kind}'
            drivers[kind] = Driver(namespace, status_id=f'{namespace}/'
                                   + (RELAY_NODE_NAME if kind == 'relay' else 'feedback_node'))
            targets[kind] = _with_target(drivers[kind], kind, executor,
                                         parameters if kind == 'node' else (),
                                         namespace=namespace)
        figures: dict[str, dict[str, Any]] = {
            kind: {'runs_us': [], 'loads': [], 'shortfalls': []} for kind in kinds}
        ratios: list[float] = []
        for round_ in range(settings['cpu_repeats']):
            order = kinds if round_ % 2 == 0 else kinds[::-1]
            now: dict[str, float] = {}
            for kind in order:
                us, load, shortfall = cpu_run(drivers[kind], targets[kind], settings)
                now[kind] = us
                figures[kind]['runs_us'].append(us)
                figures[kind]['loads'].append(load)
                if shortfall:
                    figures[kind]['shortfalls'].append(shortfall)
            ratios.append(now['relay'] / now['node'])
    finally:
        for kind in kinds:
            if kind in targets:
                targets[kind].stop()
            if kind in drivers:
                drivers[kind].close()
    for kind in kinds:
        figure = figures[kind]
        figure.update(rate_hz=settings['cpu_rate_hz'], pairs=settings['cpu_pairs'],
                      cpu_us=min(figure['runs_us']))
        print(f'    {kind}[{executor}]'.ljust(28) + f'CPU per cycle at '
              f'{settings["cpu_rate_hz"]:.0f} Hz x {settings["cpu_pairs"]}: best '
              f'{figure["cpu_us"]:.1f} us (runs {", ".join(f"{x:.1f}" for x in figure["runs_us"])}'
              f'; load {", ".join(f"{x:.2f}" for x in figure["loads"])})'
              + (f'; NOT sustained: {"; ".join(figure["shortfalls"])}'
                 if figure['shortfalls'] else ''), flush=True)
    print(f'    relay/node per round: {", ".join(f"{r:.2f}" for r in ratios)}', flush=True)
    return figures['relay'], figures['node'], ratios


def _drain(driver: Driver, quiet_s: float = 0.5) -> None:
    """Wait until no output arrived for ``quiet_s`` (a backlog from the previous step is gone)."""
    last = -1
    while len(driver.received) != last:
        last = len(driver.received)
        time.sleep(quiet_s)


def part_throughput(driver: Driver, settings: dict[str, Any], executors: Sequence[str],
                    results: dict[str, Any], telemetry_dir: str | None = None,
                    ladder: bool = True) -> None:
    """Measure (a): CPU per cycle and the highest sustained rate, node vs relay, per executor.

    First the fine figure (process CPU per cycle over a fixed count at a rate both sustain),
    then, with ``ladder``, the highest sustained assessment rate. With ``telemetry_dir`` the node
    records a telemetry bag there (one per executor).
    """
    target_ratio = THROUGHPUT_TARGET_RATIO_TELEMETRY if telemetry_dir else THROUGHPUT_TARGET_RATIO
    print('\n== (a) throughput: CPU per cycle at a fixed rate'
          + (' and highest sustained assessment rate' if ladder else '')
          + f' (outcomes at the same rate, max_history 32, telemetry '
          f'{"on" if telemetry_dir else "off"}) ==', flush=True)
    rows: list[dict[str, Any]] = []
    for executor in executors:
        row: dict[str, Any] = {'executor': executor, 'telemetry': bool(telemetry_dir)}
        parameters: list[tuple[str, object]] = [('max_history', 32)]
        if telemetry_dir:
            parameters.append(
                ('telemetry_bag', os.path.join(telemetry_dir, f'throughput_{executor}')))
        row['relay_cpu'], row['node_cpu'], row['cpu_ratios'] = cpu_paired(
            settings, executor, parameters)
        row['cpu_ratio'] = statistics.median(row['cpu_ratios'])
        for kind in ('relay', 'node') if ladder else ():
            if telemetry_dir and kind == 'node':   # a bag of its own
                parameters[-1] = ('telemetry_bag',
                                  os.path.join(telemetry_dir, f'ladder_{executor}'))
            target = _with_target(driver, kind, executor,
                                  parameters if kind == 'node' else parameters[:1])
            try:
                best, steps = max_sustained_rate(
                    driver, target, settings['ladder'], settings['step_s'])
                row[kind] = best
                row[f'{kind}_steps'] = steps
                row[f'{kind}_generator_limited'] = any(s['generator_limited'] for s in steps)
            finally:
                target.stop()
        if ladder:
            row['ratio'] = row['node'] / row['relay'] if row['relay'] else math.nan
        row['load_end'] = load_1min()
        rows.append(row)
    print()
    print(f'{"executor":16s} {"relay CPU/cycle":>16s} {"node CPU/cycle":>15s} '
          f'{"relay/node":>11s}  target (>= {target_ratio}x); best of each, median ratio of the '
          'rounds')
    for row in rows:
        ratio = row['cpu_ratio']
        print(f'{row["executor"]:16s} {row["relay_cpu"]["cpu_us"]:13.1f} us '
              f'{row["node_cpu"]["cpu_us"]:12.1f} us {ratio:10.2f}x  '
              f'{"met" if ratio >= target_ratio else "NOT met"} (load {row["load_end"]:.2f})')
    if ladder:
        print(f'{"executor":16s} {"relay max Hz":>13s} {"node max Hz":>12s} {"node/relay":>11s}  '
              f'target (>= {target_ratio}x and >= {THROUGHPUT_TARGET_HZ:.0f} Hz)')
        for row in rows:
            met = row['ratio'] >= target_ratio and row['node'] >= THROUGHPUT_TARGET_HZ
            bound = '>=' if row['relay_generator_limited'] else '  '
            print(f'{row["executor"]:16s} {bound}{row["relay"]:11.0f} {row["node"]:12.0f} '
                  f'{row["ratio"]:10.2f}x  {"met" if met else "NOT met"}')
    results.setdefault('throughput', []).extend(rows)


# -- (b) latency ---------------------------------------------------------------------------------

def measure_latency(driver: Driver, rate_hz: float,
                    duration_s: float) -> tuple[list[float], int]:
    """Return the publish -> receipt latencies (ms) of ``rate_hz`` x ``duration_s`` assessments."""
    count = int(rate_hz * duration_s)
    driver.received.clear()
    _, _, sends = driver.run_paced(rate_hz, count)
    driver.wait_outputs(count, idle_timeout=2.0)
    latencies: list[float] = []
    for received_ns, data in driver.received:
        sequence = driver.stamp_of(data) // MS
        if sequence in sends:
            latencies.append((received_ns - sends[sequence]) / 1e6)
    return latencies, count


def part_latency(driver: Driver, settings: dict[str, Any], executors: Sequence[str],
                 results: dict[str, Any]) -> None:
    """Measure (b): publish -> calibrated receipt latency, node vs relay."""
    print('\n== (b) latency: assessment publish -> calibrated receipt (ms) ==', flush=True)
    rows: list[dict[str, Any]] = []
    for executor in executors:
        for kind in ('relay', 'node'):
            target = _with_target(driver, kind, executor, [('max_history', 32)])
            try:
                for rate, duration in sorted(settings['latency_s'].items()):
                    latencies, count = measure_latency(driver, rate, duration)
                    row = {
                        'executor': executor, 'kind': kind, 'rate_hz': rate, 'count': count,
                        'received': len(latencies),
                        'p50_ms': percentile(latencies, 0.50),
                        'p99_ms': percentile(latencies, 0.99),
                        'max_ms': max(latencies) if latencies else math.nan,
                    }
                    rows.append(row)
                    print(f'    {target.label:24s} {rate:5d} Hz: p50 {row["p50_ms"]:.3f} p99 '
                          f'{row["p99_ms"]:.3f} max {row["max_ms"]:.3f} ms '
                          f'({len(latencies)}/{count})', flush=True)
            finally:
                target.stop()
    print()
    print(f'{"executor":16s} {"rate":>6s} {"relay p50":>10s} {"relay p99":>10s} '
          f'{"node p50":>9s} {"node p99":>9s} {"added p99":>10s}  target (<= '
          f'{LATENCY_TARGET_ADDED_P99_MS} ms added p99 at 1 kHz)')
    summary: list[dict[str, Any]] = []
    for executor in executors:
        for rate in sorted(settings['latency_s']):
            relay, node = (next(r for r in rows if r['executor'] == executor
                                and r['kind'] == kind and r['rate_hz'] == rate)
                           for kind in ('relay', 'node'))
            added = node['p99_ms'] - relay['p99_ms']
            verdict = ''
            if rate == 1000:
                verdict = 'met' if added <= LATENCY_TARGET_ADDED_P99_MS else 'NOT met'
            summary.append({
                'executor': executor, 'rate_hz': rate, 'relay': relay, 'node': node,
                'added_p99_ms': added, 'added_p50_ms': node['p50_ms'] - relay['p50_ms']})
            print(f'{executor:16s} {rate:6d} {relay["p50_ms"]:10.3f} {relay["p99_ms"]:10.3f} '
                  f'{node["p50_ms"]:9.3f} {node["p99_ms"]:9.3f} {added:+10.3f}  {verdict}')
    results['latency'] = summary


# -- (c) scale -----------------------------------------------------------------------------------

def _median_us(call: Callable[[], object], loops: int, repeats: int = 7) -> float:
    samples: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(loops):
            call()
        samples.append((time.perf_counter_ns() - start) / loops / 1000.0)
    return statistics.median(samples)


def pure_costs(window: int, loops: int) -> tuple[float, float]:
    """Return (assess_with_feedback us, feedback loop cycle us) for ``window`` outcomes."""
    from project_ghost_feedback.core import (
        BeliefSelfAssessment, NamedLevel, PredictionOutcome, SelfAssessmentLevel)
    from project_ghost_feedback.core.feedback import assess_with_feedback, make_policy
    from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig

    known = SelfAssessmentLevel.KNOWN
    distances = (0.4, 1.3, 0.7, 2.2, 0.2, 0.9, 1.6, 3.4, 0.5, 1.1, 0.8, 5.5, 0.3, 1.9, 0.6, 1.0)
    outcomes = [
        PredictionOutcome(i * MS - MS // 2, i * MS, (0.01, -0.02, 0.003), (0.001, 0.0, 0.002),
                          distances[i % 16], distances[(i * 5) % 16] / 2)
        for i in range(1, window + 1)]
    raw = BeliefSelfAssessment(window * MS, known, (NamedLevel('position_x', known),),
                               (NamedLevel('pose', known),))
    policy = make_policy('mahalanobis_downgrade')
    loops = max(5, loops * 32 // window)
    assess = _median_us(lambda: assess_with_feedback(raw, outcomes, policy, window), loops)
    capacity = max(1024, window)
    loop = FeedbackLoop(LoopConfig.make('mahalanobis_downgrade', None, window, capacity))
    extra = [PredictionOutcome(i * MS - MS // 2, i * MS, (0.01, -0.02, 0.003),
                               (0.001, 0.0, 0.002), distances[i % 16], 0.5)
             for i in range(1, capacity + loops * 8 + 2)]
    for outcome in extra[:capacity]:
        loop.outcome(outcome)
    feed = iter(extra[capacity:])

    def bookkeeping() -> None:
        outcome = next(feed)
        loop.outcome(outcome)
        loop.assessment(BeliefSelfAssessment(outcome.observed_stamp_sim_ns, known))

    window_ops = _median_us(bookkeeping, loops)
    return assess, window_ops


def node_cost(driver: Driver, kind: str, executor: str, window: int, rate_hz: float,
              duration_s: float) -> tuple[float, int]:
    """Return (CPU us per assessment of the target process, assessments) with a full window."""
    parameters = [('max_history', window), ('outcome_buffer_size', max(1024, window))]
    target = _with_target(driver, kind, executor, parameters)
    try:
        fill = max(1024, window) + 50
        driver.received.clear()
        driver.run_paced(min(2000.0, rate_hz * 10), fill)  # fill the outcome window first
        driver.wait_outputs(fill, idle_timeout=3.0)
        _drain(driver, 0.3)
        count = int(rate_hz * duration_s)
        driver.received.clear()
        cpu_before = target.cpu_s()
        driver.run_paced(rate_hz, count)
        got = driver.wait_outputs(count, idle_timeout=3.0)
        cpu = target.cpu_s() - cpu_before
        target.check_alive()
    finally:
        target.stop()
    if got < count:
        print(f'    warning: {target.label} W={window}: {got}/{count} outputs')
    return cpu / max(1, got) * 1e6, got


def handler_cost(window: int, cycles: int, repeats: int = 5) -> float:
    """Return the median us per cycle of a FeedbackNode's own callbacks, in this process.

    One PredictionOutcome then one BeliefSelfAssessment per cycle, as the serialized bytes the
    node's raw subscriptions take, handed to its subscription callbacks (reading the CDR,
    validation, window, ``assess_with_feedback``, output encoding, publish, counters) with the
    window already full: the node's code path without DDS or executor.
    """
    import rclpy
    from rclpy.parameter import Parameter
    from project_ghost_feedback.core import (
        BeliefSelfAssessment, NamedLevel, PredictionOutcome, SelfAssessmentLevel)
    from project_ghost_feedback.ros.conversions import belief_to_msg, outcome_to_msg
    from project_ghost_feedback.ros.feedback_node import FeedbackNode
    from rclpy.serialization import serialize_message

    known = SelfAssessmentLevel.KNOWN
    capacity = max(1024, window)
    distances = (0.4, 1.3, 0.7, 2.2, 0.2, 0.9, 1.6, 3.4, 0.5, 1.1, 0.8, 5.5, 0.3, 1.9, 0.6, 1.0)
    total = capacity + cycles * repeats
    outcomes = [serialize_message(outcome_to_msg(PredictionOutcome(
        i * MS - MS // 2, i * MS, (0.01, -0.02, 0.003), (0.001, 0.0, 0.002), distances[i % 16],
        distances[(i * 5) % 16] / 2))) for i in range(1, total + 1)]
    levels = (NamedLevel('position_x', known), NamedLevel('position_y', known),
              NamedLevel('yaw', SelfAssessmentLevel.UNCERTAIN))
    beliefs = [serialize_message(belief_to_msg(BeliefSelfAssessment(
                   i * MS, known, levels, (NamedLevel('pose', known),))))
               for i in range(capacity + 1, total + 1)]
    context = rclpy.Context()
    rclpy.init(args=['--ros-args', '--log-level', 'warn'], context=context)
    node = FeedbackNode(
        node_name='node_bench_handlers', namespace='/node_bench_handlers', context=context,
        parameter_overrides=[Parameter('max_history', value=window),
                             Parameter('outcome_buffer_size', value=capacity)])
    try:
        on_outcome, on_assessment = node.input_handlers()
        for msg in outcomes[:capacity]:
            on_outcome(msg)
        samples: list[float] = []
        for repeat in range(repeats):
            first = repeat * cycles
            pairs = list(zip(outcomes[capacity + first:capacity + first + cycles],
                             beliefs[first:first + cycles]))
            start = time.perf_counter_ns()
            for outcome, belief in pairs:
                on_outcome(outcome)
                on_assessment(belief)
            samples.append((time.perf_counter_ns() - start) / cycles / 1000.0)
        assert node.counts.published == cycles * repeats and not node.health.rejected
        assert node.verdict.calibrated is not None
        assert node.verdict.calibrated.calibration_history.outcomes_considered == window
    finally:
        node.destroy_node()
        context.try_shutdown()
    return statistics.median(samples)


def part_scale(driver: Driver, settings: dict[str, Any], executor: str,
               results: dict[str, Any]) -> None:
    """Measure (c): cost per assessment vs max_history, pure and through the node."""
    print(f'\n== (c) scale: cost per assessment vs max_history (node executor {executor}, '
          f'process CPU at {settings["scale_rate_hz"]:.0f} Hz) ==', flush=True)
    rows: list[dict[str, Any]] = []
    relay_us, _ = node_cost(driver, 'relay', executor, 32, settings['scale_rate_hz'],
                            settings['scale_s'])
    print(f'    relay[{executor}] process: {relay_us:.1f} CPU us per cycle', flush=True)
    for window in SCALE_WINDOWS:
        assess, window_ops = pure_costs(window, settings['scale_loops'])
        handlers = handler_cost(window, max(20, settings['scale_loops'] * 32 // window // 4))
        node_us, got = node_cost(driver, 'node', executor, window, settings['scale_rate_hz'],
                                 settings['scale_s'])
        rows.append({'max_history': window, 'pure_assess_us': assess,
                     'pure_loop_cycle_us': window_ops, 'node_handlers_us': handlers,
                     'node_cpu_us': node_us, 'relay_cpu_us': relay_us, 'assessments': got})
        print(f'    W={window:5d}: pure {assess:.1f} us, loop cycle {window_ops:.1f} us; node '
              f'callbacks {handlers:.1f} us; node process {node_us:.1f} CPU us per cycle',
              flush=True)
    print()
    print(f'{"max_history":>11s} {"pure assess":>12s} {"loop cycle":>11s} '
          f'{"node callbacks":>15s} {"callbacks-pure":>15s} {"node process":>13s} '
          f'{"relay process":>14s}   (us per assessment; process = CPU time per cycle)')
    for row in rows:
        print(f'{row["max_history"]:11d} {row["pure_assess_us"]:12.1f} '
              f'{row["pure_loop_cycle_us"]:11.1f} {row["node_handlers_us"]:15.1f} '
              f'{row["node_handlers_us"] - row["pure_assess_us"]:15.1f} '
              f'{row["node_cpu_us"]:13.1f} {row["relay_cpu_us"]:14.1f}')
    first, last = rows[0], rows[-1]
    span = last['max_history'] - first['max_history']
    slopes = {key: 1000 * (last[key] - first[key]) / span
              for key in ('pure_assess_us', 'node_handlers_us', 'node_cpu_us')}
    print(f'growth per extra outcome in the window (W 32 -> 2048): pure '
          f'{slopes["pure_assess_us"]:.0f} ns, node callbacks {slopes["node_handlers_us"]:.0f} ns, '
          f'node process {slopes["node_cpu_us"]:.0f} ns: linear, O(max_history)')
    results['scale'] = {'executor': executor, 'rate_hz': settings['scale_rate_hz'], 'rows': rows,
                        'ns_per_outcome': slopes}


# -- (d) memory ----------------------------------------------------------------------------------

def part_memory(driver: Driver, settings: dict[str, Any], executor: str, results: dict[str, Any],
                messages: int, telemetry_dir: str | None = None) -> None:
    """Measure (d): RSS of the node process after 10k and after ``messages`` input messages."""
    rate = settings['memory_rate_hz'][executor]
    label = 'node with telemetry_bag' if telemetry_dir else 'node'
    print(f'\n== (d) memory: RSS of the {label} process over {messages} input messages '
          f'(outcomes + assessments, {rate:.0f} pairs/s, executor {executor}) ==', flush=True)
    parameters: list[tuple[str, object]] = [('max_history', 32)]
    if telemetry_dir:
        parameters.append(('telemetry_bag', os.path.join(telemetry_dir, 'memory_bag')))
    warmup = 200
    target = _with_target(driver, 'node', executor, parameters, warmup=warmup)
    checkpoints = sorted({10_000, *[c for c in (100_000, 250_000, 500_000, 1_000_000)
                                    if c < messages], messages})
    samples: list[dict[str, Any]] = []
    try:
        sent_pairs = warmup
        start = time.monotonic()
        for checkpoint in checkpoints:
            pairs = checkpoint // 2 - sent_pairs
            driver.received.clear()
            driver.run_paced(rate, pairs)
            got = driver.wait_outputs(pairs, idle_timeout=3.0)
            sent_pairs += pairs
            counters = driver.wait_counters(sent_pairs)
            target.check_alive()
            rss = target.rss_bytes()
            processed = counters['outcomes_received'] + counters['assessments_received']
            samples.append({'messages': checkpoint, 'rss_mb': rss / 2**20,
                            'outputs_lost': pairs - got, 'processed_reported': processed})
            print(f'    after {checkpoint:9d} messages: RSS {rss / 2**20:8.2f} MB '
                  f'(node counted {processed}; outputs lost in this leg {pairs - got}; '
                  f'{time.monotonic() - start:.0f} s)', flush=True)
    finally:
        target.stop()
    growth = samples[-1]['rss_mb'] - samples[0]['rss_mb']
    verdict = 'met' if growth < MEMORY_TARGET_MB else 'NOT met'
    print(f'RSS after {samples[-1]["messages"]} - after {samples[0]["messages"]}: '
          f'{growth:+.2f} MB  target (< {MEMORY_TARGET_MB:g} MB): {verdict}')
    key = 'memory_telemetry' if telemetry_dir else 'memory'
    results[key] = {'executor': executor, 'samples': samples, 'growth_mb': growth}


# -- main ----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    """Run the selected parts and print their tables."""
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog='Run inside scripts/env.sh. Each part starts and stops its own node processes.')
    parser.add_argument('--part', action='append',
                        choices=('throughput', 'cpu', 'latency', 'scale', 'memory'),
                        help='part to run (repeatable; default: all but cpu, which is '
                             'throughput without its ladder: CPU per cycle only)')
    parser.add_argument('--quick', action='store_true',
                        help='short run: coarser ladder, shorter steps, 100k messages for memory')
    parser.add_argument('--executor', choices=EXECUTORS + ('both',), default=None,
                        help='executor(s): default both for throughput/latency; for scale and '
                             "memory the node's default executor")
    parser.add_argument('--messages', type=int, default=None,
                        help='memory: input messages to send (default 1000000, --quick 100000)')
    parser.add_argument('--memory-rate', type=float, default=None,
                        help='memory: pairs per second (default 1000 single_threaded, '
                             '2000 events: below what each sustains here)')
    parser.add_argument('--with-telemetry', action='store_true',
                        help='throughput/cpu: also measure a node recording a telemetry bag '
                             '(after the figures without); memory: likewise')
    parser.add_argument('--json', metavar='PATH', help='also write the figures as JSON')
    parser.add_argument('--relay', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--namespace', default='', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.relay:
        return serve(lambda: make_relay(args.namespace), args.executor or 'single_threaded')

    from project_ghost_feedback.ros.dds import ensure_loopback
    from project_ghost_feedback.ros.feedback_parameters import DEFAULT_EXECUTOR
    ensure_loopback()
    sys.setswitchinterval(0.0005)  # the receiving thread gets the GIL quickly while we publish
    settings: dict[str, Any] = dict(QUICK if args.quick else FULL)
    if args.memory_rate:
        settings['memory_rate_hz'] = dict.fromkeys(EXECUTORS, args.memory_rate)
    parts = args.part or ['throughput', 'latency', 'scale', 'memory']
    default_executor = DEFAULT_EXECUTOR
    if args.executor in (None, 'both'):
        executors = list(EXECUTORS)
    else:
        executors = [args.executor]
    single = args.executor if args.executor not in (None, 'both') else default_executor
    messages = args.messages or settings['messages']

    print('node_bench: the feedback node over DDS vs a bare relay, same executor and QoS')
    for line in machine_lines():
        print(line)
    print(f'mode: {"quick" if args.quick else "full"}; parts: {", ".join(parts)}; '
          f'node default executor: {default_executor}', flush=True)
    results: dict[str, Any] = {'machine': machine_lines(),
                               'mode': 'quick' if args.quick else 'full'}
    driver = Driver()
    started = time.monotonic()
    try:
        if 'throughput' in parts or 'cpu' in parts:
            ladder = 'throughput' in parts
            part_throughput(driver, settings, executors, results, ladder=ladder)
            if args.with_telemetry:
                with tempfile.TemporaryDirectory(prefix='node_bench_') as directory:
                    part_throughput(driver, settings, executors, results, directory, ladder)
        if 'latency' in parts:
            part_latency(driver, settings, executors, results)
        if 'scale' in parts:
            part_scale(driver, settings, single, results)
        if 'memory' in parts:
            part_memory(driver, settings, single, results, messages)
            if args.with_telemetry:
                with tempfile.TemporaryDirectory(prefix='node_bench_') as directory:
                    part_memory(driver, settings, single, results, messages, directory)
    finally:
        driver.close()
    results['load_average_end'] = load_average()
    results['elapsed_s'] = time.monotonic() - started
    print(f'\nload average at the end: {load_average()}; {results["elapsed_s"]:.0f} s')
    if args.json:
        with open(args.json, 'w') as output:
            json.dump(results, output, indent=2, default=str)
    return 0


if __name__ == '__main__':
    sys.exit(main())
