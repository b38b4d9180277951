# SPDX-License-Identifier: Apache-2.0
"""Pose errors and their unsquared Mahalanobis distances (numpy, no ROS).

Conventions (docs/bridge.md):

- Quaternions are ``(x, y, z, w)``, as in ``geometry_msgs/Quaternion``; they are normalised on
  input (a zero or non-finite quaternion is a ValueError).
- A 6x6 pose covariance is in ROS order ``x y z roll pitch yaw`` (row-major 36 floats, as in
  ``nav_msgs/Odometry.pose.covariance``), expressed in the pose's ``frame_id``. The rotation block
  is read as the covariance of a small rotation vector about the axes of that frame (the
  convention robot_localization and most EKFs follow for small angles).
- Position error ``e_p = p_ref - p_est`` in the estimate's ``frame_id``.
- Orientation error ``e_r = log(R_ref R_est^T)`` (rotation vector, radians, norm in [0, pi]):
  the rotation that takes the estimate to the reference, applied on the left, so it is expressed
  in the same ``frame_id`` as the position error and the covariance.
- Distances are UNSQUARED: ``d = sqrt(e^T S^+ e)`` with ``S`` the matching 3x3 block of the
  estimate covariance plus the (transformed) reference covariance. See :func:`mahalanobis` for
  singular covariances.
"""

from collections.abc import Collection, Iterable, Sequence
import math
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
"""A numpy array of float64 (vectors, matrices)."""

Refusal = tuple[str, str]
"""``(reason, detail)`` of an input refused."""

AXES = ('x', 'y', 'z', 'roll', 'pitch', 'yaw')
POSITION_AXES = AXES[:3]
ORIENTATION_AXES = AXES[3:]

# Eigenvalues at or below max(ABS_EIGEN_TOL, REL_EIGEN_TOL * largest) are treated as zero.
ABS_EIGEN_TOL = 1e-15
REL_EIGEN_TOL = 1e-12
# An error component along a zero-variance direction larger than this contradicts the claim.
DEFAULT_NULL_TOLERANCE = 1e-9
# Eigenvalues more negative than this (relative to the largest) make a covariance invalid.
NEGATIVE_EIGEN_TOL = 1e-9
# An input quaternion whose norm differs from 1 by more than this is refused (not normalised).
QUATERNION_NORM_TOLERANCE = 1e-3

# Reasons :func:`quaternion_refusal` and :func:`covariance_refusal` give (counted by the bridge).
QUATERNION_ZERO = 'quaternion_zero'
QUATERNION_NOT_FINITE = 'quaternion_not_finite'
QUATERNION_NOT_UNIT = 'quaternion_not_unit'
POSITION_NOT_FINITE = 'position_not_finite'
COVARIANCE_NOT_FINITE = 'covariance_not_finite'
COVARIANCE_NEGATIVE_VARIANCE = 'covariance_negative_variance'
COVARIANCE_NOT_PSD = 'covariance_not_psd'
COVARIANCE_ALL_ZERO = 'covariance_all_zero'


def position_refusal(position: Sequence[float]) -> Refusal | None:
    """Return ``(reason, detail)`` when a position ``(x, y, z)`` is unusable, else None."""
    if not all(math.isfinite(v) for v in position):
        return POSITION_NOT_FINITE, f'position {list(position)!r}'
    return None


def quaternion_refusal(quaternion: Sequence[float],
                       tolerance: float = QUATERNION_NORM_TOLERANCE) -> Refusal | None:
    """Return ``(reason, detail)`` when an input quaternion ``(x, y, z, w)`` is unusable, else None.

    Checked in plain Python before any math: every component finite, not all zero, and a norm
    within ``tolerance`` of 1 (a quaternion far from unit norm is a producer bug, not noise).
    """
    if not all(math.isfinite(v) for v in quaternion):
        return QUATERNION_NOT_FINITE, f'quaternion {list(quaternion)!r}'
    squared = sum(v * v for v in quaternion)
    if squared == 0.0:
        return QUATERNION_ZERO, f'quaternion {list(quaternion)!r}'
    norm = math.sqrt(squared)
    if not math.isfinite(norm) or abs(norm - 1.0) > tolerance:
        return QUATERNION_NOT_UNIT, (f'quaternion norm {norm!r} differs from 1 by more than '
                                     f'{tolerance:g}')
    return None


