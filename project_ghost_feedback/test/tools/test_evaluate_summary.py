# SPDX-License-Identifier: Apache-2.0
"""What ``ghost-feedback evaluate`` says of a bag: episodes, the first line, the error, the picture.

The bag is the simulated localization stack's (a real Kalman filter, tuned for 12 s, then its
truth accelerating 6x more than the filter assumes), written by rosbags' Writer. Episodes are
checked against runs of downgraded assessments computed here from the telemetry bag evaluate
wrote; the pose error against the samples' own positions and quaternions (numpy).
"""

import json
import math
import struct

import numpy as np
import pytest
import yaml

from project_ghost_feedback.core import NS_PER_S
from project_ghost_feedback.core.feedback import CalibratedSelfAssessment
from project_ghost_feedback.core.feedback.episodes import reason_words
from project_ghost_feedback import plots as plot
from project_ghost_feedback.telemetry import read_bag
from support.ordinary_bags import CONFIG, evaluate, POSE, stack_samples, write_rosbags_bag


@pytest.fixture(scope='module')
def samples():
    return stack_samples()


@pytest.fixture(scope='module')
def evaluated(tmp_path_factory, samples):
    """Evaluate one bag (with its picture); return (output dir, summary)."""
    root = tmp_path_factory.mktemp('evaluated')
    bag = write_rosbags_bag(root / 'bag', samples, POSE)
    assert evaluate(bag, root / 'out') == 0
    return root / 'out', json.loads((root / 'out' / 'summary.json').read_text())


def _png_size(path):
    """Return (width, height) from a PNG's IHDR chunk."""
    data = path.read_bytes()[:24]
    assert data[:8] == b'\x89PNG\r\n\x1a\n' and data[12:16] == b'IHDR'
    return struct.unpack('>II', data[16:24])


def _runs_of_downgrades(telemetry):
    """Return [(start_ns, end_ns, worst level name, ongoing)] computed from the telemetry bag."""
    calibrated = [c.contract for c in read_bag(str(telemetry))
                  if isinstance(c.contract, CalibratedSelfAssessment)]
    runs, current = [], None
    for item in calibrated:
        stamp = item.raw_assessment.belief_stamp_sim_ns
        down = item.adjusted_overall_level.value < item.raw_assessment.overall_level.value
        if down and current is None:
            current = [stamp, None, item.adjusted_overall_level.value]
        elif down:
            current[2] = min(current[2], item.adjusted_overall_level.value)
        elif current is not None:
            runs.append((current[0], stamp, current[2], False))
            current = None
    if current is not None:
        runs.append((current[0], calibrated[-1].raw_assessment.belief_stamp_sim_ns, current[2],
                     True))
    names = ('UNKNOWN', 'UNCERTAIN', 'KNOWN')
    return [(start, end, names[level], ongoing) for start, end, level, ongoing in runs]


def test_episodes_have_the_right_start_end_and_level(evaluated):
    """Every episode equals a run of downgraded assessments; the main one follows the fault."""
    out, summary = evaluated
    episodes = summary['episodes']
    assert episodes, summary['verdict']
    expected = _runs_of_downgrades(out / 'telemetry')
    assert [(e['start_stamp_ns'], e['end_stamp_ns'], e['level'], e['ongoing'])
            for e in episodes] == expected
    origin = summary['time_origin']['stamp_ns']
    for episode in episodes:
        assert episode['start_s'] == pytest.approx((episode['start_stamp_ns'] - origin) / NS_PER_S)
        assert episode['duration_s'] == pytest.approx(episode['end_s'] - episode['start_s'])
        assert episode['reason'] in episode['reasons']
        position = episode['overconfidence']['position']
        assert position['low'] <= position['k_hat'] <= position['high']
    main = max(episodes, key=lambda e: e['duration_s'])
    assert 12.0 <= main['start_s'] <= 20.0  # the truth turns 6x faster at 12 s
    assert main['ongoing'] and main['level'] in ('UNCERTAIN', 'UNKNOWN')
    assert summary['downgraded_s'] == pytest.approx(sum(e['duration_s'] for e in episodes))


