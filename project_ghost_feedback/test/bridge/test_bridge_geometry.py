# SPDX-License-Identifier: Apache-2.0
"""Tests of the outcome bridge's pure parts: pose errors, distances, buffer, claims, pacing."""

import math

import numpy as np
import pytest

from project_ghost_feedback.bridge.belief_claim import (
    claim_levels,
    ClaimThresholds,
    largest_eigenvalue3,
)
from project_ghost_feedback.bridge.decorrelation import OutcomePacer
from project_ghost_feedback.bridge.geometry import (
    covariance_6x6,
    FixedTransform,
    covariance_refusal,
    mahalanobis,
    pose_error,
    quaternion_from_rotation_vector,
    quaternion_multiply,
    quaternion_refusal,
    quaternion_to_matrix,
    rotation_vector,
)
from project_ghost_feedback.bridge.reference_buffer import (
    AFTER_BUFFER,
    BEFORE_BUFFER,
    EMPTY,
    GAP,
    ReferenceBuffer,
    ReferenceSample,
)
from project_ghost_feedback.core import SelfAssessmentLevel

IDENTITY = (0.0, 0.0, 0.0, 1.0)


def yaw_quaternion(yaw):
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def diagonal(variances):
    return np.diag(np.asarray(variances, dtype=float))


def test_position_distance_of_known_error():
    """Error (0.3, 0.4, 0) under std 0.1 m per axis: |e| = 0.5 m, d = 5 (unsquared)."""
    error = pose_error((1.0, 2.0, 0.0), IDENTITY, diagonal([0.01] * 3 + [1.0] * 3),
                       (1.3, 2.4, 0.0), IDENTITY)
    assert error.position_error_m == pytest.approx((0.3, 0.4, 0.0))
    assert error.position_mahalanobis == pytest.approx(5.0)
    assert error.orientation_mahalanobis == 0.0


def test_correlated_covariance_distance():
    """Along the long axis of a correlated ellipse the distance is smaller than across it."""
    s = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    along = mahalanobis((1.0, 1.0, 0.0), s)
    across = mahalanobis((1.0, -1.0, 0.0), s)
    assert along == pytest.approx(math.sqrt(2 / 1.9))
    assert across == pytest.approx(math.sqrt(2 / 0.1))


def test_reference_covariance_is_added():
    """Std 0.1 m estimate + std 0.1 m reference: variance 0.02, d = 0.2 / sqrt(0.02)."""
    cov = diagonal([0.01] * 3 + [1.0] * 3)
    error = pose_error((0, 0, 0), IDENTITY, cov, (0.2, 0, 0), IDENTITY, reference_covariance=cov)
    assert error.position_mahalanobis == pytest.approx(0.2 / math.sqrt(0.02))


def test_orientation_error_is_rotation_vector_of_ref_times_est_transposed():
    """Estimate yaw 0.1, reference yaw 0.3: e_r = log(R_ref R_est^T) = (0, 0, +0.2)."""
    cov = diagonal([1.0] * 3 + [0.01] * 3)
    error = pose_error((0, 0, 0), yaw_quaternion(0.1), cov, (0, 0, 0), yaw_quaternion(0.3))
    assert error.orientation_error_rad == pytest.approx((0.0, 0.0, 0.2))
    assert error.orientation_mahalanobis == pytest.approx(2.0)


def test_orientation_error_is_left_perturbation_in_the_frame():
    """R_ref = exp(e) R_est: with a rolled estimate and a yaw offset the vector stays on z."""
    roll = quaternion_to_matrix((math.sin(0.25), 0.0, 0.0, math.cos(0.25)))  # roll 0.5 rad
    offset = quaternion_to_matrix(yaw_quaternion(0.2))
    ref = offset @ roll
    q_ref = _matrix_to_quaternion(ref)
    error = pose_error((0, 0, 0), (math.sin(0.25), 0.0, 0.0, math.cos(0.25)), np.eye(6),
                       (0, 0, 0), q_ref)
    assert error.orientation_error_rad == pytest.approx((0.0, 0.0, 0.2), abs=1e-12)


