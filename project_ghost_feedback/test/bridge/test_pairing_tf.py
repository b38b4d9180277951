# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's frames through tf (use_tf) on its engine, with tf2's BufferCore, no DDS.

The engine's tf filter (bridge/pairing.py) with the provider ``evaluate`` uses (a tf2
``BufferCore``, bridge/tf2_transforms.py), fed through the engine's own ``take_transforms`` as the
node feeds it from /tf: a missing transform, a late one, one too late and one in the past are
counted by reason and never pair with a wrong transform. The node's /tf subscription and what
/diagnostics says of these stay in test/ros/test_bridge_tf.py.

tf2 is not on PyPI: scripts/setup.sh builds it from third_party/tf2. Without it these tests skip
with one line saying so.
"""

from types import SimpleNamespace

import pytest

from project_ghost_feedback.bridge.tf2_transforms import tf2_missing
from support.bridge_engine import EngineBridge
from support.pose_inputs import SECOND_NS, UNPACED

TF2_MISSING = tf2_missing()
pytestmark = pytest.mark.skipif(TF2_MISSING is not None, reason=f'{TF2_MISSING}')

TENTH = SECOND_NS // 10
MAP, ODOM = 'map', 'odom'


def tf_message(stamp_ns, parent=MAP, child=ODOM, xyz=(1.0, 0.0, 0.0)):
    """Return a tf2_msgs/TFMessage alike with one transform (identity rotation)."""
    sec, nanosec = divmod(stamp_ns, SECOND_NS)
    return SimpleNamespace(transforms=[SimpleNamespace(
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec), frame_id=parent),
        child_frame_id=child,
        transform=SimpleNamespace(
            translation=SimpleNamespace(x=xyz[0], y=xyz[1], z=xyz[2]),
            rotation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0)))])


def bridge(**values):
    from project_ghost_feedback.bridge.tf2_transforms import offline_buffer, Tf2Transforms

    return EngineBridge(transforms=Tf2Transforms(offline_buffer(10.0)), **{**UNPACED, **values})


def test_a_missing_transform_is_counted_and_never_paired():
    """References in a frame tf never relates to the estimate's: dropped as tf_unavailable.

    Each waits until an input stamped tf.max_wait_s (1 s) after it came: at 3 s of input time
    the 21 references up to 2 s are dropped, the 10 after wait.
    """
    b = bridge()
    b.estimate(SECOND_NS // 2, frame_id=ODOM)
    for tenth in range(31):
        b.reference(tenth * TENTH, frame_id='world')
    b.estimate(2 * SECOND_NS, frame_id=ODOM)
    assert b.engine.references_dropped == {'tf_unavailable': 21}
    assert len(b.engine.tf_waiting) == 10
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}
    assert not b.outcomes and b.engine.paired == 0
    b.engine.flush()   # end of input: what still waits is dropped with its reason
    assert b.engine.references_dropped == {'tf_unavailable': 31} and not b.engine.tf_waiting


def test_a_late_transform_waits_and_too_late_or_past_ones_are_dropped():
    """A tf after its reference (within the wait) pairs right; too late or too old: counted."""
    b = bridge()
    b.engine.take_transforms(tf_message(SECOND_NS), static=False)   # odom at x = 1 in map
    # In the past: before the oldest tf data. Dropped at once (once the estimate frame is known).
    b.estimate(SECOND_NS // 5, frame_id=ODOM, x=-0.5)
    b.reference(SECOND_NS // 2, frame_id=MAP, x=0.5)
    assert b.engine.references_dropped == {'tf_extrapolation_past': 1}
    # Late: the reference at 2 s comes before the tf at 2 s; it waits and is paired once it came.
    b.reference(2 * SECOND_NS, frame_id=MAP, x=2.0)
    b.estimate(2 * SECOND_NS, frame_id=ODOM, x=1.0)   # odom x = 1 is map x = 2: d = 0
    assert b.engine.paired == 0 and len(b.engine.tf_waiting) == 1
    b.engine.take_transforms(tf_message(2 * SECOND_NS), static=False)
    (outcome,) = b.outcomes   # the transform's arrival resolves the wait
    assert outcome.prediction_stamp_sim_ns == 2 * SECOND_NS
    assert outcome.position_mahalanobis == pytest.approx(0.0, abs=1e-9)
    # The estimate at 0.2 s is before every transformed reference: before the buffer.
    assert b.engine.dropped == {'before_reference_buffer': 1}
    b.reference(2 * SECOND_NS + TENTH, frame_id=MAP, x=2.1)   # no tf after 2 s yet: waits
    # Too late: no tf after 2 s; references keep coming; 1 s of input time later, dropped.
    b.estimate(3 * SECOND_NS, frame_id=ODOM, x=5.0)
    for tenth in range(22, 36):
        b.reference(tenth * TENTH, frame_id=MAP, x=tenth / 10)
    # Input time 3.5 s: the references at 2.1 .. 2.5 s waited 1 s: dropped.
    assert b.engine.references_dropped == {'tf_extrapolation_past': 1,
                                           'tf_extrapolation_future': 5}
    assert len(b.engine.tf_waiting) == 10
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}
    # Never paired with a wrong transform: nothing after the last tf got an outcome.
    assert [o.prediction_stamp_sim_ns for o in b.outcomes] == [2 * SECOND_NS]
    assert b.engine.transforms_accepted == 2 and b.engine.transforms_refused == {}
