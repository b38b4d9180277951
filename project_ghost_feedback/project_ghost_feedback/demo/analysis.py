# SPDX-License-Identifier: Apache-2.0
"""Per-phase summary of a demo run (pure, stdlib only).

A downgrade is *false* when every outcome in the window the node judged (the last ``max_history``
outcomes observed at or before the belief stamp, the node's own rule) was produced while the
estimator was calibrated (overconfidence 1). A downgrade in the recovery phase whose window still
holds overconfident outcomes is a correct, lingering one, not a false one.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from ..core.contracts import PredictionOutcome, SelfAssessmentLevel
from ..core.feedback import CalibratedSelfAssessment
from ..core.loop import FeedbackLoop, LoopConfig
from ..core import NS_PER_S
from ..sim import Scenario, ScenarioStep


def _level_counts(levels: Iterable[SelfAssessmentLevel]) -> dict[str, int]:
    counts = {'KNOWN': 0, 'UNCERTAIN': 0, 'UNKNOWN': 0}
    for level in levels:
        counts[level.name] += 1
    return counts


def summarize(scenario: Scenario, steps: Iterable[ScenarioStep],
              calibrated_by_stamp: Mapping[int, CalibratedSelfAssessment],
              max_history: int) -> dict[str, Any]:
    """Return a JSON-ready summary of a run.

    ``steps`` are the scenario's ScenarioSteps as played; ``calibrated_by_stamp`` maps each belief
    stamp to the CalibratedSelfAssessment received for it. The window each assessment was judged
    on comes from the node's own feedback loop fed with the same outcomes (its policy's output is
    not used: the levels are the node's).
    """
    loop = FeedbackLoop(LoopConfig.make(max_history=max(max_history, 1),
                                        outcome_buffer_size=max(max_history, 1) * 4))
    honest_prediction: dict[PredictionOutcome, bool] = {}
    phases: list[dict[str, Any]] = []
    spans = scenario.spans
    per_phase: dict[str, dict[str, Any]] = {span.phase.name: {
        'name': span.phase.name,
        'start_s': span.start_ns / NS_PER_S,
        'end_s': span.end_ns / NS_PER_S,
        'overconfidence': [span.phase.overconfidence,
                           span.phase.overconfidence_end or span.phase.overconfidence],
        'raw_levels': [],
        'calibrated_levels': [],
        'outcomes': 0,
        'first_downgrade': None,
        'back_to_raw': None,
        'downgrades': 0,
        'false_downgrades': 0,
        'missing_outputs': 0,
    } for span in spans}
    previously_downgraded = False
    for step in steps:
        stamp = step.assessment.belief_stamp_sim_ns
        span = scenario.span_at(stamp)
        phase = per_phase[span.phase.name]
        for outcome in step.outcomes:
            loop.outcome(outcome)
            honest_prediction[outcome] = (
                scenario.overconfidence_at(outcome.prediction_stamp_sim_ns) == 1.0)
        phase['outcomes'] += len(step.outcomes)
        judged = loop.assessment(step.assessment).judged
        calibrated = calibrated_by_stamp.get(stamp)
        if calibrated is None:
            phase['missing_outputs'] += 1
            continue
        phase['raw_levels'].append(calibrated.raw_assessment.overall_level)
        phase['calibrated_levels'].append(calibrated.adjusted_overall_level)
        downgraded = calibrated.was_downgraded
        transition = downgraded != previously_downgraded
        previously_downgraded = downgraded
        if not downgraded:
            if transition and phase['back_to_raw'] is None:
                phase['back_to_raw'] = {
                    'after_s': (stamp - span.start_ns) / NS_PER_S,
                    'after_outcomes': phase['outcomes'],
                    'stamp_sim_ns': stamp,
                }
            continue
        phase['downgrades'] += 1
        if judged and all(honest_prediction[o] for o in judged):
            phase['false_downgrades'] += 1
        if transition and phase['first_downgrade'] is None:
            phase['first_downgrade'] = {
                'after_s': (stamp - span.start_ns) / NS_PER_S,
                'after_outcomes': phase['outcomes'],
                'stamp_sim_ns': stamp,
                'level': calibrated.adjusted_overall_level.name,
                'reason': calibrated.adjustment_reason,
            }
    for span in spans:
        phase = per_phase[span.phase.name]
        phase['raw_levels'] = _level_counts(phase['raw_levels'])
        phase['calibrated_levels'] = _level_counts(phase['calibrated_levels'])
        phases.append(phase)
    return {
        'phases': phases,
        'assessments': sum(sum(p['raw_levels'].values()) for p in phases),
        'downgrades': sum(p['downgrades'] for p in phases),
        'false_downgrades': sum(p['false_downgrades'] for p in phases),
        'missing_outputs': sum(p['missing_outputs'] for p in phases),
    }


def _when(event: Mapping[str, Any] | None) -> str:
    if event is None:
        return '-'
    return f'{event["after_s"]:.1f} s, {event["after_outcomes"]} outcomes'


def format_summary(summary: Mapping[str, Any], policy_id: str) -> str:
    """Return the summary as a short table a person can read at a glance."""
    lines = [
        f'policy: {policy_id}',
        f'{"phase":<14} {"k":>9} {"raw":>11} {"calibrated K/U/X":>17} '
        f'{"first downgrade":>22} {"back to raw":>22} {"false":>6}',
    ]
    for phase in summary['phases']:
        k0, k1 = phase['overconfidence']
        k = f'{k0:g}' if k0 == k1 else f'{k0:g}->{k1:g}'
        raw = max(phase['raw_levels'], key=phase['raw_levels'].get)
        cal = phase['calibrated_levels']
        levels = f'{cal["KNOWN"]}/{cal["UNCERTAIN"]}/{cal["UNKNOWN"]}'
        first, back = phase['first_downgrade'], phase['back_to_raw']
        raw_text = f'{raw} x{sum(phase["raw_levels"].values())}'
        lines.append(
            f'{phase["name"]:<14} {k:>9} {raw_text:>11} {levels:>17} {_when(first):>22} '
            f'{_when(back):>22} {phase["false_downgrades"]:>6}')
    lines.append(
        f'assessments {summary["assessments"]}, downgrades {summary["downgrades"]}, '
        f'false downgrades {summary["false_downgrades"]}, missing outputs '
        f'{summary["missing_outputs"]}')
    lines.append(
        'K/U/X = KNOWN/UNCERTAIN/UNKNOWN; times and outcome counts from the start of the phase; '
        'a false downgrade is one judged on calibrated outcomes only')
    return '\n'.join(lines)