def _matrix_to_quaternion(m):
    w = math.sqrt(max(0.0, 1 + m[0, 0] + m[1, 1] + m[2, 2])) / 2
    return ((m[2, 1] - m[1, 2]) / (4 * w), (m[0, 2] - m[2, 0]) / (4 * w),
            (m[1, 0] - m[0, 1]) / (4 * w), w)


def test_rotation_vector_takes_the_short_way_and_round_trips():
    """Quaternions q and -q give one vector; exp/log round-trip; angles stay within pi."""
    vector = np.array([0.3, -0.2, 0.5])
    q = quaternion_from_rotation_vector(vector)
    assert rotation_vector(q) == pytest.approx(vector)
    assert rotation_vector(-q) == pytest.approx(vector)
    big = rotation_vector(yaw_quaternion(3.0 * math.pi / 2))  # = yaw -pi/2
    assert big == pytest.approx((0.0, 0.0, -math.pi / 2))


def test_zero_covariance_contradicted_is_inf_and_exact_is_zero():
    """Zero covariance: any error beyond the null tolerance is +inf, no error is 0."""
    zero = np.zeros((6, 6))
    assert pose_error((0, 0, 0), IDENTITY, zero, (0.01, 0, 0), IDENTITY).position_mahalanobis \
        == math.inf
    exact = pose_error((0, 0, 0), IDENTITY, zero, (0, 0, 0), IDENTITY)
    assert exact.position_mahalanobis == 0.0
    assert exact.orientation_mahalanobis == 0.0


def test_singular_covariance_uses_the_range_and_inf_off_it():
    """Variance only on x: an x error is measured, any y error contradicts the claim."""
    s = diagonal([0.04, 0.0, 0.0])
    assert mahalanobis((0.2, 0.0, 0.0), s) == pytest.approx(1.0)
    assert mahalanobis((0.2, 1e-12, 0.0), s) == pytest.approx(1.0)  # within null tolerance
    assert mahalanobis((0.2, 1e-3, 0.0), s) == math.inf


def test_ignored_axes_are_marginalised():
    """A planar estimate with a tiny z variance is not +inf against a 3-D truth when z ignored."""
    cov = diagonal([0.01, 0.01, 0.0, 0.0, 0.0, 0.01])
    est, ref = (0, 0, 0), (0.1, 0, 0.3)
    assert pose_error(est, IDENTITY, cov, ref, IDENTITY).position_mahalanobis == math.inf
    planar = pose_error(est, IDENTITY, cov, ref, IDENTITY, ignored_axes=('z', 'roll', 'pitch'))
    assert planar.position_mahalanobis == pytest.approx(1.0)
    assert planar.position_error_m == pytest.approx((0.1, 0.0, 0.3))


def test_invalid_covariances_are_refused():
    """Wrong size, NaN and clearly negative definite covariances raise ValueError."""
    with pytest.raises(ValueError):
        covariance_6x6([0.0] * 35)
    with pytest.raises(ValueError):
        covariance_6x6([math.nan] + [0.0] * 35)
    with pytest.raises(ValueError):
        covariance_6x6(list(np.diag([-1.0, 1, 1, 1, 1, 1]).reshape(36)))
    ok = covariance_6x6(list(np.eye(6).reshape(36)))
    assert ok.shape == (6, 6)


def test_fixed_transform_maps_reference_into_estimate_frame():
    """A reference in a frame rotated by 90 deg yaw and shifted lands where expected."""
    transform = FixedTransform(translation=(1.0, 0.0, 0.0), rotation=yaw_quaternion(math.pi / 2))
    cov = diagonal([0.04, 0.01, 0.0, 0.0, 0.0, 0.0])
    position, quaternion, covariance = transform.apply((1.0, 0.0, 0.0), IDENTITY, cov)
    assert position == pytest.approx((1.0, 1.0, 0.0))
    assert rotation_vector(quaternion) == pytest.approx((0.0, 0.0, math.pi / 2))
    assert np.diag(covariance)[:2] == pytest.approx((0.01, 0.04))


def _sample(stamp_ns, x, yaw, cov=None):
    return ReferenceSample(stamp_ns, (x, 0.0, 0.0), yaw_quaternion(yaw), cov)


