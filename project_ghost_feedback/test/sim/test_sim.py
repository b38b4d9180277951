# SPDX-License-Identifier: Apache-2.0
"""Tests of the synthetic estimator (``sim``): distribution, determinism, stamp order, phases."""

import math
import random

import pytest

from project_ghost_feedback.core import BeliefSelfAssessment, PredictionOutcome, SelfAssessmentLevel
from project_ghost_feedback.core.feedback.calibration_math import bucket_probabilities
from project_ghost_feedback.sim import default_scenario, OutcomeModel, Phase, Scenario


def test_calibrated_distances_have_mean_square_three():
    """A calibrated outcome's d**2 is chi-square(3): mean 3, variance 6 (both vec3)."""
    model = OutcomeModel(position_std_m=0.01, orientation_std_rad=0.02)
    rng = random.Random(11)
    n = 40_000
    squares_p, squares_o = [], []
    for _ in range(n):
        d_p, d_o = model.draw_distances(rng)
        squares_p.append(d_p * d_p)
        squares_o.append(d_o * d_o)
    tolerance = 5 * math.sqrt(6.0 / n)  # five standard errors of the mean
    assert abs(sum(squares_p) / n - 3.0) < tolerance
    assert abs(sum(squares_o) / n - 3.0) < tolerance


def test_overconfidence_scales_distances():
    """With factor k the mean of d**2 is 3 k**2."""
    model = OutcomeModel()
    rng = random.Random(5)
    n = 20_000
    k = 4.0
    mean = sum(d * d for _ in range(n) for d in model.draw_distances(rng, k)) / (2 * n)
    assert abs(mean / (3 * k * k) - 1.0) < 5 * math.sqrt(6.0 / (2 * n)) / 3.0


