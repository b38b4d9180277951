# SPDX-License-Identifier: Apache-2.0
r"""Launch the outcome bridge and the feedback node together on an estimator's topics.

Usage (a ROS 2 install with this workspace sourced)::

    ros2 launch project_ghost_feedback bridge_feedback_launch.py \\
        estimate_topic:=/odometry/filtered reference_topic:=/ground_truth/odom
    ros2 launch project_ghost_feedback bridge_feedback_launch.py namespace:=robot1 \\
        estimate_type:=pose_with_covariance reference_type:=pose use_sim_time:=true

Launch arguments:
- ``estimate_topic`` (default ``/odometry/filtered``): the estimate, remapped onto the bridge's
  ``estimate`` input; ``estimate_type`` (``odometry`` or ``pose_with_covariance``).
- ``reference_topic`` (default ``/ground_truth/odom``): the reference, remapped onto
  ``reference``; ``reference_type`` (``odometry``, ``pose`` or ``pose_with_covariance``).
- ``namespace`` (default ``''``): both nodes' namespace. The bridge's outputs
  (``prediction_outcome``, ``self_assessment/raw``) are the feedback node's inputs by their
  relative names, so they meet in the namespace with no remapping.
- ``bridge_params_file`` (default: none, the bridge's own defaults), ``params_file`` (default
  the package's ``config/feedback.yaml``): the two nodes' parameters.
- ``use_sim_time`` (default ``false``).

Tested statically (``test/test_bridge_launch_static.py``): launch and launch_ros have no PyPI
wheels, so this file is parsed, never imported.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'project_ghost_feedback'
BRIDGE_EXECUTABLE = 'outcome_bridge'
FEEDBACK_EXECUTABLE = 'feedback_node'
CONFIG_FILE = os.path.join('config', 'feedback.yaml')
BRIDGE_INPUTS = ('estimate', 'reference')
"""The bridge's relative input names, remapped to estimate_topic and reference_topic."""


def _nodes(context):
    """Return the two nodes (OpaqueFunction: the bridge's parameters file is optional)."""
    sim_time = {'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'),
                                               value_type=bool)}
    bridge_parameters = [{
        'estimate_type': LaunchConfiguration('estimate_type'),
        'reference_type': LaunchConfiguration('reference_type'),
    }, sim_time]
    bridge_params_file = LaunchConfiguration('bridge_params_file').perform(context)
    if bridge_params_file:
        bridge_parameters.insert(0, bridge_params_file)
    return [
        Node(
            package=PACKAGE, executable=BRIDGE_EXECUTABLE, name='outcome_bridge',
            namespace=LaunchConfiguration('namespace'), parameters=bridge_parameters,
            remappings=[('estimate', LaunchConfiguration('estimate_topic')),
                        ('reference', LaunchConfiguration('reference_topic'))],
            output='screen'),
        Node(
            package=PACKAGE, executable=FEEDBACK_EXECUTABLE, name='feedback_node',
            namespace=LaunchConfiguration('namespace'),
            parameters=[LaunchConfiguration('params_file'), sim_time], output='screen'),
    ]


def generate_launch_description():
    """Return the launch description: arguments, then the bridge and the feedback node."""
    default_params_file = os.path.join(get_package_share_directory(PACKAGE), CONFIG_FILE)
    return LaunchDescription([
        DeclareLaunchArgument('estimate_topic', default_value='/odometry/filtered',
                              description='Estimate topic (remapped onto the bridge).'),
        DeclareLaunchArgument('estimate_type', default_value='odometry',
                              choices=['odometry', 'pose_with_covariance'],
                              description='Estimate message type.'),
        DeclareLaunchArgument('reference_topic', default_value='/ground_truth/odom',
                              description='Reference topic (remapped onto the bridge).'),
        DeclareLaunchArgument('reference_type', default_value='odometry',
                              choices=['odometry', 'pose', 'pose_with_covariance'],
                              description='Reference message type.'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of both nodes.'),
        DeclareLaunchArgument('bridge_params_file', default_value='',
                              description="ROS parameters file of the bridge ('' for none)."),
        DeclareLaunchArgument('params_file', default_value=default_params_file,
                              description='ROS parameters file of the feedback node.'),
        DeclareLaunchArgument('use_sim_time', default_value='false', choices=['true', 'false'],
                              description='Use /clock as the node clocks.'),
        OpaqueFunction(function=_nodes),
    ])
