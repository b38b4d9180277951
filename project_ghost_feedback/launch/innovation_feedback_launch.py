# SPDX-License-Identifier: Apache-2.0
r"""Launch a field-mode bridge and a feedback node for one source (no ground truth).

Usage (a ROS 2 install with this workspace sourced), one launch per source, each in its own
namespace so that each source has its own window::

    ros2 launch project_ghost_feedback innovation_feedback_launch.py \\
        namespace:=field/gnss innovation_topic:=/filter/innovation source:=gnss
    ros2 launch project_ghost_feedback innovation_feedback_launch.py namespace:=field/px4 \\
        px4_aid_topics:=/fmu/out/estimator_aid_src_gnss_pos,/fmu/out/estimator_aid_src_baro_hgt
    ros2 launch project_ghost_feedback innovation_feedback_launch.py input:=navsat \\
        namespace:=field/gnss estimate_topic:=/odometry/filtered fix_topic:=/gps/fix \\
        datum_latitude:=47.3769 datum_longitude:=8.5417 datum_altitude:=408.0

- ``input`` (default ``innovation``): ``innovation`` starts the innovation bridge (a filter's
  Innovation messages); ``navsat`` starts the navsat bridge (a NavSatFix against the estimate):
  ``estimate_topic`` (Odometry, default ``/odometry/filtered``), ``fix_topic`` (default
  ``/gps/fix``), ``datum_latitude``/``datum_longitude``/``datum_altitude`` (required for it),
  ``estimate_frame`` (default ``map``), ``use_altitude`` (default ``true``),
  ``reference_fused`` (default ``false``).

Launch arguments:
- ``innovation_topic`` (default ``/innovation``): ``project_ghost_feedback_msgs/Innovation``,
  remapped onto the bridge's ``innovation`` input; ``source`` (default ``''``: every source on
  the topic, each paired apart but judged in one window): judge only this source.
- ``px4_aid_topics`` (default ``''``: none): PX4 ``EstimatorAidSource1d/2d/3d`` topics, separated
  by commas, that the innovation bridge subscribes to as well (best effort, as PX4's uXRCE-DDS
  client publishes them); each topic's type comes from its name (the bridge's ``px4_aid_topics``
  parameter, docs/field.md "PX4").
- ``claimed_level`` (default ``KNOWN``): the raw claim published with every outcome.
- ``namespace`` (default ``''``): both nodes' namespace; the bridge's outputs
  (``prediction_outcome``, ``self_assessment/raw``) meet the feedback node's inputs in it.
- ``params_file``, ``use_sim_time``, ``respawn``, ``log_level``, ``record``, ``bag_output``,
  ``record_qos_overrides``, ``telemetry_bag``: passed to ``feedback_launch.py`` (included) as
  they are; ``use_sim_time``, ``respawn`` and ``log_level`` apply to the bridge too.

docs/field.md. Parsed by test/ros/test_innovation_bridge.py (never run there: launch_ros may be
absent).
"""

import os
from typing import List

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

AID_TOPICS_AS_LIST = ("[name for name in '", "'.replace(',', ' ').split()]")
"""``px4_aid_topics:=a,b`` -> the Python list ``['a', 'b']`` (PythonExpression), a string list."""

PACKAGE = 'project_ghost_feedback'
BRIDGE_EXECUTABLE = 'innovation_bridge'
NAVSAT_EXECUTABLE = 'navsat_bridge'
FEEDBACK_LAUNCH = os.path.join('launch', 'feedback_launch.py')
SHARED_ARGUMENTS = ('namespace', 'params_file', 'use_sim_time', 'respawn', 'record',
                    'bag_output', 'record_qos_overrides', 'log_level', 'telemetry_bag')


def _typed(name, value_type):
    return ParameterValue(LaunchConfiguration(name), value_type=value_type)


def _aid_topics():
    """Return the bridge's ``px4_aid_topics`` parameter from the comma-separated argument."""
    return ParameterValue(PythonExpression(
        [AID_TOPICS_AS_LIST[0], LaunchConfiguration('px4_aid_topics'), AID_TOPICS_AS_LIST[1]]),
        value_type=List[str])


