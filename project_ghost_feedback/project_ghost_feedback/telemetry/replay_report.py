# SPDX-License-Identifier: Apache-2.0
"""The replay report: level summaries, the first difference, the one-line verdict."""

import dataclasses
import math
from typing import Any

from ..core import SelfAssessmentLevel
from ..core.feedback import (
    CalibratedSelfAssessment, CalibrationHistory, EpisodeTracker, overconfidence_as_dict,
    time_origin)
from ..core.loop import LoopConfig


@dataclasses.dataclass
class LevelSummary:
    """Calibrated levels of a sequence of assessments: counts, downgrades, first downgrade.

    ``to_dict`` adds ``final_overconfidence``: the continuous estimate of how overconfident each
    vec3 is (ADR-0026a, :func:`~project_ghost_feedback.core.feedback.estimate_overconfidence`)
    from the history of the last assessment; None for a schema-1 history or no assessment; and
    the downgrade ``episodes`` (:class:`~project_ghost_feedback.core.feedback.EpisodeTracker`).
    """

    assessments: int = 0
    levels: dict = dataclasses.field(
        default_factory=lambda: {level.name: 0 for level in SelfAssessmentLevel})
    downgrades: int = 0
    first_downgrade_stamp_sim_ns: int | None = None
    last_history: CalibrationHistory | None = dataclasses.field(
        default=None, repr=False, compare=False)
    episodes: EpisodeTracker = dataclasses.field(
        default_factory=EpisodeTracker, repr=False, compare=False)
    """Its ``components`` are the (position, orientation) error components every k is read
    with (the episodes' and ``final_overconfidence``)."""

    def add(self, calibrated: CalibratedSelfAssessment) -> None:
        """Count one calibrated assessment."""
        self.assessments += 1
        self.episodes.add(calibrated)
        self.last_history = calibrated.calibration_history
        adjusted = calibrated.adjusted_overall_level
        raw = calibrated.raw_assessment.overall_level
        self.levels[adjusted.name] += 1
        if adjusted is not raw and adjusted < raw:  # members are singletons: skip __lt__ if same
            self.downgrades += 1
            if self.first_downgrade_stamp_sim_ns is None:
                self.first_downgrade_stamp_sim_ns = calibrated.raw_assessment.belief_stamp_sim_ns

    def to_dict(self, origin_ns: int | None = None) -> dict[str, Any]:
        """Return a JSON-ready dict.

        The episodes' seconds count from ``origin_ns`` (default: the first assessment's stamp).
        """
        last = self.last_history
        tracker = self.episodes
        if origin_ns is None:
            origin_ns = tracker.first_stamp_ns or 0
        return {
            'assessments': self.assessments, 'levels': dict(self.levels),
            'downgrades': self.downgrades,
            'first_downgrade_stamp_sim_ns': self.first_downgrade_stamp_sim_ns,
            'final_overconfidence': None if last is None else overconfidence_as_dict(
                last, tracker.components),
            'episodes': [episode.as_dict(origin_ns) for episode in tracker.episodes()],
            'downgraded_s': tracker.downgraded_s,
        }


