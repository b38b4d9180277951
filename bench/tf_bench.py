#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tf memory bench: what tf2 and the bridge's gate hold under the /tf attacks, and the bound.

Each scenario runs in a fresh Python process (its peak RSS, ``ru_maxrss``, is the figure; the
baseline is the same process with everything imported and nothing fed):

- ``frames_100k``: 100,000 distinct child frames on /tf (static and dynamic), through the
  bridge's engine (``PairingEngine.take_transforms``: the gate, then tf2's BufferCore) and, for
  comparison, straight into tf2 (what the bridge did before the gate);
- ``full``: the largest state the gate admits: ``tf.max_frames`` (1000) frames with
  ``tf.max_transforms_per_frame`` (1000) transforms each within ``tf.cache_s``: the bound;
- ``static_bag``: ``ghost-feedback evaluate``'s reading of a ~27 MB /tf_static bag, as messages
  of ~1.4 MB (over the 1 MiB message limit: skipped unread) and of ~0.9 MB (under it: read, the
  frames beyond ``tf.max_frames`` refused). A single 27 MB message is refused with the whole bag
  by the bounded pass before any read (a chunk over the 32 MiB record limit).

Figures only, never a gate (they move with the machine)::

    scripts/run_in_env.sh python bench/tf_bench.py [--quick]
"""

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

from project_ghost_feedback.core import NS_PER_S

ROOT = pathlib.Path(__file__).resolve().parents[1]
S = NS_PER_S


def _tf(stamp_ns: int, parent: str, child: str) -> Any:
    from geometry_msgs.msg import TransformStamped

    t = TransformStamped()
    t.header.stamp.sec, t.header.stamp.nanosec = divmod(stamp_ns, S)
    t.header.frame_id, t.child_frame_id = parent, child
    t.transform.rotation.w = 1.0
    return t


def _engine() -> tuple[Any, Any]:
    from project_ghost_feedback.bridge.engine_interface import EngineListener
    from project_ghost_feedback.bridge.pairing import PairingEngine
    from project_ghost_feedback.bridge.parameters import engine_config
    from project_ghost_feedback.bridge.tf2_transforms import offline_buffer, Tf2Transforms
    from project_ghost_feedback.bridge_inputs import bridge_parameters

    values = bridge_parameters(None)
    core = offline_buffer(values['tf.cache_s'])
    return PairingEngine(engine_config(values), EngineListener(),
                         transforms=Tf2Transforms(core)), core


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scenario(name: str, count: int) -> None:
    """Run one scenario in this process; print a JSON line of its figures."""
    from tf2_msgs.msg import TFMessage

    from project_ghost_feedback.bridge.tf2_transforms import feed

    engine, core = _engine()
    base = _rss_mb()
    start = time.monotonic()
    figures: dict[str, Any] = {}
    if name in ('frames_gate', 'frames_raw'):
        for static in (False, True):
            for first in range(0, count, 1000):
                msg = TFMessage(transforms=[
                    _tf(S, 'odom', f'{"s" if static else "d"}{i}')
                    for i in range(first, min(first + 1000, count))])
                if name == 'frames_gate':
                    engine.take_transforms(msg, static, S)
                else:
                    feed(core, msg, static)
        figures['refused'] = dict(engine.transforms_refused)
    elif name == 'full':
        frames, per_frame = count, 1000
        for k in range(per_frame):
            stamp = S + k * (10 * S // per_frame - 1)
            msg = TFMessage(transforms=[_tf(stamp, 'odom', f'f{i}') for i in range(frames - 1)])
            engine.take_transforms(msg, False, stamp)
        figures['accepted'] = engine.transforms_accepted
        figures['refused'] = dict(engine.transforms_refused)
    figures.update(scenario=name, count=count, seconds=round(time.monotonic() - start, 1),
                   rss_base_mb=round(base, 1), rss_peak_mb=round(_rss_mb(), 1),
                   added_mb=round(_rss_mb() - base, 1))
    print(json.dumps(figures))


def _write_static_bag(path: pathlib.Path, messages: int, transforms_per_message: int) -> int:
    """Write a bag of /tf_static messages (distinct frames), an estimate and a reference topic."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores
    from rclpy.serialization import serialize_message
    from nav_msgs.msg import Odometry
    from tf2_msgs.msg import TFMessage

    store = get_typestore(Stores.ROS2_JAZZY)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        tf = writer.add_connection('/tf_static', 'tf2_msgs/msg/TFMessage', typestore=store)
        odom = {topic: writer.add_connection(topic, 'nav_msgs/msg/Odometry', typestore=store)
                for topic in ('/estimate', '/reference')}
        log = 1
        for m in range(messages):
            msg = TFMessage(transforms=[
                _tf(S, 'map', f'frame_{m}_{i:06d}_' + 'x' * 20)
                for i in range(transforms_per_message)])
            writer.write(tf, log, serialize_message(msg))
            log += 1
        for k in range(20):
            o = Odometry()
            o.header.stamp.sec, o.header.frame_id = k, 'map'
            o.pose.pose.orientation.w = 1.0
            o.pose.covariance = [0.01 if i % 7 == 0 else 0.0 for i in range(36)]
            for topic in odom:
                writer.write(odom[topic], log, serialize_message(o))
                log += 1
    return sum(f.stat().st_size for f in pathlib.Path(path).rglob('*') if f.is_file())


