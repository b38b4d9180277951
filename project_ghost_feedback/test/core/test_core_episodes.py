# SPDX-License-Identifier: Apache-2.0
"""Downgrade episodes, the run's pooled k and the pose error (core/feedback/episodes.py)."""

import math

from project_ghost_feedback.core import NS_PER_S, SelfAssessmentLevel
from project_ghost_feedback.core.feedback import (
    build_calibration_history,
    CalibratedSelfAssessment,
    downgrade_episodes,
    EpisodeTracker,
    PoseErrorStatistics,
    RunOverconfidence,
    time_origin,
    verdict_line,
)
from project_ghost_feedback.core.feedback.episodes import ORIGIN_BAG_START, ORIGIN_FIRST_STAMP
from project_ghost_feedback.core.feedback.overconfidence import estimate_from_squared_distances
from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.sim.outcome_model import Phase, Scenario
from support.contracts import build_outcome, build_raw
import pytest

K, U, X = SelfAssessmentLevel.KNOWN, SelfAssessmentLevel.UNCERTAIN, SelfAssessmentLevel.UNKNOWN


def _calibrated(stamp_s, level, reason, distance=1.0, raw=K):
    """Return a CalibratedSelfAssessment at ``stamp_s`` s of ``level`` over 4 outcomes."""
    stamp = int(stamp_s * NS_PER_S)
    outcomes = [build_outcome(stamp + 10 - i, distance) for i in range(3, -1, -1)]
    return CalibratedSelfAssessment(build_raw(stamp, raw), build_calibration_history(outcomes, 4),
                                    level, 'test_policy', reason)


def test_episodes_have_the_right_start_end_level_and_reason():
    """Two episodes: the first closed where the level came back, the second still open."""
    stream = [
        _calibrated(10, K, 'within'), _calibrated(11, K, 'within'),
        _calibrated(12, U, 'significant_overconfidence', 2.0),
        _calibrated(13, X, 'gross_overconfidence', 4.0),
        _calibrated(14, U, 'significant_overconfidence', 2.0),
        _calibrated(15, K, 'within'), _calibrated(16, K, 'within'),
        _calibrated(17, U, 'significant_overconfidence', 3.0),
    ]
    first, second = downgrade_episodes(stream)
    assert (first.start_ns, first.end_ns) == (12 * NS_PER_S, 15 * NS_PER_S)
    assert first.level is X and first.raw_level is K and not first.ongoing
    assert first.reason == 'gross_overconfidence'  # where the worst level was first reached
    assert first.reasons == ('significant_overconfidence', 'gross_overconfidence')
    assert first.assessments == 3 and first.duration_s == 3.0
    # The peak window: all four distances 4.0, so k_hat = 4 / sqrt(3).
    assert first.overconfidence['position'].k_hat == pytest.approx(4.0 / math.sqrt(3.0))
    assert first.overconfidence['position'] == estimate_from_squared_distances([16.0] * 4)
    assert (second.start_ns, second.end_ns, second.ongoing) == (17 * NS_PER_S, 17 * NS_PER_S,
                                                                True)
    assert second.level is U
    as_dict = first.as_dict(origin_ns=10 * NS_PER_S)
    assert (as_dict['start_s'], as_dict['end_s'], as_dict['duration_s']) == (2.0, 5.0, 3.0)
    assert as_dict['start_stamp_ns'] == 12 * NS_PER_S and as_dict['level'] == 'UNKNOWN'
    text = first.describe(origin_ns=10 * NS_PER_S)
    assert text.startswith('grossly overconfident from 2.0 s to 5.0 s (3.0 s, UNKNOWN below raw '
                           'KNOWN): peak position k = 2.31 [')
    assert 'to the end at 7.0 s' in second.describe(origin_ns=10 * NS_PER_S)


def test_a_raw_level_already_low_is_no_episode():
    """Calibrated equal to a low raw level is not a downgrade."""
    stream = [_calibrated(1, U, 'within', raw=U), _calibrated(2, X, 'within', raw=X)]
    assert downgrade_episodes(stream) == ()


def test_the_tracker_keeps_at_most_limit_and_counts_all():
    """A flapping stream: every episode counted, the ``limit`` longest kept, time summed."""
    tracker = EpisodeTracker(limit=2)
    for second in range(10):
        level = U if second % 2 else K
        tracker.add(_calibrated(second, level, 'significant_overconfidence'))
    assert tracker.count == 5 and tracker.truncated
    assert [e.start_ns for e in tracker.episodes()] == [1 * NS_PER_S, 3 * NS_PER_S]
    assert tracker.downgraded_s == pytest.approx(5.0 - 1.0)  # four closed of 1 s, one open of 0
    # A longer episode later replaces the shortest kept one: the longest are kept, in order.
    for second in range(10, 16):
        tracker.add(_calibrated(second, U, 'gross_overconfidence'))
    assert [e.start_ns for e in tracker.episodes()] == [3 * NS_PER_S, 9 * NS_PER_S]
    assert tracker.episodes()[-1].ongoing and tracker.episodes()[-1].duration_s == 6.0
    tracker.add(_calibrated(16, K, 'within'))
    assert [(e.start_ns, e.ongoing) for e in tracker.episodes()] == [
        (3 * NS_PER_S, False), (9 * NS_PER_S, False)]
    assert tracker.count == 5 and tracker.downgraded_s == pytest.approx(4.0 + 7.0)
    with pytest.raises(ValueError, match='limit'):
        EpisodeTracker(limit=-1)


