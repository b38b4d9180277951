# SPDX-License-Identifier: Apache-2.0
"""The demo end to end (shortened), and its pure per-phase analysis.

The end-to-end test runs ``ghost-feedback demo --scenario synthetic --quick`` as a user would (the
default scenario, the simulator stack, is tested in test_stack_demo.py): a synthetic estimator
and the feedback node in separate processes over DDS on loopback, a telemetry bag, a summary and
a PNG. With the calibrated policy and the default seed, the summary must show downgrades in the
overconfident phase and none in the calibrated one, and the bag must replay to the same outputs.
"""

import json
import struct
import subprocess
import sys

from project_ghost_feedback.core import BeliefSelfAssessment, PredictionOutcome
from project_ghost_feedback.core import SelfAssessmentLevel
from project_ghost_feedback.core.feedback import (
    CalibratedSelfAssessment,
    CalibrationHistory,
    DEFAULT_POLICY,
)
from project_ghost_feedback.demo.analysis import format_summary, summarize
from project_ghost_feedback.sim import Phase, Scenario, ScenarioStep
import pytest

CLI = [sys.executable, '-m', 'project_ghost_feedback.cli']
KNOWN = SelfAssessmentLevel.KNOWN
UNCERTAIN = SelfAssessmentLevel.UNCERTAIN
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


@pytest.fixture(scope='module')
def demo_run(tmp_path_factory):
    """Run the quick demo once for this module; return (process, output dir)."""
    output = tmp_path_factory.mktemp('demo')
    process = subprocess.run(
        CLI + ['demo', '--scenario', 'synthetic', '--quick', '--output-dir', str(output)],
        capture_output=True, text=True, timeout=240)
    return process, output


def test_demo_exits_zero_and_prints_summary(demo_run):
    """The quick demo exits 0, shows progress and ends with the per-phase table."""
    process, _ = demo_run
    assert process.returncode == 0, process.stdout + process.stderr
    assert '[demo] feedback node connected' in process.stdout
    assert '100%' in process.stdout
    for phase in ('calibrated', 'overconfident', 'recovery'):
        assert f'\n{phase} ' in process.stdout
    assert 'Traceback' not in process.stderr


def test_demo_downgrades_only_when_overconfident(demo_run):
    """Calibrated phase: no downgrade; overconfident phase: a downgrade within a few outcomes."""
    process, output = demo_run
    assert process.returncode == 0, process.stderr
    summary = json.loads((output / 'summary.json').read_text())
    phases = {phase['name']: phase for phase in summary['phases']}
    assert summary['policy'] == DEFAULT_POLICY == 'vec3_scale'
    assert summary['missing_outputs'] == 0
    assert summary['false_downgrades'] == 0
    calibrated = phases['calibrated']
    assert calibrated['downgrades'] == 0
    assert calibrated['calibrated_levels'] == {
        'KNOWN': sum(calibrated['raw_levels'].values()), 'UNCERTAIN': 0, 'UNKNOWN': 0}
    overconfident = phases['overconfident']
    assert overconfident['raw_levels']['KNOWN'] == sum(overconfident['raw_levels'].values())
    assert overconfident['first_downgrade'] is not None
    assert overconfident['first_downgrade']['after_outcomes'] <= 16
    assert overconfident['downgrades'] >= 0.8 * sum(overconfident['raw_levels'].values())
    assert phases['recovery']['back_to_raw'] is not None


def test_demo_plot_is_a_png(demo_run):
    """demo.png is a valid PNG (signature, IHDR) of a sensible size that matplotlib reads back."""
    _, output = demo_run
    data = (output / 'demo.png').read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b'IHDR'
    width, height = struct.unpack('>II', data[16:24])
    assert width >= 600 and height >= 400
    from matplotlib import image
    pixels = image.imread(output / 'demo.png')
    assert pixels.shape[:2] == (height, width)


