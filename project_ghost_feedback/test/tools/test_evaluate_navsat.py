# SPDX-License-Identifier: Apache-2.0
"""evaluate over a bag with GNSS and no ground truth: an estimate and a NavSatFix topic.

The bag is written by rosbags: the shared random-walk filter (sim/random_walk_filter.py, the one
of test/ros/test_navsat_bridge.py) publishes its estimate (Odometry in the ENU frame at the
datum, its posterior variance as the position covariance) at 10 Hz, and an independent GNSS
receiver a NavSatFix of the true position plus 1 m^2 noise per axis at the same stamps, claiming
``R``. evaluate runs the navsat bridge's data path (NavSatFeed: the live node's) and the node's
loop over it.
"""

import json
import math
import random

from project_ghost_feedback.cli import main
from project_ghost_feedback.core import NS_PER_S
from project_ghost_feedback.navsat_reference import enu_to_geodetic
from project_ghost_feedback.sim.random_walk_filter import RandomWalkFilter
from project_ghost_feedback.telemetry.replay import verify_bag

DATUM = (47.3769, 8.5417, 408.0)
OFFSET = (120.0, -340.0, 5.0)
GNSS_R = 1.0
PERIOD_NS = NS_PER_S // 10
ESTIMATE, FIX = '/odometry/filtered', '/gnss/fix'
ODOMETRY, NAVSATFIX = 'nav_msgs/msg/Odometry', 'sensor_msgs/msg/NavSatFix'


def _write_bag(path, seconds, claimed_r=GNSS_R, seed=3, covariance_type=2):
    import numpy as np
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_JAZZY)
    types = store.types
    kf, gnss = RandomWalkFilter(seed, 3), random.Random(10_000 + seed)

    def header(stamp, frame):
        sec, nanosec = divmod(stamp, NS_PER_S)
        return types['std_msgs/msg/Header'](
            stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec), frame_id=frame)

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        estimates = writer.add_connection(ESTIMATE, ODOMETRY, typestore=store)
        fixes = writer.add_connection(FIX, NAVSATFIX, typestore=store)
        for k in range(seconds * 10):
            stamp = (k + 1) * PERIOD_NS
            kf.step()
            covariance = np.zeros(36)
            for i in range(3):
                covariance[i * 7], covariance[(i + 3) * 7] = kf.variance[i], 1e-3
            pose = types['geometry_msgs/msg/PoseWithCovariance'](
                pose=types['geometry_msgs/msg/Pose'](
                    position=types['geometry_msgs/msg/Point'](
                        *(OFFSET[i] + kf.estimate[i] for i in range(3))),
                    orientation=types['geometry_msgs/msg/Quaternion'](0.0, 0.0, 0.0, 1.0)),
                covariance=covariance)
            twist = types['geometry_msgs/msg/TwistWithCovariance'](
                twist=types['geometry_msgs/msg/Twist'](
                    linear=types['geometry_msgs/msg/Vector3'](0.0, 0.0, 0.0),
                    angular=types['geometry_msgs/msg/Vector3'](0.0, 0.0, 0.0)),
                covariance=np.zeros(36))
            odometry = types[ODOMETRY](header=header(stamp, 'map'), child_frame_id='base_link',
                                       pose=pose, twist=twist)
            writer.write(estimates, stamp, store.serialize_cdr(odometry, ODOMETRY))
            enu = [OFFSET[i] + kf.truth[i] + gnss.gauss(0.0, math.sqrt(GNSS_R)) for i in range(3)]
            fix = types[NAVSATFIX](
                header=header(stamp, 'gnss'),
                status=types['sensor_msgs/msg/NavSatStatus'](status=0, service=1),
                **dict(zip(('latitude', 'longitude', 'altitude'), enu_to_geodetic(*enu, DATUM))),
                position_covariance=np.array([claimed_r if i == j else 0.0
                                              for i in range(3) for j in range(3)]),
                position_covariance_type=covariance_type)
            writer.write(fixes, stamp, store.serialize_cdr(fix, NAVSATFIX))
    return path


def _params(tmp_path, **extra):
    lines = ['navsat_bridge:', '  ros__parameters:', f'    datum.latitude_deg: {DATUM[0]}',
             f'    datum.longitude_deg: {DATUM[1]}', f'    datum.altitude_m: {DATUM[2]}',
             '    estimate_frame: map']
    lines += [f'    {key}: {value}' for key, value in extra.items()]
    path = tmp_path / 'navsat.yaml'
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return path


def _evaluate(bag, out, params, *extra):
    status = main(['evaluate', str(bag), '--estimate', ESTIMATE, '--navsat-fix', FIX,
                   '--params-file', str(params), '--output-dir', str(out), '--no-plot', *extra])
    summary = None
    if status == 0:
        summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    return status, summary


def test_an_honest_filter_against_gnss_is_never_downgraded_and_the_telemetry_verifies(
        tmp_path):
    bag = _write_bag(tmp_path / 'honest', 60)
    status, summary = _evaluate(bag, tmp_path / 'out', _params(tmp_path))
    assert status == 0
    bridge = summary['bridge']
    assert (bridge['fixes_received'], bridge['estimates_received']) == (600, 600)
    assert bridge['fixes_refused_by_reason'] == {}
    assert bridge['outcomes_published'] == 300  # one block: two fixes per outcome
    assert summary['assessments'] == 300 and summary['downgraded_assessments'] == 0
    assert summary['verdict'].startswith('never downgraded')
    assert summary['innovation']['topics'] == {ESTIMATE: ODOMETRY, FIX: NAVSATFIX}
    text = (tmp_path / 'out' / 'summary.txt').read_text(encoding='utf-8')
    assert 'each GNSS fix minus the estimate' in text and '600 fixes' in text
    ok, line = verify_bag(str(tmp_path / 'out' / 'telemetry'))
    assert ok, line


