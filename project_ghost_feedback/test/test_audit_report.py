# SPDX-License-Identifier: Apache-2.0
"""The audit report says what it counts (issue 21): faults before the injection, names, bands.

No dask here: the per-bag task and the report are driven directly, as the workers would.
"""

import html
import pathlib
import shutil
import subprocess
import tempfile

from project_ghost_feedback.audit.discovery import robot_name
from project_ghost_feedback.audit.injection import parse_injection
from project_ghost_feedback.audit.report import build_document, render_html, robot_status, \
    write_report
from project_ghost_feedback.audit.synthetic import write_bag
from project_ghost_feedback.audit.task import audit_bag
from project_ghost_feedback.core.feedback import parse_policy
import pytest

POLICIES = [parse_policy('calibrated_exceedance'), parse_policy('overconfidence_scale')]


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    """Two robots: one calibrated, one overconfident (10x) from the start: a real fault."""
    root = tmp_path_factory.mktemp('fleet')
    calm = write_bag(root / 'calm' / 'rosbag2_2026_12_04-10_00_00', seed=1, assessments=200)
    faulty = write_bag(root / 'faulty' / 'rosbag2_2026_12_04-11_00_00', seed=2,
                       assessments=200, overconfidence=10.0)
    injection = parse_injection('20@10')  # 20x from 10 s into each bag
    found = [audit_bag(str(path), POLICIES, injection=injection) for path in (calm, faulty)]
    for result in found:
        result['robot'] = robot_name(result['bag'])
    return found


def test_a_fault_before_the_injection_is_reported_and_left_out_of_detection(results):
    document = build_document(results, policies=POLICIES, max_history=32,
                              injection=parse_injection('20@10'))
    for label, total in document['totals'].items():
        injected = total['injected']
        assert injected['bags'] == 2 and injected['fault_before_injection'] == 1, label
        assert injected['calibrated_bags'] == 1 and injected['detected'] == 1, label
    faulty = next(b for b in document['bags'] if b['robot'] == 'faulty')
    calm = next(b for b in document['bags'] if b['robot'] == 'calm')
    for label in document['totals']:
        assert robot_status(faulty['policies'][label]) == (
            'fault before the injection (excluded)')
        assert robot_status(calm['policies'][label]).startswith('injection detected after')


def test_the_page_names_its_columns_and_explains_every_abbreviation(results, tmp_path):
    document = build_document(results, policies=POLICIES, max_history=32,
                              injection=parse_injection('20@10'))
    page = render_html(document, {})
    assert '<th>false' not in page.lower()  # columns say what they count
    assert 'K / U / X' not in page
    for text in ('downgrades before the injection', 'fault before the injection',
                 'KNOWN / UNCERTAIN / UNKNOWN', 'How to read this page', 'independent windows',
                 'full window'):
        assert html.escape(text) in page, text
    assert '<td>faulty</td>' in page and '<td>calm</td>' in page  # the robot, not the bag folder
    paths = write_report(document, tmp_path / 'report')
    assert [pathlib.Path(p).name for p in paths] == ['index.html', 'timelines.png',
                                                     'distances.png']


def test_robot_names_come_from_the_folder_structure():
    assert robot_name('/fleet/robot7/rosbag2_2026_12_04-10_00_00') == 'robot7'
    assert robot_name('/fleet/robot7/ghost_feedback_2026_12_04-10_00_00_3') == 'robot7'
    assert robot_name('/fleet/site_b/robot_faulty') == 'robot_faulty'
    assert robot_name('/fleet/site_b/robot_faulty', 'parent') == 'site_b'
    assert robot_name('/fleet/robot7/rosbag2_2026_12_04-10_00_00', 'bag') == (
        'rosbag2_2026_12_04-10_00_00')
    with pytest.raises(ValueError):
        robot_name('/x', 'nonsense')


def _chromium():
    for name in ('chromium', 'chromium-browser', 'google-chrome', 'chrome'):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_the_report_renders_in_headless_chromium(results, tmp_path):
    """A screenshot of the page (where Chromium is installed): it renders, not blank."""
    browser = _chromium()
    if browser is None:
        pytest.skip('no Chromium here: the page is checked as HTML only')
    document = build_document(results, policies=POLICIES, max_history=32,
                              injection=parse_injection('20@10'))
    page = pathlib.Path(write_report(document, tmp_path / 'report')[0])
    shot = tmp_path / 'shot.png'
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, '--headless', '--disable-gpu', '--no-sandbox',
                        f'--user-data-dir={profile}', f'--screenshot={shot}',
                        '--window-size=1000,2000', page.as_uri()],
                       capture_output=True, timeout=120, check=False)
    assert shot.exists() and shot.stat().st_size > 10_000