def test_buffer_interpolates_linear_position_and_slerp_orientation():
    """Halfway between two samples: mean position, mean yaw, mean covariance."""
    buffer = ReferenceBuffer(capacity=10, max_gap_ns=1_000_000_000)
    buffer.add(_sample(0, 0.0, 0.0, np.eye(6)))
    buffer.add(_sample(100_000_000, 1.0, 0.4, 3 * np.eye(6)))
    mid = buffer.lookup(25_000_000)
    assert mid.position == pytest.approx((0.25, 0.0, 0.0))
    assert rotation_vector(mid.quaternion) == pytest.approx((0.0, 0.0, 0.1))
    assert np.diag(mid.covariance) == pytest.approx([1.5] * 6)
    assert buffer.lookup(100_000_000).position == pytest.approx((1.0, 0.0, 0.0))


def test_buffer_slerp_crosses_pi_the_short_way():
    """From yaw 3.0 to yaw -3.0 (0.28 rad apart across pi) the midpoint is yaw pi."""
    buffer = ReferenceBuffer(capacity=10, max_gap_ns=10)
    buffer.add(_sample(0, 0.0, 3.0))
    buffer.add(_sample(2, 0.0, -3.0))
    angle = np.linalg.norm(rotation_vector(buffer.lookup(1).quaternion))
    assert angle == pytest.approx(math.pi)


def test_buffer_refuses_outside_and_across_gaps():
    """Outside the buffer or across a gap longer than max_gap_ns: a reason, never a pose."""
    buffer = ReferenceBuffer(capacity=10, max_gap_ns=100)
    assert buffer.lookup(5) == EMPTY
    for stamp in (0, 50, 300):
        buffer.add(_sample(stamp, stamp / 100.0, 0.0))
    assert buffer.lookup(-1) == BEFORE_BUFFER
    assert buffer.lookup(301) == AFTER_BUFFER
    assert buffer.lookup(100) == GAP
    assert buffer.lookup(25).position[0] == pytest.approx(0.25)


def test_buffer_capacity_drops_oldest_and_out_of_order_inserts_sort():
    """Out-of-order samples are sorted; a full buffer forgets its oldest sample."""
    buffer = ReferenceBuffer(capacity=3, max_gap_ns=100)
    for stamp in (20, 0, 10, 30):
        buffer.add(_sample(stamp, float(stamp), 0.0))
    assert (buffer.oldest_stamp_ns, buffer.newest_stamp_ns, len(buffer)) == (10, 30, 3)
    assert buffer.add(_sample(5, 5.0, 0.0)) is False


def test_claim_levels_per_axis_block_and_overall():
    """Std 0.1 m x, 0.5 m y -> x KNOWN, y UNCERTAIN; yaw std 0.3 rad -> UNKNOWN overall."""
    cov = diagonal([0.01, 0.25, 0.01, 0.0001, 0.0001, 0.09])
    overall, axes, blocks = claim_levels(cov, ClaimThresholds())
    assert axes['x'] == SelfAssessmentLevel.KNOWN
    assert axes['y'] == SelfAssessmentLevel.UNCERTAIN
    assert axes['yaw'] == SelfAssessmentLevel.UNKNOWN
    assert blocks == {'position': SelfAssessmentLevel.UNCERTAIN,
                      'orientation': SelfAssessmentLevel.UNKNOWN}
    assert overall == SelfAssessmentLevel.UNKNOWN


def test_claim_block_uses_ellipse_semi_major_axis():
    """Per-axis std 0.19 m (KNOWN) but correlated: the ellipse's long radius is UNCERTAIN."""
    v = 0.19 ** 2
    cov = np.zeros((6, 6))
    cov[:2, :2] = [[v, 0.9 * v], [0.9 * v, v]]
    overall, axes, blocks = claim_levels(cov, ClaimThresholds(), ignored_axes=('z',))
    assert axes['x'] == axes['y'] == SelfAssessmentLevel.KNOWN
    assert 'z' not in axes
    assert blocks['position'] == SelfAssessmentLevel.UNCERTAIN
    assert overall == SelfAssessmentLevel.UNCERTAIN