def test_gnss_noise_claimed_3x_too_small_is_found_unknown(tmp_path):
    bag = _write_bag(tmp_path / 'overconfident', 60, claimed_r=GNSS_R / 9)
    status, summary = _evaluate(bag, tmp_path / 'out', _params(tmp_path))
    assert status == 0
    assert summary['calibrated_levels']['UNKNOWN'] > 0
    assert summary['episodes'] and summary['episodes'][0]['level'] == 'UNKNOWN'
    k = summary['overconfidence_over_run']['position']
    assert 2.0 < k['k_hat'] < 4.0, k  # the fix-minus-estimate std is ~3x its claim


def test_without_altitude_the_outcomes_are_read_with_two_components(tmp_path):
    bag = _write_bag(tmp_path / 'honest', 40)
    status, summary = _evaluate(bag, tmp_path / 'out', _params(tmp_path, use_altitude='false'))
    assert status == 0
    assert summary['bridge']['outcomes_published'] == 200
    assert summary['downgraded_assessments'] == 0
    k = summary['overconfidence_over_run']['position']['k_hat']
    assert 0.8 < k < 1.25, k


def test_placeholder_fixes_are_refused_by_reason_and_nothing_is_judged(tmp_path, capsys):
    bag = _write_bag(tmp_path / 'unknown_covariance', 10, covariance_type=0)
    status, _ = _evaluate(bag, tmp_path / 'out', _params(tmp_path))
    assert status == 2
    err = capsys.readouterr().err
    assert '0 outcomes from 100 fixes' in err and 'covariance_type_unknown 100' in err, err
    assert not (tmp_path / 'out').exists()  # nothing half-written


def test_usage_errors_are_one_line_with_exit_2(tmp_path, capsys):
    bag = _write_bag(tmp_path / 'bag', 2)
    params = _params(tmp_path)
    cases = [
        (['--navsat-fix', FIX], '--estimate'),
        (['--navsat-fix', FIX, '--estimate', ESTIMATE, '--reference', ESTIMATE], '--reference'),
        (['--navsat-fix', ESTIMATE, '--estimate', ESTIMATE], 'another topic'),
        (['--navsat-fix', '/nope', '--estimate', ESTIMATE, '--params-file', str(params)],
         'no fix topic /nope'),
        (['--navsat-fix', ESTIMATE, '--estimate', FIX, '--params-file', str(params)],
         'has type'),
        (['--navsat-fix', FIX, '--estimate', ESTIMATE], 'datum'),  # no parameter file
    ]
    for n, (extra, words) in enumerate(cases):
        status = main(['evaluate', str(bag), '--output-dir', str(tmp_path / f'o{n}'),
                       '--no-plot', *extra])
        err = capsys.readouterr().err.strip()
        assert status == 2, (extra, err)
        assert words in err and len(err.splitlines()) == 1, (extra, err)


def test_audit_runs_the_navsat_path_as_evaluate_does(tmp_path):
    from project_ghost_feedback.audit.task import audit_bag
    from project_ghost_feedback.core.feedback import parse_policy
    from project_ghost_feedback.field_inputs import navsat_parameters, NavSatSource

    bag = _write_bag(tmp_path / 'overconfident', 30, claimed_r=GNSS_R / 9)
    params = _params(tmp_path)
    status, summary = _evaluate(bag, tmp_path / 'out', params)
    assert status == 0
    spec = parse_policy('vec3_scale')
    result = audit_bag(str(bag), [spec], bridge=NavSatSource(ESTIMATE, FIX,
                                                             navsat_parameters(params)))
    assert result['ok'], result
    assert result['outcomes'] == summary['bridge']['outcomes_published'] == 150
    assert result['assessments'] == summary['assessments']
    episodes = result['policies'][spec.label]['episodes']
    assert [e['start_s'] for e in episodes] == [e['start_s'] for e in summary['episodes']]


def test_audit_command_line_takes_a_navsat_fix_topic(tmp_path):
    """ghost-feedback audit --estimate --navsat-fix over a folder of GNSS bags (one worker)."""
    import subprocess
    import sys

    _write_bag(tmp_path / 'bags' / 'honest', 20)
    params = _params(tmp_path)
    result = subprocess.run(
        [sys.executable, '-m', 'project_ghost_feedback.cli', 'audit', str(tmp_path / 'bags'),
         '--estimate', ESTIMATE, '--navsat-fix', FIX, '--params-file', str(params),
         '--workers', '1', '--no-progress', '--policy', 'vec3_scale',
         '--json', str(tmp_path / 'audit.json')],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    [bag] = json.loads((tmp_path / 'audit.json').read_text(encoding='utf-8'))['bags']
    assert bag['outcomes'] == 100 and bag['assessments'] == 100
    bad = subprocess.run(
        [sys.executable, '-m', 'project_ghost_feedback.cli', 'audit', str(tmp_path / 'bags'),
         '--navsat-fix', FIX, '--workers', '1', '--no-progress'],
        capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and '--estimate' in bad.stderr, bad.stderr
