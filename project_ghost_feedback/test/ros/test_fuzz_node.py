# SPDX-License-Identifier: Apache-2.0
"""Fuzzing the feedback node: >= 10k malformed messages mixed into good traffic.

A seeded generator builds a stream of PredictionOutcome and BeliefSelfAssessment *messages*, each
tagged with what the contract says must happen to it:

- malformed (rejected, counted under an exact reason): NaN or negative distances (-inf included),
  NaN or +-inf in the error vectors, NaN, infinite or negative bias evidence, a bias share outside
  [0, 1], unknown levels (overall and per axis/block), bad
  schema_version (0, 2, uint32 max), negative stamps (int64 min included), observed before
  predicted (e.g. int64 max then 0), NamedLevel lists with bad names (empty, upper case, 65
  characters, non-ASCII, ...) or duplicate names, also buried at the end of huge lists;
- valid although unusual, which must be *handled* and never rejected: +inf and -0.0 distances,
  1e308 errors, stamps 0 and int64 max, out-of-order outcomes (put in order), exact duplicates
  (dropped and counted), repeated and out-of-order belief stamps, empty and huge (2000 entries)
  NamedLevel lists, 64-character names.

Fixed-size arrays (``float64[3]``) cannot be sent with another length: the message class refuses
it before anything reaches DDS, so "wrong length" is not part of the wire fuzzing.

The expected outputs come from an independent model of the node (the ``capacity`` newest distinct
outcomes by observed stamp, the causal last ``max_history`` of them, ``assess_with_feedback``),
fed the valid messages only. Most of the stream goes through the node's subscription callbacks
directly (a FeedbackNode in a private context, no DDS); a smaller mixed batch goes over real
rclpy publish/subscribe between two private contexts, with each executor. In both, the node stays
up, every malformed message is counted by reason in ``node.health.rejected``, and the outputs for
the good messages equal those of the clean stream (and of the model). A recording node keeps exactly
the accepted messages in its telemetry bag, which replays to the same outputs; a multi-megabyte
bad value is counted without being echoed whole into /diagnostics.
"""

import bisect
import collections
import math
import random
import time

from builtin_interfaces.msg import Time
from project_ghost_feedback.core.validation import STAMP_MAX_NS
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    CalibratedSelfAssessment as CalibratedSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
    SelfAssessmentLevel as LevelMsg,
)
from support.contracts import named_level_msg
from support.ros_context import new_rclpy_context, spin_in_turn
import pytest
import rclpy
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from project_ghost_feedback.core import PredictionOutcome
from project_ghost_feedback.core.feedback import assess_with_feedback, make_policy, policy_names
from project_ghost_feedback.core.loop import LoopConfig, MAX_HISTORY_RANGE
from project_ghost_feedback.ros.conversions import (
    belief_from_msg,
    calibrated_from_msg,
    outcome_from_msg,
)
from project_ghost_feedback.ros.feedback_node import EXECUTORS, FeedbackNode, make_executor

SEED = 20261202
MALFORMED_TARGET = 10_000
MAX_HISTORY = 16
BUFFER_SIZE = 48          # small, so that eviction and too-old arrivals happen often
STAMP_MIN_NS = -STAMP_MAX_NS  # most negative stamp a builtin_interfaces/Time carries (~)
UINT32_MAX = 2**32 - 1
MS = 1_000_000
DEADLINE_S = 20.0
QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                 reliability=ReliabilityPolicy.RELIABLE)
# The streams span seconds of stamps with deliberate disorder and stamp 0: a tolerance far above
# that keeps the node's time-jump reset out of these tests (test_feedback_node tests it).
PARAMETERS = {'max_history': MAX_HISTORY, 'outcome_buffer_size': BUFFER_SIZE,
              'policy': 'mahalanobis_downgrade', 'time_jump_tolerance_s': 3600.0}
# Stamps this far ahead of the node's (wall) clock are refused as future_stamp: the contract
# accepts them, the node does not let them into its window (e.g. STAMP_MAX_NS).
FUTURE_NS = time.time_ns() + 7200 * 10**9

OUTCOME = 'outcome'
ASSESSMENT = 'assessment'
VALID = None              # expectation of a message the contract accepts


MAX_LEVELS = BeliefSelfAssessmentMsg.MAX_AXIS_LEVELS


