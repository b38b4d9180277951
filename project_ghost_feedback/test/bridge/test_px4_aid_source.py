# SPDX-License-Identifier: Apache-2.0
"""PX4 aid sources read from px4_msgs' unmodified .msg text (rosbags) -> innovation outcomes."""

import hashlib
import json
import math
import pathlib
import random

from ament_index_python.packages import get_package_share_directory, PackageNotFoundError

from project_ghost_feedback.bridge.innovation_engine import PARAMETERS, validate
from project_ghost_feedback.core.innovation import InnovationOutcome, InnovationPairing
from project_ghost_feedback.parameter_spec import ParameterError
from project_ghost_feedback.px4_aid_source import (
    aid_topic_type,
    aid_topic_types,
    innovation_of,
    px4_msg_dir,
    px4_msg_texts,
    PX4_TYPES,
    register_types,
    source_name,
)
import pytest
from rosbags.typesys import get_typestore, Stores
from support.innovation_bags import aid_source_msg

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _store():
    store = get_typestore(Stores.ROS2_JAZZY)
    register_types(store, ROOT / 'third_party' / 'px4_msgs' / 'msg')
    return store


def _aid(store, name, innovation, variance, fused=True, rejected=False, instance=0, t_us=1):
    return aid_source_msg(store, name, innovation, variance, fused, rejected, instance, t_us)


def test_the_kept_definitions_are_the_three_aid_sources_with_their_licence():
    directory = px4_msg_dir()
    assert sorted(p.stem for p in directory.glob('*.msg')) == list(PX4_TYPES)
    assert (directory.parent / 'LICENSE').read_text().startswith('BSD 3-Clause License')
    assert 'a4a9864b3c40f0b7e5176e6543872a251b2e3c70' in (
        directory.parent / 'UPSTREAM.md').read_text()


UPSTREAM_BLOBS = {
    'CMakeLists.txt': 'a1596b0e5dd8d1ad783c43df30571ce1d52aa3c6',
    'LICENSE': '31f2eb48ff20af49a2c675d8de3947de6a787460',
    'msg/EstimatorAidSource1d.msg': 'df428000a6e2d2021063fcef56e455abe920b7ba',
    'msg/EstimatorAidSource2d.msg': '8f3a9f0cda11778cbdcba8c17798288db192a422',
    'msg/EstimatorAidSource3d.msg': 'b89add28e57ed50acc0415b7844fa05faf7b9b2b',
    'package.xml': '496060c909c3f432a495353ee28c9200703cd865',
}
"""PX4/px4_msgs at a4a9864: ``git ls-tree`` blob ids of the files kept (and built) unmodified."""


def test_the_kept_files_are_byte_for_byte_upstream():
    folder = px4_msg_dir().parent
    for name, blob in UPSTREAM_BLOBS.items():
        data = (folder / name).read_bytes()
        assert hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest() == blob, name
    kept = sorted(str(p.relative_to(folder)) for p in folder.rglob('*') if p.is_file())
    assert kept == sorted([*UPSTREAM_BLOBS, 'UPSTREAM.md'])


def test_the_built_types_hash_as_rosbags_computes_from_the_text():
    """RIHS01 of the px4_msgs setup builds (its share/*.json) == rosbags' from the .msg text."""
    try:
        share = pathlib.Path(get_package_share_directory('px4_msgs'))
    except PackageNotFoundError:
        pytest.skip('px4_msgs not built (make setup builds it)')
    store = _store()
    for name in PX4_TYPES:
        described = json.loads((share / 'msg' / f'{name}.json').read_text())
        (built,) = [h['hash_string'] for h in described['type_hashes']
                    if h['type_name'] == f'px4_msgs/msg/{name}']
        assert built == store.hash_rihs01(f'px4_msgs/msg/{name}'), name


def test_aid_sources_round_trip_through_cdr_and_become_innovations():
    store = _store()
    msg = _aid(store, 'EstimatorAidSource2d', [0.3, -0.4], [0.25, 0.25], t_us=1_500_000)
    raw = store.serialize_cdr(msg, 'px4_msgs/msg/EstimatorAidSource2d')
    decoded = store.deserialize_cdr(raw, 'px4_msgs/msg/EstimatorAidSource2d')
    item = innovation_of('/fmu/out/estimator_aid_src_gnss_pos', decoded)
    assert item.source == 'gnss_pos' and item.stamp_ns == 1_500_000_000
    assert item.covariance == (0.25, 0.0, 0.0, 0.25) and not item.rejected_by_filter
    one = innovation_of('estimator_aid_src_baro_hgt', _aid(
        store, 'EstimatorAidSource1d', [0.5], [0.25], instance=1))
    assert one.source == 'baro_hgt_1' and one.innovation == (0.5,)


