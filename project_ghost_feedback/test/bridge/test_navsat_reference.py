# SPDX-License-Identifier: Apache-2.0
"""NavSatFix -> local ENU (WGS84, exact closed form) and placeholder covariances refused."""

import math
import sys

import pytest

from project_ghost_feedback.navsat_reference import (
    geodetic_to_ecef,
    geodetic_to_enu,
    navsat_covariance_refusal,
    WGS84_A_M,
    WGS84_E2,
)

DATUM = (48.137, 11.575, 520.0)


def test_datum_is_the_origin_and_ecef_has_known_values():
    assert geodetic_to_enu(*DATUM, DATUM) == pytest.approx((0.0, 0.0, 0.0), abs=1e-9)
    assert geodetic_to_ecef(0.0, 0.0, 0.0) == pytest.approx((WGS84_A_M, 0.0, 0.0))
    b = WGS84_A_M * math.sqrt(1.0 - WGS84_E2)
    assert geodetic_to_ecef(90.0, 0.0, 0.0)[2] == pytest.approx(b, abs=1e-6)


def test_up_is_altitude_and_small_offsets_match_the_meridian_and_parallel_radii():
    """An independent small-offset formula (radii of curvature) agrees to < 1 mm at 100 m."""
    assert geodetic_to_enu(DATUM[0], DATUM[1], DATUM[2] + 10.0, DATUM) == pytest.approx(
        (0.0, 0.0, 10.0), abs=1e-6)
    phi = math.radians(DATUM[0])
    w = math.sqrt(1.0 - WGS84_E2 * math.sin(phi) ** 2)
    meridian = WGS84_A_M * (1.0 - WGS84_E2) / w ** 3 + DATUM[2]
    normal = WGS84_A_M / w + DATUM[2]
    dlat = 100.0 / meridian
    east, north, up = geodetic_to_enu(DATUM[0] + math.degrees(dlat), DATUM[1], DATUM[2], DATUM)
    assert (east, north) == pytest.approx((0.0, 100.0), abs=1e-3)
    assert up == pytest.approx(-100.0 ** 2 / (2 * meridian), abs=1e-4)
    dlon = 100.0 / (normal * math.cos(phi))
    east, north, _ = geodetic_to_enu(DATUM[0], DATUM[1] + math.degrees(dlon), DATUM[2], DATUM)
    assert east == pytest.approx(100.0, abs=1e-3) and abs(north) < 1e-2


def test_distance_is_kept_far_from_the_datum():
    """The ENU vector's length equals the ECEF chord (a rotation), to 1e-6 m at 100 km."""
    far = (DATUM[0] + 0.6, DATUM[1] - 0.9, 700.0)
    enu = geodetic_to_enu(*far, DATUM)
    a, b = geodetic_to_ecef(*far), geodetic_to_ecef(*DATUM)
    assert math.dist(enu, (0, 0, 0)) == pytest.approx(math.dist(a, b), abs=1e-6)


DBL_MAX = sys.float_info.max
GOOD = [1.0, 0.1, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0, 4.0]


@pytest.mark.parametrize('kind, covariance, reason', [
    (2, GOOD, None),
    (0, GOOD, 'covariance_type_unknown'),
    (2, [0.0] * 9, 'all_zero'),
    (1, [1e6, 0, 0, 0, 1.0, 0, 0, 0, 1.0], 'ignore_bound'),
    (1, [DBL_MAX, 0, 0, 0, DBL_MAX, 0, 0, 0, DBL_MAX], 'ignore_bound'),  # kobuki
    (2, [math.nan] + GOOD[1:], 'not_finite'),
    (2, [1.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0], 'not_positive_definite'),
    (1, [1.0, 0, 0, 0, 0.0, 0, 0, 0, 1.0], 'not_positive_definite'),
])
def test_placeholder_covariances_are_refused_by_reason(kind, covariance, reason):
    assert navsat_covariance_refusal(kind, covariance) == reason


def test_enu_to_geodetic_inverts_geodetic_to_enu_within_a_micrometre():
    from project_ghost_feedback.navsat_reference import enu_to_geodetic, geodetic_to_enu

    datum = (47.3769, 8.5417, 408.0)
    for point in [(0.0, 0.0, 0.0), (120.0, -340.0, 5.0), (-65_000.0, 80_000.0, -30.0)]:
        back = geodetic_to_enu(*enu_to_geodetic(*point, datum), datum)
        assert max(abs(a - b) for a, b in zip(point, back)) < 1e-6


def test_a_fix_is_held_against_the_newest_estimate_at_or_before_it():
    """The innovation is p_fix - p_est, S = P_est + P_fix (3 components; 2 without altitude)."""
    from project_ghost_feedback.bridge.navsat_innovation import NavSatInnovations
    from project_ghost_feedback.navsat_reference import enu_to_geodetic

    datum = (47.3769, 8.5417, 408.0)
    for use_altitude, m in ((True, 3), (False, 2)):
        fixes = NavSatInnovations(datum, use_altitude=use_altitude)
        cov = [0.0] * 36
        cov[0] = cov[7] = cov[14] = 0.04
        fixes.take_estimate(100, '', (10.0, 20.0, 1.0), cov)
        fixes.take_estimate(300, '', (99.0, 99.0, 99.0), cov)  # after the fix: not used
        claimed = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 4.0]
        result = fixes.take_fix(200, 0, *enu_to_geodetic(11.0, 18.0, 1.5, datum), 2, claimed)
        assert [round(v, 6) for v in result.innovation] == [1.0, -2.0, 0.5][:m]
        expected = [1.04, 0.0, 0.0, 0.0, 1.04, 0.0, 0.0, 0.0, 4.04]
        assert [round(v, 9) for v in result.covariance] == (
            expected if m == 3 else [1.04, 0.0, 0.0, 1.04])
