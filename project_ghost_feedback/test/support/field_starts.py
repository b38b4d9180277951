# SPDX-License-Identifier: Apache-2.0
"""The field-mode DDS tests' two experiments, for any rig (innovation or GNSS source).

A rig has ``levels`` (calibrated levels received, in order), ``close()`` and a run method the
caller wraps in ``run(rig, seed)``. Both experiments wait on the rig's progress, never on time.
"""

import math

KNOWN, UNKNOWN = 2, 0
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
