# SPDX-License-Identifier: Apache-2.0
"""What the launch files and their YAML declare, read statically."""

import pathlib
import yaml
from project_ghost_feedback.bridge_inputs import flatten_parameters


PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]


CONFIG_FILE = PACKAGE_DIR / 'config' / 'feedback.yaml'


RCLPY_OWN_PARAMETERS = frozenset({'start_type_description_service'})
"""Declared by rclpy on every node; not part of the node's configuration."""


TOPIC_ARGUMENTS = frozenset({'outcome_topic', 'assessment_topic', 'calibrated_topic'})


LAUNCH_ARGUMENTS = frozenset({
    'namespace', 'params_file', 'use_sim_time', 'record', 'bag_output', 'record_qos_overrides',
    'respawn', 'log_level',
    'extra_record_topics', 'telemetry_bag', 'record_topics', 'vec3_components'}
) | TOPIC_ARGUMENTS


def config_parameters(path=CONFIG_FILE):
    """Return the flattened ``/**: ros__parameters`` of a parameters file."""
    document = yaml.safe_load(path.read_text(encoding='utf-8'))
    assert list(document) == ['/**']
    assert list(document['/**']) == ['ros__parameters']
    return flatten_parameters(document['/**']['ros__parameters'])


def uncommented_parameter_lines(path):
    """Return the parameter lines of a parameters file with no comment on them or above them."""
    lines = path.read_text(encoding='utf-8').splitlines()
    start = lines.index('  ros__parameters:')
    found = []
    for index, line in enumerate(lines[start + 1:], start + 1):
        stripped = line.strip()
        if not stripped or stripped.startswith('#') or stripped.endswith(':'):
            continue
        if '#' not in line and not lines[index - 1].strip().startswith('#'):
            found.append(line)
    return found