def static_bag(variant: str) -> None:
    """Evaluate a 27 MB /tf_static bag in a child process; print its figures."""
    with tempfile.TemporaryDirectory(prefix='tf_bench_') as tmp:
        bag = pathlib.Path(tmp) / 'bag'
        if variant == 'over_limit':     # 19 messages of ~1.4 MB: each over the 1 MiB limit
            size = _write_static_bag(bag, 19, 13_000)
        else:                           # 30 messages of ~0.9 MB: each read
            size = _write_static_bag(bag, 30, 8_500)
        code = (
            'import json, resource, sys\n'
            'from project_ghost_feedback.bridge_inputs import bridge_outputs, bridge_parameters\n'
            'run = bridge_outputs(sys.argv[1], "/estimate", "/reference",\n'
            '                     bridge_parameters(None))\n'
            'list(run)\n'
            'c = run.counts()\n'
            'print(json.dumps({"tf_messages": c["tf_messages"],\n'
            '                  "oversized": c["oversized_skipped"],\n'
            '                  "accepted": c["tf_transforms_accepted"],\n'
            '                  "refused": c["tf_transforms_refused_by_reason"],\n'
            '                  "paired": c["paired"],\n'
            '                  "rss_peak_mb": round(resource.getrusage(\n'
            '                      resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))\n')
        start = time.monotonic()
        out = subprocess.run([sys.executable, '-c', code, str(bag)], capture_output=True,
                             text=True, check=False, timeout=1800)
        if out.returncode != 0:
            error = (out.stderr.strip().splitlines() or ['?'])[-1]
            print(json.dumps({'scenario': f'static_bag_{variant}', 'bag_mb': round(
                size / 2**20, 1), 'refused': error[:300]}))
            return
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        figures.update(scenario=f'static_bag_{variant}', bag_mb=round(size / 2**20, 1),
                       seconds=round(time.monotonic() - start, 1))
        print(json.dumps(figures))


FLOOD_PUBLISHER = """
import sys, time
import rclpy
from geometry_msgs.msg import TransformStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage
rclpy.init()
node = rclpy.create_node('tf_bench_flood')
publisher = node.create_publisher(
    TFMessage, '/tf', QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
t = TransformStamped()
t.header.frame_id, t.child_frame_id = 'odom', 'flood'
t.transform.rotation.w = 1.0
msg = TFMessage(transforms=[t])
time.sleep(float(sys.argv[2]))  # discovery
end, sent = time.monotonic() + float(sys.argv[1]), 0
while time.monotonic() < end:
    t.header.stamp = node.get_clock().now().to_msg()
    publisher.publish(msg)
    sent += 1
print(sent)
node.destroy_node()
rclpy.shutdown()
"""


