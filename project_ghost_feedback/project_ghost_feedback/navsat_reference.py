# SPDX-License-Identifier: Apache-2.0
"""sensor_msgs/NavSatFix as a reference: local ENU from a datum, placeholder covariances refused.

Pure (math only, no ROS import); ``bridge/navsat_innovation.py`` holds a fix against the
estimate with them, for the ``navsat_bridge`` node (docs/field.md, "GNSS reference").

- :func:`geodetic_to_enu`: WGS84 latitude, longitude (degrees), ellipsoidal altitude (metres) ->
  east, north, up (metres) of the tangent frame at a datum, by the exact closed form: both points
  to Earth-centred Earth-fixed coordinates (``N(phi) = a / sqrt(1 - e^2 sin^2 phi)``), their
  difference rotated into the datum's ENU axes. No projection and no flat-earth approximation:
  the only error is float64 rounding, below 1e-6 m within 100 km of the datum (ECEF coordinates
  of ~6.4e6 m carry ~1e-9 m of rounding each; tests check it against an independent spherical
  small-offset formula and exact identities). "Up" is along the datum's ellipsoid normal, so a
  far point's up is below its own altitude by the Earth's curvature (~7.8 cm at 1 km), as ENU is.
- :func:`navsat_covariance_refusal`: the reason a NavSatFix's ``position_covariance`` (ENU,
  row-major 3x3, m^2) cannot be a reference's claim, or None: ``covariance_type_unknown``
  (``COVARIANCE_TYPE_UNKNOWN`` = 0), ``not_finite`` (NaN or inf), ``all_zero``, ``ignore_bound``
  (a diagonal at or above :data:`IGNORE_VARIANCE_M2`, 1e6 m^2 by default: the "ignore me" values
  drivers publish, 1e6, or DBL_MAX (1.8e308) as kobuki's), ``not_positive_definite``.
"""

import math
from collections.abc import Sequence

from .core.innovation import cholesky, InnovationRefused

WGS84_A_M = 6378137.0
WGS84_F = 1.0 / 298.257223563
WGS84_E2 = WGS84_F * (2.0 - WGS84_F)
IGNORE_VARIANCE_M2 = 1e6
"""A position variance at or above this (a standard deviation of 1 km) is an 'ignore me' value."""
COVARIANCE_TYPE_UNKNOWN = 0

NAVSAT_REFUSAL_REASONS = ('covariance_type_unknown', 'not_finite', 'all_zero', 'ignore_bound',
                          'not_positive_definite')


def geodetic_to_ecef(lat_deg: float, lon_deg: float, alt_m: float) -> tuple[float, float, float]:
    """Return the WGS84 Earth-centred Earth-fixed coordinates (metres) of a geodetic point."""
    phi = math.radians(lat_deg)
    lam = math.radians(lon_deg)
    sin_phi = math.sin(phi)
    n = WGS84_A_M / math.sqrt(1.0 - WGS84_E2 * sin_phi * sin_phi)
    return ((n + alt_m) * math.cos(phi) * math.cos(lam),
            (n + alt_m) * math.cos(phi) * math.sin(lam),
            (n * (1.0 - WGS84_E2) + alt_m) * sin_phi)


def geodetic_to_enu(lat_deg: float, lon_deg: float, alt_m: float,
                    datum: tuple[float, float, float]) -> tuple[float, float, float]:
    """Return (east, north, up) metres of a point in the tangent frame at ``datum``.

    ``datum`` is (latitude deg, longitude deg, ellipsoidal altitude m).
    """
    x, y, z = geodetic_to_ecef(lat_deg, lon_deg, alt_m)
    x0, y0, z0 = geodetic_to_ecef(*datum)
    dx, dy, dz = x - x0, y - y0, z - z0
    phi = math.radians(datum[0])
    lam = math.radians(datum[1])
    sp, cp, sl, cl = math.sin(phi), math.cos(phi), math.sin(lam), math.cos(lam)
    east = -sl * dx + cl * dy
    north = -sp * cl * dx - sp * sl * dy + cp * dz
    up = cp * cl * dx + cp * sl * dy + sp * dz
    return east, north, up


def enu_to_geodetic(east_m: float, north_m: float, up_m: float,
                    datum: tuple[float, float, float]) -> tuple[float, float, float]:
    """Return (latitude deg, longitude deg, altitude m) of an ENU point of ``datum``.

    The inverse of :func:`geodetic_to_enu`, by Newton steps on it (the local metres per degree
    as the Jacobian); converges to float64 rounding (< 1e-6 m within 100 km) in a few steps.
    For tests and simulators that publish NavSatFix from a local position.
    """
    lat, lon, alt = datum
    for _ in range(8):
        e, n, u = geodetic_to_enu(lat, lon, alt, datum)
        de, dn, du = east_m - e, north_m - n, up_m - u
        phi = math.radians(lat)
        radius = WGS84_A_M + alt
        lat += math.degrees(dn / radius)
        lon += math.degrees(de / (radius * max(math.cos(phi), 1e-12)))
        alt += du
        if max(abs(de), abs(dn), abs(du)) < 1e-10:
            break
    return lat, lon, alt


def navsat_covariance_refusal(covariance_type: int, covariance: Sequence[float],
                              ignore_variance_m2: float = IGNORE_VARIANCE_M2) -> str | None:
    """Return why a NavSatFix position covariance is a placeholder (a reason), or None."""
    if covariance_type == COVARIANCE_TYPE_UNKNOWN:
        return 'covariance_type_unknown'
    if len(covariance) != 9 or not all(math.isfinite(v) for v in covariance):
        return 'not_finite'
    if all(v == 0.0 for v in covariance):
        return 'all_zero'
    if any(covariance[i * 4] >= ignore_variance_m2 for i in range(3)):
        return 'ignore_bound'
    try:
        cholesky(covariance, 3)
    except InnovationRefused:
        return 'not_positive_definite'
    return None