def _run(policy='overconfidence_scale', seed=4):
    """Return (tracker, pooled k) of 150 s honest then 150 s 3x overconfident, at 10 Hz."""
    scenario = Scenario(phases=(Phase('honest', 150.0, 1.0), Phase('overconfident', 150.0, 3.0)),
                        assessment_rate_hz=10.0, outcome_rate_hz=10.0)
    loop = FeedbackLoop(LoopConfig.make(policy))
    tracker, pooled = EpisodeTracker(), RunOverconfidence()
    for raw, outcomes in scenario.steps(seed):
        for outcome in outcomes:
            loop.outcome(outcome)
            pooled.add(outcome)
        tracker.add(loop.assessment(raw).calibrated)
    return tracker, pooled


def test_a_fault_halfway_gives_an_episode_from_the_fault_with_its_k():
    """The longest episode starts within seconds of the fault and its peak k covers ~3."""
    tracker, pooled = _run()
    episodes = tracker.episodes()
    origin = tracker.first_stamp_ns
    main = max(episodes, key=lambda e: e.end_ns - e.start_ns)
    assert 150.0 <= (main.start_ns - origin) / NS_PER_S <= 160.0
    assert main.ongoing and main.level < K
    position = main.overconfidence['position']
    assert position.low > 2.0 and position.k_hat > 2.5
    line = verdict_line(tracker, pooled, origin)
    assert line.startswith(main.describe(origin))
    assert 'over the run position k = ' in line
    # The pooled k of a half-honest, half-3x run lies between (sqrt((1 + 9) / 2) ~ 2.24).
    assert 1.9 < pooled.estimates()['position'].k_hat < 2.6


def test_an_honest_run_says_never_downgraded_with_its_k():
    """No downgrade: the first line says so and gives k over the run near 1."""
    tracker, pooled = EpisodeTracker(), RunOverconfidence()
    squares = []
    for second in range(1, 50):
        outcome = build_outcome(second * NS_PER_S, 1.5)
        pooled.add(outcome)
        squares.append(1.5 * 1.5)
        tracker.add(_calibrated(second, K, 'within', 1.5))
    line = verdict_line(tracker, pooled, origin_ns=0)
    assert line.startswith('never downgraded over 48.0 s of assessments; over the run position k')
    assert pooled.estimates()['position'] == estimate_from_squared_distances(squares)
    assert verdict_line(EpisodeTracker(), pooled, 0) == 'no assessment: nothing was judged'


def test_pooled_k_of_an_infinite_distance_is_infinite_and_empty_is_none():
    """+inf pools to +inf; no outcome gives None per vec3."""
    pooled = RunOverconfidence()
    assert pooled.estimates() == {'position': None, 'orientation': None}
    pooled.add(build_outcome(1, math.inf, 1.0))
    assert pooled.as_dict()['position']['k_hat'] == 'inf'