def test_the_first_line_says_what_happened(evaluated):
    """summary.txt's first line is the verdict: the main episode in words, with its k."""
    out, summary = evaluated
    first = (out / 'summary.txt').read_text().splitlines()[0]
    assert first == summary['verdict']
    main = max(summary['episodes'], key=lambda e: e['duration_s'])
    assert first.startswith(main['description'])
    # The default policy's reason in words ('overconfident in position' for vec3_scale).
    words = reason_words(main['reason'])
    assert 'overconfident' in words
    assert first.startswith(f'{words} from {main["start_s"]:.1f} s to the end at ')
    assert 'peak position k = ' in first and 'over the run position k = ' in first
    text = (out / 'summary.txt').read_text()
    assert f'  1. {summary["episodes"][0]["description"]}' in text


def test_the_error_is_rmse_and_max_in_metres_and_degrees(evaluated, samples):
    """Position and rotation error of every paired estimate (paced out or not), as evo's APE."""
    _, summary = evaluated
    error = summary['error']
    estimates = [s for s in samples if s.is_estimate]
    assert error['pairs'] == len(estimates) == summary['bridge']['paired']
    position = np.array([np.linalg.norm(np.subtract(s.estimate_position, s.truth_position))
                         for s in estimates])
    rotation = np.array([math.degrees(2 * math.acos(min(1.0, abs(float(np.dot(
        s.estimate_quaternion, s.truth_quaternion)))))) for s in estimates])
    assert error['position_m']['rmse'] == pytest.approx(math.sqrt(np.mean(position ** 2)),
                                                        rel=1e-6)
    assert error['position_m']['max'] == pytest.approx(position.max(), rel=1e-6)
    assert error['rotation_deg']['rmse'] == pytest.approx(math.sqrt(np.mean(rotation ** 2)),
                                                          rel=1e-5, abs=1e-6)
    assert error['rotation_deg']['max'] == pytest.approx(rotation.max(), rel=1e-5, abs=1e-6)
    lines = (evaluated[0] / 'summary.txt').read_text().splitlines()
    assert lines[1].startswith('error of the estimate against the reference: position RMSE ')


def test_the_picture_has_three_panels_without_a_calibrated_estimate(evaluated):
    """Distances, levels, k: 3 panels (no empty NEES panel); the PNG is that tall."""
    out, summary = evaluated
    assert 'nees' not in summary
    width, height = _png_size(out / 'evaluate.png')
    assert (width, height) == (1100, int(round((2.6 * 3 + 1.0) * 100)))


def test_a_calibrated_estimate_adds_the_nees_panel(tmp_path, samples):
    """With calibrated_estimate.enabled the bridge republishes it: a NEES panel and means."""
    params = yaml.safe_load(CONFIG.read_text())
    section = next(iter(params.values()))['ros__parameters']
    section['calibrated_estimate']['enabled'] = True
    (tmp_path / 'bridge.yaml').write_text(yaml.safe_dump(params))
    bag = write_rosbags_bag(tmp_path / 'bag', samples, POSE)
    assert main_evaluate(bag, tmp_path / 'out', tmp_path / 'bridge.yaml') == 0
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    nees = summary['nees']
    assert nees['outcomes'] == summary['bridge']['outcomes']
    assert nees['calibrated_mean'] < nees['raw_mean']  # the inflated covariance is more honest
    assert _png_size(tmp_path / 'out' / 'evaluate.png')[1] == int(round((2.6 * 4 + 1.0) * 100))


def main_evaluate(bag, out, params):
    from project_ghost_feedback.cli import main

    return main(['evaluate', str(bag), '--estimate', '/odometry/filtered', '--reference',
                 '/ground_truth', '--params-file', str(params), '--output-dir', str(out)])