def test_claim_thresholds_validated():
    """known_max above uncertain_max is refused."""
    with pytest.raises(ValueError):
        ClaimThresholds(position_known_max_std_m=2.0, position_uncertain_max_std_m=1.0)


def test_pacer_minimum_interval():
    """Non-adaptive: at most one outcome per min_interval."""
    pacer = OutcomePacer(min_interval_ns=250, adaptive=False)
    emitted = [t for t in range(0, 1000, 100) if pacer.offer(t, 1.0, 1.0)]
    assert emitted == [0, 300, 600, 900]


def test_pacer_estimates_ar1_autocorrelation_and_spaces_outcomes():
    """d^2 an AR(1) stream, rho 0.8 at 100 ms: rho estimated, interval ~ ln(0.1)/ln(0.8) dt."""
    rng = np.random.default_rng(3)
    pacer = OutcomePacer(min_interval_ns=0, alpha=0.002)
    x = 0.0
    emitted = 0
    for i in range(20_000):
        x = 0.8 * x + rng.normal() * math.sqrt(1 - 0.64)
        emitted += pacer.offer(i * 100_000_000, math.sqrt(10.0 + x), 0.0)
    assert pacer.autocorrelation == pytest.approx(0.8, abs=0.1)
    expected = 2.0 * math.log(0.1) / math.log(0.8) * 100_000_000  # target on the errors
    assert pacer.interval_ns == pytest.approx(expected, rel=0.5)
    assert emitted < 20_000 / 4


def test_pacer_white_noise_emits_nearly_everything():
    """Independent inputs: rho ~ 0, the interval stays at the minimum."""
    rng = np.random.default_rng(4)
    pacer = OutcomePacer(min_interval_ns=0, alpha=0.005)
    emitted = sum(pacer.offer(i * 10, float(rng.chisquare(3)), 0.0) for i in range(5000))
    assert emitted > 5000 * 0.6


def test_pacer_emits_nothing_until_its_estimate_is_warm():
    """Adaptive: the first warmup_samples candidates feed the estimate, none is emitted.

    Before the warm-up was a rule, the pacer read the autocorrelation as 0 until then and
    emitted every candidate: the first window held the most correlated outcomes of the run.
    """
    rng = np.random.default_rng(5)
    pacer = OutcomePacer(warmup_samples=20)
    x, emitted = 0.0, []
    for i in range(200):
        x = 0.9 * x + rng.normal() * math.sqrt(1 - 0.81)
        if pacer.offer(i * 100_000_000, math.sqrt(10.0 + x), 0.0):
            emitted.append(i)
    # Candidate 0 only sets the mean; candidate i is the i-th update of the estimate, and each is
    # decided on the estimate before it: candidate 21 is the first decided on 20 updates.
    assert emitted[0] == 21
    assert pacer.warm and pacer.autocorrelation > 0.5
    assert all(b - a >= 2 for a, b in zip(emitted, emitted[1:]))  # spaced once warm
    pacer.reset()
    assert not pacer.warm
    assert not any(pacer.offer(i * 100_000_000, 2.0, 1.0) for i in range(21))
    assert pacer.offer(21 * 100_000_000, 2.0, 1.0)


def test_pacer_warm_up_holds_neither_infinite_distances_nor_a_fixed_interval():
    """+inf (certain evidence) passes the warm-up; adaptive=False has nothing to warm up."""
    pacer = OutcomePacer(warmup_samples=50)
    assert not pacer.offer(0, 1.0, 1.0)
    assert pacer.offer(100, math.inf, 1.0)
    assert not pacer.warm
    fixed = OutcomePacer(adaptive=False, warmup_samples=50)
    assert fixed.warm and fixed.offer(0, 1.0, 1.0)


@pytest.mark.parametrize('bad', [0, 1, -5, 2.5, True, '50', 1_000_001])
def test_pacer_warm_up_is_validated(bad):
    """warmup_samples: an integer in [2, 1e6], with a reason naming it."""
    with pytest.raises(ValueError, match='warmup_samples'):
        OutcomePacer(warmup_samples=bad)


def _eigen_distance(error, covariance):
    """Return the eigen-decomposition distance (no fast path), for comparison."""
    eigenvalues, vectors = np.linalg.eigh(covariance)
    return math.sqrt(float(np.sum((vectors.T @ error) ** 2 / eigenvalues)))