def _bridge(which, executable, parameters, remappings):
    """Return the bridge node of ``input:=<which>`` (started only for that input)."""
    return Node(
        package=PACKAGE, executable=executable, name=executable,
        namespace=LaunchConfiguration('namespace'),
        parameters=[{**parameters,
                     'claimed_level': LaunchConfiguration('claimed_level'),
                     'use_sim_time': _typed('use_sim_time', bool)}],
        remappings=remappings,
        condition=IfCondition(PythonExpression(
            ["'", LaunchConfiguration('input'), f"' == '{which}'"])),
        respawn=PythonExpression(["'", LaunchConfiguration('respawn'), "' == 'true'"]),
        respawn_delay=1.0,
        ros_arguments=['--log-level', LaunchConfiguration('log_level')],
        output='screen')


def generate_launch_description():
    """Return the launch description: arguments, the chosen bridge, feedback_launch.py."""
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument('innovation_topic', default_value='/innovation',
                              description='Innovation topic (remapped onto the bridge).'),
        DeclareLaunchArgument('source', default_value='',
                              description="Judge only this source ('' every source)."),
        DeclareLaunchArgument('px4_aid_topics', default_value='',
                              description='PX4 EstimatorAidSource topics, comma-separated '
                              "(e.g. /fmu/out/estimator_aid_src_gnss_pos); '' none."),
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
        DeclareLaunchArgument('record_qos_overrides', default_value='',
                              description='QoS overrides file for record:=true.'),
        DeclareLaunchArgument('telemetry_bag', default_value='',
                              description="The feedback node's own recorder ('' off)."),
        DeclareLaunchArgument('input', default_value='innovation',
                              choices=['innovation', 'navsat'],
                              description='innovation: Innovation messages; navsat: NavSatFix '
                              'against the estimate.'),
        DeclareLaunchArgument('estimate_topic', default_value='/odometry/filtered',
                              description='input:=navsat: the estimate (Odometry, ENU at the '
                              'datum).'),
        DeclareLaunchArgument('fix_topic', default_value='/gps/fix',
                              description='input:=navsat: the NavSatFix topic.'),
        DeclareLaunchArgument('datum_latitude', default_value='nan',
                              description='input:=navsat: datum latitude, degrees (required).'),
        DeclareLaunchArgument('datum_longitude', default_value='nan',
                              description='input:=navsat: datum longitude, degrees (required).'),
        DeclareLaunchArgument('datum_altitude', default_value='0.0',
                              description='input:=navsat: datum ellipsoidal altitude, m.'),
        DeclareLaunchArgument('estimate_frame', default_value='map',
                              description="input:=navsat: the estimate's frame."),
        DeclareLaunchArgument('use_altitude', default_value='true', choices=['true', 'false'],
                              description='input:=navsat: judge up too (3 components).'),
        DeclareLaunchArgument('reference_fused', default_value='false',
                              choices=['true', 'false'],
                              description='input:=navsat: the fix is also fused into the '
                              'estimate (the stated rate does not hold).'),
        _bridge('innovation', BRIDGE_EXECUTABLE, {
            'source': LaunchConfiguration('source'), 'px4_aid_topics': _aid_topics()},
            [('innovation', LaunchConfiguration('innovation_topic'))]),
        _bridge('navsat', NAVSAT_EXECUTABLE, {
            'datum.latitude_deg': _typed('datum_latitude', float),
            'datum.longitude_deg': _typed('datum_longitude', float),
            'datum.altitude_m': _typed('datum_altitude', float),
            'estimate_frame': LaunchConfiguration('estimate_frame'),
            'use_altitude': _typed('use_altitude', bool),
            'reference_fused': _typed('reference_fused', bool)},
            [('estimate', LaunchConfiguration('estimate_topic')),
             ('fix', LaunchConfiguration('fix_topic'))]),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, FEEDBACK_LAUNCH)),
            launch_arguments=[(name, LaunchConfiguration(name)) for name in SHARED_ARGUMENTS]),
    ])