def _time(ns):
    """Return a builtin_interfaces/Time for ``ns`` (negative values too: sec < 0)."""
    sec, nanosec = divmod(ns, 10**9)
    return Time(sec=sec, nanosec=nanosec)


def _outcome_msg(prediction_ns, observed_ns, **fields):
    msg = PredictionOutcomeMsg(prediction_stamp=_time(prediction_ns),
                               schema_version=PredictionOutcomeMsg.SCHEMA_VERSION, **fields)
    msg.header.stamp = _time(observed_ns)
    return msg


def _belief_msg(stamp_ns, level, **fields):
    msg = BeliefSelfAssessmentMsg(
        overall_level=LevelMsg(value=level), schema_version=2, **fields)
    msg.header.stamp = _time(stamp_ns)
    return msg


def _legal(topic, msg):
    """Return (topic, msg, expected) for a message the contract accepts.

    Its stamp (observed / belief) decides: beyond FUTURE_NS the node refuses it (future_stamp).
    """
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    return (topic, msg, f'{topic}:future_stamp' if stamp > FUTURE_NS else VALID)


# -- the seeded generator ------------------------------------------------------------------------

def _name(rng):
    return rng.choice('abcdefghijklmnopqrstuvwxyz') + ''.join(
        rng.choice('abcdefghijklmnopqrstuvwxyz0123456789_') for _ in range(rng.randrange(0, 12)))


BAD_NAMES = ('', 'Position_x', '1abc', '_x', 'a-b', 'a b', ' yaw', 'yaw ', 'pos\u00e9', 'x' * 65,
             'pose\n', 'a.b')