def flood(rate_hz: float, window_s: float) -> None:
    """Pairs/s of the bridge over DDS before, during and after a /tf flood; print a JSON line."""
    from bridge_dds_bench import Driver, Process
    from harness import run_paced

    namespace = f'/tf_bench_flood_{os.getpid()}'
    bridge = Process('bridge', namespace)
    driver = Driver(namespace, bridge)
    windows: dict[str, dict[str, Any]] = {}
    flooder: subprocess.Popen[str] | None = None
    try:
        driver.connect()
        settle_s = 2.0
        for name in ('before', 'during', 'after'):
            if name == 'during':
                flooder = subprocess.Popen(
                    [sys.executable, '-c', FLOOD_PUBLISHER, str(window_s + 1.0), str(settle_s)],
                    stdout=subprocess.PIPE, text=True)
                time.sleep(settle_s + 0.5)   # its discovery, then the flood is under way
            base, cpu = driver.received['outcomes'], bridge.cpu_s()
            start, end, _, late = run_paced(rate_hz, int(rate_hz * window_s), driver.send_pair)
            elapsed_s = (end - start) / S
            windows[name] = {'pairs_per_s': round((driver.received['outcomes'] - base)
                                                  / elapsed_s, 1),
                             'bridge_cpu_pct': round(100 * (bridge.cpu_s() - cpu) / elapsed_s),
                             'late_sends': late}
            if name == 'during':
                assert flooder is not None  # started above, in 'during'
                sent = int(flooder.communicate(timeout=120)[0].strip() or 0)
                windows[name]['tf_sent'] = sent
                windows[name]['tf_rate_hz'] = round(sent / (window_s + 1.0))
                time.sleep(1.0)   # the bridge's backlog of /tf drains before 'after'
        driver.spin_until(lambda: driver.status.get('tf_messages_received'), 'diagnostics',
                          timeout=30.0)
        status = driver.status
    finally:
        if flooder is not None and flooder.poll() is None:
            flooder.kill()
            flooder.wait()
        driver.close()
        code = bridge.stop()
    before = windows['before']['pairs_per_s'] or 1.0
    print(json.dumps({
        'scenario': 'flood', 'rate_hz': rate_hz, 'window_s': window_s, **windows,
        'during_over_before': round(windows['during']['pairs_per_s'] / before, 3),
        'after_over_before': round(windows['after']['pairs_per_s'] / before, 3),
        'tf_messages_received': status.get('tf_messages_received'),
        'tf_messages_missed': status.get('tf_messages_missed'),
        'tf_transforms_refused_total': status.get('tf_transforms_refused_total'),
        'bridge_exit_code': code, 'load_1min': round(os.getloadavg()[0], 2)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scenario', help=argparse.SUPPRESS)
    parser.add_argument('--count', type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument('--quick', action='store_true', help='fewer frames (10,000)')
    parser.add_argument('--flood', action='store_true',
                        help='only the /tf flood over DDS (pairs/s before, during, after)')
    parser.add_argument('--rate-hz', type=float, default=50.0, help='pairs/s sent (flood)')
    parser.add_argument('--window-s', type=float, default=5.0, help='each window (flood)')
    args = parser.parse_args()
    if args.flood:
        flood(args.rate_hz, args.window_s)
        return
    if args.scenario == 'static_bag':
        for variant in ('over_limit', 'under_limit'):
            static_bag(variant)
        return
    if args.scenario:
        scenario(args.scenario, args.count)
        return
    print(f'tf memory bench, load {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    frames = 10_000 if args.quick else 100_000
    for name, count in (('frames_gate', frames), ('frames_raw', frames), ('full', 1000)):
        subprocess.run([sys.executable, __file__, '--scenario', name, '--count', str(count)],
                       check=True, timeout=3600)
    for variant in ('over_limit', 'under_limit'):
        static_bag(variant)
    flood(args.rate_hz, args.window_s)


if __name__ == '__main__':
    main()