def test_pose_error_statistics_are_rmse_and_max_of_norms():
    """Norms of (3, 4, 0) m and (0, 0, 0) m: RMSE sqrt(12.5), max 5; rotation in degrees."""
    stats = PoseErrorStatistics()
    stats.add((3.0, 4.0, 0.0), (0.0, 0.0, math.pi / 2))
    stats.add((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    result = stats.as_dict()
    assert result['pairs'] == 2
    assert result['position_m'] == {'rmse': pytest.approx(math.sqrt(12.5)), 'max': 5.0}
    assert result['rotation_deg']['max'] == pytest.approx(90.0)
    assert result['rotation_deg']['rmse'] == pytest.approx(math.sqrt(90.0 ** 2 / 2))
    assert 'position RMSE 3.536 m, max 5.000 m' in stats.text()
    assert PoseErrorStatistics().as_dict()['position_m'] is None


@pytest.mark.parametrize('start, end, first, expected', [
    (100 * NS_PER_S, 200 * NS_PER_S, 100 * NS_PER_S + 5, (100 * NS_PER_S, ORIGIN_BAG_START)),
    (100 * NS_PER_S, 200 * NS_PER_S, 96 * NS_PER_S, (100 * NS_PER_S, ORIGIN_BAG_START)),
    # sim-time stamps in a bag recorded on wall time: count from the first stamp
    (1_700_000_000 * NS_PER_S, 1_700_000_100 * NS_PER_S, 12 * NS_PER_S,
     (12 * NS_PER_S, ORIGIN_FIRST_STAMP)),
    (None, None, 7, (7, ORIGIN_FIRST_STAMP)),
    (5, 9, None, (5, ORIGIN_BAG_START)),
])
def test_time_origin(start, end, first, expected):
    """The bag's start when the stamps share its clock, else the first stamp."""
    assert time_origin(start, end, first) == expected


def test_schema_1_histories_give_episodes_without_k():
    """A bag recorded before ADR-0026a: episodes with their stamps and level, k None."""
    stamp = 5 * NS_PER_S
    outcomes = [build_outcome(stamp - i, 4.0) for i in range(3, -1, -1)]
    history = build_calibration_history(outcomes, 4, schema_version=1)
    down = CalibratedSelfAssessment(build_raw(stamp), history, U, 'test_policy', 'x')
    episode, = downgrade_episodes([down])
    assert episode.overconfidence is None and episode.ongoing
    assert episode.as_dict(0)['overconfidence'] is None
    assert 'k not known (schema-1 history)' in episode.describe(0)


def _step(stamp_s, kind='jump'):
    from project_ghost_feedback.core.feedback import TransformStep

    return TransformStep(int(stamp_s * NS_PER_S), kind, 'odom', 'map',
                         int(stamp_s * NS_PER_S), 2.0, 0.0, 'position', 1.2, 19.8)


def test_an_episode_carries_the_transform_steps_from_shortly_before_it_to_its_end():
    """Steps within TRANSFORM_STEP_LEAD_NS before the start and during: carried; older: not."""
    from project_ghost_feedback.core.feedback import EpisodeTracker

    tracker = EpisodeTracker()
    tracker.add(_calibrated(0, K, 'within'))
    tracker.transform_step(_step(1))    # 11 s before the start: another story
    tracker.add(_calibrated(2, K, 'within'))
    tracker.transform_step(_step(9))    # 3 s before the start: the cause named
    tracker.add(_calibrated(12, X, 'gross_overconfidence', 9.0))
    tracker.transform_step(_step(14, 'fall'))
    tracker.add(_calibrated(15, X, 'gross_overconfidence', 9.0))
    tracker.add(_calibrated(16, K, 'within'))
    (episode,) = tracker.episodes()
    assert [(s.stamp_ns // NS_PER_S, s.kind) for s in episode.transform_steps] == [
        (9, 'jump'), (14, 'fall')]
    as_dict = episode.as_dict(origin_ns=0)
    assert [s['stamp_s'] for s in as_dict['transform_steps']] == [9.0, 14.0]
    assert as_dict['transform_steps'][0]['step_m'] == 2.0
    assert ('position distance jumped 1.2 -> 19.8 at a /tf change: odom <- map stepped 2.000 m, '
            '0.00 deg at 9.00 s') in as_dict['description']


def test_an_episode_without_transform_steps_reads_as_before():
    """Recordings without the bridge's notes: an empty list, the description unchanged."""
    (episode,) = downgrade_episodes([_calibrated(1, K, 'w'), _calibrated(2, U, 'o', 2.0),
                                     _calibrated(3, K, 'w')])
    assert episode.transform_steps == () and episode.as_dict(0)['transform_steps'] == []
    assert 'tf' not in episode.describe(0)


def test_an_episode_gives_its_error_in_metres_and_degrees():
    """The outcomes from the one that opened the episode to its end: RMSE and max, m and deg."""
    from project_ghost_feedback.core.feedback import EpisodeTracker

    tracker = EpisodeTracker()
    tracker.outcome(build_outcome(NS_PER_S, 1.0))        # before: not the episode's
    tracker.add(_calibrated(1, K, 'within'))
    tracker.outcome(build_outcome(2 * NS_PER_S, 9.0))     # opens it
    tracker.add(_calibrated(2, X, 'gross_overconfidence', 9.0))
    tracker.outcome(build_outcome(3 * NS_PER_S, 9.0))
    tracker.add(_calibrated(3, K, 'within'))              # closes it: not the episode's
    (episode,) = tracker.episodes()
    # build_outcome's errors: (0.1, -0.2, 0.05) m and (0, 0.01, 0) rad, one pair.
    position = math.sqrt(0.1 ** 2 + 0.2 ** 2 + 0.05 ** 2)
    assert episode.error['pairs'] == 1
    assert episode.error['position_m']['rmse'] == pytest.approx(position)
    assert episode.error['rotation_deg']['max'] == pytest.approx(math.degrees(0.01))
    assert (f'error RMSE {position:.3f} m, {math.degrees(0.01):.2f} deg'
            in episode.describe(0))