class StreamGenerator:
    """Seeded stream of (topic, message, expected reason or VALID)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.stamp = 10 * MS
        self.used_observed = set()
        self.valid_outcomes = []     # messages, for exact duplicates
        self.belief_stamps = []
        self.extreme = 0

    # .. valid messages ..

    def _fresh_observed(self, low, high):
        while True:
            stamp = self.rng.randrange(low, high)
            if stamp not in self.used_observed:
                self.used_observed.add(stamp)
                return stamp

    def _distance(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.03:
            return math.inf
        if roll < 0.05:
            return rng.choice((0.0, -0.0, 1e308, 5e-324))
        if roll < 0.06:
            return float(rng.randrange(0, 50))   # exactly on a bucket edge sometimes
        scale = 1.0 if (self.stamp // (200 * MS)) % 2 == 0 else 3.0   # calibrated / not
        return abs(rng.gauss(0.0, scale)) * 1.6

    def good_outcome(self):
        """Return a valid outcome message; sometimes out of order or with extreme stamps."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.1 and self.stamp > 100 * MS:
            observed = self._fresh_observed(self.stamp - 100 * MS, self.stamp)   # out of order
        elif roll < 0.102 and self.extreme < 4:
            self.extreme += 1
            observed = self._fresh_observed(STAMP_MAX_NS - 1000, STAMP_MAX_NS + 1)
        else:
            observed = self._fresh_observed(self.stamp, self.stamp + MS)
        prediction = rng.choice((observed, 0, max(0, observed - rng.randrange(1, 500 * MS))))
        msg = _outcome_msg(
            prediction, observed,
            position_error_m=[rng.uniform(-1, 1) for _ in range(3)],
            orientation_error_rad=[rng.choice((rng.uniform(-0.1, 0.1), 1e308, -1e308, 0.0))
                                   for _ in range(3)],
            position_mahalanobis=self._distance(), orientation_mahalanobis=self._distance())
        self.valid_outcomes.append(msg)
        return msg

    def levels(self, count):
        """Return ``count`` NamedLevel messages with unique valid names (one may be 64 long)."""
        rng = self.rng
        names = set()
        while len(names) < count:
            names.add('n' * 64 if rng.random() < 0.02 else _name(rng))
        return [named_level_msg(name, rng.randrange(0, 3)) for name in sorted(names)]

    def good_assessment(self):
        """Return a valid assessment message; sometimes an unusual but legal one."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.05 and self.belief_stamps:
            stamp = rng.choice(self.belief_stamps)                 # repeated belief stamp
        elif roll < 0.1:
            stamp = max(0, self.stamp - rng.randrange(0, 200 * MS))   # out of order
        elif roll < 0.11:
            stamp = rng.choice((0, STAMP_MAX_NS))
        else:
            stamp = self.stamp
        self.belief_stamps.append(stamp)
        big = rng.random() < 0.002
        msg = _belief_msg(
            stamp, rng.randrange(0, 3),
            axis_levels=self.levels(MAX_LEVELS if big else rng.randrange(0, 6)),
            block_levels=self.levels(rng.randrange(0, 3)))
        return msg

    # .. malformed messages: exactly one defect each, with the reason the node must count ..

    def bad_outcome(self):
        """Return (message, reason) for an outcome with one defect."""
        rng = self.rng
        msg = _outcome_msg(
            self.stamp - MS, self.stamp,
            position_error_m=[0.1, 0.2, 0.3], orientation_error_rad=[0.01, 0.02, 0.03],
            position_mahalanobis=1.0, orientation_mahalanobis=1.0)
        owner = 'PredictionOutcome'
        kind = rng.randrange(10)
        if kind == 0:
            field = rng.choice(('position_mahalanobis', 'orientation_mahalanobis'))
            setattr(msg, field, math.nan)
            reason = f'nan:{owner}.{field}'
        elif kind == 1:
            field = rng.choice(('position_mahalanobis', 'orientation_mahalanobis'))
            setattr(msg, field, rng.choice((-math.inf, -1e-300, -1.0, -1e308)))
            reason = f'negative:{owner}.{field}'
        elif kind == 2:
            field = rng.choice(('position_error_m', 'orientation_error_rad'))
            index = rng.randrange(3)
            values = list(getattr(msg, field))
            values[index] = math.nan
            setattr(msg, field, values)
            reason = f'nan:{owner}.{field}[{index}]'
        elif kind == 3:
            field = rng.choice(('position_error_m', 'orientation_error_rad'))
            index = rng.randrange(3)
            values = list(getattr(msg, field))
            values[index] = rng.choice((math.inf, -math.inf))
            setattr(msg, field, values)
            reason = f'not_finite:{owner}.{field}[{index}]'
        elif kind == 4:
            msg.schema_version = rng.choice((0, 1, 2, 255, UINT32_MAX))
            reason = f'unsupported_schema_version:{owner}.schema_version'
        elif kind == 5:
            msg.prediction_stamp = _time(
                rng.choice((-1, STAMP_MIN_NS, -rng.randrange(1, STAMP_MAX_NS))))
            reason = f'negative:{owner}.prediction_stamp_sim_ns'
        elif kind == 6:
            msg.prediction_stamp = _time(0)
            msg.header.stamp = _time(rng.choice((-1, STAMP_MIN_NS)))
            reason = f'negative:{owner}.observed_stamp_sim_ns'
        elif kind == 7:
            msg.prediction_stamp = _time(rng.choice((STAMP_MAX_NS, self.stamp + 1)))
            msg.header.stamp = _time(rng.choice((0, self.stamp)))
            reason = f'stamp_order:{owner}.observed_stamp_sim_ns'
        elif kind == 8:
            value, word = rng.choice(((math.nan, 'nan'), (math.inf, 'not_finite'),
                                      (-1e-9, 'negative')))
            msg.bias_evidence_nats = value
            reason = f'{word}:{owner}.bias_evidence_nats'
            if rng.random() < 0.5:
                msg.bias_evidence_nats = 1.0
                msg.bias_position_share = rng.choice((-1e-9, 1.5, 1e308))
                reason = f'out_of_range:{owner}.bias_position_share'
        else:
            # A NaN that a careless check (d > 0, not d >= 0) would let through, with +inf in
            # the other distance (legal): only the NaN is reported.
            msg.position_mahalanobis = math.inf
            msg.orientation_mahalanobis = math.nan
            reason = f'nan:{owner}.orientation_mahalanobis'
        return msg, f'{OUTCOME}:{reason}'

    def bad_assessment(self):
        """Return (message, reason) for an assessment with one defect."""
        rng = self.rng
        msg = _belief_msg(
            self.stamp, 0, axis_levels=self.levels(rng.randrange(0, 4)),
            block_levels=self.levels(rng.randrange(0, 2)))
        owner = 'BeliefSelfAssessment'
        kind = rng.randrange(7)
        if kind == 6 and rng.random() < 0.9:
            kind = 3   # huge lists are expensive to build: keep them to ~1% of the stream
        lists = rng.choice(('axis_levels', 'block_levels'))
        if kind == 0:
            msg.overall_level.value = rng.randrange(3, 256)
            reason = 'unknown_level:SelfAssessmentLevel.value'
        elif kind == 1:
            msg.schema_version = rng.choice((0, 1, 255, UINT32_MAX))
            reason = f'unsupported_schema_version:{owner}.schema_version'
        elif kind == 2:
            msg.header.stamp = _time(
                rng.choice((-1, STAMP_MIN_NS, -rng.randrange(1, STAMP_MAX_NS))))
            reason = f'negative:{owner}.belief_stamp_sim_ns'
        elif kind == 3:
            items = list(getattr(msg, lists))
            items.insert(rng.randrange(len(items) + 1),
                         named_level_msg(rng.choice(BAD_NAMES), 0))
            setattr(msg, lists, items)
            reason = 'bad_taxonomy:NamedLevel.name'
        elif kind == 4:
            items = list(getattr(msg, lists))
            items.insert(rng.randrange(len(items) + 1),
                         named_level_msg('unknown_level_here', rng.randrange(3, 256)))
            setattr(msg, lists, items)
            reason = 'unknown_level:SelfAssessmentLevel.value'
        elif kind == 5:
            items = self.levels(rng.randrange(1, 5))
            items.insert(rng.randrange(len(items) + 1),
                         named_level_msg(rng.choice(items).name, 1))
            setattr(msg, lists, items)
            reason = f'duplicate_name:{owner}.{lists}'
        else:
            # A full list whose only defect is its last entry (bad name or duplicate).
            items = self.levels(MAX_LEVELS - 1)
            if rng.random() < 0.5:
                items.append(named_level_msg(rng.choice(BAD_NAMES), 2))
                reason = 'bad_taxonomy:NamedLevel.name'
            else:
                items.append(named_level_msg(items[0].name, 2))
                reason = f'duplicate_name:{owner}.{lists}'
            setattr(msg, lists, items)
        return msg, f'{ASSESSMENT}:{reason}'

    def stream(self, malformed):
        """Return [(topic, message, expected)] holding ``malformed`` malformed messages."""
        rng = self.rng
        events = []
        bad = 0
        while bad < malformed:
            self.stamp += MS
            for _ in range(rng.randrange(0, 3)):
                events.append(_legal(OUTCOME, self.good_outcome()))
            if rng.random() < 0.05 and self.valid_outcomes:
                events.append(_legal(OUTCOME, rng.choice(self.valid_outcomes[-60:])))  # dup
            for _ in range(rng.randrange(0, 3)):
                if rng.random() < 0.6:
                    events.append((OUTCOME, *self.bad_outcome()))
                else:
                    events.append((ASSESSMENT, *self.bad_assessment()))
                bad += 1
            events.append(_legal(ASSESSMENT, self.good_assessment()))
        return events


# -- an independent model of the node ------------------------------------------------------------

class NodeModel:
    """What the node must publish for the valid messages, written without OutcomeWindow.

    The node keeps the ``capacity`` newest distinct outcomes by observed stamp (an arrival older
    than all of a full window is dropped, the oldest is evicted otherwise); an assessment at stamp
    ``b`` is judged on the last ``max_history`` of them observed at or before ``b``. The generator
    never gives two distinct outcomes the same observed stamp, so that stamp alone orders them.
    """

    def __init__(self, capacity, max_history):
        self.capacity = capacity
        self.max_history = max_history
        self.policy = make_policy('mahalanobis_downgrade')
        self.stamps = []
        self.outcomes = []
        self.duplicates = 0
        self.too_old = 0
        self.outputs = []

    def outcome(self, outcome):
        """Take a valid outcome contract."""
        stamp = outcome.observed_stamp_sim_ns
        index = bisect.bisect_left(self.stamps, stamp)
        if index < len(self.stamps) and self.stamps[index] == stamp:
            assert self.outcomes[index] == outcome, 'generator reused an observed stamp'
            self.duplicates += 1
            return
        if len(self.stamps) >= self.capacity and index == 0:
            self.too_old += 1
            return
        self.stamps.insert(index, stamp)
        self.outcomes.insert(index, outcome)
        if len(self.stamps) > self.capacity:
            del self.stamps[0]
            del self.outcomes[0]

    def assessment(self, raw):
        """Take a valid raw assessment; return the calibrated output."""
        end = bisect.bisect_right(self.stamps, raw.belief_stamp_sim_ns)
        window = self.outcomes[max(0, end - self.max_history):end]
        calibrated = assess_with_feedback(raw, window, self.policy, self.max_history)
        self.outputs.append(calibrated)
        return calibrated


def expected_for(events):
    """Return (model fed the valid messages, Counter of expected rejection reasons)."""
    model = NodeModel(BUFFER_SIZE, MAX_HISTORY)
    reasons = collections.Counter()
    for topic, msg, expected in events:
        if expected is not VALID:
            reasons[expected] += 1
        elif topic == OUTCOME:
            model.outcome(outcome_from_msg(msg))
        else:
            model.assessment(belief_from_msg(msg))
    return model, reasons


def _callbacks(node):
    """Return the node's (outcome, assessment) subscription callbacks, taking a message."""
    return node.input_handlers()


