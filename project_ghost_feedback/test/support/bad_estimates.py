# SPDX-License-Identifier: Apache-2.0
"""Estimates the bridge must refuse, one per reason, and the reason each is refused with."""

import math
from support.pose_inputs import COVARIANCE


def _negative_variance():
    values = list(COVARIANCE)
    values[7] = -0.01
    return values


def _not_psd():
    values = list(COVARIANCE)
    values[1] = values[6] = 0.05   # |cov(x, y)| > sqrt(var x var y)
    return values


BAD_ESTIMATES = {
    'quaternion_zero': {'quaternion': (0.0, 0.0, 0.0, 0.0)},
    'quaternion_denormal': {'quaternion': (0.0, 0.0, 0.0, 5e-324)},
    'quaternion_nan': {'quaternion': (math.nan, 0.0, 0.0, 1.0)},
    'quaternion_inf': {'quaternion': (0.0, math.inf, 0.0, 1.0)},
    'quaternion_tiny': {'quaternion': (0.0, 0.0, 0.0, 1e-10)},
    'quaternion_huge': {'quaternion': (0.0, 0.0, 1e200, 1e200)},
    'quaternion_not_unit': {'quaternion': (0.0, 0.0, 0.0, 1.5)},
    'covariance_nan': {'covariance': [math.nan] + COVARIANCE[1:]},
    'covariance_inf': {'covariance': COVARIANCE[:35] + [math.inf]},
    'covariance_negative_variance': {'covariance': _negative_variance()},
    'covariance_not_psd': {'covariance': _not_psd()},
    'covariance_all_zero': {'covariance': [0.0] * 36},
}


EXPECTED_REASON = {
    'quaternion_zero': 'quaternion_zero', 'quaternion_denormal': 'quaternion_zero',
    'quaternion_nan': 'quaternion_not_finite', 'quaternion_inf': 'quaternion_not_finite',
    'quaternion_tiny': 'quaternion_not_unit', 'quaternion_huge': 'quaternion_not_unit',
    'quaternion_not_unit': 'quaternion_not_unit', 'covariance_nan': 'covariance_not_finite',
    'covariance_inf': 'covariance_not_finite',
    'covariance_negative_variance': 'covariance_negative_variance',
    'covariance_not_psd': 'covariance_not_psd', 'covariance_all_zero': 'covariance_all_zero',
}
"""Name in :data:`BAD_ESTIMATES` -> the drop reason the bridge counts it under."""
