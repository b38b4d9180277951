# SPDX-License-Identifier: Apache-2.0
r"""Launch an innovation bridge and a feedback node for one filter's innovations (field mode).

Usage (a ROS 2 install with this workspace sourced), one launch per source, each in its own
namespace so that each source has its own window::

    ros2 launch project_ghost_feedback innovation_feedback_launch.py \\
        namespace:=field/gnss innovation_topic:=/filter/innovation source:=gnss

Launch arguments:
- ``innovation_topic`` (default ``/innovation``): ``project_ghost_feedback_msgs/Innovation``,
  remapped onto the bridge's ``innovation`` input; ``source`` (default ``''``: every source on
  the topic, each paired apart but judged in one window): judge only this source.
- ``claimed_level`` (default ``KNOWN``): the raw claim published with every outcome.
- ``namespace`` (default ``''``): both nodes' namespace; the bridge's outputs
  (``prediction_outcome``, ``self_assessment/raw``) meet the feedback node's inputs in it.
- ``params_file``, ``use_sim_time``, ``respawn``, ``log_level``, ``record``, ``bag_output``,
  ``telemetry_bag``: passed to ``feedback_launch.py`` (included) as they are; ``use_sim_time``,
  ``respawn`` and ``log_level`` apply to the bridge too.

docs/field.md. Parsed by test/ros/test_innovation_bridge.py (never run there: launch_ros may be
absent).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'project_ghost_feedback'
BRIDGE_EXECUTABLE = 'innovation_bridge'
FEEDBACK_LAUNCH = os.path.join('launch', 'feedback_launch.py')
SHARED_ARGUMENTS = ('namespace', 'params_file', 'use_sim_time', 'respawn', 'record',
                    'bag_output', 'log_level', 'telemetry_bag')


def generate_launch_description():
    """Return the launch description: arguments, the innovation bridge, feedback_launch.py."""
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument('innovation_topic', default_value='/innovation',
                              description='Innovation topic (remapped onto the bridge).'),
        DeclareLaunchArgument('source', default_value='',
                              description="Judge only this source ('' every source)."),
        DeclareLaunchArgument('claimed_level', default_value='KNOWN',
                              choices=['KNOWN', 'UNCERTAIN', 'UNKNOWN'],
                              description='Raw claim published with every outcome.'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of both nodes (one per source).'),
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'feedback.yaml'),
                              description='ROS parameters file of the feedback node.'),
        DeclareLaunchArgument('use_sim_time', default_value='false', choices=['true', 'false'],
                              description='Use /clock as the node clocks.'),
        DeclareLaunchArgument('respawn', default_value='false', choices=['true', 'false'],
                              description='Restart a node when it exits.'),
        DeclareLaunchArgument('log_level', default_value='info',
                              choices=['debug', 'info', 'warn', 'error', 'fatal'],
                              description='ROS log level of both nodes.'),
        DeclareLaunchArgument('record', default_value='false', choices=['true', 'false'],
                              description="Also record the feedback node's topics."),
        DeclareLaunchArgument('bag_output', default_value='',
                              description='Bag directory for record:=true.'),
        DeclareLaunchArgument('telemetry_bag', default_value='',
                              description="The feedback node's own recorder ('' off)."),
        Node(
            package=PACKAGE, executable=BRIDGE_EXECUTABLE, name='innovation_bridge',
            namespace=LaunchConfiguration('namespace'),
            parameters=[{
                'source': LaunchConfiguration('source'),
                'claimed_level': LaunchConfiguration('claimed_level'),
                'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'),
                                               value_type=bool)}],
            remappings=[('innovation', LaunchConfiguration('innovation_topic'))],
            respawn=PythonExpression(["'", LaunchConfiguration('respawn'), "' == 'true'"]),
            respawn_delay=1.0,
            ros_arguments=['--log-level', LaunchConfiguration('log_level')],
            output='screen'),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, FEEDBACK_LAUNCH)),
            launch_arguments=[(name, LaunchConfiguration(name)) for name in SHARED_ARGUMENTS]),
    ])
