# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's frames through tf2 (use_tf), over real rclpy pub/sub and tf2.

- A simulated robot whose estimate is in ``odom`` while ``map -> odom`` moves (drift corrected in
  steps, sim/odom_drift.py) and the ground truth is in ``map``: the live bridge, looking the
  transform up on /tf, gives the outcomes the same stream gives with the transform applied by
  hand (references sent already in ``odom``).
- ``evaluate`` over a bag of what was published (/tf included) gives the live bridge's outcomes,
  exactly (tf2's BufferCore offline, the node's tf2_ros Buffer live: one rule, two drivers).
- A missing transform is counted by reason on /diagnostics and never pairs. The engine's rules
  for a missing, late, too late or past transform (tf2's BufferCore, no DDS) are asserted in
  test/bridge/test_pairing_tf.py.

tf2 is not on PyPI: scripts/setup.sh builds it from third_party/tf2. Without it these tests skip
with one line saying so.
"""

import math

import numpy as np

from diagnostic_msgs.msg import DiagnosticStatus
import pytest
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from rclpy.time import Time

from project_ghost_feedback.bridge.tf2_transforms import tf2_missing
from project_ghost_feedback.bridge_inputs import ASSESSMENT, bridge_outputs, bridge_parameters
from project_ghost_feedback.ros.sim_stack_node import tf_msg
from project_ghost_feedback.sim.localization_stack import StackPhase
from project_ghost_feedback.sim.odom_drift import MAP_FRAME, ODOM_FRAME, OdomDrift
from support.ordinary_bags import ordered, stack_samples
from support.evaluate_live import outcome_key, odometry_msg, offline_outputs
from support.bridge_node import COVARIANCE, harnesses, SECOND_NS, UNPACED

TF2_MISSING = tf2_missing()
pytestmark = pytest.mark.skipif(TF2_MISSING is not None, reason=f'{TF2_MISSING}')

PHASES = (StackPhase('tuned', 8.0), StackPhase('mistuned', 8.0, truth_accel_factor=6.0))
TF_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                    reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                           reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)
ESTIMATE_TOPIC, REFERENCE_TOPIC = '/odometry/filtered', '/ground_truth'


def _stamp(msg):
    return msg.header.stamp.sec * SECOND_NS + msg.header.stamp.nanosec


def _published_outcomes(h):
    return [outcome_key(_stamp(m), m.position_error_m, m.orientation_error_rad,
                        m.position_mahalanobis, m.orientation_mahalanobis) for m in h.outcomes]


def _tf_publisher(h):
    from tf2_msgs.msg import TFMessage

    publisher = h.client.create_publisher(TFMessage, '/tf', TF_QOS)
    h.spin_until(lambda: publisher.get_subscription_count() >= 1, 'the tf listener to match')
    return publisher


def _can_transform(h, stamp_ns, target=ODOM_FRAME, source=MAP_FRAME):
    # The bridge's own tf2_ros Buffer (a BufferCore): has the tf for this stamp arrived?
    return h.node._tf_buffer.can_transform_core(target, source, Time(nanoseconds=stamp_ns))[0]


def _play(h, samples, drift, by_hand, tf_publisher=None):
    """Publish the stream one message at a time; return what was published, in order."""
    published = []
    for kind, sample in ordered(samples):
        stamp = sample.stamp_ns
        if kind == 'reference':
            if by_hand:
                position, quaternion, _ = drift.to_odom(
                    stamp, sample.truth_position, sample.truth_quaternion)
                msg = odometry_msg(stamp, position, quaternion, frame_id=ODOM_FRAME)
            else:
                translation, rotation = drift.map_to_odom(stamp)
                tf = tf_msg(stamp, MAP_FRAME, ODOM_FRAME, translation, rotation)
                tf_publisher.publish(tf)
                published.append(('/tf', tf))
                h.spin_until(lambda stamp=stamp: _can_transform(h, stamp), 'the tf')
                msg = odometry_msg(stamp, sample.truth_position, sample.truth_quaternion,
                                   frame_id=MAP_FRAME)
            publisher = h.reference_publisher
        else:
            position, quaternion, covariance = drift.to_odom(
                stamp, sample.estimate_position, sample.estimate_quaternion,
                sample.pose_covariance)
            msg = odometry_msg(stamp, position, quaternion, covariance, frame_id=ODOM_FRAME)
            publisher = h.estimate_publisher
        received = h.node.counts.received[kind]
        publisher.publish(msg)
        published.append((REFERENCE_TOPIC if kind == 'reference' else ESTIMATE_TOPIC, msg))
        h.spin_until(lambda kind=kind, received=received: h.node.counts.received[kind] > received,
                     f'the {kind}')
    estimates = sum(sample.is_estimate for sample in samples)
    h.wait_assessments(estimates)
    h.spin_until(lambda: len(h.outcomes) >= h.node.counts.outcomes_published, 'the outcomes')
    return published


def _write_bag(path, published):
    """Write what was published, in that order, as a rosbag2 MCAP bag (rosbags' Writer)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_JAZZY)
    types = {'/tf': 'tf2_msgs/msg/TFMessage', ESTIMATE_TOPIC: 'nav_msgs/msg/Odometry',
             REFERENCE_TOPIC: 'nav_msgs/msg/Odometry'}
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {topic: writer.add_connection(topic, msgtype, typestore=store)
                       for topic, msgtype in types.items()}
        for log_ns, (topic, msg) in enumerate(published, start=1):
            writer.write(connections[topic], log_ns, serialize_message(msg))
    return path


@pytest.fixture(scope='module')
def drift_run():
    """Run the live bridge (use_tf, unpaced) over the simulated robot with a moving map -> odom."""
    samples = stack_samples(seed=5, phases=PHASES)
    drift = OdomDrift(step_period_s=2.0, seed=3)
    with harnesses() as make:
        h = make(**UNPACED)
        assert h.node.counts.tf_state == 'on'
        published = _play(h, samples, drift, by_hand=False, tf_publisher=_tf_publisher(h))
        outcomes = _published_outcomes(h)
        levels = [(_stamp(m), m.overall_level.value) for m in h.assessments]
        counts = (dict(h.node.engine.dropped), dict(h.node.engine.references_dropped),
                  h.node.accounting(),
                  h.node.engine.references_used)
    return samples, drift, published, outcomes, levels, counts


def test_moving_map_to_odom_through_tf_equals_the_transform_applied_by_hand(drift_run):
    """Ground truth in map through tf == ground truth sent in odom: same outcomes, none lost."""
    samples, drift, _, outcomes, levels, counts = drift_run
    dropped, references_dropped, unaccounted, references_used = counts
    assert dropped == {} and references_dropped == {}
    assert unaccounted == {'estimate': 0, 'reference': 0}
    assert references_used == len(samples)
    estimates = sum(sample.is_estimate for sample in samples)
    assert len(outcomes) == len(levels) == estimates
    # The transform did move: several corrections, and odom is far from map.
    corrections = {drift.map_to_odom(sample.stamp_ns) for sample in samples}
    assert len(corrections) >= 7
    with harnesses() as make:
        h = make(**UNPACED)
        _play(h, samples, drift, by_hand=True)
        by_hand = _published_outcomes(h)
        assert h.node.engine.references_used == len(samples)
    assert [key[0] for key in by_hand] == [key[0] for key in outcomes]
    for live, hand in zip(outcomes, by_hand):
        assert live[1] + live[2] == pytest.approx(hand[1] + hand[2], abs=1e-9)
        assert live[3:] == pytest.approx(hand[3:], rel=1e-9, abs=1e-12)
    # The distances are those of the map frame (the rotation moves errors and covariance alike).
    finite = [key[3] for key in outcomes]
    assert all(math.isfinite(d) for d in finite) and max(finite) > 1.0


def test_evaluate_of_a_bag_with_tf_gives_the_live_bridges_outcomes(drift_run, tmp_path):
    """Evaluate: it feeds the bag's /tf to tf2's BufferCore: the live outcomes, exactly."""
    samples, _, published, outcomes, levels, _ = drift_run
    bag = _write_bag(tmp_path / 'inputs', published)
    params = tmp_path / 'unpaced.yaml'
    params.write_text(
        '/**:\n  ros__parameters:\n    max_reference_gap_s: 5.0\n'
        '    decorrelation:\n      method: none\n      adaptive: false\n'
        '      min_interval_s: 0.0\n',
        encoding='utf-8')
    run = bridge_outputs(bag, ESTIMATE_TOPIC, REFERENCE_TOPIC, bridge_parameters(params))
    offline_outcomes, offline_levels = offline_outputs(run)
    counts = run.counts()
    assert counts['tf'] == 'on' and counts['tf_messages'] == len(samples)
    assert counts['tf_transforms_refused'] == 0
    assert counts['references_dropped'] == {} and counts['estimates_dropped'] == {}
    assert offline_outcomes == outcomes
    assert offline_levels == levels
    # Without tf the same bag cannot be paired: the frames differ (map vs odom).
    values = bridge_parameters(params)
    values['use_tf'] = False
    no_tf = bridge_outputs(bag, ESTIMATE_TOPIC, REFERENCE_TOPIC, values)
    assert not [kind for kind, _ in no_tf if kind != ASSESSMENT]
    assert no_tf.counts()['estimates_dropped'] == {'frame_mismatch': len(levels)}


def _statuses(h):
    return [{kv.key: kv.value for kv in s.values} | {'level': s.level} for s in h.diagnostics]


def test_missing_transform_is_counted_and_never_paired(harness):
    """References in a frame tf never relates to the estimate's: dropped as tf_unavailable."""
    h = harness(**UNPACED)
    h.estimate(SECOND_NS // 2, frame_id=ODOM_FRAME, covariance=COVARIANCE)
    for tenth in range(0, 31):
        h.reference(tenth * SECOND_NS // 10, frame_id='world')
    h.estimate(2 * SECOND_NS, frame_id=ODOM_FRAME, covariance=COVARIANCE)
    # Input time 3 s: the references up to 2 s waited their tf.max_wait_s (1 s) and are dropped.
    assert h.node.engine.references_dropped['tf_unavailable'] == 21
    assert len(h.node.engine.tf_waiting) == 10
    assert h.node.accounting() == {'estimate': 0, 'reference': 0}
    assert not h.outcomes and h.node.engine.paired == 0
    h.spin_until(lambda: any(s['level'] == DiagnosticStatus.ERROR
                             and s.get('references_dropped[tf_unavailable]') == '21'
                             for s in _statuses(h)), 'an ERROR status counting tf_unavailable')
    status = next(s for s in _statuses(h) if s['level'] == DiagnosticStatus.ERROR)
    assert status['tf'] == 'on' and status['references_unaccounted'] == '0'


@pytest.fixture
def harness():
    """Return a factory of Harness objects in a private context; all closed afterwards."""
    with harnesses() as make:
        yield make


def test_the_simulator_stack_publishes_its_frames_through_tf():
    """StackFrames (sim_stack_node --tf, the demo): truth in map, estimate in odom, map -> odom.

    tf2 itself (a BufferCore fed the published /tf) maps the truth into odom as the stack states
    it (OdomDrift.to_odom), and the transform moves in steps.
    """
    from project_ghost_feedback.ros.sim_stack_node import StackFrames
    from project_ghost_feedback.bridge.tf2_transforms import feed, offline_buffer, Tf2Transforms
    from project_ghost_feedback.bridge.geometry import FixedTransform

    frames = StackFrames(OdomDrift(seed=2))
    core = offline_buffer(10.0)
    transforms = Tf2Transforms(core)
    steps = set()
    for sample in stack_samples(seed=1, phases=(StackPhase('tuned', 7.0),)):
        tf, truth, estimate = frames.messages(sample)
        assert truth.header.frame_id == MAP_FRAME
        assert estimate is None or estimate.header.frame_id == ODOM_FRAME
        (transform,) = tf.transforms
        assert (transform.header.frame_id, transform.child_frame_id) == (MAP_FRAME, ODOM_FRAME)
        assert _stamp(transform) == _stamp(truth) == sample.stamp_ns
        assert feed(core, tf, static=False) == 0
        found = transforms.lookup(ODOM_FRAME, MAP_FRAME, sample.stamp_ns)
        position, quaternion, _ = FixedTransform(*found).apply(
            sample.truth_position, sample.truth_quaternion)
        published = frames.as_published(sample)
        assert list(position) == pytest.approx(list(published.truth_position), abs=1e-12)
        assert abs(float(quaternion @ published.truth_quaternion)) == pytest.approx(1.0)
        steps.add(tuple(found.translation_m))
    assert len(steps) == 4  # 7 s, corrected every 2 s


def test_the_simulator_clock_ticks_at_the_filters_steps_with_their_stamps():
    """clock_msg (sim_stack_node and the demo): /clock at each estimate's stamp, none between."""
    from project_ghost_feedback.ros.sim_stack_node import clock_msg

    samples = list(stack_samples(seed=1, phases=(StackPhase('tuned', 3.0),)))
    ticks = [(sample, clock_msg(sample)) for sample in samples]
    stamped = [sample.stamp_ns for sample, tick in ticks if tick is not None]
    assert stamped == [sample.stamp_ns for sample in samples if sample.is_estimate]
    assert len(stamped) == 30 and len(samples) == 5 * len(stamped)  # 10 Hz of a 50 Hz truth
    assert all(tick.clock.sec * SECOND_NS + tick.clock.nanosec == sample.stamp_ns
               for sample, tick in ticks if tick is not None)


def _engine(values=None):
    """Return (PairingEngine with tf2's BufferCore as its provider, the core, what it handed)."""
    from project_ghost_feedback.bridge.engine_interface import EngineListener
    from project_ghost_feedback.bridge.pairing import PairingEngine
    from project_ghost_feedback.bridge.parameters import engine_config
    from project_ghost_feedback.bridge.tf2_transforms import offline_buffer, Tf2Transforms

    class Collect(EngineListener):
        def __init__(self):
            self.outcomes = []

        def outcome_ready(self, outcome, estimate):
            self.outcomes.append(outcome)

    core = offline_buffer(10.0)
    listener = Collect()
    params = bridge_parameters(None)
    params.update(values or {})
    engine = PairingEngine(engine_config(params), listener, transforms=Tf2Transforms(core))
    return engine, core, listener


def test_engine_waits_for_the_estimate_frame_and_flushes_or_resets_what_waits():
    """Before any estimate references wait; at the end or at a reset they are counted, not lost."""
    from project_ghost_feedback.bridge.tf2_transforms import feed

    engine, core, listener = _engine(UNPACED)
    feed(core, tf_msg(0, MAP_FRAME, ODOM_FRAME, (1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
         static=True)
    engine.take_reference(odometry_msg(SECOND_NS, (2.0, 0.0, 0.0), (0, 0, 0, 1),
                                       frame_id=MAP_FRAME))
    assert len(engine.tf_waiting) == 1 and engine.references_used == 0  # no estimate frame yet
    engine.take_estimate(odometry_msg(SECOND_NS, (1.0, 0.0, 0.0), (0, 0, 0, 1),
                                      covariance=np.diag([0.01] * 6), frame_id=ODOM_FRAME))
    assert engine.references_used == 1 and not engine.tf_waiting
    (outcome,) = listener.outcomes  # map x=2 is odom x=1 (static map -> odom at x=1): d = 0
    assert outcome.position_mahalanobis == pytest.approx(0.0, abs=1e-9)
    # A reference in a frame tf does not know waits; a stamp 10 s back resets: counted.
    engine.take_reference(odometry_msg(2 * SECOND_NS, (0, 0, 0), (0, 0, 0, 1), frame_id='world'))
    assert len(engine.tf_waiting) == 1
    engine.take_reference(odometry_msg(20 * SECOND_NS, (0, 0, 0), (0, 0, 0, 1),
                                       frame_id='world'))
    assert engine.references_dropped == {'tf_unavailable': 1}
    engine.take_reference(odometry_msg(3 * SECOND_NS, (0, 0, 0), (0, 0, 0, 1), frame_id='world'))
    assert engine.references_dropped == {'tf_unavailable': 1, 'time_reset': 1}
    assert engine.resets == {'reference_stamp_jump': 1}
    engine.flush()  # end of input: what still waits is dropped with its reason
    assert engine.references_dropped == {'tf_unavailable': 2, 'time_reset': 1}
    assert not engine.tf_waiting and engine.references_used == 1


SHIFT = ((1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))  # odom at x = 1 in map
FAR_FUTURE_NS = 10**6 * SECOND_NS                 # 1e6 s: ~11.6 days ahead


def test_a_far_future_transform_is_refused_and_the_bridge_keeps_pairing(harness):
    """Refuse one odom transform stamped 1e6 s ahead, count it, keep pairing.

    It is refused as future_stamp and counted on /diagnostics; every later reference is still
    transformed and every estimate paired (tf2 would have refused each later transform of the
    frame as old data, and nothing paired for ~11.6 days).
    """
    h = harness(**UNPACED)
    tf = _tf_publisher(h)
    # 70 steps of 0.1 s that end before the node clock (stamps ahead of it by more than the
    # tolerance are refused, whatever the speed of the machine).
    base = (h.node.get_clock().now().nanoseconds // SECOND_NS - 8) * SECOND_NS

    def step(k):
        stamp = base + k * SECOND_NS // 10
        tf.publish(tf_msg(stamp, MAP_FRAME, ODOM_FRAME, *SHIFT))
        h.spin_until(lambda: _can_transform(h, stamp), f'the tf at step {k}')
        h.reference(stamp, frame_id=MAP_FRAME, x=1.0 + k / 10)
        h.estimate(stamp, frame_id=ODOM_FRAME, x=k / 10)

    for k in range(10):
        step(k)
    assert h.node.engine.paired == 10
    tf.publish(tf_msg(base + FAR_FUTURE_NS, MAP_FRAME, ODOM_FRAME, *SHIFT))
    h.spin_until(lambda: h.node.engine.transforms_refused['future_stamp'] == 1,
                 'the far-future transform to be refused')
    for k in range(10, 70):
        step(k)
    engine = h.node.engine
    assert engine.paired == 70 and engine.references_dropped == {} and engine.dropped == {}
    assert all(o.position_mahalanobis == pytest.approx(0.0, abs=1e-9) for o in h.outcomes)
    # Wait for a status published after all 70 were taken: the first one that shows the
    # refusal may be from a period before the last steps (it depends on the machine's speed).

    def after_all(s):
        return (s.get('tf_transforms_refused[future_stamp]') == '1'
                and int(s.get('tf_transforms_accepted', '0')) >= 70)
    h.spin_until(lambda: any(after_all(s) for s in _statuses(h)), 'the refusal on /diagnostics')
    status = next(s for s in _statuses(h) if after_all(s))
    assert status['tf_messages_missed'] == '0' and 'tf_static_messages_received' in status


def _tf_bag(tmp_path, extra_tf, count=240):
    """Write a bag of 10 Hz estimates in odom, references in map, map -> odom on /tf.

    ``extra_tf`` (index -> TFMessages) go in after that index's messages.
    """
    cov = np.diag([0.01] * 6)
    published = []
    for k in range(count):
        stamp = SECOND_NS + k * SECOND_NS // 10
        published.append(('/tf', tf_msg(stamp, MAP_FRAME, ODOM_FRAME, *SHIFT)))
        published.append((REFERENCE_TOPIC, odometry_msg(stamp, (1.0 + k / 10, 0, 0), (0, 0, 0, 1),
                                                        frame_id=MAP_FRAME)))
        published.append((ESTIMATE_TOPIC, odometry_msg(stamp, (k / 10, 0, 0), (0, 0, 0, 1), cov,
                                                       frame_id=ODOM_FRAME)))
        for extra in extra_tf.get(k, ()):
            published.append(('/tf', extra))
    return _write_bag(tmp_path / 'bag', published)


def _unpaced(tmp_path):
    params = tmp_path / 'unpaced.yaml'
    params.write_text('/**:\n  ros__parameters:\n    decorrelation:\n      method: none\n'
                      '      adaptive: false\n'
                      '      min_interval_s: 0.0\n', encoding='utf-8')
    return bridge_parameters(params)


def test_evaluate_of_a_bag_with_a_far_future_transform_pairs_every_estimate(tmp_path):
    """The same rule offline (the newest input stamp is the clock): 240 of 240 paired."""
    future = tf_msg(SECOND_NS + FAR_FUTURE_NS, MAP_FRAME, ODOM_FRAME, *SHIFT)
    bag = _tf_bag(tmp_path, {20: [future]})
    run = bridge_outputs(bag, ESTIMATE_TOPIC, REFERENCE_TOPIC, _unpaced(tmp_path))
    list(run)
    counts = run.counts()
    assert counts['paired'] == 240 and counts['references_dropped'] == {}
    assert counts['tf_transforms_refused_by_reason'] == {'future_stamp': 1}
    assert counts['tf_transforms_accepted'] == 240


def test_evaluate_undoes_a_far_future_transform_that_came_before_any_input(tmp_path):
    """Before any input there is no clock: it gets in, and the next valid one resets tf."""
    future = tf_msg(SECOND_NS + FAR_FUTURE_NS, MAP_FRAME, ODOM_FRAME, *SHIFT)
    published = [('/tf', future)]
    bag = _tf_bag(tmp_path, {})
    run = bridge_outputs(_write_bag(tmp_path / 'first', published + _bag_messages(bag)),
                         ESTIMATE_TOPIC, REFERENCE_TOPIC, _unpaced(tmp_path))
    list(run)
    counts = run.counts()
    assert counts['paired'] == 240 and counts['resets'] == {'tf_stamp_jump': 1}


def _bag_messages(bag):
    """Return ``[(topic, rclpy message)]`` of a bag written by _write_bag, in order."""
    from rclpy.serialization import deserialize_message
    from rosbags.highlevel import AnyReader
    from nav_msgs.msg import Odometry
    from tf2_msgs.msg import TFMessage

    classes = {'/tf': TFMessage, ESTIMATE_TOPIC: Odometry, REFERENCE_TOPIC: Odometry}
    with AnyReader([bag]) as reader:
        return [(c.topic, deserialize_message(raw, classes[c.topic]))
                for c, _, raw in reader.messages()]


def test_evaluate_counts_nan_transforms_once_instead_of_tf2_printing_each(tmp_path, capfd):
    """300 NaN transforms: counted by reason, one summary line; tf2 prints nothing."""
    nan = tf_msg(SECOND_NS, MAP_FRAME, 'laser', (float('nan'), 0.0, 0.0), (0, 0, 0, 1))
    bag = _tf_bag(tmp_path, {k: [nan] * 2 for k in range(150)})
    from project_ghost_feedback.cli import main

    out = tmp_path / 'out'
    params = tmp_path / 'unpaced.yaml'
    _unpaced(tmp_path)
    code = main(['evaluate', str(bag), '--estimate', ESTIMATE_TOPIC, '--reference',
                 REFERENCE_TOPIC, '--params-file', str(params), '--output-dir', str(out),
                 '--no-plot'])
    captured = capfd.readouterr()
    assert code == 0, captured.err
    printed = captured.out + captured.err
    # tf2 printed 'TF_NAN_INPUT: Ignoring transform ... because of a nan value' per message.
    assert 'TF_NAN_INPUT' not in printed and 'Ignoring transform' not in printed, printed[:2000]
    summary = (out / 'summary.txt').read_text()
    lines = [line for line in summary.splitlines() if 'position_not_finite' in line]
    assert len(lines) == 1 and 'position_not_finite 300' in lines[0], summary


def test_a_10000_frame_chain_is_called_a_chain_not_a_loop():
    """tf2 says "contains a loop" past its depth of 1000; the drop says what it is."""
    from tf2_msgs.msg import TFMessage
    from project_ghost_feedback.bridge.engine_interface import EngineListener

    engine, _, _ = _engine({**UNPACED, 'tf.max_frames': 20_000})
    dropped = []

    class Drops(EngineListener):
        def reference_dropped(self, reason, detail):
            dropped.append((reason, detail))

    engine.listener = Drops()
    frames = [f'f{i}' for i in range(10_001)]
    transforms = [tf_msg(0, parent, child, (0.0, 0.0, 0.0), (0, 0, 0, 1)).transforms[0]
                  for parent, child in zip(frames, frames[1:])]
    engine.take_transforms(TFMessage(transforms=transforms), True, SECOND_NS)
    assert engine.transforms_accepted == 10_000
    engine.take_estimate(odometry_msg(SECOND_NS, (0, 0, 0), (0, 0, 0, 1), np.diag([0.01] * 6),
                                      frame_id='f0'))
    engine.take_reference(odometry_msg(SECOND_NS, (0, 0, 0), (0, 0, 0, 1), frame_id='f10000'))
    engine.flush()
    ((reason, detail),) = dropped
    assert reason == 'tf_unavailable'
    assert 'no loop' in detail and '10000 frames long' in detail, detail


class _FrameError:
    """The true drift for the estimates; map -> odom published 2 m off from 3 s to 4.5 s."""

    def __init__(self, drift):
        self._drift = drift
        self.to_odom = drift.to_odom

    def map_to_odom(self, stamp_ns):
        translation, rotation = self._drift.map_to_odom(stamp_ns)
        if 3 * SECOND_NS <= stamp_ns < 4_500_000_000:
            translation = (translation[0] + 2.0, translation[1], translation[2])
        return translation, rotation


def test_a_frame_error_is_named_on_diagnostics():
    """A 2 m wrong map -> odom for 1.5 s: /diagnostics names odom <- map, the step and when.

    The live node runs the engine's rule (bridge/frame_steps.py): the distances jumped at the
    step and fell back at the fix; ``frame_steps`` counts both, ``last_frame_step`` says the
    frames and the step in metres and degrees, and the period is WARN.
    """
    samples = stack_samples(seed=5, phases=(StackPhase('tuned', 6.0),))
    with harnesses() as make:
        h = make(**UNPACED)
        _play(h, samples, _FrameError(OdomDrift(step_period_s=2.0, seed=3)), by_hand=False,
              tf_publisher=_tf_publisher(h))
        assert h.node.counts.transform_steps == 2
        h.spin_until(lambda: any(s['frame_steps'] == '2' for s in _statuses(h)),
                     'a /diagnostics status with both frame steps')
        status = next(s for s in _statuses(h) if s['frame_steps'] == '2')
        warned = [s for s in h.diagnostics if 'at a /tf change of odom <- map (2.000 m' in
                  s.message]
    assert warned and all(s.level == DiagnosticStatus.WARN for s in warned)
    assert status['last_frame_step'].startswith('position distance fell back')
    assert 'odom <- map stepped 2.000 m, 0.00 deg at stamp 4500000000 ns' in (
        status['last_frame_step'])