def _figure(nees=None):
    return plot.build_figure(
        title='r$\\foo$ plain', distances=[(0.0, 1.0, 2.0), (1.0, math.inf, 1.5)],
        levels=[(0.0, 2, 2), (1.0, 2, 1)],
        k_series=[(0.0, (1.0, 0.8, 1.3), None), (1.0, (2.0, 1.6, 2.6), (1.1, 0.9, 1.4))],
        episodes=[(1.0, 2.0, 'UNCERTAIN')], nees=nees)


def test_the_picture_functions_draw_the_named_panels():
    """Panel titles, chi(3) quantile lines named as such (no 'std'), episodes shaded."""
    from matplotlib import pyplot

    figure = _figure()
    try:
        titles = [axis.get_title(loc='left') for axis in figure.axes]
        assert titles == [plot.DISTANCES_TITLE, plot.LEVELS_TITLE, plot.K_TITLE]
        texts = [t.get_text() for t in figure.axes[0].texts]
        assert texts == [f'chi(3) {100 * p:g}% quantile ({math.sqrt(q):.2f})'
                         for p, q in ((0.5, 2.365974), (0.95, 7.814728), (0.999, 16.26624))]
        assert not any('std' in t for axis in figure.axes for t in
                       [x.get_text() for x in axis.texts])
        for axis in figure.axes:  # one shaded episode per panel
            assert len([p for p in axis.patches if p.get_x() == 1.0]) == 1
        assert figure.get_suptitle() == 'r$\\foo$ plain'
    finally:
        pyplot.close(figure)
    figure = _figure(nees=[(0.0, 9.0, 2.0)])
    try:
        assert figure.axes[3].get_title(loc='left') == plot.NEES_TITLE
    finally:
        pyplot.close(figure)


def test_the_k_axis_is_labelled_at_1_2_and_5_of_every_decade():
    """With k from 0.8 to 2.6 (less than a decade) the axis says 1 and 2, not "1" alone.

    The labels are plain numbers (no 10^x), ticks at 1, 2, 5 of each decade; the NEES panel too.
    """
    from matplotlib import pyplot

    figure = _figure(nees=[(0.0, 9.0, 2.0), (1.0, 0.5, 0.4)])
    try:
        figure.canvas.draw()
        for axis in (figure.axes[2], figure.axes[3]):
            low, high = axis.get_ylim()
            labels = [tick.label1.get_text() for tick in axis.yaxis.get_major_ticks()
                      if low <= tick.get_loc() <= high]
            numbers = [float(text) for text in labels]  # plain numbers: 0.5, 1, 2, ...
            assert len(numbers) >= 2, labels
            assert all(round(n / 10 ** math.floor(math.log10(n)), 6) in (1.0, 2.0, 5.0)
                       for n in numbers), labels
            assert not any('10^' in text or '$' in text for text in labels), labels
        k_labels = [tick.label1.get_text() for tick in figure.axes[2].yaxis.get_major_ticks()
                    if figure.axes[2].get_ylim()[0] <= tick.get_loc()
                    <= figure.axes[2].get_ylim()[1]]
        assert {'1', '2'} <= set(k_labels), k_labels
    finally:
        pyplot.close(figure)


def test_sim_time_stamps_in_a_wall_clock_bag_count_from_the_first_stamp(tmp_path, samples):
    """Log times in 2023, header stamps from 0: seconds from the first header stamp, said so."""
    bag = write_rosbags_bag(tmp_path / 'bag', samples, POSE,
                            log_start_ns=1_700_000_000 * NS_PER_S)
    assert evaluate(bag, tmp_path / 'out', '--no-plot') == 0
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    first = min(s.stamp_ns for s in samples)
    assert summary['time_origin'] == {'stamp_ns': first, 'kind': 'first_stamp'}
    main = max(summary['episodes'], key=lambda e: e['duration_s'])
    assert main['start_s'] == pytest.approx((main['start_stamp_ns'] - first) / NS_PER_S)
    assert 12.0 <= main['start_s'] <= 20.0
    text = (tmp_path / 'out' / 'summary.txt').read_text()
    assert 'seconds from the first header stamp' in text
