# SPDX-License-Identifier: Apache-2.0
"""A simulated robot and a real Kalman filter on it: estimate with covariance + ground truth.

Pure (numpy, no ROS) and deterministic for a seed. What the demo plays over DDS
(``ros/sim_stack_node.py``) and what ``bench/bridge_bench.py`` runs without DDS.

Robot (holonomic, in the plane): x, y and yaw each follow a constant-velocity model driven by
white acceleration noise of spectral density ``q`` (``accel_std``^2 per second). The stated z
model: the floor is uneven, so z, roll and pitch are small first-order Gauss-Markov (OU)
processes about 0 (time constant ``tau_s``, stationary stds ``z_std_m`` / ``tilt_std_rad``),
independent of the planar motion.

Filter: one linear Kalman filter over the 9 states ``[x, vx, y, vy, yaw, vyaw, z, roll, pitch]``
with the same models, fed at ``rate_hz`` with noisy measurements of x, y (GNSS-like),
yaw (compass), z (altimeter) and roll, pitch (inclinometer). Because the models match, the
filter is consistent when its process noise equals the truth's ("tuned"): its estimate-vs-truth
d^2 per vec3 is chi-square(3) (checked in the tests), yet strongly autocorrelated from step to
step, as real filters' errors are.

Phases (:data:`DEFAULT_PHASES`): ``tuned`` (filter q = true q), ``mistuned`` (after an event,
e.g. a slippery floor, the true acceleration noise is ``mistune_factor``^2 times larger while the
filter keeps its nominal q: process noise too small, the filter is overconfident), ``recovered``
(the filter is retuned to the new q and is consistent again).
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.contracts import NS_PER_S

_FloatArray = NDArray[np.float64]
_Vec3 = tuple[float, float, float]
_Quaternion = tuple[float, float, float, float]
# State indices.
_X, _VX, _Y, _VY, _YAW, _VYAW, _Z, _ROLL, _PITCH = range(9)
# Pose covariance order x y z roll pitch yaw -> state indices.
POSE_STATE_INDEX = (_X, _Y, _Z, _ROLL, _PITCH, _YAW)
_MEASURED = (_X, _Y, _YAW, _Z, _ROLL, _PITCH)


@dataclass(frozen=True)
class StackPhase:
    """A stretch of the run: how noisy the truth is and how the filter is tuned."""

    name: str
    duration_s: float
    truth_accel_factor: float = 1.0
    filter_accel_factor: float = 1.0


DEFAULT_PHASES = (
    StackPhase('tuned', 300.0),
    StackPhase('mistuned', 120.0, truth_accel_factor=6.0, filter_accel_factor=1.0),
    StackPhase('recovered', 180.0, truth_accel_factor=6.0, filter_accel_factor=6.0),
)


@dataclass(frozen=True)
class StackConfig:
    """Noise levels (SI units) and rates of the simulated robot and its filter."""

    rate_hz: float = 10.0
    truth_rate_multiple: int = 5
    accel_std: float = 0.05
    yaw_accel_std: float = 0.05
    position_noise_m: float = 0.1
    yaw_noise_rad: float = 0.05
    tau_s: float = 5.0
    z_std_m: float = 0.05
    tilt_std_rad: float = 0.02
    z_noise_m: float = 0.1
    tilt_noise_rad: float = 0.02


class StackSample:
    """One step: truth and estimate poses (position, quaternion xyzw), covariance, phase."""

    __slots__ = ('stamp_ns', 'phase', 'is_estimate', 'truth_position', 'truth_quaternion',
                 'truth_velocity', 'estimate_position', 'estimate_quaternion',
                 'estimate_velocity', 'pose_covariance')
    stamp_ns: int
    phase: str
    is_estimate: bool
    truth_position: _Vec3
    truth_quaternion: _Quaternion
    truth_velocity: _Vec3
    estimate_position: _Vec3
    estimate_quaternion: _Quaternion
    estimate_velocity: _Vec3
    pose_covariance: _FloatArray

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, fields.get(name))


def yaw_roll_pitch_quaternion(roll: float, pitch: float, yaw: float) -> _Quaternion:
    """Return the quaternion (x, y, z, w) of fixed-axis roll, pitch, yaw (R = Rz Ry Rx)."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


def transition_matrix(dt: float, config: StackConfig) -> tuple[_FloatArray, float]:
    """Return ``(F, decay)``: the 9-state transition over ``dt`` seconds and the OU decay."""
    f = np.eye(9)
    for p, v in ((_X, _VX), (_Y, _VY), (_YAW, _VYAW)):
        f[p, v] = dt
    decay = math.exp(-dt / config.tau_s)
    for i in (_Z, _ROLL, _PITCH):
        f[i, i] = decay
    return f, decay


def process_noise(dt: float, config: StackConfig, accel_factor: float) -> _FloatArray:
    """Discrete white-acceleration noise for CV axes, exact OU noise for z, roll, pitch."""
    q = np.zeros((9, 9))
    for (p, v), std in (((_X, _VX), config.accel_std), ((_Y, _VY), config.accel_std),
                        ((_YAW, _VYAW), config.yaw_accel_std)):
        density = (accel_factor * std) ** 2
        q[p, p] = density * dt ** 3 / 3
        q[p, v] = q[v, p] = density * dt ** 2 / 2
        q[v, v] = density * dt
    decay = math.exp(-dt / config.tau_s)
    for i, std in ((_Z, config.z_std_m), (_ROLL, config.tilt_std_rad),
                   (_PITCH, config.tilt_std_rad)):
        q[i, i] = std ** 2 * (1 - decay ** 2)
    return q


