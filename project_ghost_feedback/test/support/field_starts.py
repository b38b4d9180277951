# SPDX-License-Identifier: Apache-2.0
"""The field-mode DDS tests' two experiments, for any rig (innovation or GNSS source).

A rig has ``levels`` (calibrated levels received, in order), ``close()`` and a run method the
caller wraps in ``run(rig, seed)``. Both experiments wait on the rig's progress, never on time.
"""

import math
import time

KNOWN, UNKNOWN = 2, 0
PROGRESS_CEILING_S = 60.0
"""No progress for this long is a stall (not a speed requirement)."""
MEAN_OUTCOMES_TO_FALSE_DOWNGRADE = 12857
"""vec3_scale's stated mean run to a false downgrade from a fresh start (docs/policies.md)."""


def honest_starts(make_rig, run, starts=20, outcomes=300, check=None):
    """Return ``{seed: first downgraded outcome}`` over ``starts`` fresh rigs (seeds 0..).

    ``check(rig)`` runs after each start (e.g. nothing refused); every start must have given
    ``outcomes`` outcomes. Prints the result beside the stated rate per start.
    """
    downgraded = {}
    for seed in range(starts):
        rig = make_rig()
        try:
            run(rig, seed)
            assert len(rig.levels) == outcomes, len(rig.levels)
            if check is not None:
                check(rig)
            if any(level != KNOWN for level in rig.levels):
                downgraded[seed] = next(i for i, v in enumerate(rig.levels) if v != KNOWN) + 1
        finally:
            rig.close()
    per_start = 1.0 - math.exp(-outcomes / MEAN_OUTCOMES_TO_FALSE_DOWNGRADE)
    print(f'downgraded starts (seed: first outcome) {downgraded}; stated rate per start '
          f'{per_start:.4f}')
    return downgraded


def outcomes_to_unknown(make_rig, run, seeds):
    """Return, per seed, the number of outcomes until the first UNKNOWN (printed)."""
    delays = []
    for seed in seeds:
        rig = make_rig()
        try:
            run(rig, seed)
            assert UNKNOWN in rig.levels
            delays.append(rig.levels.index(UNKNOWN) + 1)
        finally:
            rig.close()
    print(f'outcomes to UNKNOWN per seed: {delays}')
    return delays


def listen(rig, qos):
    """Give ``rig`` (bridge, feedback, driver, executor) its ``levels`` and ``diagnostics``.

    The driver subscribes to the feedback node's calibrated levels and to /diagnostics; the
    three nodes join the rig's executor.
    """
    from diagnostic_msgs.msg import DiagnosticArray
    from project_ghost_feedback_msgs.msg import CalibratedSelfAssessment

    rig.levels = []
    rig.diagnostics = []
    rig.driver.create_subscription(
        CalibratedSelfAssessment, 'self_assessment/calibrated',
        lambda m: rig.levels.append(m.adjusted_overall_level.value), qos)
    rig.driver.create_subscription(DiagnosticArray, '/diagnostics', rig.diagnostics.append, 10)
    for node in (rig.bridge, rig.feedback, rig.driver):
        rig.executor.add_node(node)


class FilterRig:
    """What the filter-driven rigs share: wait on progress, run a filter in batches, close.

    A subclass makes ``bridge``, ``feedback``, ``driver`` and ``executor``, calls :func:`listen`,
    and defines ``publish(stamp, *kf.step())``; ``rate_hz`` and ``period`` (one step in the unit
    of its stamps) are class attributes.
    """

    rate_hz = 10
    period = 0

    def spin_until(self, condition, what):
        """Spin until ``condition()``; fail after ``PROGRESS_CEILING_S`` without any progress."""
        last_progress = time.monotonic()
        marker = (len(self.levels), self.bridge.received)
        while not condition():
            self.executor.spin_once(timeout_sec=0.05)
            if (len(self.levels), self.bridge.received) != marker:
                marker, last_progress = (len(self.levels), self.bridge.received), time.monotonic()
            if time.monotonic() - last_progress > PROGRESS_CEILING_S:
                raise AssertionError(f'no progress for {PROGRESS_CEILING_S} s waiting for {what}')

    def run_filter(self, kf, seconds, batch=20, stop=None):
        """Publish ``seconds`` of samples (in batches), waiting for every answer."""
        steps = seconds * self.rate_hz
        for start in range(0, steps, batch):
            for k in range(start, min(steps, start + batch)):
                self.publish((k + 1) * self.period, *kf.step())
            expected = min(steps, start + batch) // 2  # one outcome per two samples
            self.spin_until(lambda: len(self.levels) >= expected, f'{expected} assessments')
            if stop is not None and stop(self.levels):
                return

    def close(self):
        """Stop the executor and destroy the three nodes."""
        self.executor.shutdown()
        for node in (self.bridge, self.feedback, self.driver):
            node.destroy_node()