def feed_handlers(node, events):
    """Feed ``events`` to the node's subscription callbacks; return the published outputs."""
    on_outcome, on_assessment = _callbacks(node)
    outputs = []
    for topic, msg, _ in events:
        if topic == OUTCOME:
            on_outcome(msg)
        else:
            published = node.counts.published
            on_assessment(msg)
            if node.counts.published != published:
                assert node.counts.published == published + 1
                outputs.append(node.verdict.calibrated)
    return outputs


def _node(rclpy_context, name, executor='single_threaded'):
    parameters = {**PARAMETERS, 'executor': executor}
    return FeedbackNode(
        node_name=name, context=rclpy_context,
        parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()])


# -- handler level: the bulk of the fuzzing -------------------------------------------------------

@pytest.mark.long
def test_malformed_messages_are_counted_and_good_outputs_equal_the_clean_stream(rclpy_context):
    """>= 10k malformed messages among good ones: counted by reason, outputs as if clean."""
    events = StreamGenerator(SEED).stream(MALFORMED_TARGET)
    model, reasons = expected_for(events)
    malformed = sum(reasons.values())
    assert malformed >= MALFORMED_TARGET
    valid = [event for event in events if event[2] is VALID]
    # The stream really mixes both, and exercises every class of defect and of unusual input.
    assert len(valid) >= 10_000 and len(reasons) >= 20
    assert model.duplicates > 50 and model.too_old > 50

    mixed_node = _node(rclpy_context, 'fuzz_mixed')
    clean_node = _node(rclpy_context, 'fuzz_clean')
    try:
        mixed = feed_handlers(mixed_node, events)
        clean = feed_handlers(clean_node, valid)

        assert mixed_node.health.rejected == reasons
        assert clean_node.health.rejected == collections.Counter()
        assert len(mixed) == len(clean) == len(model.outputs)
        assert mixed == clean == model.outputs
        counts = collections.Counter(topic for topic, _, _ in events)
        assert mixed_node.counts.received == counts
        assert mixed_node.counts.duplicates == clean_node.counts.duplicates == model.duplicates
        assert (mixed_node.counts.too_old_outcomes == clean_node.counts.too_old_outcomes
                == model.too_old)
        assert mixed_node.counts.late_outcomes == clean_node.counts.late_outcomes
        # Still up: it answers one more good message.
        final = next(msg for topic, msg, expected in reversed(valid) if topic == ASSESSMENT)
        _callbacks(mixed_node)[1](final)
        assert mixed_node.verdict.calibrated == model.assessment(belief_from_msg(final))
        # Valid-by-contract oddities were handled, not rejected: +inf reached the outputs...
        assert any(math.isinf(c.calibration_history.worst_position_mahalanobis)
                   for c in mixed)
        # ...as did stamp 0 and full NamedLevel lists; the largest stamp is from the future.
        stamps = {c.raw_assessment.belief_stamp_sim_ns for c in mixed}
        assert 0 in stamps and STAMP_MAX_NS not in stamps
        assert reasons['assessment:future_stamp'] > 0 and reasons['outcome:future_stamp'] > 0
        assert max(len(c.raw_assessment.axis_levels) for c in mixed) == MAX_LEVELS
        # The diagnostics report the same per-reason counts.
        values = {kv.key: kv.value for kv in mixed_node.diagnostic_status().values}
        assert values['rejected_total'] == str(malformed)
        for reason, count in reasons.items():
            assert values[f'rejected[{reason}]'] == str(count)
    finally:
        mixed_node.destroy_node()
        clean_node.destroy_node()


