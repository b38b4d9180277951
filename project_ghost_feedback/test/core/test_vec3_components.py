# SPDX-License-Identifier: Apache-2.0
"""A vec3 that keeps fewer than 3 error components: k read unbiased from its mapped distances.

An outcome source publishes a ``chi(m)`` distance mapped onto ``chi(3)`` (``chi_to_chi3``), so
the policies see the law they assume; ``k`` is estimated from the distances mapped back
(``chi3_to_chi``) with ``m`` degrees per outcome (issue 43 item 5). The end-to-end check through
the bridge engine is ``test/bridge/test_whitening.py::test_a_planar_filter_3x_overconfident_...``.
"""

import math
import random

import pytest

from project_ghost_feedback.core import BeliefSelfAssessment, SelfAssessmentLevel
from project_ghost_feedback.core.contracts import PredictionOutcome
from project_ghost_feedback.core.feedback import EpisodeTracker, RunOverconfidence
from project_ghost_feedback.core.feedback.chi_square import chi3_to_chi, chi_to_chi, chi_to_chi3
from project_ghost_feedback.core.feedback.overconfidence import (
    check_components,
    estimate_overconfidence,
    format_overconfidence,
    unmapped_squared_distances,
)
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig

S = 1_000_000_000


@pytest.mark.parametrize('m', [1, 2])
def test_the_map_back_undoes_the_map_over_the_whole_range(m):
    for d in (1e-6, 1e-3, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 37.0):
        assert chi3_to_chi(chi_to_chi3(d, m), m) == pytest.approx(d, rel=1e-9)
    assert chi3_to_chi(0.0, m) == 0.0 and chi3_to_chi(math.inf, m) == math.inf
    assert chi_to_chi(1.7, 3, 3) == 1.7
    with pytest.raises(ValueError):
        chi_to_chi(1.0, 3, 0)
    with pytest.raises(ValueError):
        chi3_to_chi(-1.0, m)


def _mapped(rng, m, k, n):
    """``n`` distances of a ``k``-times overconfident ``m``-component vec3, mapped onto chi(3)."""
    return [chi_to_chi3(k * math.sqrt(sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(m))), m)
            for _ in range(n)]


def _outcome(index, position, orientation):
    return PredictionOutcome(
        prediction_stamp_sim_ns=index * S // 10, observed_stamp_sim_ns=index * S // 10,
        position_error_m=(0.0, 0.0, 0.0), orientation_error_rad=(0.0, 0.0, 0.0),
        position_mahalanobis=position, orientation_mahalanobis=orientation)


def test_a_window_of_a_planar_source_reads_its_true_k():
    """True k = 3, position 2 components, yaw 1: 95% intervals of 32-outcome windows hold 3.

    200 windows (seeded): ~95% hold 3 with the components (2, 1); read as chi(3), the yaw's
    interval holds it almost never (k reads ~2.1).
    """
    rng = random.Random(3)
    config = LoopConfig.make(vec3_components=(2, 1))
    covered, covered_mapped = {'position': 0, 'orientation': 0}, 0
    windows = 200
    for _ in range(windows):
        position, orientation = _mapped(rng, 2, 3.0, 32), _mapped(rng, 1, 3.0, 32)
        loop = FeedbackLoop(config)
        for index, (p, o) in enumerate(zip(position, orientation)):
            loop.outcome(_outcome(index, p, o))
        raw = BeliefSelfAssessment(belief_stamp_sim_ns=32 * S // 10,
                                   overall_level=SelfAssessmentLevel.KNOWN)
        history = loop.assessment(raw).calibrated.calibration_history
        fixed = estimate_overconfidence(history, config.vec3_components)
        for vec3, estimate in fixed.items():
            covered[vec3] += estimate.low <= 3.0 <= estimate.high
        mapped = estimate_overconfidence(history)['orientation']
        covered_mapped += mapped.low <= 3.0 <= mapped.high
        assert format_overconfidence(history, (2, 1))['position'] == str(fixed['position'])
    for vec3, count in covered.items():
        assert 0.9 <= count / windows <= 0.99, (vec3, count)
    assert covered_mapped / windows < 0.1