def covariance_refusal(
        values: ArrayLike, allow_all_zero: bool = False,
) -> tuple[FloatArray | None, Refusal | None]:
    """Return ``(matrix, None)`` for a usable 6x6 covariance, or ``(None, (reason, detail))``.

    Refused, in this order: a non-finite value; a negative variance (diagonal below
    ``-NEGATIVE_EIGEN_TOL`` times the largest variance); not positive semi-definite (an eigenvalue
    below ``-NEGATIVE_EIGEN_TOL * max|eigenvalue|``); all zero (an estimator claiming no error at
    all; with ``allow_all_zero`` it is returned as ``None``, i.e. "no covariance", for a
    reference). A slightly asymmetric input is symmetrised.
    """
    flat = np.asarray(values, dtype=float).reshape(-1)
    if flat.size != 36:
        return None, (COVARIANCE_NOT_FINITE, f'covariance has {flat.size} values, not 36')
    if not np.isfinite(flat).all():
        return None, (COVARIANCE_NOT_FINITE, 'covariance has a non-finite value')
    if not flat.any():
        if allow_all_zero:
            return None, None
        return None, (COVARIANCE_ALL_ZERO, 'covariance is all zero (no uncertainty claimed)')
    diagonal = flat[::7]
    if diagonal.min() < -NEGATIVE_EIGEN_TOL * max(float(diagonal.max()), ABS_EIGEN_TOL):
        return None, (COVARIANCE_NEGATIVE_VARIANCE, f'variances {diagonal.tolist()!r}')
    matrix = flat.reshape(6, 6)
    matrix = 0.5 * (matrix + matrix.T)
    eigenvalues = np.linalg.eigvalsh(matrix)
    if not np.isfinite(eigenvalues).all():
        return None, (COVARIANCE_NOT_FINITE, 'covariance eigenvalues overflow')
    scale = max(float(np.max(np.abs(eigenvalues))), ABS_EIGEN_TOL)
    if eigenvalues[0] < -NEGATIVE_EIGEN_TOL * scale:
        return None, (COVARIANCE_NOT_PSD, f'eigenvalue {eigenvalues[0]:.3g} below '
                                          f'-{NEGATIVE_EIGEN_TOL:g} x {scale:.3g}')
    return matrix, None


def unit_quaternion(quaternion: ArrayLike) -> FloatArray:
    """Return ``quaternion`` ``(x, y, z, w)`` as a unit numpy vector (ValueError if unusable)."""
    q = np.asarray(quaternion, dtype=float).reshape(4)
    norm = float(np.linalg.norm(q))
    if not math.isfinite(norm) or norm < 1e-9:
        raise ValueError(f'quaternion must be finite and non-zero, got {q.tolist()!r}')
    return q / norm