def test_closed_form_paths_agree_with_the_eigen_decomposition():
    """The bridge's plain-float paths (distance, largest eigenvalue, pose error) equal numpy's."""
    rng = np.random.default_rng(20261204)
    for _ in range(2000):
        root = rng.normal(size=(3, 3)) * rng.choice([1e-4, 1e-2, 1.0, 1e3])
        covariance = root @ root.T + 1e-9 * np.eye(3)
        error = rng.normal(size=3)
        expected = _eigen_distance(error, covariance)
        assert mahalanobis(error, covariance) == pytest.approx(expected, rel=1e-6)
        largest = np.linalg.eigvalsh(covariance)[-1]
        assert largest_eigenvalue3(covariance.tolist()) == pytest.approx(largest, rel=1e-9)
    for _ in range(500):
        q_est = rng.normal(size=4)
        q_ref = rng.normal(size=4)
        six = np.diag(rng.uniform(0.001, 1.0, size=6))
        fast = pose_error((0, 0, 0), q_est, six, (1, 2, 3), q_ref)
        q_est, q_ref = q_est / np.linalg.norm(q_est), q_ref / np.linalg.norm(q_ref)
        expected = rotation_vector(quaternion_multiply(q_ref, [-q_est[0], -q_est[1], -q_est[2],
                                                               q_est[3]]))
        assert fast.orientation_error_rad == pytest.approx(tuple(expected), abs=1e-9)


@pytest.mark.parametrize(('quaternion', 'reason'), [
    ((0.0, 0.0, 0.0, 0.0), 'quaternion_zero'),
    ((0.0, 0.0, 0.0, 5e-324), 'quaternion_zero'),
    ((math.nan, 0.0, 0.0, 1.0), 'quaternion_not_finite'),
    ((0.0, 0.0, 1e200, 1e200), 'quaternion_not_unit'),
    ((0.0, 0.0, 0.0, 1.01), 'quaternion_not_unit'),
])
def test_quaternion_refusals(quaternion, reason):
    """Zero, non-finite and far-from-unit quaternions are refused with their reason."""
    assert quaternion_refusal(quaternion)[0] == reason
    assert quaternion_refusal((0.0, 0.0, 0.0, 1.0005)) is None


def test_covariance_refusals():
    """Non-finite, negative variance, not PSD, all zero (unless allowed): refused by reason."""
    good = np.diag([0.01] * 6)
    assert covariance_refusal(good.reshape(-1))[1] is None
    negative = good.copy()
    negative[2, 2] = -0.01
    not_psd = good.copy()
    not_psd[0, 1] = not_psd[1, 0] = 0.05
    nan = good.copy()
    nan[5, 5] = math.nan
    for matrix, reason in ((negative, 'covariance_negative_variance'),
                           (not_psd, 'covariance_not_psd'), (nan, 'covariance_not_finite'),
                           (np.zeros((6, 6)), 'covariance_all_zero')):
        assert covariance_refusal(matrix.reshape(-1))[1][0] == reason
    assert covariance_refusal([0.0] * 36, allow_all_zero=True) == (None, None)


def test_engine_refuses_an_estimate_without_covariance_before_changing_state():
    """A PoseStamped estimate has no claim: TypeError at intake, nothing pending (issue 23)."""
    from types import SimpleNamespace

    from project_ghost_feedback.bridge.engine_interface import EngineListener
    from project_ghost_feedback.bridge.pairing import PairingEngine
    from project_ghost_feedback.bridge.parameters import engine_config
    from project_ghost_feedback.bridge_inputs import bridge_parameters

    engine = PairingEngine(engine_config(bridge_parameters()), EngineListener())
    pose = SimpleNamespace(position=SimpleNamespace(x=0.0, y=0.0, z=0.0),
                           orientation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0))
    header = SimpleNamespace(stamp=SimpleNamespace(sec=1, nanosec=0), frame_id='map')
    with pytest.raises(TypeError, match='covariance'):
        engine.take_estimate(SimpleNamespace(header=header, pose=pose))
    assert engine.last_estimate_ns is None and not engine.pending