def test_rejected_is_counted_not_fused_is_none():
    store = _store()
    rejected = innovation_of('estimator_aid_src_mag', _aid(
        store, 'EstimatorAidSource3d', [1.0, 0, 0], [1, 1, 1], fused=False, rejected=True))
    assert rejected.rejected_by_filter
    pairing = InnovationPairing()
    assert pairing.push(rejected.source, rejected.stamp_ns, rejected.innovation,
                        rejected.covariance, rejected.kinds, True) == 'rejected_by_filter'
    assert innovation_of('estimator_aid_src_mag', _aid(
        store, 'EstimatorAidSource3d', [1.0, 0, 0], [1, 1, 1], fused=False)) is None


def test_honest_gnss_pos_samples_give_chi3_outcomes():
    """Honest 2-D aid-source innovations -> outcomes whose mean d^2 per slot is 3 (4 sigma)."""
    store = _store()
    rng = random.Random(3)
    pairing = InnovationPairing()
    squares = []
    for n in range(2000):
        e = [rng.gauss(0.0, 0.5), rng.gauss(0.0, 0.5)]
        item = innovation_of('estimator_aid_src_gnss_pos', _aid(
            store, 'EstimatorAidSource2d', e, [0.25, 0.25], t_us=(n + 1) * 100_000))
        row = pairing.push(item.source, item.stamp_ns, item.innovation, item.covariance,
                           item.kinds, item.rejected_by_filter)
        if isinstance(row, InnovationOutcome):
            squares += [row.position_mahalanobis ** 2, row.orientation_mahalanobis ** 2]
    assert len(squares) == 2000 and pairing.refused == {}
    mean = sum(squares) / len(squares)
    assert abs(mean - 3.0) < 4.0 * math.sqrt(6.0 / len(squares))


def test_source_names():
    assert source_name('/fmu/out/estimator_aid_src_ev_pos', 0) == 'ev_pos'
    assert source_name('estimator_aid_src_gnss_vel', 2) == 'gnss_vel_2'


def test_a_topic_type_comes_from_the_topics_lines_of_the_definitions():
    assert aid_topic_type('/fmu/out/estimator_aid_src_gnss_pos') == (
        'px4_msgs/msg/EstimatorAidSource2d')
    assert aid_topic_type('estimator_aid_src_baro_hgt') == 'px4_msgs/msg/EstimatorAidSource1d'
    assert aid_topic_type('/px4_1/fmu/out/estimator_aid_src_mag') == (
        'px4_msgs/msg/EstimatorAidSource3d')
    names = [name for text in px4_msg_texts().values() for line in text.splitlines()
             if line.startswith('# TOPICS') for name in line.split()[2:]]
    assert len(names) == len(set(names)) == len(aid_topic_types()), 'a name of two types'
    assert all(name.startswith('estimator_aid_src_') for name in names)
    with pytest.raises(ValueError, match="'vehicle_odometry' is not a PX4 aid-source topic"):
        aid_topic_type('/fmu/out/vehicle_odometry')


def test_the_bridge_parameter_px4_aid_topics_is_checked():
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    assert validate(values)['px4_aid_topics'] == []
    assert validate({**values, 'px4_aid_topics': None})['px4_aid_topics'] == []  # [] in a file
    topics = ('/fmu/out/estimator_aid_src_gnss_pos', 'estimator_aid_src_baro_hgt')
    assert validate({**values, 'px4_aid_topics': topics})['px4_aid_topics'] == list(topics)
    for bad, match in [(['/fmu/out/sensor_gps'], 'not a PX4 aid-source topic'),
                       (['/fmu/out/estimator_aid_src_gnss_pos/'], 'not a topic name'),
                       ('estimator_aid_src_mag', 'must be a list'),
                       ([topics[0]] * 2, 'listed twice'),
                       ([topics[0]] * 33, 'at most 32')]:
        with pytest.raises(ParameterError, match=match):
            validate({**values, 'px4_aid_topics': bad})
