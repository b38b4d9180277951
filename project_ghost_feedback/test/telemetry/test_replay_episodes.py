# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback replay --json`` lists the downgrade episodes, recorded and recomputed."""

import json

from project_ghost_feedback.audit.synthetic import write_bag
from project_ghost_feedback.cli import main
from project_ghost_feedback.core.feedback import CalibratedSelfAssessment
from project_ghost_feedback.telemetry import bag_info, read_bag
import pytest


@pytest.fixture(scope='module')
def bag(tmp_path_factory):
    """Return a node-recorded bag: 300 assessments at 10 Hz, 4x overconfident from 18 s on."""
    path = tmp_path_factory.mktemp('replay') / 'bag'
    return write_bag(str(path), seed=7, assessments=300, policy='overconfidence_scale',
                     overconfidence=4.0, fault_at=0.6)


def _replay_json(capsys, *args):
    capsys.readouterr()
    status = main(['replay', *args, '--json'])
    return status, json.loads(capsys.readouterr().out)


def _runs(calibrated):
    """Return [(start_ns, end_ns, ongoing)] of consecutive downgraded assessments."""
    runs, start = [], None
    for item in calibrated:
        stamp = item.raw_assessment.belief_stamp_sim_ns
        if item.was_downgraded and start is None:
            start = stamp
        elif not item.was_downgraded and start is not None:
            runs.append((start, stamp, False))
            start = None
    if start is not None:
        runs.append((start, calibrated[-1].raw_assessment.belief_stamp_sim_ns, True))
    return runs


def test_replay_json_lists_the_recorded_and_recomputed_episodes(bag, capsys):
    """Verify mode: both lists equal, and equal the runs of downgrades in the recorded output."""
    status, data = _replay_json(capsys, bag)
    assert status == 0 and data['identical'] is True
    info = bag_info(bag)
    assert data['time_origin'] == {'stamp_ns': info.start_time_ns, 'kind': 'bag_start'}
    episodes = data['recomputed']['episodes']
    assert episodes == data['recorded']['episodes']
    recorded = [c.contract for c in read_bag(bag)
                if isinstance(c.contract, CalibratedSelfAssessment)]
    assert [(e['start_stamp_ns'], e['end_stamp_ns'], e['ongoing']) for e in episodes] == \
        _runs(recorded)
    main_episode = max(episodes, key=lambda e: e['duration_s'])
    assert 18.0 <= main_episode['start_s'] <= 21.0, main_episode
    assert main_episode['level'] in ('UNCERTAIN', 'UNKNOWN')
    assert main_episode['overconfidence']['position']['low'] > 2.0
    assert data['recomputed']['downgraded_s'] == pytest.approx(
        sum(e['duration_s'] for e in episodes))


def test_replay_json_under_another_policy_gives_that_policys_episodes(bag, capsys):
    """Compare mode: the recomputed episodes are those of the replayed policy."""
    status, data = _replay_json(capsys, bag, '--policy', 'calibrated_exceedance')
    assert status == 0 and data['mode'] == 'compare'
    episodes = data['recomputed']['episodes']
    assert episodes and all(e['reason'] in ('significant_miscalibration', 'gross_miscalibration',
                                            'infinite_mahalanobis') for e in episodes)
    assert max(e['end_s'] for e in episodes) > 18.0
