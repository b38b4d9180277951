# SPDX-License-Identifier: Apache-2.0
"""Static checks of launch/bridge_feedback_launch.py (launch is not installable here).

The file is parsed with ``ast``: the executables it names are installed, its launch arguments
are the documented ones, the bridge's remapped inputs are the names the bridge subscribes to,
and the file is installed into the package's share directory.
"""

import ast
import os
import pathlib

from ament_index_python.packages import get_package_prefix, get_package_share_directory
import rclpy

from project_ghost_feedback.ros.outcome_bridge_node import OutcomeBridge

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[1]
LAUNCH_FILE = PACKAGE_DIR / 'launch' / 'bridge_feedback_launch.py'
ARGUMENTS = {'estimate_topic', 'estimate_type', 'reference_topic', 'reference_type',
             'namespace', 'bridge_params_file', 'params_file', 'use_sim_time'}


def _tree():
    return ast.parse(LAUNCH_FILE.read_text(encoding='utf-8'), filename=str(LAUNCH_FILE))


def _constants(tree):
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
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


def test_launch_file_is_installed():
    """setup.py installs the launch file into share/<package>/launch."""
    share = pathlib.Path(get_package_share_directory('project_ghost_feedback'))
    assert (share / 'launch' / LAUNCH_FILE.name).exists()


def test_remapped_inputs_are_the_bridge_subscriptions():
    """BRIDGE_INPUTS are the relative names the bridge subscribes to, and nothing else."""
    constants = _constants(_tree())
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = OutcomeBridge(context=context, namespace='/launch_static')
        try:
            subscribed = {s.topic_name for s in node.subscriptions}
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()
    assert subscribed == {f'/launch_static/{name}' for name in constants['BRIDGE_INPUTS']}
