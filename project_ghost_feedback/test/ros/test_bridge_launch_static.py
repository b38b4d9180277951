# SPDX-License-Identifier: Apache-2.0
"""Static checks of launch/bridge_feedback_launch.py and config/outcome_bridge.yaml.

The launch file is parsed with ``ast``: the executables it names are installed, its launch
arguments are the documented ones (the feedback launch's record / respawn / log_level among them,
passed on to the included feedback_launch.py), the bridge's remapped inputs are the names the
bridge subscribes to, and the files are installed into the package's share directory. The
parameters file is compared with the parameters a real OutcomeBridge declares, key by key and
value by value.
"""

import ast
import os
import pathlib

from ament_index_python.packages import get_package_prefix, get_package_share_directory
from support.ros_context import new_rclpy_context
import pytest
from support.launch_files import (
    config_parameters,
    LAUNCH_ARGUMENTS,
    RCLPY_OWN_PARAMETERS,
    TOPIC_ARGUMENTS,
    uncommented_parameter_lines,
)

from project_ghost_feedback.ros.outcome_bridge_node import OutcomeBridge

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
LAUNCH_FILE = PACKAGE_DIR / 'launch' / 'bridge_feedback_launch.py'
CONFIG_FILE = PACKAGE_DIR / 'config' / 'outcome_bridge.yaml'
ARGUMENTS = {'estimate_topic', 'estimate_type', 'reference_topic', 'reference_type',
             'namespace', 'bridge_params_file', 'params_file', 'use_sim_time', 'respawn',
             'log_level', 'record', 'bag_output', 'record_qos_overrides', 'record_inputs',
             'telemetry_bag', 'tf_topic',
             'tf_static_topic', 'frame_prefix'}
QOS_OVERRIDES = 'qos_overrides.'
"""rclpy's standard QoS override parameters (named after the resolved topic): not in the file."""


def _tree():
    return ast.parse(LAUNCH_FILE.read_text(encoding='utf-8'), filename=str(LAUNCH_FILE))


def _constants(tree):
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and ast.unparse(value.func) == 'os.path.join':
                found[node.targets[0].id] = os.path.join(
                    *(ast.literal_eval(a) for a in value.args))
                continue
            try:
                found[node.targets[0].id] = ast.literal_eval(value)
            except ValueError:
                pass
    return found


def test_declared_arguments_are_the_documented_ones():
    """Every DeclareLaunchArgument is documented in ARGUMENTS and in the module docstring."""
    tree = _tree()
    declared = {
        call.args[0].value for call in ast.walk(tree)
        if isinstance(call, ast.Call) and getattr(call.func, 'id', '') == 'DeclareLaunchArgument'
    }
    assert declared == ARGUMENTS
    docstring = ast.get_docstring(tree)
    assert all(f'``{name}``' in docstring for name in declared)


def test_executables_are_installed():
    """Both executables the launch file names exist in the package's lib directory."""
    constants = _constants(_tree())
    lib = pathlib.Path(get_package_prefix(constants['PACKAGE'])) / 'lib' / constants['PACKAGE']
    for name in (constants['BRIDGE_EXECUTABLE'], constants['FEEDBACK_EXECUTABLE']):
        assert os.access(lib / name, os.X_OK), lib / name


def test_launch_file_config_and_included_launch_are_installed():
    """setup.py installs the launch files and the bridge's config into share/<package>."""
    share = pathlib.Path(get_package_share_directory('project_ghost_feedback'))
    constants = _constants(_tree())
    assert (share / 'launch' / LAUNCH_FILE.name).exists()
    assert (share / constants['FEEDBACK_LAUNCH']).exists()
    installed = share / constants['BRIDGE_CONFIG_FILE']
    assert installed.read_bytes() == (PACKAGE_DIR / constants['BRIDGE_CONFIG_FILE']).read_bytes()


def test_shared_arguments_are_the_feedback_launch_arguments():
    """What is passed on to feedback_launch.py is declared there (record, respawn, log_level)."""
    shared = set(_constants(_tree())['SHARED_ARGUMENTS'])
    # extra_record_topics and record_topics are made from the inputs, vec3_components from the
    # bridge parameters' ignored_axes: not passed on as they are.
    assert shared == LAUNCH_ARGUMENTS - TOPIC_ARGUMENTS - {
        'extra_record_topics', 'record_topics', 'vec3_components'}
    assert shared <= ARGUMENTS