@dataclasses.dataclass(frozen=True)
class Difference:
    """The first field in which a recorded and a recomputed assessment differ."""

    index: int
    belief_stamp_sim_ns: int | None
    field: str
    recorded: object
    recomputed: object

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (non-finite floats as strings)."""
        return {
            'index': self.index, 'belief_stamp_sim_ns': self.belief_stamp_sim_ns,
            'field': self.field, 'recorded': _jsonable(self.recorded),
            'recomputed': _jsonable(self.recomputed),
        }


def _jsonable(value: object) -> object:
    if isinstance(value, SelfAssessmentLevel):
        return value.name
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if dataclasses.is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def first_field_difference(recorded: object, recomputed: object,
                           path: str = '') -> tuple[str, object, object] | None:
    """Return ``(field_path, recorded_value, recomputed_value)`` of the first difference, or None.

    Dataclasses are compared field by field and tuples item by item, depth first, so the path
    names the innermost differing value (e.g. ``calibration_history.count_beyond_3_std``).
    """
    if recorded == recomputed:
        return None
    if dataclasses.is_dataclass(recorded) and type(recorded) is type(recomputed):
        for field in dataclasses.fields(recorded):
            found = first_field_difference(
                getattr(recorded, field.name), getattr(recomputed, field.name),
                f'{path}.{field.name}' if path else field.name)
            if found is not None:
                return found
    if (isinstance(recorded, tuple) and isinstance(recomputed, tuple)
            and len(recorded) == len(recomputed)):
        for i, (a, b) in enumerate(zip(recorded, recomputed)):
            found = first_field_difference(a, b, f'{path}[{i}]')
            if found is not None:
                return found
    return (path or '(whole)', recorded, recomputed)


@dataclasses.dataclass
class ReplayReport:
    """Result of :func:`replay_bag`."""

    bag: str
    order: str
    mode: str
    recorded_config: LoopConfig
    config_source: str
    replay_config: LoopConfig
    outcomes: int = 0
    assessments: int = 0
    recorded_outputs: int = 0
    compared: int = 0
    differences: int = 0
    first_difference: Difference | None = None
    changed_levels: int = 0
    more_confident: int = 0
    less_confident: int = 0
    first_change: Difference | None = None
    recorded: LevelSummary = dataclasses.field(default_factory=LevelSummary)
    recomputed: LevelSummary = dataclasses.field(default_factory=LevelSummary)
    warnings: list = dataclasses.field(default_factory=list)
    rejected: dict = dataclasses.field(default_factory=dict)
    events: int = 0
    resets: dict = dataclasses.field(default_factory=dict)
    bag_start_ns: int | None = None
    bag_end_ns: int | None = None

    def time_origin(self) -> tuple[int, str]:
        """Return ``(origin_ns, kind)`` of the episodes' seconds (:func:`time_origin`)."""
        first = self.recomputed.episodes.first_stamp_ns
        if first is None:
            first = self.recorded.episodes.first_stamp_ns
        return time_origin(self.bag_start_ns, self.bag_end_ns, first)

    @property
    def identical(self) -> bool | None:
        """Return True/False when recorded outputs exist, None when there is nothing to compare."""
        if self.recorded_outputs == 0:
            return None
        return self.differences == 0 and self.recorded_outputs == self.assessments

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (the ``--json`` output of ``ghost-feedback replay``)."""
        origin, kind = self.time_origin()
        return {
            'bag': self.bag, 'order': self.order, 'mode': self.mode,
            'recorded_config': self.recorded_config.to_dict(),
            'config_source': self.config_source,
            'replay_config': self.replay_config.to_dict(),
            'outcomes': self.outcomes, 'assessments': self.assessments,
            'recorded_outputs': self.recorded_outputs, 'compared': self.compared,
            'identical': self.identical, 'differences': self.differences,
            'first_difference': self.first_difference.to_dict()
            if self.first_difference else None,
            'changed_levels': self.changed_levels, 'more_confident': self.more_confident,
            'less_confident': self.less_confident,
            'first_change': self.first_change.to_dict() if self.first_change else None,
            'time_origin': {'stamp_ns': origin, 'kind': kind},
            'recorded': self.recorded.to_dict(origin) if self.recorded_outputs else None,
            'recomputed': self.recomputed.to_dict(origin),
            'warnings': list(self.warnings),
            'rejected': dict(sorted(self.rejected.items())),
            'events': self.events, 'resets': dict(sorted(self.resets.items())),
        }


def summary_line(report: ReplayReport) -> str:
    """Return a one-line verdict of a verify-mode ReplayReport."""
    if report.identical is None:
        return (f'replay: {report.assessments} assessments recomputed, nothing recorded to '
                'compare with')
    if report.identical:
        return (f'replay OK: {report.compared} calibrated assessments recomputed from '
                f'{report.outcomes} outcomes equal the recorded ones '
                f'({report.replay_config.describe()})')
    first = report.first_difference
    where = ''
    if first is not None:
        where = (f'; first at assessment #{first.index} (belief stamp '
                 f'{first.belief_stamp_sim_ns}): {first.field} recorded '
                 f'{_jsonable(first.recorded)!r}, recomputed {_jsonable(first.recomputed)!r}')
    return (f'replay MISMATCH: {report.differences} of {report.compared} recomputed calibrated '
            f'assessments differ from the recorded ones{where}')
