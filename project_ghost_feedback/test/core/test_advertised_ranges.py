# SPDX-License-Identifier: Apache-2.0
"""What a policy accepts and what the node's descriptors advertise agree on 0 ("0: off").

The node declares every policy parameter with the range its policy advertises
(``PARAMETER_RANGES``, ros/feedback_parameters.py); rclpy refuses a value outside a descriptor's
range before the policy sees it. A parameter the policy and config/feedback.yaml document as
"0: off" must therefore advertise a range that holds 0 (``vec3_scale.gross_false_alarm_
probability`` did not: 0 was refused although the policy takes it, and recorded configurations
from before the parameter replay with 0).
"""

import pathlib
import re

import pytest

from project_ghost_feedback.core.feedback import (
    make_policy,
    policy_names,
    policy_parameter_ranges,
    policy_parameters,
)

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'feedback.yaml'


def _fields():
    for name in policy_names():
        ranges = policy_parameter_ranges(name)
        for field, default in policy_parameters(name).items():
            if isinstance(default, float) and field in ranges:
                yield name, field, ranges[field][0]


@pytest.mark.parametrize('name, field, bounds', list(_fields()))
def test_zero_is_advertised_when_the_policy_takes_it(name, field, bounds):
    """Advertise 0 wherever the policy takes it.

    An advertised range may be wider than what the policy takes (it refuses the rest with a
    ContractViolation), never narrower: a value the policy takes must pass the descriptor.
    """
    try:
        make_policy(name, {field: 0.0})
    except (TypeError, ValueError):
        return
    low, high = bounds
    assert low <= 0.0 <= high, (
        f'{name}.{field}: the policy takes 0, the advertised range {bounds} refuses it')


def test_what_feedback_yaml_calls_off_at_0_is_taken_by_its_policy():
    section = None
    checked = 0
    for line in CONFIG.read_text(encoding='utf-8').splitlines():
        header = re.match(r'^ {4}(\w+):\s*(#.*)?$', line)
        if header and header.group(1) in policy_names():
            section = header.group(1)
            continue
        entry = re.match(r'^ {6}(\w+):\s*\S+\s*#.*\b0: off\b', line)
        if section and entry:
            field = entry.group(1)
            low, high = policy_parameter_ranges(section)[field][0]
            assert low <= 0.0 <= high, f'{section}.{field}: documented "0: off", range {low, high}'
            make_policy(section, {field: 0.0})
            checked += 1
    assert checked >= 1
