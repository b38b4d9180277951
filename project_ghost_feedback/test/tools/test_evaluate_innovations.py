# SPDX-License-Identifier: Apache-2.0
"""evaluate and audit over bags without ground truth: Innovation and PX4 aid-source topics.

Bags are written by rosbags (the shared random-walk filter, sim/random_walk_filter.py) and
checked by rosbags' own Reader (exact counts) before evaluate reads them; evaluate runs the
innovation bridge's engine (the live node's) and the node's loop. The live node over DDS against
a recording of its input is test/ros/test_innovation_bridge.py.
"""

import json

from project_ghost_feedback.audit.task import audit_bag
from project_ghost_feedback.cli import main
from project_ghost_feedback.core import NS_PER_S
from project_ghost_feedback.core.feedback import parse_policy
from project_ghost_feedback.field_inputs import innovation_parameters
from project_ghost_feedback.telemetry.replay import verify_bag
import pytest
from support.innovation_bags import (
    aid_source_msg,
    filter_stream,
    INNOVATION_TOPIC,
    typestore,
    write_innovation_bag,
)

AID_TOPIC = '/fmu/out/estimator_aid_src_gnss_pos'
AID_TYPE = 'px4_msgs/msg/EstimatorAidSource2d'


def _count(bag, topic):
    from rosbags.rosbag2 import Reader

    with Reader(bag) as reader:
        return sum(1 for c, _, _ in reader.messages() if c.topic == topic)


def _evaluate(bag, out, *topics):
    args = ['evaluate', str(bag), '--output-dir', str(out), '--no-plot']
    for topic in topics or (INNOVATION_TOPIC,):
        args += ['--innovation', topic]
    status = main(args)
    summary = None
    if status == 0:
        summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    return status, summary


def test_honest_innovations_never_downgraded_and_the_telemetry_verifies(tmp_path):
    bag = write_innovation_bag(tmp_path / 'honest', filter_stream(1, 60))
    assert _count(bag, INNOVATION_TOPIC) == 600
    status, summary = _evaluate(bag, tmp_path / 'out')
    assert status == 0
    assert summary['innovation']['topics'] == {
        INNOVATION_TOPIC: 'project_ghost_feedback_msgs/msg/Innovation'}
    assert summary['bridge']['innovations_received'] == 600
    assert summary['bridge']['outcomes_published'] == 300  # one block: two per outcome
    assert summary['assessments'] == 300 and summary['downgraded_assessments'] == 0
    assert summary['verdict'].startswith('never downgraded')
    ok, line = verify_bag(str(tmp_path / 'out' / 'telemetry'))
    assert ok, line


def test_noise_3x_the_claim_is_unknown_soon_after_it_starts_with_no_pose_error(tmp_path):
    bag = write_innovation_bag(tmp_path / 'bad', filter_stream(
        2, 40, fault_at_s=20, noise_factor=3.0))
    status, summary = _evaluate(bag, tmp_path / 'out')
    assert status == 0
    first = summary['first_downgrade_stamp_ns']
    assert first is not None and 20 * NS_PER_S <= first <= 27 * NS_PER_S
    assert summary['calibrated_levels']['UNKNOWN'] > 0
    [episode] = summary['episodes']
    assert episode['level'] == 'UNKNOWN'
    # An innovation's components are not an error in m and deg: none is claimed.
    assert 'RMSE' not in summary['verdict']
    text = (tmp_path / 'out' / 'summary.txt').read_text(encoding='utf-8')
    assert 'no reference' in text and 'innovation bridge: 400 innovations' in text


