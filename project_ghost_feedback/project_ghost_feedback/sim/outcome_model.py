# SPDX-License-Identifier: Apache-2.0
"""A synthetic estimator: prediction outcomes of known calibration and a phased scenario.

Pure and stdlib only (``random.Random(seed)``), deterministic for a seed. The estimator claims an
isotropic position std (``position_std_m``) and orientation std (``orientation_std_rad``); its real
errors are drawn per axis from ``N(0, (k * claimed_std)**2)``, where ``k`` is the overconfidence
factor (``k = 1``: calibrated; ``k = 10``: real errors ten times what it claims). Each outcome's
distances are the **unsquared** Mahalanobis distances under the claimed covariance,
``d = |e| / claimed_std``, so for ``k = 1`` ``d**2`` is chi-square with 3 degrees of freedom.

:class:`Scenario` strings :class:`Phase` objects together and yields, in stamp order, each raw
BeliefSelfAssessment with the outcomes observed since the previous one: what the demo publishes
and what the honesty bench feeds to the policies.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
import math
import random
from typing import NamedTuple

from ..core.validation import require_int, require_taxonomy, type_error, value_error
from ..core.contracts import BeliefSelfAssessment, PredictionOutcome, SelfAssessmentLevel
from ..core import NS_PER_S

_Vec3 = tuple[float, float, float]


def _require_positive(owner: str, field: str, value: object, maximum: float = math.inf) -> float:
    """Return ``value`` as a float if it is a finite real number in ``(0, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(owner, field, 'a positive float', value)
    value = float(value)
    if not (math.isfinite(value) and 0.0 < value <= maximum):
        raise value_error(owner, field, 'out_of_range',
                          f'must be finite, > 0 and <= {maximum}, got {value!r}')
    return value


def _seconds_to_ns(seconds: float) -> int:
    return int(round(seconds * NS_PER_S))


@dataclass(frozen=True)
class OutcomeModel:
    """Outcomes of an estimator claiming fixed isotropic stds, with a chosen overconfidence.

    ``position_std_m`` (0.01 m) and ``orientation_std_rad`` (0.01 rad) are the claimed stds;
    ``prediction_horizon_ns`` (100 ms) is how long after a prediction its outcome is observed.
    """

    position_std_m: float = 0.01
    orientation_std_rad: float = 0.01
    prediction_horizon_ns: int = 100_000_000

    def __post_init__(self) -> None:
        owner = 'OutcomeModel'
        object.__setattr__(self, 'position_std_m',
                           _require_positive(owner, 'position_std_m', self.position_std_m))
        object.__setattr__(self, 'orientation_std_rad',
                           _require_positive(owner, 'orientation_std_rad',
                                             self.orientation_std_rad))
        require_int(owner, 'prediction_horizon_ns', self.prediction_horizon_ns)

    def draw_errors(self, rng: random.Random, overconfidence: float = 1.0
                    ) -> tuple[_Vec3, _Vec3]:
        """Draw ``(position_error_m, orientation_error_rad)``, each a 3-tuple, from ``rng``.

        Each axis is ``N(0, (overconfidence * claimed_std)**2)``; six ``rng.gauss`` draws, position
        x, y, z then orientation x, y, z.
        """
        gauss = rng.gauss
        sp = overconfidence * self.position_std_m
        so = overconfidence * self.orientation_std_rad
        position = (gauss(0.0, sp), gauss(0.0, sp), gauss(0.0, sp))
        orientation = (gauss(0.0, so), gauss(0.0, so), gauss(0.0, so))
        return position, orientation

    def mahalanobis(self, position_error_m: Sequence[float],
                    orientation_error_rad: Sequence[float]) -> tuple[float, float]:
        """Return the unsquared distances ``(|e_p| / std_p, |e_o| / std_o)`` under the claim."""
        return (math.hypot(*position_error_m) / self.position_std_m,
                math.hypot(*orientation_error_rad) / self.orientation_std_rad)

    def draw_distances(self, rng: random.Random, overconfidence: float = 1.0
                       ) -> tuple[float, float]:
        """Draw one outcome's ``(position_mahalanobis, orientation_mahalanobis)`` (no object)."""
        return self.mahalanobis(*self.draw_errors(rng, overconfidence))

    def outcome(self, rng: random.Random, observed_stamp_sim_ns: int,
                overconfidence: float = 1.0) -> PredictionOutcome:
        """Draw one PredictionOutcome observed at ``observed_stamp_sim_ns``.

        Its prediction stamp is ``prediction_horizon_ns`` earlier (clamped at 0).
        """
        position, orientation = self.draw_errors(rng, overconfidence)
        d_position, d_orientation = self.mahalanobis(position, orientation)
        return PredictionOutcome(
            prediction_stamp_sim_ns=max(0, observed_stamp_sim_ns - self.prediction_horizon_ns),
            observed_stamp_sim_ns=observed_stamp_sim_ns,
            position_error_m=position,
            orientation_error_rad=orientation,
            position_mahalanobis=d_position,
            orientation_mahalanobis=d_orientation,
        )

    def outcomes(self, count: int, *, seed: int | None, overconfidence: float = 1.0,
                 rate_hz: float = 10.0, start_stamp_sim_ns: int = 0) -> list[PredictionOutcome]:
        """Return ``count`` outcomes from ``random.Random(seed)``, observed at ``rate_hz``.

        The ``i``-th is observed at ``start_stamp_sim_ns + round(i * NS_PER_S / rate_hz)``.
        """
        count = require_int('OutcomeModel.outcomes', 'count', count)
        rate_hz = _require_positive('OutcomeModel.outcomes', 'rate_hz', rate_hz)
        overconfidence = _require_positive(
            'OutcomeModel.outcomes', 'overconfidence', overconfidence)
        rng = random.Random(seed)
        return [
            self.outcome(rng, start_stamp_sim_ns + _seconds_to_ns(i / rate_hz), overconfidence)
            for i in range(count)
        ]


@dataclass(frozen=True)
class Phase:
    """A stretch of a scenario: what the estimator claims and how overconfident it really is.

    ``overconfidence`` applies at the start of the phase; with ``overconfidence_end`` set, the
    factor grows (or shrinks) geometrically to it at the end of the phase. ``claimed_level`` is
    the raw overall level the estimator reports throughout the phase (KNOWN by default).
    """

    name: str
    duration_s: float
    overconfidence: float = 1.0
    overconfidence_end: float | None = None
    claimed_level: SelfAssessmentLevel = SelfAssessmentLevel.KNOWN

    def __post_init__(self) -> None:
        owner = 'Phase'
        require_taxonomy(owner, 'name', self.name)
        object.__setattr__(self, 'duration_s',
                           _require_positive(owner, 'duration_s', self.duration_s))
        object.__setattr__(self, 'overconfidence',
                           _require_positive(owner, 'overconfidence', self.overconfidence))
        if self.overconfidence_end is not None:
            object.__setattr__(self, 'overconfidence_end', _require_positive(
                owner, 'overconfidence_end', self.overconfidence_end))
        if not isinstance(self.claimed_level, SelfAssessmentLevel):
            raise type_error(owner, 'claimed_level', 'a SelfAssessmentLevel', self.claimed_level)

    def overconfidence_at(self, fraction: float) -> float:
        """Return the factor at ``fraction`` (0 at the start, 1 at the end) of the phase."""
        if self.overconfidence_end is None:
            return self.overconfidence
        fraction = min(max(fraction, 0.0), 1.0)
        return self.overconfidence * (self.overconfidence_end / self.overconfidence) ** fraction


class ScenarioStep(NamedTuple):
    """One step of a scenario: a raw assessment and the outcomes observed since the last one."""

    assessment: BeliefSelfAssessment
    outcomes: tuple[PredictionOutcome, ...]


class PhaseSpan(NamedTuple):
    """A phase with its start (inclusive) and end (exclusive) stamps in sim nanoseconds."""

    phase: Phase
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class Scenario:
    """Phases played in order, with assessments and outcomes at fixed rates.

    Time runs from ``start_stamp_sim_ns`` for the sum of the phase durations (end exclusive).
    Assessment ``j`` is stamped ``start + round(j * NS_PER_S / assessment_rate_hz)``,
    ``j = 0, 1, ...``.
    Prediction ``i`` is made at ``start + round(i * NS_PER_S / outcome_rate_hz)`` with the
    overconfidence factor in force at that instant, and observed ``model.prediction_horizon_ns``
    later; it is delivered with the first assessment stamped at or after its observation (outcomes
    observed after the last assessment are not delivered). Errors come from one
    ``random.Random(seed)`` in prediction order, so a seed fixes the whole run.
    """

    phases: tuple[Phase, ...]
    assessment_rate_hz: float = 10.0
    outcome_rate_hz: float = 10.0
    model: OutcomeModel = OutcomeModel()
    start_stamp_sim_ns: int = 0
    _spans: tuple[PhaseSpan, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = 'Scenario'
        if isinstance(self.phases, (str, bytes)) or not hasattr(self.phases, '__iter__'):
            raise type_error(owner, 'phases', 'a sequence of Phase', self.phases)
        phases = tuple(self.phases)
        if not phases:
            raise value_error(owner, 'phases', 'empty', 'must hold at least one Phase')
        for i, phase in enumerate(phases):
            if not isinstance(phase, Phase):
                raise type_error(owner, f'phases[{i}]', 'a Phase', phase)
        object.__setattr__(self, 'phases', phases)
        object.__setattr__(self, 'assessment_rate_hz', _require_positive(
            owner, 'assessment_rate_hz', self.assessment_rate_hz))
        object.__setattr__(self, 'outcome_rate_hz', _require_positive(
            owner, 'outcome_rate_hz', self.outcome_rate_hz))
        if not isinstance(self.model, OutcomeModel):
            raise type_error(owner, 'model', 'an OutcomeModel', self.model)
        require_int(owner, 'start_stamp_sim_ns', self.start_stamp_sim_ns)
        spans = []
        elapsed_s = 0.0
        for phase in phases:
            start = self.start_stamp_sim_ns + _seconds_to_ns(elapsed_s)
            elapsed_s += phase.duration_s
            spans.append(PhaseSpan(phase, start, self.start_stamp_sim_ns
                                   + _seconds_to_ns(elapsed_s)))
        object.__setattr__(self, '_spans', tuple(spans))

    @property
    def duration_s(self) -> float:
        """Return the total duration in seconds."""
        return sum(phase.duration_s for phase in self.phases)

    @property
    def end_stamp_sim_ns(self) -> int:
        """Return the (exclusive) end stamp of the scenario."""
        return self._spans[-1].end_ns

    @property
    def spans(self) -> tuple[PhaseSpan, ...]:
        """Return the phases with their start and end stamps (:class:`PhaseSpan`)."""
        return self._spans

    def span_at(self, stamp_sim_ns: int) -> PhaseSpan:
        """Return the PhaseSpan in force at ``stamp_sim_ns`` (the last one past the end)."""
        for span in self._spans:
            if stamp_sim_ns < span.end_ns:
                return span
        return self._spans[-1]

    def phase_at(self, stamp_sim_ns: int) -> Phase:
        """Return the Phase in force at ``stamp_sim_ns``."""
        return self.span_at(stamp_sim_ns).phase

    def overconfidence_at(self, stamp_sim_ns: int) -> float:
        """Return the overconfidence factor in force at ``stamp_sim_ns``."""
        span = self.span_at(stamp_sim_ns)
        fraction = (stamp_sim_ns - span.start_ns) / max(span.end_ns - span.start_ns, 1)
        return span.phase.overconfidence_at(fraction)

    def assessment_stamps(self) -> list[int]:
        """Return the assessment stamps, in order."""
        stamps: list[int] = []
        j = 0
        while True:
            stamp = self.start_stamp_sim_ns + _seconds_to_ns(j / self.assessment_rate_hz)
            if stamp >= self.end_stamp_sim_ns:
                return stamps
            stamps.append(stamp)
            j += 1

    def steps(self, seed: int | None) -> Iterator[ScenarioStep]:
        """Yield :class:`ScenarioStep` ``(assessment, outcomes)`` pairs in stamp order.

        ``outcomes`` is a tuple of the PredictionOutcomes observed after the previous assessment
        and at or before this one, in observed-stamp order. Deterministic for ``seed``.
        """
        rng = random.Random(seed)
        model = self.model
        horizon = model.prediction_horizon_ns
        start = self.start_stamp_sim_ns
        end = self.end_stamp_sim_ns
        i = 0
        for stamp in self.assessment_stamps():
            delivered: list[PredictionOutcome] = []
            while True:
                predicted = start + _seconds_to_ns(i / self.outcome_rate_hz)
                if predicted >= end or predicted + horizon > stamp:
                    break
                position, orientation = model.draw_errors(rng, self.overconfidence_at(predicted))
                d_position, d_orientation = model.mahalanobis(position, orientation)
                delivered.append(PredictionOutcome(
                    prediction_stamp_sim_ns=predicted,
                    observed_stamp_sim_ns=predicted + horizon,
                    position_error_m=position,
                    orientation_error_rad=orientation,
                    position_mahalanobis=d_position,
                    orientation_mahalanobis=d_orientation,
                ))
                i += 1
            assessment = BeliefSelfAssessment(
                belief_stamp_sim_ns=stamp, overall_level=self.phase_at(stamp).claimed_level)
            yield ScenarioStep(assessment, tuple(delivered))


def default_scenario(duration_s: float = 45.0, *, assessment_rate_hz: float = 10.0,
                     outcome_rate_hz: float = 10.0, peak_overconfidence: float = 50.0,
                     model: OutcomeModel | None = None) -> Scenario:
    """Return the three-phase scenario: calibrated, overconfident, recovery (equal thirds).

    In the ``overconfident`` phase the estimator keeps claiming KNOWN with its 1 cm / 0.01 rad
    stds while its real errors grow geometrically from 2x to ``peak_overconfidence`` x the claim;
    ``calibrated`` and ``recovery`` are honest (``k = 1``).
    """
    third = _require_positive('default_scenario', 'duration_s', duration_s) / 3.0
    peak = _require_positive('default_scenario', 'peak_overconfidence', peak_overconfidence)
    return Scenario(
        phases=(
            Phase('calibrated', third, 1.0),
            Phase('overconfident', third, min(2.0, peak), peak),
            Phase('recovery', third, 1.0),
        ),
        assessment_rate_hz=assessment_rate_hz,
        outcome_rate_hz=outcome_rate_hz,
        model=model if model is not None else OutcomeModel(),
    )