def test_outcome_duplicates_and_disorder_are_handled_not_rejected(rclpy_context):
    """Valid-by-contract disorder: shuffled and repeated outcomes give the ordered result."""
    rng = random.Random(SEED + 1)
    outcomes = [PredictionOutcome(i * MS - 1, i * MS, (0.0, 0.1, 0.0), (0.0, 0.0, 0.01),
                                  rng.choice((0.5, 2.0, 4.0, 7.0, math.inf)), 0.0)
                for i in range(1, 41)]
    shuffled = outcomes + rng.sample(outcomes, 15)   # 15 exact duplicates
    rng.shuffle(shuffled)
    from project_ghost_feedback.ros.conversions import belief_to_msg, outcome_to_msg
    from project_ghost_feedback.core import BeliefSelfAssessment, SelfAssessmentLevel
    raw = BeliefSelfAssessment(40 * MS, SelfAssessmentLevel.KNOWN)
    node = _node(rclpy_context, 'fuzz_disorder')
    try:
        on_outcome, on_assessment = _callbacks(node)
        for outcome in shuffled:
            on_outcome(outcome_to_msg(outcome))
        on_assessment(belief_to_msg(raw))
        assert node.health.rejected == collections.Counter()
        assert node.counts.duplicates == 15
        expected = assess_with_feedback(
            raw, outcomes[-MAX_HISTORY:], make_policy('mahalanobis_downgrade'), MAX_HISTORY)
        assert node.verdict.calibrated == expected
    finally:
        node.destroy_node()