def test_bucket_frequencies_match_exact_probabilities():
    """Outcome buckets of a calibrated model land at the exact chi(3)-max-of-two rates."""
    model = OutcomeModel()
    rng = random.Random(3)
    n = 30_000
    counts = [0, 0, 0, 0]
    for _ in range(n):
        d = max(model.draw_distances(rng))
        counts[0 if d <= 1 else 1 if d <= 3 else 2 if d <= 5 else 3] += 1
    for count, p in zip(counts[:3], bucket_probabilities(3, 2)[:3]):
        assert abs(count / n - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_outcome_fields_are_consistent():
    """An outcome's distances are |e| / claimed std and its stamps follow the horizon."""
    model = OutcomeModel(position_std_m=0.05, orientation_std_rad=0.1,
                         prediction_horizon_ns=250)
    outcome = model.outcome(random.Random(1), 1000, overconfidence=3.0)
    assert isinstance(outcome, PredictionOutcome)
    assert outcome.prediction_stamp_sim_ns == 750
    assert outcome.observed_stamp_sim_ns == 1000
    assert outcome.position_mahalanobis == pytest.approx(
        math.hypot(*outcome.position_error_m) / 0.05)
    assert outcome.orientation_mahalanobis == pytest.approx(
        math.hypot(*outcome.orientation_error_rad) / 0.1)


def test_outcomes_are_deterministic_and_ordered():
    """Same seed, same outcomes; another seed, other outcomes; stamps at the rate."""
    model = OutcomeModel()
    first = model.outcomes(50, seed=7, rate_hz=20.0, start_stamp_sim_ns=10)
    assert first == model.outcomes(50, seed=7, rate_hz=20.0, start_stamp_sim_ns=10)
    assert first != model.outcomes(50, seed=8, rate_hz=20.0, start_stamp_sim_ns=10)
    assert [o.observed_stamp_sim_ns for o in first] == [10 + i * 50_000_000 for i in range(50)]


@pytest.mark.parametrize('kwargs', [
    {'position_std_m': 0.0},
    {'position_std_m': -1.0},
    {'orientation_std_rad': math.inf},
    {'orientation_std_rad': math.nan},
    {'prediction_horizon_ns': -1},
])
def test_outcome_model_rejects_bad_parameters(kwargs):
    """Stds must be finite and positive, the horizon a non-negative int."""
    with pytest.raises(ValueError):
        OutcomeModel(**kwargs)


def test_outcome_model_rejects_bad_types():
    """Bools and strings are not numbers here."""
    with pytest.raises(TypeError):
        OutcomeModel(position_std_m=True)
    with pytest.raises(TypeError):
        OutcomeModel(prediction_horizon_ns=1.5)


def _run(scenario, seed):
    return list(scenario.steps(seed))


def test_default_scenario_shape():
    """Three phases of equal length: calibrated, overconfident ramp 2x->peak, recovery."""
    scenario = default_scenario(30.0, peak_overconfidence=40.0)
    assert [span.phase.name for span in scenario.spans] == [
        'calibrated', 'overconfident', 'recovery']
    assert [(span.start_ns, span.end_ns) for span in scenario.spans] == [
        (0, 10 * 10**9), (10 * 10**9, 20 * 10**9), (20 * 10**9, 30 * 10**9)]
    assert scenario.overconfidence_at(5 * 10**9) == 1.0
    assert scenario.overconfidence_at(10 * 10**9) == pytest.approx(2.0)
    assert scenario.overconfidence_at(15 * 10**9) == pytest.approx(math.sqrt(2.0 * 40.0))
    assert scenario.overconfidence_at(20 * 10**9 - 1) == pytest.approx(40.0, rel=1e-6)
    assert scenario.overconfidence_at(25 * 10**9) == 1.0
    assert all(span.phase.claimed_level is SelfAssessmentLevel.KNOWN for span in scenario.spans)


def test_scenario_is_deterministic_for_a_seed():
    """Same seed, same steps (equal assessments and outcomes); another seed differs."""
    scenario = default_scenario(6.0)
    assert _run(scenario, 42) == _run(scenario, 42)
    assert _run(scenario, 42) != _run(scenario, 43)


def test_scenario_steps_are_in_stamp_order_and_causal():
    """Assessments at the rate, outcomes delivered once, in order, never after their assessment."""
    scenario = Scenario(
        phases=(Phase('a', 1.0), Phase('b', 1.0, 3.0)),
        assessment_rate_hz=4.0, outcome_rate_hz=10.0,
        model=OutcomeModel(prediction_horizon_ns=50_000_000))
    steps = _run(scenario, 1)
    stamps = [step.assessment.belief_stamp_sim_ns for step in steps]
    assert stamps == [i * 250_000_000 for i in range(8)]
    previous_stamp = -1
    observed = []
    for step in steps:
        assert isinstance(step.assessment, BeliefSelfAssessment)
        stamp = step.assessment.belief_stamp_sim_ns
        for outcome in step.outcomes:
            assert previous_stamp < outcome.observed_stamp_sim_ns <= stamp
            observed.append(outcome.observed_stamp_sim_ns)
        previous_stamp = stamp
    assert observed == sorted(observed)
    # Predictions every 100 ms; the one observed at 1.85 s, after the last assessment, is dropped.
    assert observed == [i * 100_000_000 + 50_000_000 for i in range(18)]


def test_scenario_phases_drive_levels_and_errors():
    """Each step carries the phase's claimed level; overconfident phases give larger distances."""
    scenario = Scenario(
        phases=(Phase('honest', 20.0, 1.0),
                Phase('bragging', 20.0, 10.0, claimed_level=SelfAssessmentLevel.UNCERTAIN)),
        assessment_rate_hz=5.0, outcome_rate_hz=20.0)
    honest, bragging = [], []
    for assessment, outcomes in scenario.steps(9):
        phase = scenario.phase_at(assessment.belief_stamp_sim_ns)
        expected = (SelfAssessmentLevel.KNOWN if phase.name == 'honest'
                    else SelfAssessmentLevel.UNCERTAIN)
        assert assessment.overall_level is expected
        for outcome in outcomes:
            target = honest if scenario.phase_at(
                outcome.prediction_stamp_sim_ns).name == 'honest' else bragging
            target.append(outcome.position_mahalanobis ** 2)
    assert abs(sum(honest) / len(honest) - 3.0) < 0.5
    assert abs(sum(bragging) / len(bragging) / 300.0 - 1.0) < 0.2


def test_scenario_validation():
    """Phases, rates and the model are validated with clear errors."""
    with pytest.raises(ValueError):
        Scenario(phases=())
    with pytest.raises(TypeError):
        Scenario(phases=('calibrated',))
    with pytest.raises(ValueError):
        Scenario(phases=(Phase('a', 1.0),), assessment_rate_hz=0.0)
    with pytest.raises(ValueError):
        Phase('Not_Taxonomy', 1.0)
    with pytest.raises(ValueError):
        Phase('a', 0.0)
    with pytest.raises(ValueError):
        Phase('a', 1.0, overconfidence=-2.0)
    with pytest.raises(TypeError):
        Phase('a', 1.0, claimed_level=0)
