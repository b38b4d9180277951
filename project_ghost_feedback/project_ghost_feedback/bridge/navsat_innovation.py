# SPDX-License-Identifier: Apache-2.0
"""A GNSS fix (sensor_msgs/NavSatFix) against the estimate -> a position innovation (pure).

GNSS has no orientation, so a fix cannot fill the outcome bridge's two vec3 (position and
orientation) without inventing one. It goes the innovation path instead: each fix, converted to
the local east-north-up frame of a datum (:func:`~..navsat_reference.geodetic_to_enu`, exact
through ECEF), is held against the estimate's position of the latest estimate at or before the
fix's stamp, ``e = p_fix - p_est``, judged against ``S = P_est + P_fix`` (both 3 x 3 position
blocks, metres^2). With ``use_altitude`` false only east and north (2 components) are judged:
GNSS altitude is often far worse than its claim, and a planar estimate has no z. The result is
one innovation of the position block, paired two fixes per outcome by the innovation engine
(:class:`~.innovation_engine.InnovationEngine`), as every one-block source.

What it assumes (docs/field.md, "GNSS reference"): the estimate is expressed in an ENU frame
whose origin is the datum (``estimate_frame``; e.g. robot_localization's ``map`` with
navsat_transform's datum), the fix is **not** fused into the estimate (independent errors, so
``P_est + P_fix`` is the covariance of ``e``), and ``e`` is white from fix to fix: exact for the
GNSS part, approximate for the estimate part (an estimate's error drifts slowly), so the smaller
``P_est`` is against ``P_fix``, or the longer the estimate's error decorrelates between fixes,
the closer the stated rate holds. A fused fix breaks the first assumption: ``reference_fused``
says so on /diagnostics (the node), and the filter's own Innovation is the honest route.

Refusals, counted by reason (nothing is judged from them): the fix's placeholder covariances
(:data:`~..navsat_reference.NAVSAT_REFUSAL_REASONS`), ``no_fix`` (status below STATUS_FIX),
``bad_position`` (latitude, longitude or altitude not finite or out of range),
``no_estimate`` (none at or before the fix), ``estimate_too_old`` (the newest such estimate is
older than ``max_estimate_age_ns``), ``estimate_frame_mismatch``, ``estimate_covariance``
(the estimate's position covariance not finite). Standard library only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
import math

from typing import Any

from ..core import NS_PER_S
from ..core.innovation import is_source_name, KIND_POSITION
from ..parameter_spec import check_ranges, ParameterError, ParameterSpec
from .innovation_engine import PARAMETERS as ENGINE_PARAMETERS
from ..navsat_reference import geodetic_to_enu, IGNORE_VARIANCE_M2, NAVSAT_REFUSAL_REASONS
from ..navsat_reference import navsat_covariance_refusal

STATUS_FIX = 0
"""sensor_msgs/NavSatStatus STATUS_FIX; STATUS_NO_FIX is -1."""
ESTIMATE_BUFFER = 256
"""Estimates kept to pair a late fix with the estimate at or before its stamp."""
DEFAULT_MAX_ESTIMATE_AGE_NS = NS_PER_S // 2

REFUSAL_REASONS = (*NAVSAT_REFUSAL_REASONS, 'no_fix', 'bad_position', 'no_estimate',
                   'estimate_too_old', 'estimate_frame_mismatch', 'estimate_covariance')
"""Every reason :meth:`NavSatInnovations.take_fix` refuses a fix with."""


NAN = float('nan')

PARAMETERS = {
    'datum.latitude_deg': ParameterSpec(
        NAN, "Latitude (WGS84, degrees) of the origin of the estimate's ENU frame (required).",
        read_only=True),
    'datum.longitude_deg': ParameterSpec(
        NAN, 'Longitude (WGS84, degrees) of the origin (required).', read_only=True),
    'datum.altitude_m': ParameterSpec(
        0.0, 'Ellipsoidal altitude (m) of the origin.', read_only=True),
    'use_altitude': ParameterSpec(
        True, 'Judge east, north and up (3 components); false: east and north only.',
        read_only=True),
    'estimate_frame': ParameterSpec(
        '', 'The ENU frame at the datum the estimate is expressed in; estimates in another '
        'frame are refused (estimate_frame_mismatch). Empty: not checked.', read_only=True),
    'max_estimate_age_s': ParameterSpec(
        0.5, 'A fix pairs with the newest estimate at or before its stamp, at most this old.',
        float_range=(0.001, 60.0)),
    'ignore_variance_m2': ParameterSpec(
        IGNORE_VARIANCE_M2, "A fix variance at or above this is an 'ignore me' placeholder "
        '(refused: ignore_bound).', float_range=(1e-3, 1e300)),
    'reference_fused': ParameterSpec(
        False, 'The fix is also fused into the estimate: /diagnostics then says the stated '
        "rate does not hold and points to the filter's own innovations (innovation_bridge)."),
    'source': ParameterSpec(
        'gnss', 'Source name of the innovations and outcomes ([a-z][a-z0-9_]*).',
        read_only=True),
    'claimed_level': ENGINE_PARAMETERS['claimed_level'],
    'diagnostics_period_s': ENGINE_PARAMETERS['diagnostics_period_s'],
    'qos_depth': ENGINE_PARAMETERS['qos_depth'],
}
"""The navsat bridge's parameters (the node declares them)."""