def test_recorded_fuzz_stream_holds_the_accepted_messages_and_replays_exactly(
        rclpy_context, tmp_path):
    """Recording a fuzzed stream: only accepted messages are in the bag; replay matches."""
    from project_ghost_feedback.telemetry import read_bag, replay_bag

    events = StreamGenerator(SEED + 5).stream(2000)
    model, reasons = expected_for(events)
    bag = tmp_path / 'bag'
    node = FeedbackNode(
        node_name='fuzz_recording', context=rclpy_context, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**PARAMETERS, 'telemetry_bag': str(bag)}.items()])
    try:
        outputs = feed_handlers(node, events)
        assert node.health.rejected == reasons
    finally:
        node.destroy_node()   # closes the bag
    assert outputs == model.outputs
    recorded = collections.defaultdict(list)
    for item in read_bag(bag):
        recorded[item.topic].append(item.contract)
    valid = [(topic, msg) for topic, msg, expected in events if expected is VALID]
    assert recorded['/prediction_outcome'] == [
        outcome_from_msg(msg) for topic, msg in valid if topic == OUTCOME]
    assert recorded['/self_assessment/raw'] == [
        belief_from_msg(msg) for topic, msg in valid if topic == ASSESSMENT]
    assert recorded['/self_assessment/calibrated'] == model.outputs
    report = replay_bag(bag)
    assert report.identical is True and report.compared == len(model.outputs)


def test_oversized_bad_values_stay_out_of_the_diagnostics(rclpy_context):
    """A multi-megabyte bad name is rejected and counted; diagnostics quote only its start."""
    node = _node(rclpy_context, 'fuzz_oversized')
    try:
        on_outcome, on_assessment = _callbacks(node)
        huge = 'Z' * 4_000_000
        on_assessment(_belief_msg(MS, 0, axis_levels=[named_level_msg(huge, 0)]))
        assert node.health.rejected == {'assessment:bad_taxonomy:NamedLevel.name': 1}
        values = {kv.key: kv.value for kv in node.diagnostic_status().values}
        assert values['last_reject_reason'].startswith('assessment: NamedLevel.name ')
        assert sum(len(value) for value in values.values()) < 4000
        # Still up: a good message right after is answered.
        on_assessment(_belief_msg(2 * MS, 0))
        assert node.counts.published == 1
    finally:
        node.destroy_node()


# -- over real DDS: a smaller mixed batch, each executor ------------------------------------------

