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


def _keys(value):
    """Yield every key of a JSON document, recursively."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


@pytest.fixture(scope='module')
def plain(tmp_path_factory):
    """Audit without --inject: a calibrated robot, one 10x overconfident from 60% of its run."""
    root = tmp_path_factory.mktemp('plain')
    calm = write_bag(root / 'calm' / 'rosbag2_2026_12_04-10_00_00', seed=1, assessments=200)
    faulty = write_bag(root / 'faulty' / 'rosbag2_2026_12_04-11_00_00', seed=2, assessments=200,
                       overconfidence=10.0, fault_at=0.6)
    found = [audit_bag(str(path), POLICIES) for path in (calm, faulty)]
    for result in found:
        result['robot'] = robot_name(result['bag'])
    return build_document(found, policies=POLICIES, max_history=32)


def test_without_injection_no_key_or_column_speaks_of_injection_or_false_downgrades(plain):
    """JSON keys and the whole page: no 'inject', no 'false'; the rates are plain rates."""
    keys = set(_keys(plain))
    assert not [k for k in keys if 'inject' in k.lower() or 'false' in k.lower()]
    assert {'windows', 'downgrade_rate', 'episodes'} <= keys and 'untouched' not in keys
    page = render_html(plain, {}).lower()
    assert 'inject' not in page and 'false' not in page
    assert html.escape('downgraded full windows (windows; independent)') in page


def test_with_injection_the_injection_columns_stay(results):
    """The same audit with --inject keeps its injection keys and columns (issue 21)."""
    document = build_document(results, policies=POLICIES, max_history=32,
                              injection=parse_injection('20@10'))
    keys = set(_keys(document))
    assert {'injection', 'injection_stamp_sim_ns', 'untouched', 'false_downgrade_rate'} <= keys
    assert 'downgrades before the injection' in render_html(document, {})


def test_each_robot_has_its_episodes_and_k_over_the_run(plain):
    """The faulty robot: an episode from the fault with its peak k; k over the run per robot."""
    faulty = next(b for b in plain['bags'] if b['robot'] == 'faulty')
    calm = next(b for b in plain['bags'] if b['robot'] == 'calm')
    origin = faulty['time_origin']['stamp_ns']
    assert origin == faulty['start_time_ns'] and faulty['time_origin']['kind'] == 'bag_start'
    for label in plain['totals']:
        episodes = faulty['policies'][label]['episodes']
        main = max(episodes, key=lambda e: e['duration_s'])
        # 200 assessments at 10 Hz: the fault starts at 12 s (60%); detected within 2 s.
        assert 12.0 <= main['start_s'] <= 14.0 and main['ongoing'], (label, main)
        assert main['end_stamp_ns'] == faulty['policies'][label]['timeline'][-1][0]
        assert main['overconfidence']['position']['low'] > 3.0
        assert faulty['policies'][label]['episode_count'] == len(episodes)
    over_run = faulty['overconfidence_over_run']
    assert over_run['outcomes'] == faulty['outcomes']
    assert over_run['position']['k_hat'] > 3.0  # 40% of the run at 10x
    assert 0.8 < calm['overconfidence_over_run']['position']['k_hat'] < 1.25
    page = render_html(plain, {})
    assert '<h2>Downgrade episodes (seconds from each bag start)</h2>' in page
    assert html.escape('k over the run (95% interval)') in page
    first = faulty['policies'][next(iter(plain['totals']))]['episodes'][0]
    assert f'<td>{first["start_s"]:.5g}</td>' in page