@pytest.mark.parametrize('ignored,expected', [
    (['z', 'roll', 'pitch'], '2,1'), (['z'], '2,3'), (['roll', 'pitch'], '3,1'), ([''], ''),
    (['x', 'y', 'z', 'roll', 'pitch', 'yaw'], '')])
def test_the_bridge_ignored_axes_set_the_feedback_node_components(tmp_path, ignored, expected):
    """The launch derives feedback_launch.py's vec3_components from the bridge's ignored_axes."""
    import importlib.util

    import yaml
    from launch import LaunchContext

    spec = importlib.util.spec_from_file_location('bridge_feedback_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    params = tmp_path / 'bridge.yaml'
    params.write_text(yaml.safe_dump(
        {'/**': {'ros__parameters': {'ignored_axes': ignored}}}), encoding='utf-8')
    context = LaunchContext()
    context.launch_configurations['bridge_params_file'] = str(params)
    for action in module._planar_components(context):
        action.execute(context)
    assert context.launch_configurations['vec3_components'] == expected
    context.launch_configurations['bridge_params_file'] = str(tmp_path / 'missing.yaml')
    for action in module._planar_components(context):
        action.execute(context)
    assert context.launch_configurations['vec3_components'] == ''


def test_remapped_inputs_are_the_bridge_subscriptions(rclpy_context):
    """BRIDGE_INPUTS are the relative names the bridge subscribes to, TF_TOPICS tf's own.

    With use_tf (and tf2 importable) the tf listener adds the absolute /tf and /tf_static, which
    the launch file remaps to its tf_topic and tf_static_topic.
    """
    constants = _constants(_tree())
    node = OutcomeBridge(context=rclpy_context, namespace='/launch_static')
    try:
        subscribed = {s.topic_name for s in node.subscriptions}
        tf_on = node.counts.tf_state == 'on'
    finally:
        node.destroy_node()
    assert set(constants['TF_TOPICS']) == {'/tf', '/tf_static'}
    tf_topics = set(constants['TF_TOPICS']) if tf_on else set()
    assert subscribed == ({f'/launch_static/{name}' for name in constants['BRIDGE_INPUTS']}
                          | tf_topics)


# -- the parameters file --------------------------------------------------------------------------

@pytest.fixture(scope='module')
def bridge():
    """Return an OutcomeBridge with default parameters in a private context."""
    context = new_rclpy_context()
    node = None
    try:
        node = OutcomeBridge(context=context, namespace='/config_static')
        yield node
    finally:
        if node is not None:
            node.destroy_node()
        context.try_shutdown()


def test_config_keys_are_exactly_the_bridge_parameters(bridge):
    """outcome_bridge.yaml sets every parameter the bridge declares (rclpy's own aside)."""
    declared = {name for name in bridge.list_parameters([], 0).names
                if not name.startswith(QOS_OVERRIDES)} - RCLPY_OWN_PARAMETERS
    assert set(config_parameters(CONFIG_FILE)) == declared


def test_config_values_are_the_bridge_defaults_with_their_types(bridge):
    """Every value in outcome_bridge.yaml is the bridge's default, of the same type."""
    for name, value in config_parameters(CONFIG_FILE).items():
        default = bridge.get_parameter(name).value
        assert (type(value), value) == (type(default), default), name


def test_config_is_accepted_by_the_bridge_as_a_params_file():
    """A bridge started with ``--params-file outcome_bridge.yaml`` comes up with those values."""
    context = new_rclpy_context(args=[
        'outcome_bridge', '--ros-args', '--params-file', str(CONFIG_FILE),
        '-p', 'ignored_axes:=[z,roll,pitch]'])
    node = None
    try:
        node = OutcomeBridge(context=context, namespace='/config_params_file')
        values = config_parameters(CONFIG_FILE)
        values['ignored_axes'] = ['z', 'roll', 'pitch']
        assert {name: node.get_parameter(name).value for name in values} == values
    finally:
        if node is not None:
            node.destroy_node()
        context.try_shutdown()


def test_config_comments_every_parameter():
    """Every parameter line of outcome_bridge.yaml carries a comment, or the line above it does."""
    assert uncommented_parameter_lines(CONFIG_FILE) == []