def test_demo_bag_replays_identically(demo_run):
    """The bag the demo wrote replays (ghost-feedback replay) to the outputs it recorded."""
    process, output = demo_run
    summary = json.loads((output / 'summary.json').read_text())
    assert summary['replay_matches'] is True
    replay = subprocess.run(CLI + ['replay', str(output / 'bag')],
                            capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stdout + replay.stderr


def test_demo_rejects_bad_options(tmp_path):
    """An invalid policy parameter is refused before anything starts, with a one-line error."""
    process = subprocess.run(
        CLI + ['demo', '--scenario', 'synthetic', '--quick', '--set', 'min_outcomes=0',
               '--output-dir', str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert process.returncode == 2
    assert 'min_outcomes' in process.stderr
    assert 'Traceback' not in process.stderr
    assert not (tmp_path / 'summary.json').exists()


@pytest.mark.parametrize('scenario', [[], ['--scenario', 'synthetic']])
def test_demo_output_dir_is_checked_before_it_starts(tmp_path, scenario):
    """An --output-dir that is a file: one line and exit 2, before any process starts."""
    (tmp_path / 'file').write_text('x')
    process = subprocess.run(
        CLI + ['demo'] + scenario + ['--output-dir', str(tmp_path / 'file' / 'out')],
        capture_output=True, text=True, timeout=60)
    assert process.returncode == 2
    assert process.stderr.splitlines() == [
        f'ghost-feedback demo: error: --output-dir {tmp_path / "file" / "out"}: '
        f'{tmp_path / "file"} is not a directory']


def _outcome(predicted_ns, distance):
    return PredictionOutcome(predicted_ns, predicted_ns, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                             distance, 0.0)


def _calibrated(stamp, level):
    raw = BeliefSelfAssessment(stamp, KNOWN)
    return CalibratedSelfAssessment(raw, CalibrationHistory.empty(), level, 'test', 'test')


def test_summarize_counts_false_and_lingering_downgrades():
    """Downgrades judged on calibrated outcomes only are false, lingering ones are not.

    First downgrade and back-to-raw are per phase; a missing output is counted.
    """
    scenario = Scenario(phases=(Phase('honest', 1.0), Phase('over', 1.0, 10.0)),
                        assessment_rate_hz=2.0, outcome_rate_hz=2.0)
    s = 500_000_000
    steps = [
        ScenarioStep(BeliefSelfAssessment(0, KNOWN), (_outcome(0, 1.0),)),
        ScenarioStep(BeliefSelfAssessment(s, KNOWN), (_outcome(s, 1.0),)),
        ScenarioStep(BeliefSelfAssessment(2 * s, KNOWN), (_outcome(2 * s, 40.0),)),
        ScenarioStep(BeliefSelfAssessment(3 * s, KNOWN), (_outcome(3 * s, 40.0),)),
    ]
    results = {
        0: _calibrated(0, KNOWN),
        s: _calibrated(s, UNCERTAIN),          # false: judged on honest outcomes only
        2 * s: _calibrated(2 * s, UNCERTAIN),  # correct: the window holds an overconfident one
        # 3 * s missing: counted as a missing output
    }
    summary = summarize(scenario, steps, results, max_history=4)
    honest, over = summary['phases']
    assert honest['downgrades'] == 1 and honest['false_downgrades'] == 1
    assert honest['first_downgrade']['after_s'] == 0.5
    assert honest['first_downgrade']['after_outcomes'] == 2
    assert over['downgrades'] == 1 and over['false_downgrades'] == 0
    assert over['first_downgrade'] is None  # still downgraded from the previous phase
    assert over['missing_outputs'] == 1
    assert summary['false_downgrades'] == 1 and summary['missing_outputs'] == 1
    assert honest['calibrated_levels'] == {'KNOWN': 1, 'UNCERTAIN': 1, 'UNKNOWN': 0}
    text = format_summary(summary, 'test')
    assert 'honest' in text and 'false downgrades 1' in text