class _Driver:
    """Publishers of both inputs and a subscriber of the output, in a context of their own."""

    def __init__(self, node, node_executor):
        self.node = node
        self.node_executor = node_executor
        self.context = new_rclpy_context()
        self.client = rclpy.create_node('fuzz_driver', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.client)
        self.matched = collections.Counter()
        self.outputs = []

        def matched(key):
            return lambda info: self.matched.__setitem__(key, info.current_count)

        self.outcomes = self.client.create_publisher(
            PredictionOutcomeMsg, '/prediction_outcome', QOS,
            event_callbacks=PublisherEventCallbacks(matched=matched(OUTCOME)))
        self.assessments = self.client.create_publisher(
            BeliefSelfAssessmentMsg, '/self_assessment/raw', QOS,
            event_callbacks=PublisherEventCallbacks(matched=matched(ASSESSMENT)))
        self.client.create_subscription(
            CalibratedSelfAssessmentMsg, '/self_assessment/calibrated', self.outputs.append, QOS,
            event_callbacks=SubscriptionEventCallbacks(matched=matched('output')))
        self.spin_until(lambda: all(self.matched[k] for k in (OUTCOME, ASSESSMENT, 'output')),
                        'DDS matching')

    def spin_until(self, condition, what):
        deadline = time.monotonic() + DEADLINE_S
        while not condition():
            assert time.monotonic() < deadline, (
                f'timed out waiting for {what}: received {dict(self.node.counts.received)}, '
                f'published {self.node.counts.published}, {len(self.outputs)} outputs')
            spin_in_turn(self.node_executor, self.executor)

    def close(self):
        self.executor.shutdown()
        self.client.destroy_node()
        self.context.try_shutdown()


@pytest.mark.parametrize('executor', EXECUTORS)
def test_mixed_batch_over_dds_counts_rejections_and_matches_the_model(rclpy_context, executor):
    """A mixed batch over real pub/sub: same counts by reason, outputs equal to the model's."""
    events = StreamGenerator(SEED + 2).stream(600)
    model, reasons = expected_for(events)
    node = _node(rclpy_context, f'fuzz_dds_{executor}', executor)
    node_executor = make_executor(executor, rclpy_context)
    node_executor.add_node(node)
    driver = None
    try:
        driver = _Driver(node, node_executor)
        sent = collections.Counter()
        published = 0
        for topic, msg, expected in events:
            if topic == OUTCOME:
                driver.outcomes.publish(msg)
                sent[OUTCOME] += 1
                continue
            # Every outcome sent so far is taken before the assessment goes out, so that the
            # result does not depend on delivery timing across the two topics.
            driver.spin_until(lambda: node.counts.received[OUTCOME] >= sent[OUTCOME], 'outcomes')
            driver.assessments.publish(msg)
            sent[ASSESSMENT] += 1
            published += expected is VALID
            driver.spin_until(lambda: node.counts.received[ASSESSMENT] >= sent[ASSESSMENT]
                              and len(driver.outputs) >= published, 'the assessment')
        driver.spin_until(lambda: len(driver.outputs) >= len(model.outputs), 'outputs')
        assert node.counts.received == sent
        assert node.health.rejected == reasons
        assert node.counts.duplicates == model.duplicates
        assert node.counts.too_old_outcomes == model.too_old
        assert [calibrated_from_msg(m) for m in driver.outputs] == model.outputs
    finally:
        if driver is not None:
            driver.close()
        node_executor.shutdown()
        node.destroy_node()


# -- the policy's tables at the extremes of the accepted configuration (issue 34, finding 1) -------