def test_px4_aid_sources_fused_rejected_and_not_fused(tmp_path):
    """2-D GNSS position aid source: 200 fused, 10 rejected (counted), 10 not fused (counted)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore()
    samples = list(filter_stream(3, 20, m=2))
    with Writer(tmp_path / 'px4', version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection(AID_TOPIC, AID_TYPE, typestore=store)
        for n, (stamp, innovation, s) in enumerate(samples):
            fused, rejected = n % 20 != 5, n % 20 == 10
            fused = fused and not rejected
            msg = aid_source_msg(store, 'EstimatorAidSource2d', innovation, s, fused=fused,
                                 rejected=rejected, t_us=stamp // 1000)
            writer.write(connection, stamp, store.serialize_cdr(msg, AID_TYPE))
    assert _count(tmp_path / 'px4', AID_TOPIC) == 200
    status, summary = _evaluate(tmp_path / 'px4', tmp_path / 'out', AID_TOPIC)
    assert status == 0
    bridge = summary['bridge']
    assert bridge['innovations_received'] == 200
    assert bridge['innovations_not_fused'] == 10
    assert bridge['refused_by_reason'] == {'rejected_by_filter': 10}
    assert bridge['innovations_accepted'] == 180 and bridge['outcomes_published'] == 90
    assert summary['innovation']['topics'] == {AID_TOPIC: AID_TYPE}


def test_audit_runs_the_same_engine_as_evaluate(tmp_path):
    bag = write_innovation_bag(tmp_path / 'bad', filter_stream(
        2, 40, fault_at_s=20, noise_factor=3.0))
    status, summary = _evaluate(bag, tmp_path / 'out')
    assert status == 0
    spec = parse_policy('vec3_scale')
    result = audit_bag(str(bag), [spec], bridge=((INNOVATION_TOPIC,), innovation_parameters()))
    assert result['ok'], result
    assert result['outcomes'] == summary['bridge']['outcomes_published']
    assert result['assessments'] == summary['assessments']
    episodes = result['policies'][spec.label]['episodes']
    assert [e['start_s'] for e in episodes] == [e['start_s'] for e in summary['episodes']]


def test_source_parameter_judges_one_source_and_counts_the_others(tmp_path):
    params = tmp_path / 'innovation.yaml'
    params.write_text('innovation_bridge:\n  ros__parameters:\n    source: lidar\n',
                      encoding='utf-8')
    bag = write_innovation_bag(tmp_path / 'gnss', filter_stream(1, 10), source='gnss')
    status = main(['evaluate', str(bag), '--innovation', INNOVATION_TOPIC, '--params-file',
                   str(params), '--output-dir', str(tmp_path / 'out'), '--no-plot'])
    assert status == 2  # nothing of source lidar: no verdict to give


@pytest.mark.parametrize('extra, words', [
    (['--estimate', '/odom'], '--innovation goes without'),
    (['--innovation', ''], 'not empty'),
])
def test_usage_errors(tmp_path, capsys, extra, words):
    bag = write_innovation_bag(tmp_path / 'b', filter_stream(1, 2))
    assert main(['evaluate', str(bag), '--innovation', INNOVATION_TOPIC, *extra,
                 '--output-dir', str(tmp_path / 'o')]) == 2
    assert words in capsys.readouterr().err


def test_a_refused_parameter_value_is_named(tmp_path, capsys):
    bag = write_innovation_bag(tmp_path / 'b', filter_stream(1, 2))
    params = tmp_path / 'bad.yaml'
    params.write_text('innovation_bridge:\n  ros__parameters:\n    claimed_level: MAYBE\n',
                      encoding='utf-8')
    assert main(['evaluate', str(bag), '--innovation', INNOVATION_TOPIC, '--params-file',
                 str(params), '--output-dir', str(tmp_path / 'o')]) == 2
    assert 'claimed_level' in capsys.readouterr().err


def test_audit_command_line_takes_innovation_topics(tmp_path):
    """ghost-feedback audit --innovation over a folder of innovation bags (one dask worker)."""
    import subprocess
    import sys

    write_innovation_bag(tmp_path / 'bags' / 'bad', filter_stream(
        2, 40, fault_at_s=20, noise_factor=3.0))
    result = subprocess.run(
        [sys.executable, '-m', 'project_ghost_feedback.cli', 'audit', str(tmp_path / 'bags'),
         '--innovation', INNOVATION_TOPIC, '--workers', '1', '--no-progress', '--policy',
         'vec3_scale', '--json', str(tmp_path / 'audit.json')],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / 'audit.json').read_text(encoding='utf-8'))
    [bag] = document['bags']
    assert bag['outcomes'] == 200 and bag['assessments'] == 200