def validate(values: dict[str, Any]) -> dict[str, Any]:
    """Return a checked copy of a complete set of :data:`PARAMETERS` values (ParameterError)."""
    datum = (values['datum.latitude_deg'], values['datum.longitude_deg'],
             values['datum.altitude_m'])
    if not datum_is_valid(datum):
        raise ParameterError(
            f'datum.latitude_deg/longitude_deg/altitude_m must be set to a point (latitude in '
            f'[-90, 90], longitude in [-180, 180] degrees, finite altitude), got {datum!r}')
    if not is_source_name(values['source']):
        raise ParameterError(f'source {values["source"]!r} is not [a-z][a-z0-9_]* (<= 64)')
    check_ranges(PARAMETERS, values)
    return dict(values)


def from_parameters(values: dict[str, Any]) -> NavSatInnovations:
    """Return the :class:`NavSatInnovations` a validated parameter set describes."""
    return NavSatInnovations(
        (values['datum.latitude_deg'], values['datum.longitude_deg'], values['datum.altitude_m']),
        use_altitude=values['use_altitude'], estimate_frame=values['estimate_frame'],
        max_estimate_age_ns=round(values['max_estimate_age_s'] * NS_PER_S),
        ignore_variance_m2=values['ignore_variance_m2'])


@dataclass(frozen=True)
class FixInnovation:
    """One fix held against the estimate: what the innovation engine takes (metres, m^2)."""

    stamp_ns: int
    innovation: tuple[float, ...]
    covariance: tuple[float, ...]
    kinds: tuple[int, ...]
    frame_id: str


@dataclass(frozen=True)
class _Estimate:
    stamp_ns: int
    position: tuple[float, float, float]
    covariance: tuple[float, ...]  # 3 x 3 row-major position block


class NavSatInnovations:
    """Estimates and GNSS fixes in, position innovations out (see the module docstring)."""

    def __init__(self, datum: tuple[float, float, float], use_altitude: bool = True,
                 estimate_frame: str = '',
                 max_estimate_age_ns: int = DEFAULT_MAX_ESTIMATE_AGE_NS,
                 ignore_variance_m2: float = IGNORE_VARIANCE_M2) -> None:
        if not datum_is_valid(datum):
            raise ValueError(f'datum must be (latitude deg in [-90, 90], longitude deg in '
                             f'[-180, 180], finite altitude m), got {datum!r}')
        self.datum = (float(datum[0]), float(datum[1]), float(datum[2]))
        self.components = 3 if use_altitude else 2
        self.estimate_frame = estimate_frame
        self.max_estimate_age_ns = max_estimate_age_ns
        self.ignore_variance_m2 = ignore_variance_m2
        self._estimates: deque[_Estimate] = deque(maxlen=ESTIMATE_BUFFER)
        self.refused: dict[str, int] = {}
        self.estimates = 0
        self.fixes = 0

    def _refuse(self, reason: str) -> str:
        self.refused[reason] = self.refused.get(reason, 0) + 1
        return reason

    def take_estimate(self, stamp_ns: int, frame_id: str, position: Sequence[float],
                      pose_covariance: Sequence[float]) -> str | None:
        """Keep one estimate (position, 6 x 6 pose covariance row-major); a reason if refused.

        A frame other than ``estimate_frame`` (when set) or a position block that is not
        finite is refused; an estimate older than the newest kept one empties the buffer first
        (time went back: a restarted log).
        """
        self.estimates += 1
        if self.estimate_frame and frame_id != self.estimate_frame:
            return self._refuse('estimate_frame_mismatch')
        block = tuple(float(pose_covariance[i * 6 + j]) for i in range(3) for j in range(3))
        point = (float(position[0]), float(position[1]), float(position[2]))
        if not all(math.isfinite(v) for v in (*block, *point)):
            return self._refuse('estimate_covariance')
        if self._estimates and stamp_ns < self._estimates[-1].stamp_ns:
            self._estimates.clear()
        self._estimates.append(_Estimate(stamp_ns, point, block))
        return None

    def take_fix(self, stamp_ns: int, status: int, latitude_deg: float, longitude_deg: float,
                 altitude_m: float, covariance_type: int,
                 position_covariance: Sequence[float]) -> FixInnovation | str:
        """Return the fix's innovation against the estimate, or the refusal reason."""
        self.fixes += 1
        if status < STATUS_FIX:
            return self._refuse('no_fix')
        if not datum_is_valid((latitude_deg, longitude_deg, altitude_m)):
            return self._refuse('bad_position')
        covariance = [float(v) for v in position_covariance]
        reason = navsat_covariance_refusal(covariance_type, covariance, self.ignore_variance_m2)
        if reason is not None:
            return self._refuse(reason)
        estimate = next((e for e in reversed(self._estimates) if e.stamp_ns <= stamp_ns), None)
        if estimate is None:
            return self._refuse('no_estimate')
        if stamp_ns - estimate.stamp_ns > self.max_estimate_age_ns:
            return self._refuse('estimate_too_old')
        enu = geodetic_to_enu(latitude_deg, longitude_deg, altitude_m, self.datum)
        m = self.components
        innovation = tuple(enu[i] - estimate.position[i] for i in range(m))
        total = tuple(estimate.covariance[i * 3 + j] + covariance[i * 3 + j]
                      for i in range(m) for j in range(m))
        return FixInnovation(stamp_ns, innovation, total, (KIND_POSITION,) * m,
                             self.estimate_frame)