def quaternion_to_matrix(quaternion: ArrayLike) -> FloatArray:
    """Return the 3x3 rotation matrix of a quaternion ``(x, y, z, w)``."""
    x, y, z, w = unit_quaternion(quaternion)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def quaternion_multiply(a: Sequence[float] | FloatArray,
                        b: Sequence[float] | FloatArray) -> FloatArray:
    """Return the Hamilton product ``a * b`` of two ``(x, y, z, w)`` quaternions."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ])


def quaternion_conjugate(q: Sequence[float] | FloatArray) -> FloatArray:
    """Return the conjugate (the inverse of a unit quaternion)."""
    return np.array([-q[0], -q[1], -q[2], q[3]])


def rotation_vector(quaternion: ArrayLike) -> FloatArray:
    """Return the rotation vector (axis * angle, radians, angle in [0, pi]) of a quaternion.

    ``q`` and ``-q`` give the same vector (the shorter rotation is taken).
    """
    q = unit_quaternion(quaternion)
    if q[3] < 0.0:
        q = -q
    sin_half = float(np.linalg.norm(q[:3]))
    angle = 2.0 * math.atan2(sin_half, q[3])
    if sin_half < 1e-12:
        return 2.0 * q[:3]  # first order: angle ~ 2 sin(angle/2)
    return q[:3] * (angle / sin_half)


def quaternion_from_rotation_vector(vector: ArrayLike) -> FloatArray:
    """Return the unit quaternion ``(x, y, z, w)`` of a rotation vector (radians)."""
    v = np.asarray(vector, dtype=float).reshape(3)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return unit_quaternion([v[0] / 2, v[1] / 2, v[2] / 2, 1.0])
    axis = v / angle
    return np.array([*(axis * math.sin(angle / 2)), math.cos(angle / 2)])


def covariance_6x6(values: ArrayLike) -> FloatArray:
    """Return a symmetric 6x6 numpy covariance from 36 row-major floats (ValueError if invalid).

    Invalid: not 36 finite values, or an eigenvalue below ``-NEGATIVE_EIGEN_TOL * largest``.
    A slightly asymmetric input is symmetrised (``(S + S^T) / 2``).
    """
    matrix = np.asarray(values, dtype=float)
    if matrix.size != 36:
        raise ValueError(f'covariance must have 36 values, got {matrix.size}')
    matrix = matrix.reshape(6, 6)
    if not np.all(np.isfinite(matrix)):
        raise ValueError('covariance has a non-finite value')
    matrix = 0.5 * (matrix + matrix.T)
    eigenvalues = np.linalg.eigvalsh(matrix)
    scale = max(float(np.max(np.abs(eigenvalues))), ABS_EIGEN_TOL)
    if eigenvalues[0] < -NEGATIVE_EIGEN_TOL * scale:
        raise ValueError(
            f'covariance is not positive semi-definite (eigenvalue {eigenvalues[0]:.3g})')
    return matrix


# The closed-form 3x3 path of :func:`mahalanobis` is taken only when the smallest eigenvalue is
# provably above this fraction of the largest (1 / trace(S^-1) <= l_min, l_max <= trace(S)):
# far from the null-space threshold, so it gives what the eigen path gives (to rounding).
FAST_PATH_MIN_RATIO = 1e-6


def _mahalanobis3(e: Sequence[float], s: Sequence[Sequence[float]]) -> float | None:
    """Return ``sqrt(e^T S^-1 e)`` for a well-conditioned 3x3 ``S`` (lists), else None."""
    a, b, c = s[0][0], 0.5 * (s[0][1] + s[1][0]), 0.5 * (s[0][2] + s[2][0])
    d, f, g = s[1][1], 0.5 * (s[1][2] + s[2][1]), s[2][2]
    ca, cb, cc = d * g - f * f, c * f - b * g, b * f - c * d     # cofactors (adjugate)
    cd, ce, cf = a * g - c * c, b * c - a * f, a * d - b * b
    det = a * ca + b * cb + c * cc
    trace = a + d + g
    if not (det > 0.0 and trace > 0.0 and math.isfinite(det)):
        return None
    trace_inverse = (ca + cd + cf) / det
    if not trace_inverse > 0.0 or 1.0 / trace_inverse <= FAST_PATH_MIN_RATIO * trace:
        return None
    x, y, z = e
    squared = (ca * x * x + cd * y * y + cf * z * z
               + 2.0 * (cb * x * y + cc * x * z + ce * y * z)) / det
    return math.sqrt(squared) if squared > 0.0 else 0.0


def mahalanobis(error: Sequence[float] | FloatArray,
                covariance: FloatArray | Sequence[Sequence[float]],
                null_tolerance: float = DEFAULT_NULL_TOLERANCE) -> float:
    """Return the UNSQUARED Mahalanobis distance ``sqrt(e^T S^+ e)`` of ``error`` under ``S``.

    ``S`` is decomposed as ``V diag(l) V^T``. Directions with ``l <= max(ABS_EIGEN_TOL,
    REL_EIGEN_TOL * max(l))`` are the null space (the claim says "exactly zero error there"):

    - if the error's component along a null direction exceeds ``null_tolerance`` (same unit as
      the error), the claim is contradicted and the distance is ``+inf``;
    - otherwise that component counts 0 and the distance is taken over the other directions
      (a zero covariance and an error within ``null_tolerance`` of zero give 0.0).

    Negative eigenvalues within the tolerance count as zero. A 3x3 ``S`` whose smallest
    eigenvalue is provably far from that threshold takes a closed form (no decomposition).
    """
    if len(error) == 3:
        rows = covariance.tolist() if hasattr(covariance, 'tolist') else covariance
        fast = _mahalanobis3([float(v) for v in error], rows)
        if fast is not None:
            return fast
    e = np.asarray(error, dtype=float).reshape(-1)
    s = np.asarray(covariance, dtype=float).reshape(e.size, e.size)
    eigenvalues, vectors = np.linalg.eigh(0.5 * (s + s.T))
    components = vectors.T @ e
    threshold = max(ABS_EIGEN_TOL, REL_EIGEN_TOL * float(np.max(eigenvalues, initial=0.0)))
    null = eigenvalues <= threshold
    if np.any(np.abs(components[null]) > null_tolerance):
        return math.inf
    ranged = ~null
    return float(math.sqrt(float(np.sum(components[ranged] ** 2 / eigenvalues[ranged]))))


class FixedTransform:
    """A fixed transform taking coordinates in the reference frame to the estimate frame.

    ``p_est_frame = R p_ref_frame + t`` and ``R_in_est_frame = R R_in_ref_frame``; a 6x6
    covariance in the reference frame becomes ``J S J^T`` with ``J = blockdiag(R, R)``.
    """

    def __init__(self, translation: ArrayLike = (0.0, 0.0, 0.0),
                 rotation: ArrayLike = (0.0, 0.0, 0.0, 1.0)) -> None:
        self.translation = np.asarray(translation, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.translation)):
            raise ValueError('transform translation must be finite')
        self.rotation = unit_quaternion(rotation)
        self.matrix = quaternion_to_matrix(self.rotation)
        self._jacobian = np.zeros((6, 6))
        self._jacobian[:3, :3] = self.matrix
        self._jacobian[3:, 3:] = self.matrix

    def apply(self, position: ArrayLike, quaternion: ArrayLike,
              covariance: FloatArray | None = None,
              ) -> tuple[FloatArray, FloatArray, FloatArray | None]:
        """Return ``(position, quaternion, covariance)`` expressed in the estimate frame."""
        moved = self.matrix @ np.asarray(position, dtype=float) + self.translation
        turned = quaternion_multiply(self.rotation, unit_quaternion(quaternion))
        if covariance is not None:
            covariance = self._jacobian @ covariance @ self._jacobian.T
        return moved, turned, covariance


Vec3 = tuple[float, float, float]
"""A 3-vector of plain floats (the contracts' error vectors)."""


def _vec3(values: Iterable[float]) -> Vec3:
    x, y, z = (float(v) for v in values)
    return x, y, z


class PoseError:
    """Errors of an estimate against a reference, with their unsquared Mahalanobis distances."""

    __slots__ = ('position_error_m', 'orientation_error_rad', 'position_mahalanobis',
                 'orientation_mahalanobis')

    def __init__(self, position_error_m: Vec3, orientation_error_rad: Vec3,
                 position_mahalanobis: float,
                 orientation_mahalanobis: float) -> None:
        self.position_error_m = position_error_m
        self.orientation_error_rad = orientation_error_rad
        self.position_mahalanobis = position_mahalanobis
        self.orientation_mahalanobis = orientation_mahalanobis

    def __repr__(self) -> str:
        return (f'PoseError(position_error_m={self.position_error_m!r}, '
                f'orientation_error_rad={self.orientation_error_rad!r}, '
                f'position_mahalanobis={self.position_mahalanobis!r}, '
                f'orientation_mahalanobis={self.orientation_mahalanobis!r})')


def vec3_components(ignored_axes: Iterable[str] = ()) -> tuple[int, int]:
    """Return the (position, orientation) error components kept with ``ignored_axes``.

    What the feedback side's ``position_components`` / ``orientation_components`` must be for
    this bridge's outcomes (a vec3 with every axis ignored counts 3: its distance is 0, no
    evidence to scale). ValueError for an unknown axis name.
    """
    mask = axis_mask(tuple(axis for axis in ignored_axes if axis))  # [''] is none (ROS)
    kept = (int(mask[:3].sum()), int(mask[3:].sum()))
    return (kept[0] or 3, kept[1] or 3)


def axis_mask(ignored_axes: Iterable[str] = ()) -> NDArray[np.bool_]:
    """Return a boolean mask over AXES, False for the names in ``ignored_axes`` (ValueError)."""
    unknown = sorted(set(ignored_axes) - set(AXES))
    if unknown:
        raise ValueError(f'unknown axes {unknown} (choose from {list(AXES)})')
    return np.array([axis not in ignored_axes for axis in AXES])


def _block_distance(error: FloatArray, covariance: FloatArray, mask: NDArray[np.bool_],
                    null_tolerance: float) -> float:
    if not np.any(mask):
        return 0.0
    return mahalanobis(error[mask], covariance[np.ix_(mask, mask)], null_tolerance)


def pose_error(estimate_position: Sequence[float] | FloatArray,
               estimate_quaternion: Sequence[float] | FloatArray, estimate_covariance: ArrayLike,
               reference_position: Sequence[float] | FloatArray,
               reference_quaternion: Sequence[float] | FloatArray,
               reference_covariance: ArrayLike | None = None,
               ignored_axes: Collection[str] = (),
               null_tolerance: float = DEFAULT_NULL_TOLERANCE) -> PoseError:
    """Return the :class:`PoseError` of an estimate against a reference in the same frame.

    ``estimate_covariance`` / ``reference_covariance``: 6x6 arrays (:func:`covariance_6x6`); the
    reference covariance, if any, is added (independent errors). ``ignored_axes`` (names from
    AXES) are marginalised out of the distances (their rows and columns dropped; the reported
    error vectors stay whole), e.g. ``('z', 'roll', 'pitch')`` for a planar estimator compared
    with a 3-D ground truth.
    """
    if not ignored_axes:
        return _pose_error_all_axes(
            estimate_position, estimate_quaternion, estimate_covariance, reference_position,
            reference_quaternion, reference_covariance, null_tolerance)
    position_error = (np.asarray(reference_position, dtype=float)
                      - np.asarray(estimate_position, dtype=float))
    q_est = unit_quaternion(estimate_quaternion)
    q_ref = unit_quaternion(reference_quaternion)
    orientation_error = rotation_vector(
        quaternion_multiply(q_ref, quaternion_conjugate(q_est)))
    covariance = np.asarray(estimate_covariance, dtype=float)
    if reference_covariance is not None:
        covariance = covariance + np.asarray(reference_covariance, dtype=float)
    mask = axis_mask(ignored_axes)
    position_distance = _block_distance(
        position_error, covariance[:3, :3], mask[:3], null_tolerance)
    orientation_distance = _block_distance(
        orientation_error, covariance[3:, 3:], mask[3:], null_tolerance)
    return PoseError(_vec3(position_error), _vec3(orientation_error), position_distance,
                     orientation_distance)


def _unit(q: Iterable[float]) -> tuple[float, float, float, float]:
    x, y, z, w = (float(v) for v in q)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if not math.isfinite(norm) or norm < 1e-9:
        raise ValueError(f'quaternion must be finite and non-zero, got {[x, y, z, w]!r}')
    return x / norm, y / norm, z / norm, w / norm


def _pose_error_all_axes(estimate_position: Iterable[float], estimate_quaternion: Iterable[float],
                         estimate_covariance: ArrayLike, reference_position: Iterable[float],
                         reference_quaternion: Iterable[float],
                         reference_covariance: ArrayLike | None,
                         null_tolerance: float) -> PoseError:
    """:func:`pose_error` with no ignored axis, in plain floats (the bridge's hot path)."""
    position_error = cast(Vec3, tuple(float(r) - float(e)
                                      for r, e in zip(reference_position, estimate_position)))
    ex, ey, ez, ew = _unit(estimate_quaternion)
    rx, ry, rz, rw = _unit(reference_quaternion)
    # q = q_ref * conj(q_est), then its rotation vector (the shorter way).
    qx = -rw * ex + rx * ew - ry * ez + rz * ey
    qy = -rw * ey + rx * ez + ry * ew - rz * ex
    qz = -rw * ez - rx * ey + ry * ex + rz * ew
    qw = rw * ew + rx * ex + ry * ey + rz * ez
    if qw < 0.0:
        qx, qy, qz, qw = -qx, -qy, -qz, -qw
    sin_half = math.sqrt(qx * qx + qy * qy + qz * qz)
    if sin_half < 1e-12:
        orientation_error = (2.0 * qx, 2.0 * qy, 2.0 * qz)
    else:
        scale = 2.0 * math.atan2(sin_half, qw) / sin_half
        orientation_error = (qx * scale, qy * scale, qz * scale)
    covariance = np.asarray(estimate_covariance, dtype=float)
    if reference_covariance is not None:
        covariance = covariance + np.asarray(reference_covariance, dtype=float)
    rows = covariance.tolist()
    position_block = [row[:3] for row in rows[:3]]
    orientation_block = [row[3:] for row in rows[3:]]
    return PoseError(
        position_error, orientation_error,
        mahalanobis(position_error, position_block, null_tolerance),
        mahalanobis(orientation_error, orientation_block, null_tolerance))