@pytest.mark.parametrize('policy', policy_names())
def test_policy_thresholds_stay_bounded_at_every_accepted_max_history(policy):
    """The largest accepted ``max_history`` costs a bounded table, the next one is refused.

    ``bucket_likelihood_ratio`` built a table to the next power of two past its window
    (``thresholds(4097)``: 117 s) and stalled the node; the binomial policies summed whole
    ``O(n)`` tails (``calibrated_exceedance`` at 100,000: 43 s); ``vec3_scale`` tabulated every
    size to the next power of two. Memory is the machine-independent witness: the thresholds of
    the largest accepted window must not allocate a table that grows with it.
    """
    import tracemalloc

    built = make_policy(policy)
    largest = min(MAX_HISTORY_RANGE[1], getattr(built, 'MAX_HISTORY', MAX_HISTORY_RANGE[1]))
    LoopConfig.make(policy, None, largest, largest)
    with pytest.raises(ValueError, match='max_history'):
        LoopConfig.make(policy, None, largest + 1, largest + 1)
    if not hasattr(built, 'thresholds'):
        return
    tracemalloc.start()
    try:
        for n in (largest, largest - 1, largest // 2 + 1):
            built.thresholds(n)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, f'{policy}: {peak} bytes for the thresholds of {largest}'


def test_the_node_refuses_a_max_history_its_policy_cannot_judge(rclpy_context):
    """``-p policy:=bucket_likelihood_ratio -p max_history:=2200`` is refused in one line."""
    node = _node(rclpy_context, 'fuzz_bounds')
    try:
        result = node.set_parameters_atomically([
            Parameter('policy', value='bucket_likelihood_ratio'),
            Parameter('max_history', value=2200)])
        assert not result.successful
        assert 'max_history must be <= 512' in result.reason and '\n' not in result.reason
        assert node.get_parameter('max_history').value == MAX_HISTORY
        result = node.set_parameters_atomically([
            Parameter('policy', value='bucket_likelihood_ratio'),
            Parameter('max_history', value=512)])
        assert result.successful, result.reason
    finally:
        node.destroy_node()


def test_a_recorded_parameter_text_is_bounded_before_it_is_parsed():
    """A FeedbackEvent value of deep JSON is refused in one line, never a RecursionError."""
    for text, words in (('[' * 200_000 + ']' * 200_000, 'more than 65,536'),
                        ('[' * 5_000 + ']' * 5_000, 'nested 5000 deep'),
                        ('{"a": "' + '[' * 100 + '"}', 'min_outcomes')):
        with pytest.raises((TypeError, ValueError)) as caught:
            LoopConfig.from_texts('calibrated_exceedance', ('min_outcomes',), (text,), 32, 1024,
                                  10**9)
        if words != 'min_outcomes':
            assert words in str(caught.value) and '\n' not in str(caught.value)


def _string_attacks(data):
    """Yield ``data`` (serialized, frame_id at body offset 8) with its frame_id attacked."""
    import struct

    at = 4 + 8
    (size,) = struct.unpack_from('<I', data, at)
    start, end = at + 4, at + 4 + size
    unterminated = bytearray(data)
    unterminated[end - 1] = ord('m')
    yield bytes(unterminated)
    embedded = bytearray(data)
    embedded[start + 1] = 0
    yield bytes(embedded)
    invalid = bytearray(data)
    invalid[start] = 0xff
    yield bytes(invalid)
    yield data[:at] + struct.pack('<I', 0) + data[at + 4:]


def test_strings_readers_disagree_on_are_refused_and_the_bag_replays(rclpy_context, tmp_path):
    """Refuse strings rclpy and rosbags read differently; the node's bag replays.

    Bytes with a frame_id rclpy and rosbags read differently (unterminated, embedded null,
    invalid UTF-8, length 0) are counted as malformed and never recorded: the node's bag reads
    back with rosbags and ``ghost-feedback replay`` exits 0 (it exited 2: "does not decode").
    """
    from rclpy.serialization import serialize_message
    from rosbags.highlevel import AnyReader

    from project_ghost_feedback.cli import main
    from project_ghost_feedback.telemetry.msgdefs import typestore

    bag = tmp_path / 'bag'
    node = FeedbackNode(
        node_name='fuzz_strings', context=rclpy_context, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**PARAMETERS, 'telemetry_bag': str(bag)}.items()])
    attacks = 0
    try:
        on_outcome, on_assessment = _callbacks(node)
        for k in range(1, 40):
            outcome_msg = _outcome_msg(k * MS - MS // 2, k * MS)
            belief_msg = _belief_msg(k * MS, 1)
            outcome_msg.header.frame_id = belief_msg.header.frame_id = 'map'
            outcome, belief = serialize_message(outcome_msg), serialize_message(belief_msg)
            for attacked in _string_attacks(outcome):
                on_outcome(attacked)
                attacks += 1
            on_outcome(outcome)
            for attacked in _string_attacks(belief):
                on_assessment(attacked)
                attacks += 1
            on_assessment(belief)
        assert node.health.rejected == {'outcome:malformed': attacks // 2,
                                        'assessment:malformed': attacks // 2}
        assert node.counts.published == 39
    finally:
        node.destroy_node()   # closes the bag
    store = typestore()
    with AnyReader([bag], default_typestore=store) as reader:
        decoded = {}
        for c, _, raw in reader.messages():
            decoded.setdefault(c.topic, []).append(reader.deserialize(raw, c.msgtype))
    for topic in ('/prediction_outcome', '/self_assessment/raw', '/self_assessment/calibrated'):
        assert [msg.header.frame_id for msg in decoded[topic]] == ['map'] * 39, topic
    assert main(['replay', str(bag)]) == 0
