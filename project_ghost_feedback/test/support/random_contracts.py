# SPDX-License-Identifier: Apache-2.0
"""Seeded random contracts of every shape the wire formats must carry (no rclpy).

Frames and names of every length modulo the CDR alignments, empty and full windows, infinite
distances, -0.0 and 1e308, every policy; loop events with each policy's parameters. Used to hold
every encoder (rclpy, rosbags, the table's writer and its fast paths) and reader to one another.
"""

import random

from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    NamedLevel,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.loop import (
    CAUSE_PARAMETERS, CAUSE_SERVICE, CONFIGURATION, FeedbackLoop, LoopConfig, LoopEvent, RESET)

MS = 1_000_000
LEVELS = list(SelfAssessmentLevel)
POLICIES = ('overconfidence_scale', 'mahalanobis_downgrade', 'calibrated_exceedance')


def named_levels(rng, prefix, count):
    return tuple(NamedLevel(f'{prefix}{"n" * rng.randrange(0, 9)}{k}', rng.choice(LEVELS))
                 for k in range(count))


def streams(seed, trials):
    """Yield (outcomes, belief, calibrated) of seeded random loops (frames, names, windows)."""
    rng = random.Random(seed)
    for _ in range(trials):
        loop = FeedbackLoop(LoopConfig.make(rng.choice(POLICIES), None,
                                            rng.choice((1, 2, 5, 32)), 1024))
        count = rng.randrange(0, 40)
        outcomes = []
        for i in range(1, count + 1):
            outcome = PredictionOutcome(
                i * MS - MS // 2, i * MS, (rng.gauss(0, 1), -0.0, 1e308),
                (rng.random(), 0.0, -rng.random()), rng.random() * 4,
                rng.choice((rng.random() * 3, float('inf'))),
                frame_id='o' * rng.randrange(0, 6),
                bias_evidence_nats=rng.choice((0.0, rng.random() * 30.0)),
                bias_position_share=rng.choice((0.0, 1.0, rng.random())))
            outcomes.append(outcome)
            loop.outcome(outcome)
        belief = BeliefSelfAssessment(
            (count + 1) * MS, rng.choice(LEVELS), named_levels(rng, 'axis', rng.randrange(0, 5)),
            named_levels(rng, 'block', rng.randrange(0, 3)), frame_id='f' * rng.randrange(0, 9))
        yield outcomes, belief, loop.assessment(belief).calibrated


def events(seed, trials):
    """Yield LoopEvents: resets and configuration changes, every policy, long and unicode text."""
    rng = random.Random(seed)
    for i in range(trials):
        config = LoopConfig.make(rng.choice(POLICIES), None, rng.choice((1, 2, 5, 32)), 1024)
        detail = rng.choice(('', 'asked', 'é' * rng.randrange(0, 7), 'x' * 2000))
        kind, cause = rng.choice(((RESET, CAUSE_SERVICE), (CONFIGURATION, CAUSE_PARAMETERS)))
        yield LoopEvent(i * MS + rng.randrange(0, MS), kind, cause, detail, config)