def stamp_ns(stamp: Any) -> int | None:
    """Return a builtin_interfaces/Time's ns, or None when it is not a normalised ROS time."""
    if not 0 <= stamp.nanosec < NS_PER_S or stamp.sec < 0:
        return None
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


class NavSatFeed:
    """The navsat bridge's data path from its messages: the node's and ``evaluate``'s.

    ``take_estimate(msg)`` reads a ``nav_msgs/Odometry`` and ``take_fix(msg)`` a
    ``sensor_msgs/NavSatFix`` by attribute (rclpy or rosbags messages alike); a fix not refused
    goes to the innovation engine and the result is returned: its outputs (outcome and claim),
    the refusal reason, or None (the engine holds it, waiting for its pair).
    """

    def __init__(self, values: dict[str, Any]) -> None:
        from ..core import SelfAssessmentLevel
        from .innovation_engine import InnovationEngine

        self.fixes = from_parameters(values)
        self.source = values['source']
        self.engine = InnovationEngine(self.source, SelfAssessmentLevel[values['claimed_level']])

    def _bad_stamp(self) -> str:
        self.fixes.refused['bad_stamp'] = self.fixes.refused.get('bad_stamp', 0) + 1
        return 'bad_stamp'

    def take_estimate(self, msg: Any) -> str | None:
        """Keep one estimate (Odometry); return the refusal reason, or None."""
        stamp = stamp_ns(msg.header.stamp)
        if stamp is None:
            self.fixes.estimates += 1
            return self._bad_stamp()
        p = msg.pose.pose.position
        return self.fixes.take_estimate(stamp, msg.header.frame_id, (p.x, p.y, p.z),
                                        list(msg.pose.covariance))

    def take_fix(self, msg: Any) -> Any:
        """Take one NavSatFix: the engine's InnovationOutputs, a refusal reason, or None."""
        stamp = stamp_ns(msg.header.stamp)
        if stamp is None:
            self.fixes.fixes += 1
            return self._bad_stamp()
        result = self.fixes.take_fix(
            stamp, msg.status.status, msg.latitude, msg.longitude, msg.altitude,
            msg.position_covariance_type, list(msg.position_covariance))
        if not isinstance(result, FixInnovation):
            return result
        return self.engine.take(self.source, result.stamp_ns, result.innovation,
                                result.covariance, result.kinds, frame_id=result.frame_id)


def datum_is_valid(point: Sequence[float]) -> bool:
    """Return True for (latitude deg in [-90, 90], longitude deg in [-180, 180], finite alt)."""
    if len(point) != 3 or not all(math.isfinite(v) for v in point):
        return False
    return -90.0 <= point[0] <= 90.0 and -180.0 <= point[1] <= 180.0 and abs(point[2]) < 1e5


__all__ = ['datum_is_valid', 'FixInnovation', 'from_parameters', 'NavSatFeed',
           'NavSatInnovations', 'PARAMETERS', 'REFUSAL_REASONS', 'stamp_ns', 'validate']