def _cholesky(q: _FloatArray) -> _FloatArray:
    """Return L with L L^T = q for a PSD q (eigen-based: the OU-free rows may be zero)."""
    values, vectors = np.linalg.eigh(q)
    return vectors * np.sqrt(np.clip(values, 0.0, None))


class LocalizationStack:
    """Truth and Kalman estimate, stepped at ``rate_hz * truth_rate_multiple`` (truth rate)."""

    def __init__(self, config: StackConfig = StackConfig(),
                 phases: Iterable[StackPhase] = DEFAULT_PHASES, seed: int | None = 0) -> None:
        self.config = config
        self.phases = tuple(phases)
        self.rng = np.random.default_rng(seed)
        self._models: dict[tuple[float, float], tuple[_FloatArray, _FloatArray, _FloatArray]] = {}
        self.dt_truth = 1.0 / (config.rate_hz * config.truth_rate_multiple)
        self.dt = 1.0 / config.rate_hz
        self.h = np.zeros((6, 9))
        for row, state in enumerate(_MEASURED):
            self.h[row, state] = 1.0
        self.r = np.diag([config.position_noise_m ** 2] * 2 + [config.yaw_noise_rad ** 2]
                         + [config.z_noise_m ** 2] + [config.tilt_noise_rad ** 2] * 2)
        self.truth = np.zeros(9)
        self.truth[_VX] = 0.3
        self.truth[_VYAW] = 0.05
        self.estimate = self.truth + self.rng.multivariate_normal(np.zeros(9), self.r_initial())
        self.covariance = self.r_initial()

    def r_initial(self) -> _FloatArray:
        """Return the initial estimate covariance (also the initial estimate error's)."""
        c = self.config
        return np.diag([c.position_noise_m ** 2, 0.01, c.position_noise_m ** 2, 0.01,
                        c.yaw_noise_rad ** 2, 0.0025, c.z_std_m ** 2, c.tilt_std_rad ** 2,
                        c.tilt_std_rad ** 2])

    @property
    def duration_s(self) -> float:
        """Total duration of the phases, seconds."""
        return sum(phase.duration_s for phase in self.phases)

    def phase_spans_ns(self) -> list[tuple[str, int, int]]:
        """Return [(name, start_ns, end_ns)] of the phases."""
        spans: list[tuple[str, int, int]] = []
        start = 0
        for phase in self.phases:
            end = start + int(round(phase.duration_s * NS_PER_S))
            spans.append((phase.name, start, end))
            start = end
        return spans

    def _model(self, dt: float, accel_factor: float
               ) -> tuple[_FloatArray, _FloatArray, _FloatArray]:
        """Return ``(F, Q, chol(Q))`` for a step of ``dt`` seconds (cached)."""
        key = (dt, accel_factor)
        if key not in self._models:
            f, _ = transition_matrix(dt, self.config)
            q = process_noise(dt, self.config, accel_factor)
            self._models[key] = (f, q, _cholesky(q))
        return self._models[key]

    def _step_truth(self, dt: float, accel_factor: float) -> None:
        f, _, chol = self._model(dt, accel_factor)
        self.truth = f @ self.truth + chol @ self.rng.standard_normal(9)

    def _step_filter(self, accel_factor: float) -> None:
        f, q, _ = self._model(self.dt, accel_factor)
        x = f @ self.estimate
        p = f @ self.covariance @ f.T + q
        z = self.h @ self.truth + np.sqrt(np.diag(self.r)) * self.rng.standard_normal(6)
        s = self.h @ p @ self.h.T + self.r
        gain = np.linalg.solve(s, self.h @ p).T
        self.estimate = x + gain @ (z - self.h @ x)
        joseph = np.eye(9) - gain @ self.h
        self.covariance = joseph @ p @ joseph.T + gain @ self.r @ gain.T

    def _sample(self, stamp_ns: int, phase: str, is_estimate: bool) -> StackSample:
        t, e = self.truth, self.estimate
        index = list(POSE_STATE_INDEX)
        return StackSample(
            stamp_ns=stamp_ns, phase=phase, is_estimate=is_estimate,
            truth_position=(t[_X], t[_Y], t[_Z]),
            truth_quaternion=yaw_roll_pitch_quaternion(t[_ROLL], t[_PITCH], t[_YAW]),
            truth_velocity=(t[_VX], t[_VY], t[_VYAW]),
            estimate_position=(e[_X], e[_Y], e[_Z]),
            estimate_quaternion=yaw_roll_pitch_quaternion(e[_ROLL], e[_PITCH], e[_YAW]),
            estimate_velocity=(e[_VX], e[_VY], e[_VYAW]),
            pose_covariance=self.covariance[np.ix_(index, index)].copy())

    def run(self) -> Iterator[StackSample]:
        """Yield a StackSample per truth step; every ``truth_rate_multiple``-th has an estimate.

        The estimate of an estimate step is the filter's after the measurement at that stamp;
        the truth of every step is at its stamp (so estimates need no interpolation).
        """
        multiple = self.config.truth_rate_multiple
        step = 0
        for name, start_ns, end_ns in self.phase_spans_ns():
            phase = next(p for p in self.phases if p.name == name)
            while True:
                stamp_ns = int(round(step * self.dt_truth * NS_PER_S))
                if stamp_ns >= end_ns:
                    break
                if step > 0:
                    self._step_truth(self.dt_truth, phase.truth_accel_factor)
                is_estimate = step % multiple == 0
                if is_estimate and step > 0:
                    self._step_filter(phase.filter_accel_factor)
                yield self._sample(stamp_ns, name, is_estimate)
                step += 1