def test_the_pooled_and_episode_estimates_use_the_components():
    rng = random.Random(4)
    position, orientation = _mapped(rng, 2, 3.0, 4000), _mapped(rng, 1, 3.0, 4000)
    pooled, biased = RunOverconfidence((2, 1)), RunOverconfidence()
    for index, (p, o) in enumerate(zip(position, orientation)):
        pooled.add(_outcome(index, p, o))
        biased.add(_outcome(index, p, o))
    for vec3, estimate in pooled.estimates().items():
        assert estimate.k_hat == pytest.approx(3.0, rel=0.03), vec3
    assert biased.estimates()['position'].k_hat == pytest.approx(2.6, rel=0.03)
    assert biased.estimates()['orientation'].k_hat == pytest.approx(2.1, rel=0.03)

    loop = FeedbackLoop(LoopConfig.make(vec3_components=(2, 1)))
    tracker, mapped = EpisodeTracker(components=(2, 1)), EpisodeTracker()
    for index, (p, o) in enumerate(zip(position[:200], orientation[:200])):
        loop.outcome(_outcome(index, p, o))
        if index % 2:
            raw = BeliefSelfAssessment(belief_stamp_sim_ns=index * S // 10,
                                       overall_level=SelfAssessmentLevel.KNOWN)
            calibrated = loop.assessment(raw).calibrated
            tracker.add(calibrated)
            mapped.add(calibrated)
    episode, = tracker.episodes()
    peak, peak_mapped = episode.overconfidence, mapped.episodes()[0].overconfidence
    # The episode's peak window, read with the components: above 3 (the largest of ~90
    # windows), and ~3 / 2.1 times the yaw's mapped reading.
    assert peak['orientation'].k_hat > 3.0 and peak['position'].k_hat > 3.0, peak
    assert peak['orientation'].k_hat > 1.3 * peak_mapped['orientation'].k_hat


def test_the_levels_do_not_depend_on_the_components():
    rng = random.Random(5)
    position, orientation = _mapped(rng, 2, 1.0, 300), _mapped(rng, 1, 1.0, 300)
    levels = []
    for components in ((3, 3), (2, 1)):
        loop = FeedbackLoop(LoopConfig.make(vec3_components=components))
        seen = []
        for index, (p, o) in enumerate(zip(position, orientation)):
            loop.outcome(_outcome(index, p, o))
            raw = BeliefSelfAssessment(belief_stamp_sim_ns=index * S // 10,
                                       overall_level=SelfAssessmentLevel.KNOWN)
            calibrated = loop.assessment(raw).calibrated
            seen.append((calibrated.adjusted_overall_level, calibrated.adjustment_reason))
        levels.append(seen)
    assert levels[0] == levels[1]


@pytest.mark.parametrize('bad', [(0, 3), (3, 4), (2,), (2, 1, 1), ('2', 1), (2.0, 1), None, 3])
def test_components_are_validated(bad):
    with pytest.raises(ValueError, match='vec3_components'):
        check_components('test', bad)
    with pytest.raises(ValueError, match='vec3_components'):
        LoopConfig.make(vec3_components=bad)


def test_the_components_survive_the_recorded_configuration():
    """The FeedbackEvent texts and the bag's custom_data carry them (replay, audit read them)."""
    from project_ghost_feedback.telemetry.config import (
        custom_data_for_config, recorded_components, recorded_config)
    from types import SimpleNamespace

    config = LoopConfig.make(vec3_components=[2, 1])
    assert config.vec3_components == (2, 1)
    assert 'vec3 components 2 position, 1 orientation' in config.describe()
    names, values = config.parameter_texts()
    assert LoopConfig.from_texts(config.policy, names, values, config.max_history,
                                 config.outcome_buffer_size,
                                 config.time_jump_tolerance_ns) == config
    info = SimpleNamespace(path='bag', custom_data=custom_data_for_config(config))
    assert recorded_components(info) == (2, 1)
    assert recorded_config(info)[0] == config
    old = SimpleNamespace(path='bag', custom_data={})    # recorded before the parameter
    assert recorded_components(old) == (3, 3)


def test_unmapped_values_are_checked_and_identity_for_three():
    assert unmapped_squared_distances([4.0, 1.0]) == (4.0, 1.0)
    with pytest.raises(ValueError):
        unmapped_squared_distances([-1.0], 2)
    assert unmapped_squared_distances([math.inf], 1) == (math.inf,)
