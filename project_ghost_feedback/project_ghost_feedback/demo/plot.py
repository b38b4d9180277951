# SPDX-License-Identifier: Apache-2.0
"""The demo's PNG: distances and raw vs calibrated level over sim time (panels of ..plots)."""

from collections.abc import Iterable, Mapping
import os

from ..core import NS_PER_S
from ..core.feedback import CalibratedSelfAssessment
from ..plots import distance_panel, figure, level_panel, save, shade_phases
from ..sim import Scenario, ScenarioStep


def write_plot(path: str | os.PathLike[str], scenario: Scenario, steps: Iterable[ScenarioStep],
               calibrated_by_stamp: Mapping[int, CalibratedSelfAssessment], title: str) -> None:
    """Write the two-panel figure (the scenario's phases shaded) to ``path`` (PNG)."""
    distances = [(o.observed_stamp_sim_ns / NS_PER_S, o.position_mahalanobis,
                  o.orientation_mahalanobis) for step in steps for o in step.outcomes]
    levels = [(stamp / NS_PER_S, c.raw_assessment.overall_level.confidence_rank,
               c.adjusted_overall_level.confidence_rank)
              for stamp, c in sorted(calibrated_by_stamp.items())]
    result, (top, bottom) = figure(2, (3, 2), 7)
    shade_phases((top, bottom), [(span.phase.name, span.start_ns / NS_PER_S,
                                  span.end_ns / NS_PER_S) for span in scenario.spans])
    distance_panel(top, distances)
    level_panel(bottom, levels)
    bottom.set_xlabel('sim time (s)')
    result.suptitle(title, fontsize=10, parse_math=False)
    result.tight_layout()
    save(result, path)
